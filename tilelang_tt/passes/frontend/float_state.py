"""Float scalars carried across loops -> one-element block buffers (part of A0.1).

Requires: A0.1's straight-line rewrites done (``straight_line_scalars``, ``scalars_to_binds``):
the one-element ``local`` buffers still stored are assigned inside a loop or a branch (or
read before their first assignment).

TileLang's split-KV combines (``examples/deepseek_mla/example_mla_decode.py``'s combine
launch) keep float scalars that change from one iteration to the next, fed by tensor elements
and by ``T.exp2`` / ``T.log2`` of themselves (``lse_max_local = T.max(lse_max_local,
glse[bz, hid, k])``).  The data-movement cores have no math library here, so such a scalar is
computed where the tile math is: on the compute kernel, as a one-element block buffer (a tile
every element of whose reads is the value), which the block machinery already carries across
loops ("Loop-carried state").

Guarantees, for each *float state* buffer: a one-element buffer of a float dtype that is
either a ``local`` scalar still stored after the straight-line rewrites, or a
``local.fragment`` (a ``T.alloc_var`` a tile op uses: ``T.clear(lse_logsum_local)``, A0.0.2)
stored outside any ``T.Parallel`` nest with a value that is not a constant, and whose every
read is inside a ``T.Parallel`` nest or in the value of such a store to a float state buffer
(iterated to a fixed point; a read elsewhere - an ``if`` condition, an index, a loop extent,
a region of it other than a tile primitive's operand (``T.any_of(s[0:1])``) - leaves the
buffer alone, so A0.1 still refuses a ``local`` one naming it):

* a ``local`` one is a ``local.fragment`` of the same name, shape and dtype in every access;
* a store ``s = v`` to it outside ``T.Parallel`` is ``T.fill(s, v)`` when ``v`` is a constant,
  else the nest ``for i in T.Parallel(1): s[i] = v`` with every read of a float state buffer in
  ``v`` its element ``i`` (elementwise over one-element blocks); tensor elements in ``v``
  (``glse[bz, hid, k]``) are then element operands of a ``T.Parallel`` body (A0.1.4.2);
* reads inside other ``T.Parallel`` nests (``o_accum_local[i] += po_local[i] *
  scale_local``) read element 0: the one-element broadcast of "1-D reductions".

Integer scalars are not touched (A0.1's replicated state).
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ..common import (buffer_dtype, buffer_scope, buffer_shape, collect, int_imm, tt_map,
                      with_tile_span)


def _one_element_float(buf) -> bool:
    shape = buffer_shape(buf)
    return bool(shape) and all(isinstance(d, int) and d == 1 for d in shape) and \
        buffer_dtype(buf).startswith(("float", "bfloat"))


def _constant(value) -> bool:
    if isinstance(value, tirx.Cast):
        value = value.value
    return isinstance(value, (tirx.IntImm, tirx.FloatImm))


def _outside_parallel_stores(body) -> list:
    """Stores not inside any ``T.Parallel`` loop."""
    inside = [st for lp in collect(body, tirx.For, lambda f: f.kind == tirx.ForKind.PARALLEL)
              for st in collect(lp.body, tirx.BufferStore)]
    return [st for st in collect(body, tirx.BufferStore)
            if not any(st.same_as(x) for x in inside)]


def _loads_outside(body, stores) -> list:
    """Loads that are neither inside a ``T.Parallel`` loop nor in the value of one of
    ``stores``."""
    covered = [ld for lp in collect(body, tirx.For, lambda f: f.kind == tirx.ForKind.PARALLEL)
               for ld in collect(lp.body, tvm.ir.TensorLoad)]
    covered += [ld for st in stores for ld in collect(st.value, tvm.ir.TensorLoad)]
    return [ld for ld in collect(body, tvm.ir.TensorLoad)
            if not any(ld.same_as(x) for x in covered)]


def _reads_any(value, bufs) -> bool:
    return any(ld.source.same_as(b) for ld in collect(value, tvm.ir.TensorLoad) for b in bufs)


def float_state_buffers(body, bindable) -> list:
    """The float state buffers (module docstring), in allocation order.  ``bindable(body,
    store)``: A0.1 would make ``store``, its buffer's only one, a ``Bind``."""
    outside = _outside_parallel_stores(body)
    cand, single = [], []
    for alloc in collect(body, tirx.AllocBuffer):
        buf = alloc.buffer
        if not _one_element_float(buf):
            continue
        mine = [st for st in outside if st.buffer.same_as(buf)]
        if buffer_scope(buf) == "local" and mine:
            if len(mine) == 1 and not [st for st in collect(body, tirx.BufferStore)
                                       if st.buffer.same_as(buf) and not st.same_as(mine[0])] \
                    and bindable(body, mine[0]):
                single.append((buf, mine[0]))
            else:
                cand.append(buf)
        elif buffer_scope(buf) == "local.fragment" and \
                any(not _constant(st.value) for st in mine):
            cand.append(buf)
    grown = True
    while grown:  # a scalar bound once to a value of float state is float state too
        grown = False
        for buf, st in list(single):
            if _reads_any(st.value, cand):
                cand.append(buf)
                single.remove((buf, st))
                grown = True
    tile_args = [a for c in collect(body, tirx.TilePrimitiveCall) for a in c.args
                 if isinstance(a, tvm.ir.TensorRegion)]
    other_regions = [r.source for r in collect(body, tvm.ir.TensorRegion)
                     if not any(r.same_as(a) for a in tile_args)]
    cand = [b for b in cand if not any(b.same_as(x) for x in other_regions)]
    while cand:
        stores = [st for st in outside if any(st.buffer.same_as(b) for b in cand)]
        bad = {ld.source for ld in _loads_outside(body, stores)}
        keep = [b for b in cand if not any(b.same_as(x) for x in bad)]
        if len(keep) == len(cand):
            break
        cand = keep
    return cand


