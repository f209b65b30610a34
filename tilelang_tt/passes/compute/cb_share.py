"""D5.2 ShareCBIdsTT: more CBs than a core has -> intermediates of disjoint lifetimes share ids.

Requires: InsertDSTManagementTT (the compute kernel's program order and CB protocol are final:
every reserve / push / wait / pop is in the IR).

A Tensix core has 32 CB indices.  When the kernel has more CBs, C3 gave the others their ids
and the *intermediates* (CBs only the compute kernel fills and drains) ids from 32 on.  In the
compute kernel's program order (the persistent body walked as a loop over work units) each
intermediate has a *lifetime*: the statements from its first use to its last (a reserve /
push / wait / pop, or a call reading or packing its tiles), widened to a whole loop when it is
used both inside and outside the loop.  An intermediate may share its index with others when

* a loop never carries it (pushed in one iteration and popped in the next, or used both
  inside a loop and outside it while the loop both pushes and pops it),
* every reserve / wait on it is of a known number of pages, and its pushes and pops balance
  in every loop iteration and on both arms of every branch (checked on the structured body),

so it holds no page outside its lifetime: two such CBs whose lifetimes do not overlap use one
index (one FIFO) one after the other, everything the first pushed popped before the second
reserves, in every iteration.  Sharing CBs must also agree on the data format, the page
size, the block shape (so the ring, whose pointers run on across members, holds whole blocks
of each) and on being unpacked straight to DST (``unpack_to_dest_fp32``); CBs named in a
``T.annotate_l1_alias`` spec keep theirs.

Guarantees: a module whose CB ids are all below 32 is returned unchanged (byte-identical
output).  Otherwise the shareable intermediates of each kind are packed greedily by lifetime
start into as few indices as their lifetimes allow (interval partitioning: optimal), every
intermediate index is renumbered below 32 (``c_24`` .. ``c_31`` first, then any free one),
each member's ``tt.alloc_cb`` takes the shared index and the group's depth (the deepest
member's), ``tt.tile_dfg`` lists one entry per index (the first member's, with the group's
depth and ``shared``: the members' names in order), ``unpack_to_dest_fp32`` is renumbered,
and ``tt.cb_share`` on every kernel lists ``{cb, names, bytes, unshared_bytes}`` of each
shared index.  When more than 32 remain, a ``TTResourceError`` lists the CBs as shared.
VerifyTTIR checks every shared index again with ``share_problems``.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ... import attrs, ops
from ...errors import TTResourceError
from ...target import profile_of
from ..common import collect, get_attr, require_attr, to_py, tt_map, tt_module_pass
from ..dataflow.tile_dfg import CB_HINT, cb_listing, share_key
from .l1_alias import _Uses, _leaves
from .l1_fit import _Occupancy, _Unknown

_FIRST = range(24, 32)  # TT-Metalium's intermediate indices


class _KernelUses(_Uses):
    """``_Uses`` over a whole kernel body: the persistent body (before E1 an AttrStmt) is the
    loop over work units it is after E1."""

    def walk(self, s, loops):
        if isinstance(s, tirx.AttrStmt) and str(s.attr_key) == attrs.PERSISTENT_BODY:
            entry = [self.n, None]
            self.loops.append(entry)
            self.walk(s.body, loops + [len(self.loops) - 1])
            entry[1] = self.n - 1
        else:
            super().walk(s, loops)


def _balanced(body, var) -> bool:
    """Whether the CB's pushes and pops balance in every loop iteration and branch arm."""
    try:
        return _Occupancy(var, 1 << 30, True).run(body, 0) == 0
    except _Unknown:
        return False


def lifetimes(func, cb_vars: list) -> tuple[dict, dict]:
    """(var -> (first, last) program-order lifetime, var -> why it has none) for the CB
    variables ``cb_vars`` of the compute kernel ``func`` (module docstring)."""
    uses = _KernelUses(func.body, {v: k for k, v in enumerate(cb_vars)})
    life, why = {}, {}
    for k, v in enumerate(cb_vars):
        span, carried = uses.lifetime(k)
        if span is None:
            why[v] = "the compute kernel does not use it"
        elif carried:
            why[v] = "a loop carries its value from one iteration to the next"
        elif None in uses.blocks.get(k, {None}):
            why[v] = "its reserves / waits are not all of a known number of pages"
        elif not _balanced(func.body, v):
            why[v] = "its pushes and pops do not balance in every loop iteration and branch"
        else:
            life[v] = span
    return life, why


