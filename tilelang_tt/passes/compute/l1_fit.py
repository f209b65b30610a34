"""D6.1 FitL1TT: circular buffers over L1 single-buffered, largest first, until they fit.

Requires: PlanL1AliasTT (the CBs' regions are planned; their uses are final).

A block buffer's CB holds ``depth`` blocks (A2: the ``num_stages`` of the pipelined loop that
writes it, else 2), so that its producer can fill the next block while its consumer works on
the current one.  The extra blocks buy overlap, not correctness: the kernels are split (D1)
from one program in which a block buffer holds one value at a time, so in that program's
order the last read of one value comes before the write of the next.  The reader pushes a
block at the statement that copies it, the compute kernel waits for it at its first use and
pops it after its last, the writer likewise after the compute kernel pushes: running the
three kernels in that order never needs a second block of a CB whose every reserve / wait is
at most one block and, where one kernel both pushes and pops the CB (an intermediate, a
carried value, GEMM partials), which that kernel never holds two blocks of.  Such a CB is
*single-bufferable*; this pass checks the second condition on the kernel's structured body
(pages reserved + pushed and not yet popped, per path, each loop iteration leaving what it
found; a branch's arms agreeing), the first on every reserve / wait; and F's protocol check
(:mod:`..analysis.protocol`) must pass with the ring of one block (a multicast sender reserves
a block only once no multicast of the ring's blocks may still be reading it: with one block,
never while its multicast is in flight, which the reader's order does not give).

When the CBs' L1 (VerifyTTIR's count: regions once, L1 shards used in place as the shards, plus
L1-sharded tensors) exceeds the core's usable L1, the single-bufferable CBs of depth > 1 are
given depth 1 one at a time -- first the CBs one kernel both fills and drains (the compute
kernel's intermediates: a second block of theirs overlaps nothing), then the others (a reader's
prefetch, a writer's drain), each time the one saving the most L1 -- the regions planned again
after each, until
the CBs fit or none is left (VerifyTTIR then refuses, naming every CB and its depth).  CBs on
L1 shards keep their depth (their ring is the shard).

The compile option ``tt.l1_fit = False`` turns this off.

Guarantees: a module whose CBs fit is returned unchanged (byte-identical output); else the
single-buffered CBs' ``tt.alloc_cb`` depth arguments and ``tt.tile_dfg`` entries are 1 in
every kernel, ``tt.l1_regions`` is planned anew, and ``tt.l1_fit`` on every kernel lists
``{cb, name, depth, saved_bytes}`` of each single-buffered CB (depth: the one it had) in the
order they were changed; when the CBs still do not fit, ``tt.l1_fit_kept`` lists
``{cb, name, depth, why}`` of each CB of depth > 1 that must keep its ring, for F's refusal.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ... import attrs, ops
from ...target import profile_of
from ..common import collect, get_attr, require_attr, to_py, tt_map, tt_module_pass
from ..analysis.protocol import protocol_problems
from ..layout.sharding import shard_bytes
from ..verify.verify_ttir import all_cbs, cb_bytes, cb_footprint, kernels_of
from .l1_alias import plan_regions

_RESERVE, _PUSH = "tt.cb_reserve_back", "tt.cb_push_back"
_WAIT, _POP = "tt.cb_wait_front", "tt.cb_pop_front"


class _Unknown(Exception):
    """The CB's occupancy cannot be bounded statically."""


def _pages(call) -> int:
    n = call.args[1]
    if not isinstance(n, tirx.IntImm):
        raise _Unknown()
    return int(n.value)


