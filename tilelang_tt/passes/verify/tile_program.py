"""V0 VerifyTileProgramTT: the tile program is one the device can run.

Requires: VersionBlockBuffersTT (the frontend phase is done: every access to a global tensor
is a ``tile.copy`` between it and a block buffer).

**Legality.**  Element assignments and element reads left outside ``T.Parallel`` (an index or
a condition read from a buffer), and allocations in scopes other than ``shared`` and
``local.fragment``, are ``TTUnsupportedError`` naming the buffer and the line.

**Dependencies through global memory** are ordered, or rejected.

A Tensix program moves global data in two kernels that run concurrently and never wait for
each other: the reader (every ``copy(block <- global)``) and the writer (every ``copy(global
<- block)``); and the blocks of the launch grid run on different cores, or one after the
other on one core with the reader running ahead.  So for a tensor the kernel both reads and
writes, or that several blocks write:

* **another block** - a block that reads or writes a part of a tensor some other block
  writes races with it: ``TTCompileError`` naming the tensor, both source lines and the
  block index that separates them (``bx``...);
* **same block, read after write** - the reader may read the pages before the writer stored
  them: ``TTUnsupportedError`` naming the tensor and both lines (keep the value in the
  block buffer that was written instead of reading it back);
* **same block, write after read** - ordered when the value written depends on the value
  read (the compute kernel waits for the read block before it produces the written one), or
  on another read the reader kernel issues after it (in the write's loops; the reader reads
  in program order: ``B[i] = A[i] / 2; A[i] = A[i] * 2`` in one ``T.Parallel`` body reads
  ``A`` once per statement), else rejected like a read after write.

* **an atomic's read-modify-write** (A0.1.1: a read right after ``tt.rmw_acquire``, the
  write right before ``tt.rmw_release``) - a later such read of what such a write stored is
  ordered: the reader waits for the writer's previous write-back on the core (D3).

Loops are exact: an access in a later iteration of a common loop is an access after.
Regions are compared symbolically with TVM's arithmetic analyzer (block indices and loop
variables ranging over their extents; ``x = ...`` bindings seen through; disjoint in one dim,
or in a pair of dims numbered as one: ``_disjoint_in_pairs``), so the check does
not grow with the grid; when the analyzer cannot separate two blocks and the grid is small,
the blocks are compared one by one.

Guarantees: the function is unchanged.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import tvm
import tvm_ffi
from tvm import tirx
from tvm.sym import Analyzer

from ... import attrs, ops
from ...errors import TTCompileError, TTUnsupportedError, describe_span
from ..common import (buffer_scope, buffer_shape, collect, is_state_decl,
                      substitute, tt_pass, uses_var)
from ..analysis.scalar_reads import scalar_tensors

_ENUMERATE_BLOCKS = 16  # grids up to this many blocks are compared block by block


@dataclass
class _Access:
    write: bool
    tensor: object  # the global buffer
    region: list  # [(min, extent)] per dimension, bindings substituted
    loops: list  # enclosing For nodes, outermost first
    order: int  # position in program order
    block_buf: object  # the block buffer read into / written from
    span: object = None
    # a read right after ``tt.rmw_acquire`` / a write right before ``tt.rmw_release``: an
    # atomic's per-iteration read-modify-write (A0.1.1), the read waits for the write-back
    rmw: bool = False
    # a store at rows placed by a tensor element under a row guard (TileLang's variable-length
    # rows, ``if bx * BM + i < len: Out[cu[b] + bx * BM + i, ..] = ..``): the guard, on data,
    # chooses the rows each block stores (C1 / D3 write only those)
    rows_by_data: bool = False
    state: bool = False  # a region at offsets from mutable scalars (A0.1)

    def where(self) -> str:
        return describe_span(self.span) or "(no source line)"

    def text(self) -> str:
        ana = Analyzer()
        dims = ", ".join(f"{m}:{ana.simplify(m + e)}" if not _is_const(e, 1) else f"{m}"
                         for m, e in self.region)
        return f"{self.tensor.name}[{dims}]"


def _is_const(e, v) -> bool:
    return isinstance(e, tvm.tirx.IntImm) and int(e.value) == v


class _Collector:
    def __init__(self):
        self.accesses: list[_Access] = []
        self.block_vars: list = []  # (var, extent)
        self.edges: list = []  # (source block buffer, destination block buffer)
        self.order = 0
        self.state: set = set()  # the mutable scalars (A0.1)

    def visit(self, stmt, loops, binds):
        if isinstance(stmt, tirx.SeqStmt):
            binds = dict(binds)
            seq_ = list(stmt.seq)
            for k, s in enumerate(seq_):
                if isinstance(s, tirx.Bind) and is_state_decl(s.value):
                    self.state.add(s.var)
                elif isinstance(s, tirx.Bind):
                    binds[s.var] = substitute(s.value, binds)
                before = len(self.accesses)
                self.visit(s, loops, binds)
                if isinstance(s, tirx.TilePrimitiveCall):
                    prev = _tt_name(seq_[k - 1]) if k else None
                    nxt = _tt_name(seq_[k + 1]) if k + 1 < len(seq_) else None
                    for acc in self.accesses[before:]:
                        acc.rmw = (prev == "tt.rmw_acquire" and not acc.write) or \
                            (nxt == "tt.rmw_release" and acc.write)
        elif isinstance(stmt, tirx.For):
            self.visit(stmt.body, loops + [stmt], binds)
        elif isinstance(stmt, tirx.While):
            # a loop over mutable scalars (A0.1): its iterations are a loop whose variable no
            # region uses (the scalars are the same names in every iteration)
            it = tirx.Var("while_iteration", "int32")
            self.visit(stmt.body, loops + [tirx.For(it, tirx.IntImm("int32", 0),
                                                     tirx.IntImm("int32", 1 << 30),
                                                     tirx.ForKind.SERIAL, stmt.body)], binds)
        elif isinstance(stmt, tirx.IfThenElse):
            self.visit(stmt.then_case, loops, binds)
            if stmt.else_case is not None:
                self.visit(stmt.else_case, loops, binds)
        elif isinstance(stmt, tirx.AttrStmt):
            if str(stmt.attr_key) == "thread_extent":
                self.block_vars.append((stmt.node.var, stmt.value))
            self.visit(stmt.body, loops, binds)
        elif isinstance(stmt, tirx.TilePrimitiveCall):
            self.call(stmt, loops, binds)

    def call(self, call, loops, binds):
        regions = [a for a in call.args if isinstance(a, tvm.ir.TensorRegion)]
        if not regions:
            return
        dst, srcs = regions[0], regions[1:]
        for s in srcs:
            self.edges.append((s.source, dst.source))
        self.order += 1
        if call.op.name != "tirx.tile.copy" or len(srcs) != 1:
            return
        src = srcs[0]
        for region, write, block in ((dst, True, src.source), (src, False, dst.source)):
            if buffer_scope(region.source) != "global":
                continue
            ranges = [(substitute(r.min, binds), substitute(r.extent, binds))
                      for r in region.region]
            by_data = write and (call.config or {}).get(attrs.ROW_GUARD) is not None and \
                any(collect(m, tvm.ir.TensorLoad) for m, _ in ranges)
            state = any(v in self.state for m, e in ranges
                        for v in tirx.analysis.undefined_vars(m + e))
            self.accesses.append(_Access(write, region.source, ranges, list(loops),
                                         self.order, block, call.span,
                                         rows_by_data=bool(by_data), state=state))


def _tt_name(stmt):
    return ops.tt_op_name(stmt.value) if isinstance(stmt, tirx.Evaluate) else None


def _depends(edges, written_from, read_into) -> bool:
    """The block buffer ``written_from`` is computed from ``read_into`` (transitively)."""
    seen, todo = set(), [read_into]
    while todo:
        b = todo.pop()
        if b.same_as(written_from):
            return True
        for s, d in edges:
            if s.same_as(b) and not any(d.same_as(x) for x in seen):
                seen.add(d)
                todo.append(d)
    return False


class _Prover:
    """Disjointness of two accesses under constraints, with fresh copies of the second
    access's loop (and, across blocks, block) variables."""

    def __init__(self, block_vars):
        self.block_vars = block_vars

    def analyzer(self, bound):
        ana = Analyzer()
        for var, lo, ext in bound:
            ana.bind(var, tvm.ir.Range.from_min_extent(lo, ext))
        return ana

    def disjoint(self, a: _Access, b: _Access, shared_loops: int, later_at: int | None,
                 earlier: bool, block_sep: int | None, equal=()) -> bool:
        """Can it be proved that ``a`` and ``b`` touch disjoint elements when ``b`` runs in
        the same iterations of the first ``shared_loops`` common loops as ``a`` (and, with
        ``later_at = j``, in a later - or with ``earlier``, an earlier - iteration of common
        loop ``j``), in the same block (``block_sep`` None) or in a block whose index
        ``block_sep`` is greater (``earlier``: smaller) and whose indices ``equal`` are the
        same?  The other block's index ``block_sep`` is written ``v + 1 + gap`` (``v - 1 -
        gap``), so bounds arithmetic sees the distance of the two blocks."""
        fresh, bound, constraints = {}, [], []
        for var, ext in self.block_vars:
            bound.append((var, 0, ext))
        if block_sep is not None:
            for k, (var, ext) in enumerate(self.block_vars):
                if k in equal:
                    continue
                if k == block_sep:
                    gap = tirx.Var(f"{var.name}_gap", var.ty)
                    bound.append((gap, 0, ext - 1))
                    fresh[var] = var - 1 - gap if earlier else var + 1 + gap
                    constraints.append(fresh[var] >= 0 if earlier else fresh[var] < ext)
                    continue
                copy = tirx.Var(f"{var.name}_other", var.ty)
                fresh[var] = copy
                bound.append((copy, 0, ext))
        for loop in a.loops:
            bound.append((loop.loop_var, loop.min, loop.extent))
        for depth, loop in enumerate(b.loops):
            shared = block_sep is None and depth < shared_loops and later_at != depth
            if shared:
                continue
            copy = tirx.Var(f"{loop.loop_var.name}_other", loop.loop_var.ty)
            fresh[loop.loop_var] = copy
        for loop in b.loops:
            if loop.loop_var in fresh:
                bound.append((fresh[loop.loop_var], substitute(loop.min, fresh),
                               substitute(loop.extent, fresh)))
        if later_at is not None:
            var = b.loops[later_at].loop_var
            constraints.append(fresh[var] < var if earlier else fresh[var] > var)
        ana = self.analyzer(bound)
        cond = tirx.const(True, "bool")
        for c in constraints:
            cond = tirx.And(cond, c)
        with ana.constraint_scope(cond):
            b_region = [(substitute(bm, fresh), substitute(be, fresh)) for bm, be in b.region]
            for (am, ae), (bm, be) in zip(a.region, b_region):
                if ana.can_prove(am + ae <= bm) or ana.can_prove(bm + be <= am):
                    return True
            return _disjoint_in_pairs(ana, buffer_shape(a.tensor), a.region, b_region)


