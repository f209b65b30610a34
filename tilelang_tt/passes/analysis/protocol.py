"""The TT-Metalium protocol of a lowered kernel, checked statically on every path.

Used by VerifyTTIR (F) on each of the reader, compute and writer kernels.  A forward
analysis walks the kernel's structured body (sequences, branches, loops, the persistent
loop) with the protocol state of the core, taken from the op registry (:mod:`..ops`):

* **circular buffers** - per CB, the tiles reserved and not yet pushed, and the tiles waited
  for and not yet popped: ``cb_reserve_back`` / ``cb_wait_front`` start with none
  outstanding, ``cb_push_back`` / ``cb_pop_front`` close with the same count, and a call that
  reads tiles from a CB (``copy_tile``, ``matmul_tiles`` ...) or packs into one needs a wait
  or a reserve outstanding;
* **NOC transfers** - a reader pushes a CB only after ``noc_async_read_barrier`` completed
  its reads, a writer pops one only after ``noc_async_write_barrier`` completed its writes;
* **multicast** - a ``noc_async_write_multicast`` only after a ``noc_semaphore_wait`` (the
  receivers signalled ready) since the last one; a ``cb_reserve_back`` only while fewer
  multicasts of the CB's blocks are in flight (not completed by ``noc_async_write_barrier``)
  than its ring holds blocks, so the reserved pages are none they read; once the core
  signalled a sender (``noc_semaphore_inc`` of a group's ``ready``), a push only after it
  waited for that group's ``valid``; nothing outstanding at the end of the kernel;
* **an atomic's read-modify-write** (the kernel's ``tt.rmw_semaphore``) - the reader sets
  the semaphore to 1 only right after a ``noc_semaphore_wait`` for 0, the writer sets it to 0
  only with no NOC write outstanding (after ``noc_async_write_barrier``);
* **DST** - ``tile_regs_acquire`` -> ``commit`` -> ``wait`` -> ``release`` in this order; a
  call that computes into DST runs between acquire and commit, ``pack_tile`` between wait
  and release; every DST index is provably below the capacity of the kernel's mode;
* **inits** - every compute call runs with its init in force (the registry's ``init``: the
  last init of its engine on *every* path reaching it, with matching arguments), after the
  one ``compute_kernel_hw_startup``.

The analysis is path-sensitive: it follows every path through the branches (a branch whose
condition the path's earlier branch conditions decide - TVM's arithmetic analyzer proves it -
follows that arm only, so a kernel may reserve a block under ``if k == last`` and push it
under ``if not k < last``) and merges paths whose CB and DST states agree.  A loop body (the persistent loop included) must leave the CBs and DST as
it found them on every path (balanced on every iteration), and the kernel must end with
nothing outstanding; the init in force after a merge or at a loop head is the one all paths
agree on, else none.  :func:`protocol_problems` returns the violations as messages naming the
kernel, the call and where it is.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import tvm
import tvm_ffi
from tvm import tirx
from tvm.sym import Analyzer, ProofStrength

from ... import attrs, ops
from ..common import collect, get_attr, simplify, to_py, tt_calls
from .flow import TOP, join_value

_DST_STEPS = {"tt.tile_regs_acquire": ("released", "acquired"),
              "tt.tile_regs_commit": ("acquired", "committed"),
              "tt.tile_regs_wait": ("committed", "waited"),
              "tt.tile_regs_release": ("waited", "released")}
_DST_PHASE = {"math": "acquired", "pack": "waited"}


def _count(e):
    e = simplify(e)
    return int(e.value) if isinstance(e, tvm.tirx.IntImm) else str(e)


@dataclass(frozen=True)
class _State:
    reserved: tuple = ()  # ((cb, tiles), ...) outstanding reserves
    waited: tuple = ()  # ((cb, tiles), ...) outstanding waits
    reads: bool = False  # NOC reads issued and not waited for
    writes: bool = False  # NOC writes issued and not waited for
    mcasts: tuple = ()  # ((cb, blocks), ...): multicasts of cb's blocks not waited for (they
    # still read those pages)
    awaiting: tuple = ()  # semaphores whose sender this core signalled (noc_semaphore_inc) and
    # whose data (the `valid` semaphore) it has not waited for
    ready: bool = False  # a noc_semaphore_wait since the last multicast (receivers ready)
    rmw_waited: bool = False  # reader: waited for the RMW semaphore's 0 and not yet claimed it
    dst: str = "released"
    math: object = None  # init in force on the math engine (None: none yet, TOP: unknown)
    sfpu: object = None  # on the vector engine
    started: bool = False  # compute_kernel_hw_startup ran

    def protocol(self):
        return (self.reserved, self.waited, self.reads, self.writes, self.dst, self.mcasts,
                self.awaiting)


def _get(pairs, cb):
    return next((n for c, n in pairs if c.same_as(cb)), None)


def _put(pairs, cb, n):
    rest = tuple((c, k) for c, k in pairs if not c.same_as(cb))
    return rest if n is None else rest + ((cb, n),)


def _same_pairs(a, b) -> bool:
    return len(a) == len(b) and all(_get(b, c) == n for c, n in a)


def _same_protocol(a: _State, b: _State) -> bool:
    return (_same_pairs(a.reserved, b.reserved) and _same_pairs(a.waited, b.waited)
            and a.dst == b.dst and a.awaiting == b.awaiting)


def _join(a: _State, b: _State) -> _State:
    """What holds after either of two paths: outstanding transfers on either, the inits both
    agree on (the protocol counts must agree; the caller checks)."""
    mcasts = tuple((c, max(n, _get(b.mcasts, c) or 0)) for c, n in a.mcasts) + tuple(
        (c, n) for c, n in b.mcasts if _get(a.mcasts, c) is None)
    return replace(a, reads=a.reads or b.reads, writes=a.writes or b.writes,
                   ready=a.ready and b.ready, mcasts=mcasts,
                   rmw_waited=a.rmw_waited and b.rmw_waited,
                   math=join_value(a.math, b.math), sfpu=join_value(a.sfpu, b.sfpu),
                   started=a.started and b.started)


def _assigned(body) -> list:
    """The mutable scalars (A0.1) ``body`` assigns (``tt.state_set``)."""
    return [c.args[0] for c in collect(body, tvm.ir.Call)
            if ops.tt_op_name(c) == "tt.state_set"]


def _forget(assume, loop_vars):
    """Assumptions that still hold after a loop: none about its variable."""
    if not loop_vars:
        return assume
    kept = []
    for fact in assume:
        used = collect(fact, tvm.ir.Var)
        if not any(u.same_as(v) for u in used for v in loop_vars):
            kept.append(fact)
    return tuple(kept)


def _merge(paths):
    """Paths whose protocol state agrees become one (assumptions they share, inits joined)."""
    out = []
    for assume, st in paths:
        for i, (other_assume, other) in enumerate(out):
            if _same_protocol(st, other):
                common = tuple(f for f in assume if any(
                    tvm_ffi.structural_equal(f, g) for g in other_assume))
                out[i] = (common, _join(other, st))
                break
        else:
            out.append((assume, st))
    return out


class _CallText:
    """A call as C++-like text, rendered when a message needs it (printing TIR is slow)."""

    def __init__(self, name, c):
        self.name, self.c = name, c

    def __format__(self, spec):
        return f"{self.name}({', '.join(str(a) for a in self.c.args)})"


def _describe(state: _State) -> str:
    parts = [f"{n} tile(s) of {c.name} reserved" for c, n in state.reserved]
    parts += [f"{n} tile(s) of {c.name} waited for" for c, n in state.waited]
    if state.reads:
        parts.append("NOC reads not waited for")
    if state.writes:
        parts.append("NOC writes not waited for")
    parts += [f"{n} multicast block(s) of {c.name} not waited for" for c, n in state.mcasts]
    if state.awaiting:
        parts.append("a sender signalled and its data not waited for")
    parts.append(f"DST {state.dst}")
    return ", ".join(parts)


class _Checker:
    def __init__(self, name: str, capacity: int | None, sems=None, valid_of=None, l1_cb=None,
                 depth=None, rmw=None, kind=""):
        self.name = name
        self.rmw = rmw  # the RMW semaphore's id (tt.rmw_semaphore), or None
        self.kind = kind
        self.l1_cb = l1_cb or {}  # L1 address variable (get_write_ptr) -> its CB variable
        self.depth = depth or {}  # CB variable -> the blocks its ring holds
        self.sems = sems or {}  # semaphore address variable -> semaphore id (get_semaphore)
        self.valid_of = valid_of or {}  # multicast groups: `ready` id -> `valid` id
        self.capacity = capacity
        self.problems: list[str] = []
        self.where: list[str] = []  # enclosing loops and branches, outermost first
        self.ana = Analyzer()
        self.memo = {}  # (statement, paths) -> paths, for runs that report nothing
        self.decided = {}

    def fail(self, report, message):
        if report:
            place = f" (in {' > '.join(self.where)})" if self.where else ""
            self.problems.append(f"{self.name}: {message}{place}")

    # ---- structure --------------------------------------------------------------------------
    # The walk carries a list of paths: (assumptions, state).  Branches on a condition already
    # assumed on a path follow the assumed arm (a kernel tests `k == last` once to reserve an
    # output block and again to push it); paths whose protocol state agrees are merged.
    def run(self, stmt, paths, report: bool):
        if report or isinstance(stmt, (tirx.Evaluate, tirx.Bind)):
            return self._run(stmt, paths, report)
        key = (stmt, tuple(paths))
        if key not in self.memo:
            self.memo[key] = self._run(stmt, paths, report)
        return self.memo[key]

    def _run(self, stmt, paths, report: bool):
        if isinstance(stmt, tirx.SeqStmt):
            for s in stmt.seq:
                paths = self.run(s, paths, report)
            return paths
        if isinstance(stmt, tirx.IfThenElse):
            cond = stmt.condition
            out = []
            for assume, st in paths:
                known = self.decide(cond, assume)
                for arm, value in ((stmt.then_case, True), (stmt.else_case, False)):
                    if known is not None and known != value:
                        continue
                    self.where.append(f"if {cond}" if value else f"else of if {cond}")
                    fact = cond if value else tirx.Not(cond)
                    branch = [(assume if known is not None else assume + (fact,), st)]
                    out += self.run(arm, branch, report) if arm is not None else branch
                    self.where.pop()
            return _merge(out)
        loop = isinstance(stmt, (tirx.For, tirx.While)) or (
            isinstance(stmt, tirx.AttrStmt) and str(stmt.attr_key) == attrs.PERSISTENT_BODY)
        if loop:
            label = (f"the loop over {stmt.loop_var.name}" if isinstance(stmt, tirx.For)
                     else f"the while loop ({stmt.condition})" if isinstance(stmt, tirx.While)
                     else "the persistent loop")
            loop_vars = [stmt.loop_var] if isinstance(stmt, tirx.For) else []
            # the mutable scalars (A0.1) the body assigns: nothing known about them holds at
            # the head of a later iteration, nor after the loop
            loop_vars += _assigned(stmt.body)
            out = []
            for assume, st in paths:
                out += self.loop(stmt, label, loop_vars, _forget(assume, loop_vars), st, report)
            return _merge(out)
        if isinstance(stmt, tirx.Evaluate) and ops.tt_op_name(stmt.value) == "tt.state_set":
            # a mutable scalar takes a new value: facts about its old one are gone
            return [(_forget(assume, [stmt.value.args[0]]), st) for assume, st in paths]
        if isinstance(stmt, tirx.AttrStmt):
            return self.run(stmt.body, paths, report)
        if (isinstance(stmt, tirx.Evaluate) and ops.tt_op_name(stmt.value)) or (
                isinstance(stmt, tirx.Bind) and ops.tt_op_name(stmt.value) in (
                    "tt.get_write_ptr", "tt.get_read_ptr")):
            return [(assume, self.call(stmt.value, st, report)) for assume, st in paths]
        return paths

    def decide(self, cond, assume):
        """True / False when the path's assumptions decide ``cond``, else None."""
        if not assume:
            return None
        key = (cond, assume)
        if key not in self.decided:
            self.decided[key] = self._decide(cond, assume)
        return self.decided[key]

    def _decide(self, cond, assume):
        context = assume[0]
        for fact in assume[1:]:
            context = tirx.And(context, fact)
        strength = ProofStrength.SYMBOLIC_BOUND  # k != last and k < extent prove k < last
        with self.ana.constraint_scope(context):
            if self.ana.can_prove(cond, strength):
                return True
            if self.ana.can_prove(tirx.Not(cond), strength):
                return False
        return None

    def loop(self, stmt, label, loop_vars, assume, st, report):
        """The paths after a loop entered with one path; each iteration must leave the CBs and
        DST as it found them."""
        head = st
        while True:  # join over the paths reaching the loop head
            ends = [x for _, x in self.run(stmt.body, [(assume, head)], False)]
            new = head
            for end in ends:
                new = replace(_join(new, end), reserved=st.reserved, waited=st.waited,
                              dst=st.dst)
            if new == head:
                break
            head = new
        self.where.append(label)
        ends = self.run(stmt.body, [(assume, head)], report)
        self.where.pop()
        out = []
        for _, end in ends:
            if not _same_protocol(end, st):
                self.fail(report, f"one iteration of {label} does not leave the state it found: "
                                  f"{_describe(st)} before, {_describe(end)} after")
            out.append((_forget(assume, loop_vars), _join(head, end)))
        return out

    # ---- one call ---------------------------------------------------------------------------
    def call(self, c, st: _State, report: bool) -> _State:
        name = c.op.name
        spec = ops.spec(name)
        # rendered only in a message (a registry format string names the op instead)
        text = _CallText(spec.cpp if spec.cpp and "{" not in spec.cpp else
                         name.removeprefix("tt."), c)
        a = ops.named(c)
        if name == "tt.cb_reserve_back" and (_get(st.mcasts, a.cb) or 0) >= self.depth.get(a.cb, 1):
            self.fail(report, f"{text}: the ring of {a.cb.name} holds {self.depth.get(a.cb, 1)} "
                              f"block(s) and {_get(st.mcasts, a.cb)} multicast(s) may still be "
                              "reading its blocks (noc_async_write_barrier first): the reserved "
                              "pages may be one of them")
        if name in ("tt.cb_reserve_back", "tt.cb_wait_front"):
            pairs = st.reserved if name == "tt.cb_reserve_back" else st.waited
            if _get(pairs, a.cb) is not None:
                self.fail(report, f"{text}: {_get(pairs, a.cb)} tile(s) of {a.cb.name} are still "
                                  "outstanding from the previous one")
            pairs = _put(pairs, a.cb, _count(a.ntiles))
            return replace(st, reserved=pairs) if name == "tt.cb_reserve_back" else \
                replace(st, waited=pairs)
        if name in ("tt.cb_push_back", "tt.cb_pop_front"):
            push = name == "tt.cb_push_back"
            pairs = st.reserved if push else st.waited
            have = _get(pairs, a.cb)
            opener = "cb_reserve_back" if push else "cb_wait_front"
            if have is None:
                self.fail(report, f"{text} without a {opener} before it")
            elif have != _count(a.ntiles):
                self.fail(report, f"{text} closes {opener}({a.cb.name}, {have}) with another count")
            if push and st.reads:
                self.fail(report, f"{text} before noc_async_read_barrier: the pushed tiles may "
                                  "not have arrived")
            if push and st.awaiting:
                self.fail(report, f"{text} before noc_semaphore_wait: the multicast data may not "
                                  "have arrived")
            if not push and st.writes:
                self.fail(report, f"{text} before noc_async_write_barrier: the freed tiles may "
                                  "not have left")
            pairs = _put(pairs, a.cb, None)
            return replace(st, reserved=pairs) if push else replace(st, waited=pairs)
        if name in ("tt.get_write_ptr", "tt.get_read_ptr"):
            pairs = st.reserved if name == "tt.get_write_ptr" else st.waited
            if _get(pairs, a.cb) is None:
                self.fail(report, f"{text} with no tiles of {a.cb.name} "
                                  f"{'reserved' if name == 'tt.get_write_ptr' else 'waited for'}")
            return st
        if name in ("tt.noc_async_read_page", "tt.noc_async_read_part"):
            if st.rmw_waited:
                self.fail(report, f"{text} after noc_semaphore_wait on the RMW semaphore without "
                                  "claiming it (noc_semaphore_set to 1): the writer's release "
                                  "of this block would not be waited for")
            return replace(st, reads=True)
        if name in ("tt.noc_async_write_page", "tt.noc_async_write_part"):
            return replace(st, writes=True)
        if name == "tt.noc_async_read_barrier":
            return replace(st, reads=False)
        if name == "tt.noc_async_write_barrier":
            return replace(st, writes=False, mcasts=())
        if name in ("tt.noc_async_write_multicast", "tt.noc_semaphore_set_multicast"):
            if name == "tt.noc_async_write_multicast" and not st.ready:
                self.fail(report, f"{text} without a noc_semaphore_wait for the receivers since "
                                  "the last multicast: it may overwrite pages they still use")
            if name == "tt.noc_async_write_multicast":
                cb = self.l1_cb.get(a.src)
                if cb is not None:  # one more block of cb read by a multicast in flight
                    n = min((_get(st.mcasts, cb) or 0) + 1, self.depth.get(cb, 1))
                    return replace(st, writes=True, ready=False, mcasts=_put(st.mcasts, cb, n))
                return replace(st, writes=True, ready=False)
            return replace(st, writes=True)
        if self.rmw is not None and name in ("tt.noc_semaphore_wait", "tt.noc_semaphore_set") \
                and self.sems.get(a.sem) == self.rmw:
            return self.rmw_call(name, a, text, st, report)
        if name in ("tt.noc_semaphore_inc", "tt.noc_semaphore_wait"):
            sem = self.sems.get(a.sem, str(a.sem))
            if name == "tt.noc_semaphore_inc":  # data will come with the group's `valid`
                return replace(st, awaiting=st.awaiting + (self.valid_of.get(sem, sem),))
            return replace(st, awaiting=tuple(x for x in st.awaiting if x != sem),
                           ready=st.ready or not self.valid_of or sem in self.valid_of)
        if name in _DST_STEPS:
            before, after = _DST_STEPS[name]
            if st.dst != before:
                self.fail(report, f"{text} while DST is {st.dst} (expected {before}: acquire -> "
                                  "commit -> wait -> release)")
            return replace(st, dst=after)
        if spec.family != "compute":
            return st
        if name == "tt.compute_kernel_hw_startup":
            if st.started:
                self.fail(report, f"{text}: compute_kernel_hw_startup runs once")
            return replace(st, started=True)
        if not st.started:
            self.fail(report, f"{text} before compute_kernel_hw_startup")
        for i in ops.cb_reads(c):
            if _get(st.waited, c.args[i]) is None:
                self.fail(report, f"{text} reads {c.args[i].name} with no tiles waited for")
        for i in ops.cb_writes(c):
            if _get(st.reserved, c.args[i]) is None:
                self.fail(report, f"{text} packs into {c.args[i].name} with no tiles reserved")
        if spec.dst and st.dst != _DST_PHASE[spec.dst]:
            self.fail(report, f"{text} while DST is {st.dst} (it needs DST "
                              f"{_DST_PHASE[spec.dst]})")
        if spec.dst and report and self.capacity is not None:
            for i in ops.dst_operands(c):
                bound = self.ana.const_int_bound(c.args[i])
                if bound.max_value >= self.capacity:
                    self.fail(report, f"{text} uses DST tile {c.args[i]} (up to "
                                      f"{bound.max_value}) but DST holds {self.capacity} tiles "
                                      "in this mode")
        if spec.sets:  # an init: its engine is configured for its calls
            key = (name, tuple((o.name, int(x)) for o, x in zip(spec.operands, c.args)
                               if o.kind == "imm"))
            return replace(st, **{spec.sets: key})
        if spec.init:
            channel = ops.spec(spec.init).sets
            have = getattr(st, channel)
            ok = isinstance(have, tuple) and have[0] == spec.init and all(
                dict(have[1]).get(b) == int(getattr(a, op_arg)) for op_arg, b in spec.init_args)
            if not ok:
                now = ("nothing" if have is None else "different inits on different paths"
                       if have is TOP else f"{ops.spec(have[0]).cpp}{dict(have[1]) or ''}")
                self.fail(report, f"{text} needs {ops.spec(spec.init).cpp} in force on every "
                                  f"path; the {channel} engine is configured for {now}")
        return st


    def rmw_call(self, name, a, text, st: _State, report: bool) -> _State:
        """The RMW semaphore (an atomic's per-iteration read-modify-write on one core): the
        reader waits for 0 (no write-back pending) and then sets 1 before it reads the block;
        the writer sets 0 only once noc_async_write_barrier completed the write-back."""
        value = _count(a.value)
        if self.kind == "writer":
            if name != "tt.noc_semaphore_set" or value != 0:
                self.fail(report, f"{text}: the writer only releases the RMW semaphore "
                                  "(noc_semaphore_set to 0)")
            elif st.writes:
                self.fail(report, f"{text} before noc_async_write_barrier: the reader may read "
                                  "the block before the write-back landed")
            return st
        if name == "tt.noc_semaphore_wait":
            if value != 0:
                self.fail(report, f"{text}: the reader waits for the RMW semaphore's release (0)")
            return replace(st, rmw_waited=True)
        if value != 1:
            self.fail(report, f"{text}: the reader only claims the RMW semaphore (1)")
        elif not st.rmw_waited:
            self.fail(report, f"{text} without a noc_semaphore_wait for 0 before it: the "
                              "reader may read the block before the writer wrote it back")
        return replace(st, rmw_waited=False)