def float_state_to_blocks(body, bindable):
    """Rewrite the float state buffers (module docstring)."""
    state = float_state_buffers(body, bindable)
    if not state:
        return body
    new_of = []
    for b in state:
        new = b if buffer_scope(b) == "local.fragment" else \
            tirx.decl_buffer(buffer_shape(b), buffer_dtype(b), b.name, scope="local.fragment")
        new_of.append((b, new))

    def find(source):
        return next((new for old, new in new_of if source.same_as(old)), None)

    outside = [st for st in _outside_parallel_stores(body) if find(st.buffer) is not None]

    def rewrite_store(st):
        import tvm.tirx.operator as tirx_op

        new = find(st.buffer)
        whole = new[tuple(slice(0, 1) for _ in buffer_shape(new))]
        value = st.value
        if str(value.ty) != buffer_dtype(new):
            value = tirx.Cast(buffer_dtype(new), value)
        if _constant(value):
            return with_tile_span(tirx_op.Fill(whole, value, workspace={}, config={},
                                               dispatch=None, scope=None), st.span)
        i = tirx.Var("i", "int32")
        idx = [i] * len(buffer_shape(new))
        value = tt_map(value, [(tvm.ir.TensorLoad, lambda ld: find(ld.source)[tuple(idx)]
                                if find(ld.source) is not None else ld)], order="post")
        return tirx.For(i, int_imm(0), int_imm(1), tirx.ForKind.PARALLEL,
                        tirx.BufferStore(new, value, idx, span=st.span), span=st.span)

    def store(st):
        if any(st.same_as(x) for x in outside):
            return rewrite_store(st)
        new = find(st.buffer)
        return st if new is None else tirx.BufferStore(new, st.value, list(st.indices),
                                                       span=st.span)

    def load(ld):
        new = find(ld.source)
        return ld if new is None else new[tuple(ld.indices)]

    def alloc(a):
        new = find(a.buffer)
        return a if new is None else tirx.AllocBuffer(new, a.annotations, a.span)

    # stores first (no store holds another, so each is still the original node), then the
    # remaining loads and allocations
    body = tt_map(body, [(tirx.BufferStore, store)], order="post")
    return tt_map(body, [(tvm.ir.TensorLoad, load), (tirx.AllocBuffer, alloc)], order="post")