def _disjoint_in_pairs(ana, shape, a_region, b_region) -> bool:
    """Two regions disjoint in a pair of dims ``(i, k)`` taken as one: where both take one
    index in dim ``i`` and stay inside the tensor in dim ``k`` (size ``S``), the pair's
    elements are the interval ``[m_i * S + m_k, ... + extent_k)`` of a one-to-one numbering,
    and regions disjoint in some of their dims are disjoint - TileLang's ``X[by // H, ...,
    by % H, ...]`` (batch and head of one block index) is ``by`` there."""
    for i, k in itertools.permutations(range(len(shape)), 2):
        size = shape[k]
        if not isinstance(size, int):
            continue
        (am, ae), (an, an_e) = a_region[i], a_region[k]
        (bm, be), (bn, bn_e) = b_region[i], b_region[k]
        if not all(ana.can_prove(c) for c in (ae == 1, be == 1, an + an_e <= size,
                                                bn + bn_e <= size, an >= 0, bn >= 0)):
            continue
        a_lin, b_lin = _pair_index(am, an, size), _pair_index(bm, bn, size)
        if ana.can_prove(a_lin + an_e <= b_lin) or ana.can_prove(b_lin + bn_e <= a_lin):
            return True
    return False


def _pair_index(outer, inner, size):
    """``outer * size + inner``; ``e`` itself for ``e // size, e % size`` (the analyzer does not
    always fold that back when ``e`` may be negative)."""
    if isinstance(outer, tirx.FloorDiv) and isinstance(inner, tirx.FloorMod) and \
            all(isinstance(c, tvm.tirx.IntImm) and int(c) == size for c in (outer.b, inner.b)) \
            and tvm_ffi.structural_equal(outer.a, inner.a):
        return outer.a
    return outer * size + inner