class _Occupancy:
    """Whether one kernel's uses of one CB stay within ``cap`` pages (module docstring)."""

    def __init__(self, var, cap: int, both: bool):
        self.var, self.cap, self.both = var, cap, both

    def ops_of(self, stmt):
        for call in collect(stmt, tvm.ir.Call):
            name = ops.tt_op_name(call)
            if name in (_RESERVE, _PUSH, _WAIT, _POP) and call.args[0].same_as(self.var):
                yield name, _pages(call)

    def run(self, s, st):
        """Pages pushed and not popped after ``s`` from ``st`` (tracked only when this kernel
        both pushes and pops the CB: a reserve needs them plus its own pages within ``cap``);
        every reserve / wait is of at most ``cap`` pages."""
        if isinstance(s, tirx.SeqStmt):
            for x in s.seq:
                st = self.run(x, st)
            return st
        if isinstance(s, tirx.For):
            if self.run(s.body, st) != st:
                raise _Unknown()
            return st
        if isinstance(s, tirx.IfThenElse):
            a = self.run(s.then_case, st)
            b = self.run(s.else_case, st) if s.else_case is not None else st
            if a != b:
                raise _Unknown()
            return a
        if isinstance(s, tirx.AttrStmt):
            return self.run(s.body, st)
        if isinstance(s, tirx.While):
            if self.run(s.body, st) != st:
                raise _Unknown()
            return st
        for name, n in self.ops_of(s):
            if n > self.cap:
                raise _Unknown()
            if not self.both:
                continue
            if name == _RESERVE and st + n > self.cap:
                raise _Unknown()
            if name == _PUSH:
                st += n
            elif name == _POP:
                st -= n
        return st


def single_bufferable(kernels: dict, entry, profile=None) -> bool:
    """Whether the CB of ``entry`` (a ``tt.tile_dfg`` entry) works with a ring of one block."""
    return why_double(kernels, entry, profile) is None


def why_double(kernels: dict, entry, profile=None) -> str | None:
    """Why the CB of ``entry`` needs more than one block (None: it does not): the occupancy
    bound (module docstring), and, given the device ``profile``, F's protocol check of every
    kernel with that ring (a multicast sender may not reserve a block while a multicast of
    the ring's only block may still be reading it)."""
    if "in_place" in entry:
        return "it lies on an L1 shard"
    cap = int(entry["rows"]) * int(entry["cols"])
    for kind, func in kernels.items():
        for var in (b.var for b in collect(func.body, tirx.Bind)  # several: D5.2 shared it
                    if ops.tt_op_name(b.value) == "tt.alloc_cb"
                    and int(b.value.args[0]) == int(entry["id"])):
            problem = _occupancy_problem(kind, func, var, cap)
            if problem:
                return problem
    if profile is not None:
        trial = _trial_kernels(kernels, {int(entry["id"]): 1})
        for kind, func in kernels.items():
            if protocol_problems(trial[kind], profile) and not protocol_problems(func, profile):
                return (f"the {kind} kernel's protocol needs a second block (a multicast of a "
                        "block may still read it when the next is reserved)"
                        if (to_py(get_attr(func, attrs.MCAST_PLAN, {})) or {}).get("groups") else
                        f"the {kind} kernel's protocol needs a second block")
    return None


def _occupancy_problem(kind, func, var, cap) -> str | None:
    """Why the ``kind`` kernel's uses of the CB variable ``var`` exceed ``cap`` pages (None:
    they do not)."""
    occ = _Occupancy(var, cap, True)
    names = {n for n, _ in occ.ops_of(func.body)}
    occ.both = _PUSH in names and _POP in names
    try:
        if occ.run(func.body, 0) != 0:
            raise _Unknown()
    except _Unknown:
        return (f"the {kind} kernel may hold more than one block of it"
                if occ.both else f"the {kind} kernel reserves or waits for more than a block")
    return None


def l1_need(kernels: dict, cbs: list, regions: list) -> int:
    """Bytes of L1 the CBs and the core's L1 shards take (VerifyTTIR's count)."""
    layouts = to_py(get_attr(kernels["compute"], attrs.LAYOUT_DESC, [])) or []
    shards = sum(shard_bytes(d) for d in layouts
                 if d["memory"] == "L1" and d["layout"] == "sharded")
    return cb_footprint(cbs, regions) + shards


