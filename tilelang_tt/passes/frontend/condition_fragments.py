"""A0.1.4.1 ReadConditionFragmentsFromTensorsTT: a block buffer that only holds a copy of a
tensor region and is read only by single elements in ``if`` conditions is the tensor, read by
element.

Requires: ScalarsToBindTT (scalar assignments are ``Bind``s).

TileLang's block-sparse attention (``examples/blocksparse_attention``) copies one row of its
mask into a fragment, ``T.copy(BlockSparseMask[bz, by, bx, :], block_mask)``, and skips the
K / V steps it turns off: ``if block_mask[k] != 0:``.  A fragment of ``bool`` is no tile, but
every read of it is one element of the tensor region it holds, so the condition can read the
tensor's element instead, which makes the tensor a scalar tensor (``analysis/scalar_reads.py``:
a DRAM buffer of 32-bit words the reader reads the element from and hands to the kernels).

TileLang's ``T.any_of`` tests (``testing/python/language/test_tilelang_language_any_of.py``)
fill such a buffer element by element instead: ``for i in T.serial(n): mask[i] =
BlockMask[by, bx, k, i]``, then ``if T.any_of(mask):`` (``mask[0] or mask[1] or ..``).

Guarantees: a shared, fragment or local buffer ``S`` (not a parameter) that

* is written once, either by a ``T.copy`` of the whole of ``S`` from a region ``G[..]`` of a
  tensor parameter ``G`` of ``S``'s dtype, whose dims of extent other than 1 have, in order,
  the extents of ``S``'s dims other than 1 (not for a local buffer), or by a serial loop
  ``for i in range(n)`` whose body is the one store ``S[i] = G[..]`` (``S`` one-dimensional of
  extent ``n``, ``G`` a tensor parameter of ``S``'s dtype, ``G``'s indices reading no element);
* is read only by element, every read in the condition of an ``if`` outside ``T.Parallel``
  that comes after the copy in program order, inside every loop body and branch arm the copy
  is in (the same iteration reads what it copied; the region's indices are in scope), its
  indices reading no tensor or block buffer element;
* belongs to a launch that writes no element of ``G``

is removed with its copy (or loop), and each read ``S[i0, ..]`` reads ``G`` at the copy's
region start plus the indices (``G[r0 + i0, ..]`` along the mapped dims, ``r`` along the
others; for the loop, the store's value with ``i0`` for ``i``).  The
value is the same: ``S`` has ``G``'s dtype and nothing else writes either.  Any other buffer
is left as it is (a bool or integer block buffer is then refused by the later stages, naming
it).  Decided from the IR of the buffer's accesses only.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ..analysis.scalar_reads import tvm_walk_pre
from ..common import (buffer_dtype, buffer_scope, buffer_shape, collect, seq, substitute, tt_map,
                      tt_pass)

_SCOPES = ("shared", "shared.dyn", "local.fragment")
_LOOP_SCOPES = _SCOPES + ("local",)
_NOOP = tirx.Evaluate(tirx.IntImm("int32", 0))


def _regions(call) -> list:
    return [a for a in call.args if isinstance(a, tvm.ir.TensorRegion)]


def _ext(r):
    return int(r.extent) if isinstance(r.extent, tirx.IntImm) else None


def _is_whole(region, buf) -> bool:
    return all(isinstance(r.min, tirx.IntImm) and int(r.min) == 0 and _ext(r) == s
               for r, s in zip(region.region, buffer_shape(buf)))


class _Candidate:
    """A buffer ``S`` whose reads can read the tensor it was copied from (``copy``: the
    ``tile.copy`` that writes it, or the serial loop of element stores)."""

    def __init__(self, buf, copy):
        self.buf, self.copy = buf, copy
        if isinstance(copy, tirx.For):
            self.src = None
            return
        self.src = _regions(copy)[1]
        shape = buffer_shape(buf)
        self.mine = [d for d, s in enumerate(shape) if s != 1]
        self.theirs = [d for d, r in enumerate(self.src.region) if _ext(r) != 1]

    def element(self, load):
        """The read of ``G`` that ``load`` (an element of ``S``) is."""
        if self.src is None:
            return substitute(self.copy.body.value, {self.copy.loop_var: load.indices[0]})
        at = [r.min for r in self.src.region]
        for mine, theirs in zip(self.mine, self.theirs):
            at[theirs] = at[theirs] + load.indices[mine]
        return self.src.source[tuple(at)]


def _condition_loads(body) -> tuple[list, list]:
    """(element loads in ``if`` conditions outside ``T.Parallel``, in program order; every
    statement in program order)."""
    loads, order = [], []

    def visit(node):
        order.append(node)
        if isinstance(node, tirx.For) and node.kind == tirx.ForKind.PARALLEL:
            return False
        if isinstance(node, tirx.IfThenElse):
            loads.extend((ld, node) for ld in collect(node.condition, tvm.ir.TensorLoad))
        return True

    tvm_walk_pre(body, visit)
    return loads, order


def _candidates(func) -> list:
    body = func.body
    params = [p for p in func.params if tirx.is_buffer_var(p)]
    calls = collect(body, tirx.TilePrimitiveCall)
    stores = collect(body, tirx.BufferStore)
    # the statements loops and branch arms run: the copy's must all run the reads too
    arms = [x for n in collect(body, (tirx.For, tirx.IfThenElse))
            for x in ([n.body] if isinstance(n, tirx.For) else [n.then_case, n.else_case])
            if x is not None]

    def holds(stmt, node):
        return any(node.same_as(x) for x in collect(stmt, type(node)))
    cond_loads, order = _condition_loads(body)

    def position(stmt):
        return next(i for i, s in enumerate(order) if s.same_as(stmt))

    def writes(buf):
        return [c for c in calls if _regions(c) and _regions(c)[0].source.same_as(buf)] + \
            [s for s in stores if s.buffer.same_as(buf)]

    def loop_copy(S, store):
        """The serial loop ``for i in range(n): S[i] = G[..]`` whose body is ``store``."""
        loop = next((f for f in collect(body, tirx.For) if f.body.same_as(store)), None)
        shape = buffer_shape(S)
        if loop is None or loop.kind not in (tirx.ForKind.SERIAL, tirx.ForKind.UNROLLED) or \
                not (isinstance(loop.min, tirx.IntImm) and int(loop.min) == 0) or \
                len(shape) != 1 or _ext(loop) != shape[0] or len(store.indices) != 1 or \
                not store.indices[0].same_as(loop.loop_var) or \
                not isinstance(store.value, tvm.ir.TensorLoad):
            return None
        if any(collect(i, tvm.ir.TensorLoad) for i in store.value.indices):
            return None
        return loop

    out = []
    for alloc in collect(body, tirx.AllocBuffer):
        S = alloc.buffer
        if buffer_scope(S) not in _LOOP_SCOPES or any(S.same_as(p) for p in params):
            continue
        loads = collect(body, tvm.ir.TensorLoad, lambda ld: ld.source.same_as(S))
        if not loads:
            continue
        w = writes(S)
        if len(w) != 1:
            continue
        if isinstance(w[0], tirx.BufferStore):
            copy = loop_copy(S, w[0])
            if copy is None:
                continue
            G = w[0].value.source
        else:
            copy = w[0]
            regions = _regions(copy)
            if buffer_scope(S) not in _SCOPES or copy.op.name != "tirx.tile.copy" or \
                    not _is_whole(regions[0], S):
                continue
            G = regions[1].source
        if not any(G.same_as(p) for p in params) or buffer_dtype(G) != buffer_dtype(S) or \
                writes(G):
            continue
        # no other tile op reads S (the copy writes it)
        if any(r.source.same_as(S) for c in calls for r in _regions(c)[1:]):
            continue
        cand = _Candidate(S, copy)
        if cand.src is not None and [buffer_shape(S)[d] for d in cand.mine] != \
                [_ext(regions[1].region[d]) for d in cand.theirs]:
            continue
        at = position(copy)
        in_conds = [(ld, n) for ld, n in cond_loads if ld.source.same_as(S)]
        if len(in_conds) != len(loads) or any(position(n) < at for _, n in in_conds):
            continue
        if any(holds(a, copy) and not holds(a, n) for a in arms for _, n in in_conds):
            continue  # a read the copy's loop iteration or branch arm does not run
        if any(collect(i, tvm.ir.TensorLoad) for ld in loads for i in ld.indices):
            continue
        out.append(cand)
    return out


def read_condition_fragments(func):
    """``func`` with the buffers the module docstring describes read from their tensors."""
    cands = _candidates(func)
    if not cands:
        return func

    def find(buf):
        return next((c for c in cands if buf.same_as(c.buf)), None)

    def condition(s):
        loads = collect(s.condition, tvm.ir.TensorLoad, lambda ld: find(ld.source) is not None)
        if not loads:
            return s
        cond = tt_map(s.condition, [(tvm.ir.TensorLoad, lambda ld: find(ld.source).element(ld)
                                     if find(ld.source) is not None else ld)])
        return tirx.IfThenElse(cond, s.then_case, s.else_case, s.span)

    def call(c):
        return _NOOP if any(c.same_as(x.copy) for x in cands) else c

    def alloc(a):
        return _NOOP if find(a.buffer) is not None else a

    # the copy loops go first (pre-order: before their bodies change)
    body = tt_map(func.body, [(tirx.For, call)], order="pre")
    body = tt_map(body, [(tirx.IfThenElse, condition), (tirx.TilePrimitiveCall, call),
                         (tirx.AllocBuffer, alloc)], order="post")
    body = tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")
    return func.with_body(body)


@tt_pass("ReadConditionFragmentsFromTensorsTT", requires=("ScalarsToBindTT",))
def ReadConditionFragmentsFromTensorsTT(func, mod, ctx):
    """Block buffers copied from a tensor and read only by element in ``if`` conditions ->
    element reads of the tensor (see module docstring)."""
    return read_condition_fragments(func)