def _common_loops(a: _Access, b: _Access) -> int:
    n = 0
    for x, y in zip(a.loops, b.loops):
        if not x.same_as(y):
            break
        n += 1
    return n


def _blocks_overlap(prover: _Prover, w: _Access, x: _Access, sep: int) -> bool:
    """Concrete check for small grids: some pair of blocks differing in block index
    ``sep`` touches common elements (loop variables still range symbolically)."""
    vars_, extents = zip(*prover.block_vars)
    exts = [int(e) for e in extents]
    points = list(itertools.product(*[range(e) for e in exts]))
    for p in points:
        for q in points:
            if p[sep] == q[sep]:
                continue
            a = _at(w, dict(zip(vars_, p)), "")
            b = _at(x, dict(zip(vars_, q)), "_other")
            if not _Prover([]).disjoint(a, b, 0, None, False, None):
                return True
    return False


def _at(acc: _Access, values: dict, suffix: str) -> _Access:
    """``acc`` with the block indices fixed (and its loops renamed by ``suffix``)."""
    mapping = {v: tirx.IntImm(v.ty, int(c)) for v, c in values.items()}
    region = [(substitute(m, mapping), substitute(e, mapping)) for m, e in acc.region]
    loops = []
    for loop in acc.loops:
        loops.append(tirx.For(loop.loop_var, substitute(loop.min, mapping),
                              substitute(loop.extent, mapping), loop.kind,
                              tirx.Evaluate(0)))
    if suffix:
        rename = {lp.loop_var: tirx.Var(lp.loop_var.name + suffix, lp.loop_var.ty)
                  for lp in loops}
        region = [(substitute(m, rename), substitute(e, rename)) for m, e in region]
        loops = [tirx.For(rename[lp.loop_var], substitute(lp.min, rename),
                          substitute(lp.extent, rename), lp.kind, tirx.Evaluate(0))
                 for lp in loops]
    return _Access(acc.write, acc.tensor, region, loops, acc.order, acc.block_buf, acc.span)