def _with_depths(func, depths: dict):
    """``func`` with the CBs of ``depths`` (id -> depth) re-allocated at their new depth."""

    def rewrite(b: tirx.Bind):
        if ops.tt_op_name(b.value) != "tt.alloc_cb" or int(b.value.args[0]) not in depths:
            return b
        args = list(b.value.args)
        args[3] = tirx.IntImm(args[3].dtype, depths[int(args[0])])
        return tirx.Bind(b.var, ops.call("tt.alloc_cb", *args, span=b.value.span), b.span)

    dfg = [dict(e, depth=depths.get(int(e["id"]), e["depth"]))
           for e in to_py(get_attr(func, attrs.TILE_DFG, [])) or []]
    return func.with_body(tt_map(func.body, [(tirx.Bind, rewrite)], order="post")) \
        .with_attr(attrs.TILE_DFG, dfg)


@tt_module_pass("FitL1TT")
def FitL1TT(mod, ctx):
    """Single-buffer CBs, largest saving first, until they fit L1 (see module docstring)."""
    kernels = kernels_of(mod)
    target = str(require_attr(kernels["compute"], attrs.TARGET, "FitL1TT"))
    profile = profile_of(target)
    budget = profile.l1_usable_bytes
    cbs = all_cbs(kernels)
    regions = to_py(get_attr(kernels["compute"], attrs.L1_REGIONS, [])) or []
    options = to_py(get_attr(kernels["compute"], attrs.COMPILE_OPTIONS, {})) or {}
    if l1_need(kernels, cbs, regions) <= budget or not options.get(attrs.PC_L1_FIT, True):
        return mod
    why = {int(e["id"]): why_double(kernels, e, profile) for e in cbs if int(e["depth"]) > 1}
    cands = [e for e in cbs if int(e["depth"]) > 1 and why[int(e["id"])] is None]
    depths, done = {}, []
    while cands and l1_need(kernels, cbs, regions) > budget:
        before = l1_need(kernels, cbs, regions)
        best = None
        for e in cands:  # the one whose single buffering saves the most L1
            trial = [dict(c, depth=1) if c["id"] == e["id"] else c for c in cbs]
            saved = before - l1_need(kernels, trial, plan_regions(
                _trial_kernels(kernels, {**depths, int(e["id"]): 1})))
            # a CB one kernel both fills and drains loses no overlap at depth 1: first those
            key = (e["producer"] == e["consumer"], saved, cb_bytes(e), -int(e["id"]))
            if best is None or key > best[0]:
                best = (key, e)
        e = best[1]
        cands.remove(e)
        depths[int(e["id"])] = 1
        kernels = _trial_kernels(kernels, {int(e["id"]): 1})
        cbs = all_cbs(kernels)
        regions = plan_regions(kernels)
        done.append({"cb": int(e["id"]), "name": str(e["name"]), "depth": int(e["depth"]),
                     "saved_bytes": before - l1_need(kernels, cbs, regions)})
    kept = [{"cb": c, "name": str(e["name"]), "depth": int(e["depth"]), "why": why[c]}
            for e in cbs for c in [int(e["id"])] if why.get(c)]
    if l1_need(kernels, cbs, regions) <= budget:
        kept = []  # they fit: nothing to explain
    if not done and not kept:
        return mod
    out = {}
    for gv, func in mod.functions.items():
        kind = str(get_attr(func, attrs.KERNEL_KIND))
        f = kernels[kind].with_attr(attrs.L1_REGIONS, regions)
        f = f.with_attr(attrs.L1_FIT, done) if done else f
        out[gv] = f.with_attr(attrs.L1_FIT_KEPT, kept) if kept else f
    return tvm.IRModule(out)


def _trial_kernels(kernels: dict, depths: dict) -> dict:
    return {kind: _with_depths(f, depths) for kind, f in kernels.items()}