def _alloc_vars(func) -> dict:
    """CB id -> its ``tt.alloc_cb`` variables in ``func``, in order."""
    out = {}
    for b in collect(func.body, tirx.Bind):
        if ops.tt_op_name(b.value) == "tt.alloc_cb":
            out.setdefault(int(b.value.args[0]), []).append(b.var)
    return out


def share_problems(kernels: dict) -> list[str]:
    """What is wrong with the indices several CB variables share (VerifyTTIR): only the compute
    kernel may share an index, between CBs of one block shape and format whose lifetimes
    (module docstring) do not overlap."""
    problems = []
    for kind, func in kernels.items():
        shared = {i: vs for i, vs in _alloc_vars(func).items() if len(vs) > 1}
        if not shared:
            continue
        if kind != "compute":
            problems += [f"the {kind} kernel allocates CB {i} as {len(vs)} buffers"
                         for i, vs in shared.items()]
            continue
        all_vars = [v for vs in shared.values() for v in vs]
        life, why = lifetimes(func, all_vars)
        allocs = {b.var: b.value for b in collect(func.body, tirx.Bind)
                  if ops.tt_op_name(b.value) == "tt.alloc_cb"}
        for i, vs in shared.items():
            label = lambda v: str(allocs[v].args[5].value)  # noqa: E731
            shapes = {tuple(str(a) for a in allocs[v].args[1:5]) for v in vs}
            if len(shapes) > 1:
                problems.append(f"CB {i} is shared by buffers of different blocks or formats: "
                                + ", ".join(label(v) for v in vs))
            for v in vs:
                if v in why:
                    problems.append(f"CB {i} is shared by {label(v)}, which may hold pages "
                                    f"outside its lifetime: {why[v]}")
            ok = sorted((life[v], label(v)) for v in vs if v in life)
            for (a, na), (b, nb) in zip(ok, ok[1:]):
                if b[0] <= a[1]:
                    problems.append(f"CB {i} is shared by {na} and {nb}, whose lifetimes in the "
                                    "compute kernel overlap")
    return problems


def _groups(compute, entries, why_not: dict) -> list:
    """Groups (lists of entries) of intermediates sharing an index, in order of first use."""
    ids = _alloc_vars(compute)
    options = to_py(get_attr(compute, attrs.COMPUTE_CONFIG, {})) or {}
    fp32 = {int(c) for c in options.get("unpack_to_dest_fp32", [])}
    aliased = set()
    for spec in to_py(get_attr(compute, attrs.L1_ALIAS_REQUEST, [])) or []:
        aliased |= set(_leaves(spec["group"]))
    cands, solo = [], []
    var_of = {}
    for e in entries:
        vs = ids.get(int(e["id"]), [])
        if len(vs) == 1:
            var_of[int(e["id"])] = vs[0]
    life, why = lifetimes(compute, list(var_of.values()))
    for e in entries:
        v = var_of.get(int(e["id"]))
        if e["role"] != "intermediate":
            why_not[int(e["id"])] = f"it is not an intermediate (its role is {e['role']})"
        elif str(e["name"]) in aliased:
            why_not[int(e["id"])] = "a T.annotate_l1_alias spec names it"
        elif v is None or v not in life:
            why_not[int(e["id"])] = why.get(v, "the compute kernel does not allocate it once")
        elif "in_place" in e:
            why_not[int(e["id"])] = "it lies on an L1 shard"
        else:
            cands.append((life[v], e))
            continue
        solo.append([e])
    groups = []  # [(key, last, [entries])]
    for (lo, hi), e in sorted(cands, key=lambda c: (c[0][0], int(c[1]["id"]))):
        key = share_key(e) + (int(e["id"]) in fp32,)
        slot = next((g for g in groups if g[0] == key and g[1] < lo), None)
        if slot is None:
            groups.append([key, hi, [e]])
        else:
            slot[1], slot[2] = hi, slot[2] + [e]
    return [g[2] for g in groups] + solo


def _why_not(entries, why_not: dict) -> str:
    """``name (k versions: why)`` of the CBs that cannot share an index, one per reason."""
    counts = {}
    for e in entries:
        if int(e["id"]) in why_not:
            key = (str(e["name"]), why_not[int(e["id"])])
            counts[key] = counts.get(key, 0) + 1
    return "; ".join(f"{n} ({k} versions: {w})" if k > 1 else f"{n} ({w})"
                     for (n, w), k in counts.items())