def _check_cross_block(prover, w: _Access, x: _Access):
    if w.state or x.state:
        # a region at offsets from mutable scalars (A0.1): each block has its own copy of
        # them, a value of its own history that the analyzer does not model; which blocks'
        # regions meet is the program's own arithmetic (stream-K's partition of the
        # iterations), not checked here (docs/SUPPORT.md "Scalars carried across loops")
        return
    if w.rows_by_data and x.rows_by_data:
        # which rows each block stores is data (its row guard): the blocks' rows are disjoint
        # when the offsets and lengths are (TileLang's cu_seqlens, nondecreasing), which the
        # compiler cannot see
        return
    extents = [e for _, e in prover.block_vars]
    if not all(isinstance(e, tvm.tirx.IntImm) for e in extents):
        return  # symbolic grids are rejected by the work partition
    placing = _data_placing_dims(prover, w, x)
    if placing and _segmented(prover, w, x, placing):
        # regions placed by tensor elements that depend on block indices, within which other
        # block indices step (TileLang's `Output[cu_seqlens[bz] + bx * 64 ...]`: segments):
        # blocks that read different elements meet or not by the data (nondecreasing
        # offsets, which the compiler cannot see, as for row guards above); blocks that read
        # the same elements are checked.  A region the elements alone place (a scatter
        # `O[Dst[bx] * 32 ...]`) is checked as any other: duplicates would race
        for k, (var, ext) in enumerate(prover.block_vars):
            if int(ext) <= 1 or k in placing:
                continue
            if not all(prover.disjoint(w, x, 0, None, earlier, k, equal=placing)
                       for earlier in (False, True)):
                _race(w, x, var)
        return
    num_blocks = 1
    for ext in extents:
        num_blocks *= int(ext)
    # any two distinct blocks differ first (in some order of the block indices) at one index:
    # disjoint for every index, the earlier ones equal, in one order proves them all disjoint
    n = len(prover.block_vars)
    for order in (list(range(n)), list(reversed(range(n)))):
        if all(int(prover.block_vars[k][1]) <= 1 or
               all(prover.disjoint(w, x, 0, None, earlier, k, equal=order[:pos])
                   for earlier in (False, True))
               for pos, k in enumerate(order)):
            return
    for k, (var, ext) in enumerate(prover.block_vars):
        if int(ext) <= 1:
            continue
        if all(prover.disjoint(w, x, 0, None, earlier, k) for earlier in (False, True)):
            continue
        if num_blocks <= _ENUMERATE_BLOCKS and not _blocks_overlap(prover, w, x, k):
            continue
        _race(w, x, var)


