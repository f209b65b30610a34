"""A0.1.1 LowerAtomicsTT: TileLang atomics as one read-modify-write of the target per group
of blocks.

Requires: DropTrueGuardsTT (scalar assignments are Binds; always-true guards are gone).

TileLang's ``T.atomic_add(B[...], v)`` (``atomic_max`` / ``atomic_min``; tile or element
form, ``language_atomic.py``) means: every block's contributions are combined into the target
tensor's initial value, in some order.  Tensix has no DRAM atomics the compute engines can
use, so the blocks whose targets can overlap are serialised on one core and the target is
read once and written once:

* **Conflicting blocks, from the IR** (``atomic_groups.py``). The target indices (bindings
  seen through) are functions of the block indices and of the ``T.Parallel`` variables around
  the atomic.  Per launch dimension, the blocks that may update the same elements are grouped:
  a block index a target does not use (``bz`` of ``B[bx * bm + i, by * bn + j]``), or uses only
  inside ``bx // g`` (GQA's ``dV[.., bx // groups, ..]``), enumerates blocks updating the same
  elements.  The group of a dimension is the least common multiple over all targets; a whole
  dimension's ``blockIdx`` launch is replaced by a serial loop around the kernel body, a group
  of ``G`` splits it into a launched ``bx_o`` and a serial loop ``bx_i`` (``bx = bx_o * G +
  bx_i`` in the body), so one core runs each group in block order.  Blocks that still differ
  in the launched indices are left to V0's dependency check, which proves their targets
  disjoint or rejects the kernel (``B[bz % 2, ...]``).
* **One read, one write.** Each target gets a block buffer (``<B>_atomic``, shared scope, the
  target's dtype, one element per ``T.Parallel`` iteration): before the serial loops the
  target does not change with it is copied from the target region, each atomic becomes ``acc =
  acc op v``, after them it is copied back (the loops it changes with run outside).
  This is the atomics' meaning exactly: the sum (max, min) of the group's contributions
  applied to the initial value, in block order (an ``atomic_add`` into bfloat16 rounds after
  every contribution, as the hardware atomic would).

* **A target that moves with a loop** (a serial loop whose variable the target index uses:
  flash attention backward's ``dQ[bz, bx, k * block_N + i, j]``): the block cannot be held
  for the group, so the atomic's ``T.Parallel`` nest becomes ``tt.rmw_acquire``, the read of
  the iteration's block into the ``<B>_atomic`` buffer, the update, its write-back and
  ``tt.rmw_release``: a read-modify-write per iteration, on the one core that runs the group.
  D3 lowers the two markers to the core's RMW semaphore (the reader's next read of the target
  waits for the writer's previous write-back); V0 orders the read after earlier write-backs.

A branch around atomics whose condition holds for every block and iteration (TileLang's
bounds guard ``if idx_i < M and idx_j < N:`` when the blocks tile the tensor) was dropped by
DropTrueGuardsTT.  Refused with TTUnsupportedError naming the call and its line: a target index that reads
tensor data (a histogram: which blocks collide is not known at compile time); a target that
several ``T.Parallel`` iterations of one block share (each loop variable must index one
target dimension with unit stride); an atomic inside any other branch; a moving atomic that is
not the only statement of its ``T.Parallel`` nest, or whose tensor another atomic updates too;
a target tensor the kernel also reads or writes other than through its atomics, or updated by
atomics of different kinds or regions.

Guarantees: no ``tt.atomic`` marker is left; the launch has no ``blockIdx`` dimension (or
part of one) whose blocks a target does not separate (a kernel whose targets use none keeps one
block); every
``tt.rmw_acquire`` is directly followed by the read of its block (a copy from the target) and
every ``tt.rmw_release`` directly preceded by its write-back.
"""

from __future__ import annotations

import tvm
from tvm import tirx
from tvm.sym import Analyzer

