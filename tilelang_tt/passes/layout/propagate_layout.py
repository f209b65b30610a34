"""A2 PropagateTTLayout: circular-buffer and accumulator descriptors for block-local buffers.

Requires: InferTTLayout.

Guarantees: every *block buffer* ``AllocBuffer`` carries ``tt.cb_desc`` = ``{rows, cols,
depth, dtype, page_bytes, vector}`` (block size in tiles, ring depth in blocks, page = one tile of the
buffer's dtype).  ``depth`` is the ``num_stages`` of the innermost ``T.Pipelined`` loop that
contains a write of the buffer (at least 1), else 2 (double buffering across work units).
Every *accumulator* ``AllocBuffer`` carries ``tt.acc_desc`` = ``{rows, cols, dtype}``.  A 1-D
block buffer is ``Mt x 1`` tiles (column vector) or ``1 x Nt`` (row vector), as
:mod:`.vector_orientation` decides.

Block buffers are the shared buffers and the fragments no ``T.gemm`` accumulates into: a
Tensix core has no register file that holds a whole fragment, so such a fragment (TileLang's
``C_local`` in an elementwise kernel) lives in a circular buffer exactly like a shared one.
Accumulators are the fragments that are the ``C`` operand of a ``T.gemm``; they live in DST
(D5).  Later stages decide from these two annotations, not from the memory scope.
"""

from __future__ import annotations

from tvm import tirx

from ... import attrs
from ...errors import source_span
from ..common import (
    block_tiles,
    buffer_dtype,
    buffer_scope,
    buffer_shape,
    collect,
    const_int,
    gemm_accumulators,
    tile_bytes,
    tile_dst_buffer,
    tt_map,
    tt_pass,
)
from ..analysis.vector_orientation import vector_orientations

DEFAULT_DEPTH = 2


def _written_buffers(node) -> list:
    return [tile_dst_buffer(c) for c in collect(node, tirx.TilePrimitiveCall)]


def _pipelined_depths(body) -> dict:
    """buffer -> num_stages of the innermost pipelined loop containing a write of it."""
    loops = [f for f in collect(body, tirx.For) if attrs.LOOP_NUM_STAGES in (f.annotations or {})]
    best = {}
    for loop in loops:
        stages = const_int(loop.annotations[attrs.LOOP_NUM_STAGES], "num_stages", loop.span)
        inner = collect(loop.body, tirx.For)
        for buf in _written_buffers(loop.body):
            prev = best.get(buf)
            # keep the innermost loop: the one nested inside the other
            if prev is None or any(l.same_as(loop) for l in prev[1]):
                best[buf] = (max(1, stages), inner)
    return {buf: depth for buf, (depth, _) in best.items()}


@tt_pass("PropagateTTLayout", requires=("InferTTLayout",))
def PropagateTTLayout(func, mod, ctx):
    """Attach ``tt.cb_desc`` / ``tt.acc_desc`` to block-local allocations."""
    depths = _pipelined_depths(func.body)
    accumulators = gemm_accumulators(func.body)
    orientations = vector_orientations(func.body)

    def annotate(alloc: tirx.AllocBuffer):
        buf = alloc.buffer
        scope = buffer_scope(buf)
        ann = dict(alloc.annotations or {})
        rows, cols = block_tiles(buf)
        vector = "none"
        if len(buffer_shape(buf)) == 1:
            vector = next((o for b, o in orientations.items() if buf.same_as(b)), "col")
        if vector == "row":
            rows, cols = cols, rows  # a row vector: 1 x Nt tiles
        dtype = buffer_dtype(buf)
        is_acc = any(buf.same_as(a) for a in accumulators)
        if scope == "shared" or (scope == "local.fragment" and not is_acc):
            ann[attrs.CB_DESC] = {
                "rows": rows, "cols": cols, "depth": depths.get(buf, DEFAULT_DEPTH),
                "dtype": dtype, "page_bytes": tile_bytes(dtype), "vector": vector,
            }
        elif scope == "local.fragment":
            ann[attrs.ACC_DESC] = {"rows": rows, "cols": cols, "dtype": dtype}
        else:
            return alloc
        return tirx.AllocBuffer(buf, ann, source_span(alloc.span))

    body = tt_map(func.body, [(tirx.AllocBuffer, annotate)], order="post")
    return func.with_body(body)