def kernel_capacity(func, profile) -> int | None:
    config = get_attr(func, attrs.COMPUTE_CONFIG)
    if config is None:
        return None
    config = to_py(config)
    return profile.dst_capacity(bool(config["fp32_dest_acc_en"]), bool(config["dst_full_sync_en"]))


def protocol_problems(func, profile) -> list[str]:
    """The protocol violations of one lowered kernel (module docstring), as messages."""
    name = str(func.attrs["global_symbol"]) if func.attrs is not None and \
        "global_symbol" in func.attrs else "kernel"
    sems = {b.var: int(b.value.args[0]) for b in collect(func.body, tirx.Bind)
            if ops.tt_op_name(b.value) == "tt.get_semaphore"}
    plan = to_py(get_attr(func, attrs.MCAST_PLAN, {})) or {}
    valid_of = {int(g["ready_sem"]): int(g["valid_sem"]) for g in plan.get("groups", [])}
    binds = collect(func.body, tirx.Bind)
    l1_cb = {b.var: b.value.args[0] for b in binds if ops.tt_op_name(b.value) == "tt.get_write_ptr"}
    depth = {b.var: int(b.value.args[3]) for b in binds if ops.tt_op_name(b.value) == "tt.alloc_cb"}
    rmw = get_attr(func, attrs.RMW_SEMAPHORE)
    checker = _Checker(name, kernel_capacity(func, profile), sems, valid_of, l1_cb, depth,
                       None if rmw is None else int(rmw), str(get_attr(func, attrs.KERNEL_KIND, "")))
    for loop in collect(func.body, tirx.For):  # DST indices are bounded by every loop
        checker.ana.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))
    for _, end in checker.run(func.body, [((), _State())], True):
        if not _same_protocol(end, _State()) or end.mcasts:
            checker.problems.append(f"{name}: the kernel ends with {_describe(end)}")
    # calls of an op some other kernel owns
    kind = str(get_attr(func, attrs.KERNEL_KIND, ""))
    for c in tt_calls(func.body):
        owner = ops.spec(c.op.name).kernel
        if kind and owner in ops.KERNELS and owner != kind:
            checker.problems.append(f"{name}: {c.op.name} belongs to the {owner} kernel")
    return checker.problems