from ... import attrs, ops
from ...errors import TTUnsupportedError
from ..common import (buffer_dtype, buffer_scope, collect, inline_binds, launch_attrs, seq,
                      state_vars,
                      stmts_of, substitute, tt_map, tt_pass, uses_var)
from .atomic_groups import group_dims, serial_order, simplify_index


def _kind(atom) -> str:
    """The marker's kind (a string node; TVMScript prints and parses it as one)."""
    return str(getattr(atom.node, "value", atom.node))


def _op_name(atom) -> str:
    return f"T.atomic_{_kind(atom)}"


def _children(stmt):
    if isinstance(stmt, tirx.SeqStmt):
        return list(stmt.seq)
    if isinstance(stmt, tirx.IfThenElse):
        return [s for s in (stmt.then_case, stmt.else_case) if s is not None]
    body = getattr(stmt, "body", None)
    return [body] if isinstance(body, tirx.Stmt) else []


def _atoms_with_ancestors(stmt, path=()):
    if isinstance(stmt, tirx.AttrStmt) and str(stmt.attr_key) == attrs.ATOMIC:
        yield stmt, list(path)
        return
    for child in _children(stmt):
        yield from _atoms_with_ancestors(child, path + (stmt,))


def _accesses(node, buf) -> int:
    n = len(collect(node, tvm.ir.TensorLoad, lambda x: x.source.same_as(buf)))
    n += len(collect(node, tvm.ir.TensorRegion, lambda x: x.source.same_as(buf)))
    n += len(collect(node, tirx.BufferStore, lambda x: x.buffer.same_as(buf)))
    return n


def _block_stores(node, buf) -> list:
    """The ``T.copy(block, buf[...])`` calls under ``node`` (block stores into tensor ``buf``)."""
    return [c for c in collect(node, tirx.TilePrimitiveCall)
            if c.op.name == "tirx.tile.copy" and isinstance(c.args[0], tvm.ir.TensorRegion)
            and c.args[0].source.same_as(buf) and isinstance(c.args[1], tvm.ir.TensorRegion)
            and buffer_scope(c.args[1].source) != "global"]


class _Target:
    """One atomic target: tensor, kind, index per dim with the atomic's loop vars canonical."""

    def __init__(self, atom, loops, binds):
        self.atom = atom
        store = atom.body
        name = _op_name(atom)
        if not isinstance(store, tirx.BufferStore):
            raise TTUnsupportedError(f"{name}: malformed atomic", span=atom.span)
        self.buf, self.kind = store.buffer, _kind(atom)
        self.index = [inline_binds(i, binds) for i in store.indices]
        if any(collect(i, tvm.ir.TensorLoad) for i in self.index):
            raise TTUnsupportedError(
                f"{name}({self.buf.name}[...]): the target index reads tensor data, so which "
                "blocks update the same elements is not known at compile time (a histogram); "
                "compute the result per block and combine it with T.reduce_* instead",
                span=store.span or atom.span)
        loop_vars = [lp.loop_var for lp in loops]
        zero = {v: tirx.IntImm(v.ty.dtype, 0) for v in loop_vars}
        ana = Analyzer()
        self.dim_var = []  # per target dim: the loop variable indexing it, or None
        for idx in self.index:
            base = ana.simplify(substitute(idx, zero))
            rest = ana.simplify(idx - base)
            hit = [v for v in loop_vars if rest.same_as(v)]
            if not hit and not (isinstance(rest, tirx.IntImm) and int(rest) == 0):
                raise self._shared(name)
            self.dim_var.append(hit[0] if hit else None)
        used = [v for v in self.dim_var if v is not None]
        extents = {lp.loop_var: lp.extent for lp in loops}
        for v in loop_vars:
            unit = isinstance(extents[v], tirx.IntImm) and int(extents[v]) == 1
            if used.count(v) > 1 or (used.count(v) == 0 and not unit):
                raise self._shared(name)
        if not used:
            raise TTUnsupportedError(
                f"{name}({self.buf.name}[...]): an atomic on a single element; write it in a "
                "T.Parallel nest over a block (or pass a block: T.atomic_add(B[r, c], block))",
                span=store.span or atom.span)
        self.acc_vars = used  # the acc's dims: the loop vars in the target's dim order
        self.acc_shape = [extents[v] for v in used]
        # canonical form, to recognise atomics on the same region
        canon = {v: tirx.Var(f"c{k}", v.ty.dtype) for k, v in enumerate(used)}
        self.key_index = [substitute(i, canon) for i in self.index]

    def _shared(self, name):
        return TTUnsupportedError(
            f"{name}({self.buf.name}[...]): several iterations of the T.Parallel update one "
            f"element of {self.buf.name} (or the index is not a block offset plus one loop "
            "variable per dimension); reduce the block with T.reduce_sum / reduce_max first "
            "and make the atomic on the result", span=self.atom.body.span or self.atom.span)

    def same_region(self, other) -> bool:
        if not self.buf.same_as(other.buf) or len(self.key_index) != len(other.key_index) \
                or len(self.acc_shape) != len(other.acc_shape):
            return False
        if not all(tvm.ir.structural_equal(a, b) for a, b in zip(self.acc_shape, other.acc_shape)):
            return False
        return all(tvm.ir.structural_equal(a, b, map_free_vars=True)
                   for a, b in zip(self.key_index, other.key_index))


