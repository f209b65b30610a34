"""A serial loop folding elements into one destination element per ``T.Parallel`` iteration,
as an elementwise nest and a tile reduction (part of A0.2, LowerParallelToTileTT).

TileLang programs write a row reduction as a serial loop inside a ``T.Parallel`` loop::

    for i in T.Parallel(M):
        for j in T.serial(N):
            s[i] += A_local[i, j] * A_local[i, j]      # or s[i] = T.max(s[i], e)

Iteration ``i`` folds the ``N`` values ``e(i, j)`` into ``s[i]`` with ``+``, ``max`` or
``min``, which is ``T.reduce_sum / max / min(terms, s, dim=1, clear=False)`` of the block
``terms[i, j] = e(i, j)``.  :func:`fold_as_reduction` makes that rewrite when the structure
says so (decided from the IR only):

* the ``T.Parallel`` nest has one loop ``i`` and its body is bindings then one loop ``j``
  (serial, from 0, a constant extent);
* that loop's body is bindings (seen through) then ``d[i] = d[i] op e`` (either operand
  order) with ``d`` a 1-D block buffer (shared or fragment) indexed by exactly ``i``, ``op``
  one of ``+``, ``T.max``, ``T.min``, and ``e`` using ``j`` and not reading ``d``.

Guarantees: the result is ``AllocBuffer(terms)``, a ``T.Parallel`` nest over ``(i, j)``
storing ``e`` (after the ``T.Parallel`` body's bindings; the loop's own substituted) into the
new ``[M, N]`` fragment ``terms`` of ``d``'s dtype, and the reduction along dim 1 with
``clear=False``, each carrying the store's line;
A0.2 then lowers the new nest as any other and A0.3 legalises the reduction.  Anything else is
left as it was (A0.2 names it, with the reduction to write when it is a fold it cannot take).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ..common import (
    buffer_dtype, buffer_scope, buffer_shape, collect, int_or_none, seq, stmts_of, substitute,
    uses_var, with_tile_span,
)

_COMBINE = ((tirx.Add, "Sum"), (tirx.Max, "Max"), (tirx.Min, "Min"))


def fold_of(store: tirx.BufferStore, var=None):
    """(reduction operator name, folded value) when ``store`` is ``d[I] = d[I] op e`` with
    ``e`` not reading ``d`` (and using ``var``, when given); else None."""
    for kind, name in _COMBINE:
        v = store.value
        if not isinstance(v, kind):
            continue
        for own, other in ((v.a, v.b), (v.b, v.a)):
            if isinstance(own, tvm.ir.TensorLoad) and own.source.same_as(store.buffer) and \
                    tvm_ffi.structural_equal(list(own.indices), list(store.indices)) and \
                    (var is None or uses_var(other, var)) and not any(
                        ld.source.same_as(store.buffer)
                        for ld in collect(other, tvm.ir.TensorLoad)):
                return name, other
    return None


def _bound_store(body):
    """The store a loop body ends with, its bindings before it (`v = A[i, j]`) seen through;
    None unless the body is bindings then one store."""
    stmts = stmts_of(body)
    store = stmts[-1] if stmts else None
    if not isinstance(store, tirx.BufferStore) or \
            not all(isinstance(s, tirx.Bind) for s in stmts[:-1]):
        return None
    mapping = {}
    for bnd in stmts[:-1]:
        mapping[bnd.var] = substitute(bnd.value, mapping)
    return substitute(store, mapping)


def fold_as_reduction(loop: tirx.For, fresh):
    """The statements replacing the ``T.Parallel`` loop ``loop`` (see module docstring), or
    None when its body is not such a fold.  ``fresh(stem)`` names the new buffer."""
    if loop.kind != tirx.ForKind.PARALLEL or int_or_none(loop.min) != 0:
        return None
    i = loop.loop_var
    outer = stmts_of(loop.body)
    inner_loop = outer[-1] if outer else None
    if not isinstance(inner_loop, tirx.For) or inner_loop.kind != tirx.ForKind.SERIAL or \
            int_or_none(inner_loop.min) != 0 or int_or_none(inner_loop.extent) is None or \
            int_or_none(loop.extent) is None:
        return None
    if not all(isinstance(s, tirx.Bind) for s in outer[:-1]):
        return None
    j = inner_loop.loop_var
    store = _bound_store(inner_loop.body)
    if store is None:
        return None
    dst = store.buffer
    if buffer_scope(dst) not in ("shared", "local.fragment") or len(buffer_shape(dst)) != 1 \
            or len(store.indices) != 1 or not store.indices[0].same_as(i):
        return None
    folded = fold_of(store, j)
    if folded is None:
        return None
    op_name, value = folded
    m, n = int_or_none(loop.extent), int_or_none(inner_loop.extent)
    terms = tirx.decl_buffer([m, n], buffer_dtype(dst), fresh(f"{dst.name}_terms"),
                             scope="local.fragment")
    body = seq(list(outer[:-1]) + [tirx.BufferStore(terms, value, [i, j], span=store.span)])
    nest = tirx.For(i, 0, m, tirx.ForKind.PARALLEL,
                    tirx.For(j, 0, n, tirx.ForKind.PARALLEL, body, span=inner_loop.span),
                    span=loop.span)
    import tvm.tirx.operator as tirx_op

    reduce = getattr(tirx_op, op_name)(dst[0:m], terms[0:m, 0:n], (1,), True, workspace={},
                                       config={}, dispatch=None, scope=None)
    return [tirx.AllocBuffer(terms, span=store.span), nest,
            with_tile_span(reduce, store.span)]


def fold_nest_as_reduction(loop: tirx.For, fresh):
    """A two-loop ``T.Parallel`` nest folding into a 1-D block buffer indexed by one of its
    loop variables, as a tile reduction over the other: the statements replacing ``loop``, or
    None when it is not such a nest.

    Requires the nest ``for a, b in T.Parallel(M, N)`` (from 0, constant extents) whose body
    is bindings (seen through) then ``d[v] = d[v] op e`` (:func:`fold_of`, ``e`` using the
    other variable ``w``) with ``d`` a 1-D block buffer and ``v`` exactly ``a`` or ``b``.
    Guarantees ``AllocBuffer(terms)``, the nest storing ``e`` into the new ``[M, N]`` fragment
    ``terms`` (``d``'s dtype), and ``reduce_<op>(terms, d, dim, clear=False)`` with ``dim`` 1
    when ``v`` is ``a`` (``d`` a column vector) and 0 when it is ``b`` (a row vector), each
    carrying the store's line.  The caller decides which buffers such a fold may target (a
    fold into a plain fragment is a race in TileLang; into a reducer it is the reduction)."""
    if loop.kind != tirx.ForKind.PARALLEL or not isinstance(loop.body, tirx.For) or \
            loop.body.kind != tirx.ForKind.PARALLEL:
        return None
    inner_loop = loop.body
    if any(int_or_none(lp.min) != 0 or int_or_none(lp.extent) is None
           for lp in (loop, inner_loop)):
        return None
    a, b = loop.loop_var, inner_loop.loop_var
    store = _bound_store(inner_loop.body)
    if store is None:
        return None
    dst = store.buffer
    if buffer_scope(dst) not in ("shared", "local.fragment") or len(buffer_shape(dst)) != 1 \
            or len(store.indices) != 1:
        return None
    if store.indices[0].same_as(a):
        other, dim = b, 1
    elif store.indices[0].same_as(b):
        other, dim = a, 0
    else:
        return None
    folded = fold_of(store, other)
    if folded is None:
        return None
    op_name, value = folded
    m, n = int_or_none(loop.extent), int_or_none(inner_loop.extent)
    if buffer_shape(dst)[0] != (m if dim == 1 else n):
        return None
    terms = tirx.decl_buffer([m, n], buffer_dtype(dst), fresh(f"{dst.name}_terms"),
                             scope="local.fragment")
    nest = tirx.For(a, 0, m, tirx.ForKind.PARALLEL,
                    tirx.For(b, 0, n, tirx.ForKind.PARALLEL,
                             tirx.BufferStore(terms, value, [a, b], span=store.span),
                             span=inner_loop.span),
                    span=loop.span)
    import tvm.tirx.operator as tirx_op

    extent = m if dim == 1 else n
    reduce = getattr(tirx_op, op_name)(dst[0:extent], terms[0:m, 0:n], (dim,), True,
                                       workspace={}, config={}, dispatch=None, scope=None)
    return [tirx.AllocBuffer(terms, span=store.span), nest, with_tile_span(reduce, store.span)]
