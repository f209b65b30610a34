"""A0.1.2 CollapseBlockSlicesTT: a block buffer used one slice per loop iteration loses that dim.

Requires: LowerAtomicsTT (the frontend's scalar bindings and guards are settled).

TileLang's batched GEMM test keeps one slice of a block buffer per batch:
``A_shared = T.alloc_shared((batch, block_M, block_K))`` and, in ``for b in T.serial(batch)``,
``T.copy(A[b, ...], A_shared[b, :, :])`` and ``T.gemm(A_shared[b, :, :], ...)``.  A Tensix
block buffer is one circular buffer of whole blocks, so a slice of it is not an operand.

Guarantees: a shared or fragment buffer of rank 3 or more whose every access (tile-op
regions, element loads and stores) takes one index ``e`` in its first dimension, the same
expression everywhere, where ``e`` is a constant or the variable of a loop that no other loop
encloses, is replaced by a buffer without that dimension, every access dropping the index.
This computes the same: within one iteration all accesses touch slice ``e``, and each
iteration, run once per block, touches its own slice, so a value is only ever read in the
iteration that wrote it (a read of a slice before its iteration wrote it reads uninitialised
memory in either form).  Any other buffer is left as it is.  Decided from the accesses' index
expressions and the loop nesting only.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ..common import buffer_scope, buffer_shape, buffer_dtype, collect, tt_map, tt_pass

_SCOPES = ("shared", "shared.dyn", "local.fragment")


def _first_indices(body, buf):
    """The first-dimension index of every access of ``buf`` (None where it is a range)."""
    found = []
    for r in collect(body, tvm.ir.TensorRegion, lambda r: r.source.same_as(buf)):
        rng = r.region[0]
        found.append(rng.min if isinstance(rng.extent, tirx.IntImm) and
                     int(rng.extent) == 1 else None)
    for ld in collect(body, tvm.ir.TensorLoad, lambda ld: ld.source.same_as(buf)):
        found.append(ld.indices[0])
    for st in collect(body, tirx.BufferStore, lambda st: st.buffer.same_as(buf)):
        found.append(st.indices[0])
    return found


def _slice_index(body, buf, loop_vars):
    """``e`` when every access of ``buf`` takes index ``e`` in its first dimension and ``e`` is
    a constant or a loop variable (module docstring), else None."""
    found = _first_indices(body, buf)
    if not found or any(e is None for e in found):
        return None
    e = found[0]
    if not all(tvm_ffi.structural_equal(x, e) for x in found[1:]):
        return None
    if isinstance(e, tirx.IntImm) or any(e.same_as(v) for v in loop_vars):
        return e
    return None


def collapse_block_slices(body):
    """``body`` with the block buffers the module docstring describes collapsed."""
    loops = collect(body, tirx.For)
    nested = [inner.loop_var for lp in loops for inner in collect(lp.body, tirx.For)]
    # loops no other loop encloses: each of their iterations runs once per block
    loop_vars = [lp.loop_var for lp in loops if not any(lp.loop_var.same_as(v) for v in nested)]
    new_of = {}
    for alloc in collect(body, tirx.AllocBuffer):
        buf = alloc.buffer
        shape = buffer_shape(buf)
        if buffer_scope(buf) not in _SCOPES or len(shape) < 3:
            continue
        if _slice_index(body, buf, loop_vars) is not None:
            new_of[buf] = tirx.decl_buffer(shape[1:], buffer_dtype(buf), buf.name,
                                           scope=buffer_scope(buf))
    if not new_of:
        return body

    def find(source):
        return next((new for old, new in new_of.items() if source.same_as(old)), None)

    def region(r):
        new = find(r.source)
        if new is None:
            return r
        return new[tuple(slice(rg.min, rg.min + rg.extent) for rg in list(r.region)[1:])]

    def load(ld):
        new = find(ld.source)
        return ld if new is None else new[tuple(ld.indices[1:])]

    def store(st):
        new = find(st.buffer)
        return st if new is None else tirx.BufferStore(new, st.value, list(st.indices[1:]),
                                                       span=st.span)

    def alloc(a):
        new = find(a.buffer)
        return a if new is None else tirx.AllocBuffer(new, a.annotations, a.span)

    return tt_map(body, [(tvm.ir.TensorRegion, region), (tvm.ir.TensorLoad, load),
                         (tirx.BufferStore, store), (tirx.AllocBuffer, alloc)], order="post")


@tt_pass("CollapseBlockSlicesTT", requires=("LowerAtomicsTT",))
def CollapseBlockSlicesTT(func, mod, ctx):
    """Block buffers used one first-dimension slice per iteration -> without that dimension
    (see module docstring)."""
    return func.with_body(collapse_block_slices(func.body))