def _parallel_nest(extents, make_body):
    vs = [tirx.Var(f"a{k}", "int32") for k in range(len(extents))]
    stmt = make_body(vs)
    for v, e in reversed(list(zip(vs, extents))):
        stmt = tirx.For(v, tirx.IntImm("int32", 0), e, tirx.ForKind.PARALLEL, stmt)
    return stmt


def _copy_stmts(t: _Target, acc):
    """acc <- target region before the group, target <- acc after it."""
    def target_index(vs):
        sub = dict(zip(t.acc_vars, vs))
        return [substitute(i, sub) for i in t.index]

    span = t.atom.body.span or t.atom.span  # the copies carry the atomic's line
    read = _parallel_nest(t.acc_shape, lambda vs: tirx.BufferStore(
        acc, t.buf[tuple(target_index(vs))], list(vs), span))
    write = _parallel_nest(t.acc_shape, lambda vs: tirx.BufferStore(
        t.buf, acc[tuple(vs)], target_index(vs), span))
    return read, write


def _update(t: _Target, acc):
    """``acc = acc op v`` replacing the marked store ``B[idx] = B[idx] op v``."""
    old = t.atom.body
    target_loads = collect(old.value, tvm.ir.TensorLoad, lambda x: x.source.same_as(t.buf))
    if len(target_loads) != 1:
        raise TTUnsupportedError(
            f"{_op_name(t.atom)}({t.buf.name}[...]): the value reads {t.buf.name}, the tensor "
            "the atomic updates; read it before the kernel instead", span=old.span)
    acc_load = acc[tuple(t.acc_vars)]
    value = tt_map(old.value, [(tvm.ir.TensorLoad,
                                lambda x: acc_load if x.source.same_as(t.buf) else x)])
    return tirx.BufferStore(acc, value, list(t.acc_vars), old.span)