def _data_placing_dims(prover, w: _Access, x: _Access) -> list:
    """Positions of the block indices that the tensor elements placing ``w``'s or ``x``'s
    region are indexed by (``bz`` of ``cu_seqlens[bz]``)."""
    used = []
    for acc in (w, x):
        for m, e in acc.region:
            for ld in collect(m + e, tvm.ir.TensorLoad):
                for idx in ld.indices:
                    used += [k for k, (var, _) in enumerate(prover.block_vars)
                             if uses_var(idx, var) and k not in used]
    return sorted(used)


def _segmented(prover, w: _Access, x: _Access, placing) -> bool:
    """Both regions also use a block index of more than one block that places no element
    (``bx`` of ``cu[bz] + bx * 64``) outside their element reads."""
    def plain(acc):
        free = set()
        for m, e in acc.region:
            bare = tvm_ffi.structural_map(m + e, [(tvm.ir.TensorLoad,
                                                   lambda ld: tirx.IntImm("int32", 0))],
                                          order="post")
            free |= {k for k, (var, ext) in enumerate(prover.block_vars)
                     if k not in placing and int(ext) > 1 and uses_var(bare, var)}
        return free

    return bool(plain(w)) and bool(plain(x))


def _race(w: _Access, x: _Access, var):
    other = "writes" if x.write else "reads"
    same = w is x
    what = (f"{w.where()} writes {w.text()} in every block; blocks that differ only in "
            f"{var.name} write the same elements" if same else
            f"{w.where()} writes {w.text()} and {x.where()} {other} {x.text()}; blocks "
            f"that differ in {var.name} touch the same elements")
    raise TTCompileError(
        f"blocks race on tensor {w.tensor.name}: {what}, and blocks run in no particular "
        "order (on different cores, or with one core's reader running ahead of its "
        "writer)", hint=f"make each block read and write its own part of {w.tensor.name}, "
        f"indexed by {var.name}")


def _waits_for_later_read(accesses, edges, w: _Access, x: _Access, same_iteration) -> bool:
    """``w``'s block is computed from a read ``y`` the reader kernel issues after ``x`` (``y``
    in ``w``'s loops; in the same iteration, after ``x`` in program order): the reader reads
    in program order, so ``x`` is done before ``w`` can be written."""
    for y in accesses:
        if y.write or y is x or len(y.loops) != len(w.loops) or \
                _common_loops(y, w) != len(w.loops):
            continue
        if same_iteration and y.order < x.order:
            continue
        if _depends(edges, w.block_buf, y.block_buf):
            return True
    return False


