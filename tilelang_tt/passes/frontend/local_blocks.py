"""A0.0.2 LocalBuffersToBlocksTT: local buffers that tile ops use are block buffers.

Requires: frontend TIR (after A0.0.1, whose input it would change: one-row blocks it
walks are whole).

TileLang's ``T.alloc_local(shape)`` / ``T.alloc_var(dtype)`` are per-thread storage.  A kernel
here has no thread index (A0.000 leaves no ``T.get_thread_binding``), so every thread's copy would
hold the same values: the block's one copy is the same program.  TileLang's reduce tests use
them as tile operands: ``src = T.alloc_local((8,))`` filled by a ``T.serial`` element loop and
reduced into ``dst = T.alloc_var(dtype)`` (or ``T.alloc_local((1,))``), then ``B[0] = dst``.

Guarantees:

* a ``local`` buffer that a tile primitive reads or writes (a region operand of ``T.copy``,
  ``T.reduce_*``, ``T.fill`` ...) is a ``local.fragment`` buffer of the same name, shape and
  dtype, in every access (so A0.1 leaves it alone and the tile stages see a block buffer);
  other local buffers (scalars assigned in the kernel) are unchanged;
* a store of a tensor element outside any ``T.Parallel`` loop whose value is the one element
  of a one-element fragment (``B[0] = dst`` / ``B[0] = dst[0]``, converted to ``B``'s dtype
  or not) is ``T.copy(dst, B[0:1])``: the block's value copied to that element (A0.5.1 pads
  the one-element block, the host crops);
* a store of a constant into a one-element block buffer outside any ``T.Parallel`` loop
  (``tmp[0] = 1``, a variable's ``init``) is ``T.fill(tmp, constant)``.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ..common import buffer_dtype, buffer_scope, buffer_shape, collect, tt_map, tt_pass
from ..common import with_tile_span


def _one_element(buf) -> bool:
    shape = buffer_shape(buf)
    return bool(shape) and all(isinstance(d, int) and d == 1 for d in shape)


def _tile_operands(body) -> list:
    return [a.source for c in collect(body, tirx.TilePrimitiveCall) for a in c.args
            if isinstance(a, tvm.ir.TensorRegion)]


def retype_local_blocks(body):
    """``local`` buffers that tile primitives use -> ``local.fragment`` (module docstring)."""
    used = _tile_operands(body)
    new_of = {}
    for alloc in collect(body, tirx.AllocBuffer):
        buf = alloc.buffer
        if buffer_scope(buf) == "local" and any(buf.same_as(u) for u in used):
            new_of[buf] = tirx.decl_buffer(buffer_shape(buf), buffer_dtype(buf), buf.name,
                                           scope="local.fragment")
    if not new_of:
        return body

    def find(source):
        return next((new for old, new in new_of.items() if source.same_as(old)), None)

    def region(r):
        new = find(r.source)
        return r if new is None else \
            new[tuple(slice(rg.min, rg.min + rg.extent) for rg in r.region)]

    def load(ld):
        new = find(ld.source)
        return ld if new is None else new[tuple(ld.indices)]

    def store(st):
        new = find(st.buffer)
        return st if new is None else tirx.BufferStore(new, st.value, list(st.indices),
                                                       span=st.span)

    def alloc(a):
        new = find(a.buffer)
        return a if new is None else tirx.AllocBuffer(new, a.annotations, a.span)

    return tt_map(body, [(tvm.ir.TensorRegion, region), (tvm.ir.TensorLoad, load),
                         (tirx.BufferStore, store), (tirx.AllocBuffer, alloc)], order="post")


def _element_of_one_element_block(value):
    """The one-element fragment whose element ``value`` is (through a conversion), or None."""
    if isinstance(value, tirx.Cast):
        value = value.value
    if isinstance(value, tvm.ir.TensorLoad) and buffer_scope(value.source) == \
            "local.fragment" and _one_element(value.source):
        return value.source
    return None


def _constant(value) -> bool:
    if isinstance(value, tirx.Cast):
        value = value.value
    return isinstance(value, (tirx.IntImm, tirx.FloatImm))


def stores_to_copies(body):
    """Tensor element stores of a one-element block's value outside ``T.Parallel`` ->
    ``T.copy``; constants stored into a one-element block -> ``T.fill`` (module
    docstring)."""
    in_parallel = [st for lp in collect(body, tirx.For,
                                        lambda f: f.kind == tirx.ForKind.PARALLEL)
                   for st in collect(lp.body, tirx.BufferStore)]

    def rewrite(st):
        if any(st.same_as(x) for x in in_parallel):
            return st
        import tvm.tirx.operator as tirx_op

        if buffer_scope(st.buffer) in ("shared", "local.fragment") and \
                _one_element(st.buffer) and _constant(st.value):
            whole = st.buffer[tuple(slice(0, 1) for _ in buffer_shape(st.buffer))]
            return with_tile_span(tirx_op.Fill(whole, st.value, workspace={}, config={},
                                               dispatch=None, scope=None), st.span)
        if buffer_scope(st.buffer) != "global":
            return st
        src = _element_of_one_element_block(st.value)
        if src is None:
            return st
        dst = st.buffer[tuple(slice(i, i + 1) for i in st.indices)]
        whole = src[tuple(slice(0, 1) for _ in buffer_shape(src))]
        return with_tile_span(tirx_op.Copy(dst, whole, workspace={}, config={}, dispatch=None,
                                           scope=None), st.span)

    return tt_map(body, [(tirx.BufferStore, rewrite)], order="post")


@tt_pass("LocalBuffersToBlocksTT", requires=("SerialRowsToBlockTT",))
def LocalBuffersToBlocksTT(func, mod, ctx):
    """Local buffers tile ops use -> fragments; their one element stored to a tensor ->
    ``T.copy`` (module docstring)."""
    return func.with_body(stores_to_copies(retype_local_blocks(func.body)))