@tt_pass("LowerAtomicsTT", requires=("DropTrueGuardsTT",))
def LowerAtomicsTT(func, mod, ctx):
    if not collect(func.body, tirx.AttrStmt, lambda a: str(a.attr_key) == attrs.ATOMIC):
        return func
    # bounds guards true for every block are gone already (DropTrueGuardsTT)
    binds = {b.var: b.value for b in collect(func.body, tirx.Bind)}
    state = set(state_vars(func.body))  # mutable scalars (A0.1): opaque names here
    atoms = list(_atoms_with_ancestors(func.body))
    launches = launch_attrs(func.body)
    innermost = launches[-1] if launches else None
    for a, b in zip(launches, launches[1:]):
        if not a.body.same_as(b):
            raise TTUnsupportedError("atomics: the T.Kernel launch is not one nest of blockIdx "
                                     "dimensions", span=a.span)
    targets = []
    for atom, path in atoms:
        name = _op_name(atom)
        if innermost is None or not any(p.same_as(innermost) for p in path):
            raise TTUnsupportedError(f"{name}: outside `with T.Kernel(...)`", span=atom.span)
        inside = path[[k for k, p in enumerate(path) if p.same_as(innermost)][0] + 1:]
        loops, serial_loops, guards = [], [], []
        for p in inside:
            if isinstance(p, tirx.For) and p.kind == tirx.ForKind.PARALLEL:
                loops.append(p)
            elif isinstance(p, tirx.For) and p.kind == tirx.ForKind.SERIAL and not loops:
                serial_loops.append(p)  # repeats the update (the target must not use its var)
            elif isinstance(p, (tirx.While, tirx.IfThenElse)) and not loops and state:
                guards.append(p)  # a `while` / `if` of a kernel with mutable scalars (A0.1)
            elif not isinstance(p, tirx.SeqStmt):
                what = "a loop" if isinstance(p, tirx.For) else (
                    "a branch" if isinstance(p, tirx.IfThenElse) else type(p).__name__)
                raise TTUnsupportedError(
                    f"{name}: inside {what}; the backend serialises the blocks that update one "
                    "target and applies their updates once, so an atomic must be in the "
                    "kernel body, a serial loop or a T.Parallel nest, not in a branch",
                    span=atom.body.span or atom.span)
        t = _Target(atom, loops, binds)
        t.nest = loops[0] if loops else None  # the T.Parallel nest the atomic is the body of
        t.moving = [lp for lp in serial_loops if any(
            v.same_as(lp.loop_var) for i in t.index for v in tirx.analysis.undefined_vars(i))]
        if guards:
            # under a `while` or an `if` of a kernel with mutable scalars (stream-K's partial
            # tiles): the block is read, updated and written back where the atomic runs
            if not any(isinstance(g, tirx.While) for g in guards) and not any(
                    v in state for i in t.index for v in tirx.analysis.undefined_vars(i)):
                raise TTUnsupportedError(
                    f"{name}: inside a branch; the backend serialises the blocks that update "
                    "one target and applies their updates once, so an atomic must be in the "
                    "kernel body, a serial loop or a T.Parallel nest, not in a branch (or at a "
                    "target placed by a mutable scalar)", span=atom.body.span or atom.span)
            t.moving = t.moving + guards
        if t.moving:
            _check_moving(t, name)
        targets.append(t)

    plain_stores = []  # T.copy(block, target) beside moving atomics: ordered like write-backs
    # group atomics by target region; one tensor, one region and one kind
    groups: list[list[_Target]] = []
    for t in targets:
        if buffer_scope(t.buf) != "global":
            raise TTUnsupportedError(
                f"{_op_name(t.atom)}({t.buf.name}[...]): atomics on block buffers are not "
                "supported; update the block with an elementwise statement",
                span=t.atom.body.span or t.atom.span)
        same = [g for g in groups if g[0].buf.same_as(t.buf)]
        if same and not (t.same_region(same[0][0]) and t.kind == same[0][0].kind):
            raise TTUnsupportedError(
                f"{_op_name(t.atom)}({t.buf.name}[...]): {t.buf.name} is also updated by "
                f"{_op_name(same[0][0].atom)} on another region or of another kind; one "
                "tensor takes one kind of atomic on one region per block",
                span=t.atom.body.span or t.atom.span)
        if same:
            same[0].append(t)
        else:
            groups.append([t])
    for g in groups:
        if any(t.moving for t in g) and len(g) > 1:
            t = g[1]
            raise TTUnsupportedError(
                f"{_op_name(t.atom)}({t.buf.name}[...]): {t.buf.name} is updated by atomics at "
                "two places, and one of them moves with a loop (its block is read, updated and "
                "written back at every iteration); make one atomic per tensor",
                span=t.atom.body.span or t.atom.span)
        inside = sum(_accesses(t.atom, g[0].buf) for t in g)
        if all(t.moving for t in g):  # block stores beside per-execution read-modify-writes
            stores = _block_stores(func.body, g[0].buf)
            inside += sum(_accesses(c, g[0].buf) for c in stores)
            plain_stores += stores
        if _accesses(func.body, g[0].buf) != inside:
            t = g[0]
            raise TTUnsupportedError(
                f"{_op_name(t.atom)}({t.buf.name}[...]): the kernel also reads or writes "
                f"{t.buf.name} other than through atomics; the atomics' result is only defined "
                "after the kernel", span=t.atom.body.span or t.atom.span)

    dims = group_dims(targets, launches, _describe)
    order = serial_order(dims, [g[0] for g in groups], _describe)
    for t in targets:
        t.index = simplify_index(t.index, dims)
    for g in groups:
        _check_held_index(g[0], order)

    # rewrite: atomics -> acc updates; acc read before the group loop, written after
    accs, replace = [], {}
    for g in groups:
        t0 = g[0]
        acc = tirx.decl_buffer(t0.acc_shape, buffer_dtype(t0.buf), f"{t0.buf.name}_atomic",
                               scope="shared")
        accs.append((t0, acc))
        for t in g:
            replace[t.atom] = _update(t, acc)

    def rewrite(stmt):
        if isinstance(stmt, tirx.AttrStmt) and str(stmt.attr_key) == attrs.ATOMIC:
            for atom, new in replace.items():
                if atom.same_as(stmt):
                    return new
        return stmt

    # a target that moves with a loop: at every iteration, where the atomic is, the reader
    # reads its block (after the writer wrote the previous one back: rmw_acquire), the nest
    # updates it and the writer writes it back (rmw_release after the write's barrier)
    moving = {}
    for t0, acc in accs:
        if t0.moving:
            read, write = _copy_stmts(t0, acc)
            span = t0.atom.body.span or t0.atom.span
            moving[t0.nest] = (read, write, span)

    def rmw(stmt):
        for nest, (read, write, span) in moving.items():
            if stmt.same_as(nest):
                return seq([ops.evaluate("tt.rmw_acquire", span=span), read,
                            _map_stmts(stmt, rewrite), write,
                            ops.evaluate("tt.rmw_release", span=span)])
        return stmt

    def ordered_store(call):
        # a block store into a tensor that moving atomics read back: like their write-backs,
        # the reader's next read-modify-write of the tensor waits for it (the RMW semaphore)
        if any(call.same_as(c) for c in plain_stores):
            return seq([ops.evaluate("tt.rmw_acquire", span=call.span), call,
                        ops.evaluate("tt.rmw_release", span=call.span)])
        return call

    inner = tt_map(innermost.body, [(tirx.For, rmw)], order="pre") if moving else \
        innermost.body
    if plain_stores:
        inner = tt_map(inner, [(tirx.TilePrimitiveCall, ordered_store)], order="post")
    inner = _map_stmts(inner, rewrite)
    # a split launch dimension: v = v_o * G + v_i in the rest of the body
    inner = substitute(inner, {d.var: d.value() for d in dims if d.split})
    body = stmts_of(inner)
    allocs = [s for s in body if isinstance(s, tirx.AllocBuffer)]
    rest = [s for s in body if not isinstance(s, tirx.AllocBuffer)]
    # a held target is read before, and written after, the group loops it does not change with
    reads = [[] for _ in range(len(order) + 1)]
    writes = [[] for _ in range(len(order) + 1)]
    for t0, acc in accs:
        if not t0.moving:
            read, write = _copy_stmts(t0, acc)
            reads[t0.level].append(read)
            writes[t0.level].append(write)
    loop = seq(rest)
    for k in reversed(range(len(order))):
        d = order[k]
        loop = tirx.For(d.inner, tirx.IntImm(d.inner.ty.dtype, 0), d.inner_extent(),
                        tirx.ForKind.SERIAL, seq(reads[k + 1] + [loop] + writes[k + 1]))
    # the accumulators' allocations carry their atomic's line (messages about the block name it)
    acc_allocs = [tirx.AllocBuffer(acc, None, t0.atom.body.span or t0.atom.span)
                  for t0, acc in accs]
    new_inner = seq(allocs + acc_allocs + reads[0] + [loop] + writes[0])

    kept = []
    for d in dims:
        a = d.launch
        if d.inner is None:
            kept.append(a)
        elif d.split:
            iv = tirx.IterVar(tvm.ir.Range(0, d.outer_extent()), d.outer, a.node.iter_type,
                              a.node.thread_tag)
            kept.append(tirx.AttrStmt(iv, a.attr_key, d.outer_extent(), tirx.Evaluate(0),
                                      a.span))
    if not kept:  # every block updates the same target: one block runs them all
        var = tirx.Var(launches[0].node.var.name + "_0", "int32")
        iv = tirx.IterVar(tvm.ir.Range(0, 1), var, tirx.IterVar.ThreadIndex, "blockIdx.x")
        kept = [tirx.AttrStmt(iv, "thread_extent", tirx.IntImm("int32", 1),
                              tirx.Evaluate(0), launches[0].span)]
    new_launch = new_inner
    for a in reversed(kept):
        new_launch = tirx.AttrStmt(a.node, a.attr_key, a.value, new_launch, a.span)
    outer = launches[0]

    def swap(stmt):
        return new_launch if stmt.same_as(outer) else stmt

    return func.with_body(_map_stmts(func.body, swap))