def _check_same_block(prover, edges, w: _Access, x: _Access, accesses=()):
    common = _common_loops(w, x)
    # (b later than a?, shared loops, later_at, earlier)
    scenarios = [(x.order > w.order, common, None, False)]
    for j in range(common):
        scenarios += [(True, j + 1, j, False), (False, j + 1, j, True)]
    for after, shared, later_at, earlier in scenarios:
        if not after and _depends(edges, w.block_buf, x.block_buf):
            continue  # the write waits for what it was computed from
        if not after and _waits_for_later_read(accesses, edges, w, x, later_at is None):
            continue  # ... which the reader read after x
        if after and w.rmw and x.rmw:
            continue  # the read waits for the core's previous write-backs (tt.rmw_acquire)
        if not after and w.rmw and x.rmw:
            # an atomic's read, then a later write-back or ordered block store (A0.1.1): the
            # compute kernel updates the read block where it stands, before it produces
            # anything later in program order, so the written block comes after the read
            continue
        if prover.disjoint(w, x, shared, later_at, earlier, None):
            continue
        if after:
            raise TTUnsupportedError(
                f"tensor {w.tensor.name} is written at {w.where()} and read back at "
                f"{x.where()} in the same block; the reader kernel does not wait for the "
                "writer's stores, so it could read the old values",
                hint=f"use the block buffer that was copied into {w.tensor.name} instead of "
                "reading it back from global memory")
        raise TTUnsupportedError(
            f"tensor {w.tensor.name} is read at {x.where()} and overwritten at {w.where()} in "
            "the same block, with a value that does not depend on what was read; the writer "
            "kernel does not wait for the reader, so it could overwrite the elements first",
            hint="write the new values to another tensor")


def _enclosing_span(body, node):
    """The span of the innermost statement holding ``node`` that has one (a region bound
    ``x[a:b]`` read from a variable has none of its own)."""
    found = None
    for stmt in collect(body, tirx.Stmt, lambda st: getattr(st, "span", None) is not None):
        if any(x.same_as(node) for x in collect(stmt, type(node))):
            found = stmt.span  # pre-order: later finds are nested deeper
    return found


def _check_legal(body, scalar_loads=()):
    for store in collect(body, tirx.BufferStore):
        raise TTUnsupportedError(
            f"element assignment to {store.buffer.name} outside an elementwise T.Parallel "
            "nest is not supported", span=store.span)
    for element in collect(body, tvm.ir.TensorLoad):
        if any(element.same_as(x) for x in scalar_loads):
            continue  # a scalar tensor's element in a condition (analysis/scalar_reads.py)
        raise TTUnsupportedError(
            f"element read of {element.source.name}[...] in an index or control expression is not "
            "supported; use block indices and loop variables",
            span=getattr(element, "span", None) or _enclosing_span(body, element))
    for alloc in collect(body, tirx.AllocBuffer):
        if buffer_scope(alloc.buffer) not in ("shared", "local.fragment"):
            raise TTUnsupportedError(
                f"allocation {alloc.buffer.name} in scope {buffer_scope(alloc.buffer)} is not "
                "supported (use T.alloc_shared or T.alloc_fragment)", span=alloc.span)


@tt_pass("VerifyTileProgramTT", requires=("VersionBlockBuffersTT",))
def VerifyTileProgramTT(func, mod, ctx):
    """Reject what the device cannot run: element accesses outside T.Parallel, other memory
    scopes, unordered dependencies through global memory (see module docstring)."""
    _check_legal(func.body, [x for loads in scalar_tensors(func, refuse=False).values()
                             for x in loads])
    col = _Collector()
    col.visit(func.body, [], {})
    prover = _Prover([(v, e) for v, e in col.block_vars])
    by_tensor = {}
    for acc in col.accesses:
        by_tensor.setdefault(acc.tensor, []).append(acc)
    for accesses in by_tensor.values():
        writes = [a for a in accesses if a.write]
        for w in writes:
            for x in accesses:
                if x.write and x.order < w.order:
                    continue  # each pair of writes once
                _check_cross_block(prover, w, x)
                if not x.write:
                    _check_same_block(prover, col.edges, w, x, col.accesses)
    return func