def _ring(e) -> int:
    return int(e["rows"]) * int(e["cols"]) * int(e["depth"]) * int(e["page_bytes"])


def _renumber(func, new_id: dict, depth: dict, merged: dict, table: list):
    """``func`` with the CBs of ``new_id`` (old id -> id) re-allocated, its ``tt.tile_dfg``
    merged and ``unpack_to_dest_fp32`` renumbered."""

    def rewrite(b: tirx.Bind):
        if ops.tt_op_name(b.value) != "tt.alloc_cb" or int(b.value.args[0]) not in new_id:
            return b
        args = list(b.value.args)
        old = int(args[0])
        args[0] = tirx.IntImm(args[0].dtype, new_id[old])
        args[3] = tirx.IntImm(args[3].dtype, depth[new_id[old]])
        return tirx.Bind(b.var, ops.call("tt.alloc_cb", *args, span=b.value.span), b.span)

    dfg, seen = [], set()
    for e in to_py(get_attr(func, attrs.TILE_DFG, [])) or []:
        old = int(e["id"])
        if old not in new_id:
            dfg.append(e)
        elif new_id[old] not in seen:
            seen.add(new_id[old])
            dfg.append(merged[new_id[old]])
    func = func.with_body(tt_map(func.body, [(tirx.Bind, rewrite)], order="post")) \
        .with_attr(attrs.TILE_DFG, dfg).with_attr(attrs.CB_SHARE, table)
    config = to_py(get_attr(func, attrs.COMPUTE_CONFIG))
    if config is not None:
        config = dict(config, unpack_to_dest_fp32=sorted(
            {new_id.get(int(c), int(c)) for c in config["unpack_to_dest_fp32"]}))
        func = func.with_attr(attrs.COMPUTE_CONFIG, config)
    return func


@tt_module_pass("ShareCBIdsTT")
def ShareCBIdsTT(mod, ctx):
    """Share CB indices between intermediates of disjoint lifetimes (module docstring)."""
    from ..verify.verify_ttir import all_cbs, kernels_of

    kernels = kernels_of(mod)
    compute = kernels["compute"]
    max_cbs = profile_of(str(require_attr(compute, attrs.TARGET, "ShareCBIdsTT"))).max_cbs
    cbs = all_cbs(kernels)
    if all(int(e["id"]) < max_cbs for e in cbs):
        return mod
    moving = [e for e in cbs if int(e["id"]) >= max_cbs]
    kept = [e for e in cbs if int(e["id"]) < max_cbs]
    why_not = {}
    groups = _groups(compute, moving, why_not)
    if len(kept) + len(groups) > max_cbs:
        shared = [g for g in groups if len(g) > 1]
        raise TTResourceError(
            f"the kernel needs {len(cbs)} circular buffers; a Tensix core has {max_cbs}, and "
            f"{len(kept) + len(groups)} remain when the compute kernel's intermediates whose "
            f"lifetimes do not overlap share one: {cb_listing(kept + [g[0] for g in groups])}"
            + ("" if not shared else " (sharing: " + "; ".join(
                " + ".join(str(e["name"]) for e in g) for g in shared) + ")")
            + ("" if not why_not else "; not shared: " + _why_not(moving, why_not)),
            hint=CB_HINT)
    used = {int(e["id"]) for e in kept}
    free = [i for i in _FIRST if i not in used] + \
        [i for i in range(max_cbs) if i not in used and i not in _FIRST]
    new_id, depth, merged, table = {}, {}, {}, []
    for g, cid in zip(groups, free):
        d = max(int(e["depth"]) for e in g)
        depth[cid] = d
        merged[cid] = dict(g[0], id=cid, depth=d)
        for e in g:
            new_id[int(e["id"])] = cid
        if len(g) > 1:
            merged[cid]["shared"] = [str(e["name"]) for e in g]
            table.append({"cb": cid, "names": [str(e["name"]) for e in g],
                          "bytes": _ring(merged[cid]),
                          "unshared_bytes": sum(_ring(e) for e in g)})
    return tvm.IRModule({gv: _renumber(func, new_id, depth, merged, table)
                         for gv, func in mod.functions.items()})