def _describe(t) -> str:
    return f"{_op_name(t.atom)}({t.buf.name}[...])"


def _check_held_index(t: _Target, order) -> None:
    """A held target's index, the split variables substituted, uses no serial group variable
    it was not grouped by (the read before its loops must see the block it writes after)."""
    if t.moving:
        return
    inside = [d.inner for d in order[t.level:]]
    for i in t.index:
        for v in inside:
            if uses_var(i, v):
                raise TTUnsupportedError(
                    f"{_describe(t)}: the target index {i} still changes with {v.name} within "
                    "the group of blocks that update it; write the block index through "
                    "`bx // g` alone", span=t.atom.body.span or t.atom.span)


def _moving_name(node) -> str:
    """A loop variable's name; a `while` or an `if` of mutable scalars (A0.1) described."""
    if isinstance(node, tirx.For):
        return node.loop_var.name
    return "(a `while` loop)" if isinstance(node, tirx.While) else "(an `if` arm)"


def _check_moving(t: _Target, name: str) -> None:
    """An atomic in a loop whose variable its target uses (flash attention backward's
    ``dQ[bz, bx, k * block_N + i, j]``): the block is read, updated and written back at every
    iteration, so the atomic must be the whole body of its ``T.Parallel`` nest (the nest is
    replaced by read, update, write)."""
    where = t.atom.body.span or t.atom.span
    if t.nest is None:
        raise TTUnsupportedError(
            f"{name}({t.buf.name}[...]): an atomic whose target moves with the loop "
            f"{_moving_name(t.moving[0])} must update a block (a T.Parallel nest or the tile "
            "form)", span=where)
    inner = t.nest
    while isinstance(inner, tirx.For) and inner.kind == tirx.ForKind.PARALLEL:
        inner = inner.body
    if not inner.same_as(t.atom):
        raise TTUnsupportedError(
            f"{name}({t.buf.name}[...]): its target moves with the loop "
            f"{_moving_name(t.moving[0])}, so its block is read, updated and written back at "
            "every iteration; the atomic must be the only statement of its T.Parallel nest",
            span=where)


def _map_stmts(stmt, fn):
    return tt_map(stmt, [(tirx.AttrStmt, fn)])
