"""A0.5 CoarsenKLoopTT: a GEMM's K loop takes several K steps per iteration (optimisation).

Requires: VersionBlockBuffersTT.

TileLang's GEMM loads one ``block_K`` slice of A and B per K step (``block_K = 32``, one
tile, is usual).  On Tensix every K step costs the reader one NOC barrier per block and, when
the accumulator does not fit DST, the compute kernel a pack of every accumulator sub-block to
the partials CB and a reload: both per K step, not per tile.  This pass makes one iteration
process ``f`` consecutive K steps, as tt-metal's matmuls use K blocks of several tiles.

A loop is coarsened when, from its IR structure alone:

* it is a serial loop from 0 with a constant trip count ``n >= 2``;
* its body is exactly one ``tile.gemm(C, A_s, B_s, C)`` accumulating (``clear_accum`` off,
  ``alpha = 1``) into a fragment, preceded by one ``tile.copy`` into each of ``A_s`` and
  ``B_s`` (two distinct 2-D shared buffers, each copied and multiplied whole) from a global
  tensor region whose K range (the dimension matching the buffer's K dimension, as the gemm's
  transpose flags say) starts at ``base + k * extent`` (consecutive steps tile K) and whose
  other ranges do not depend on ``k``, and whose last step ends inside the tensor;
* ``A_s`` and ``B_s`` are used nowhere else and have a tile dtype (bfloat16, float16,
  float32; other dtypes are refused later, by InferLayoutTT);
* the function carries no layout or L1-alias request (those name block shapes the user chose).

``f`` is the largest divisor of ``n`` that keeps a K block at most :data:`MAX_K_TILES` tiles
and the estimated CB footprint (:func:`l1_estimate`, an upper bound of what D6 / F count)
within the core's usable L1, and whose K block ``f * block_K`` is whole tiles; ``f = 1``
leaves the loop alone.  The compile option ``tt.k_coarsen=False`` (``pass_configs``), or a
layout / L1-alias request, turns the optimisation off.  K steps narrower than a tile
(``block_K = 16``, TileLang's ``[64, 16]`` operands) are merged in any case: ``f`` is then at
least the fewest steps that make whole tiles (2 for 16), and when the trip count has no such
divisor the loop is a ``TTLayoutError`` naming A's block and the loop's line.  Numerics: the
matmul engine sums the 32 K products of a tile pair anyway, so two 16-wide K steps as one
32-wide step add the same products; only the grouping of the float32 partial sums differs
(per tile instead of per 16 columns).

Guarantees: such a loop becomes ``for k in range(n / f)`` with the same annotations, whose
copies read ``f * block_K`` wide K ranges (``k`` replaced by ``k * f``) into new buffers of
the same names ``f`` times wider along K, and whose ``tile.gemm`` multiplies them.  The
result is the same sum of products in the same order of K; only the blocking changes.  The
function attribute ``tt.k_coarsen`` lists each coarsened loop as ``{"factor": f,
"k_tiles": tiles of a K block, "steps": n / f}``.
"""

from __future__ import annotations

import math

import tvm
from tvm import tirx
from tvm.sym import Analyzer

from ... import attrs
from ...errors import TTLayoutError, source_span
from ...target import profile_of
from ..common import (
    DTYPE_BYTES,
    block_tiles,
    buffer_dtype,
    buffer_scope,
    buffer_shape,
    collect,
    const_int,
    gemm_accumulators,
    int_imm,
    int_or_none,
    get_attr,
    replace_tile_call,
    stmts_of,
    substitute,
    tile_bytes,
    to_py,
    tt_map,
    uses_var,
    tt_pass,
)

MAX_K_TILES = 8  # a K block of up to 8 tiles, as tt-metal's matmul configurations use
DEFAULT_DEPTH = 2  # PropagateTTLayout's ring depth outside pipelined loops
TILE = 32


def _flag(expr):
    """A constant boolean operand (a transpose flag), or None."""
    if isinstance(expr, bool):
        return expr
    value = int_or_none(expr)
    return None if value is None else bool(value)


def _float_is(expr, value) -> bool:
    return isinstance(expr, tvm.tirx.FloatImm) and float(expr.value) == value


class _Candidate:
    """A K loop of the recognised form: its copies, gemm and the K dimension of each copy."""

    def __init__(self, loop, copies, gemm, k_dims):
        self.loop, self.copies, self.gemm, self.k_dims = loop, copies, gemm, k_dims
        self.trip = int(loop.extent.value)
        self.k_extent = int(copies[0].args[0].region[k_dims[0][0]].extent)

    @property
    def shared(self):
        return [c.args[0].source for c in self.copies]


def _copy_k_dim(copy, shared_k_dim, var, trip, ana):
    """The K dimension of ``copy``'s global source, or None when the copy is not a K slice
    whose start advances by its extent with ``var`` (the other ranges independent of it)."""
    dst, src = copy.args[0], copy.args[1]
    if buffer_scope(src.source) != "global":
        return None
    wide = [i for i, r in enumerate(src.region) if int_or_none(r.extent) != 1]
    if len(wide) != 2:
        return None
    for d, i in enumerate(wide):
        if int_or_none(src.region[i].extent) != int_or_none(dst.region[d].extent):
            return None
    k_src = wide[shared_k_dim]
    for i, r in enumerate(src.region):
        if i != k_src and (uses_var(r.min, var) or uses_var(r.extent, var)):
            return None
    r = src.region[k_src]
    step = ana.simplify(substitute(r.min, {var: var + 1}) - r.min - r.extent)
    if int_or_none(step) != 0 or not uses_var(r.min, var):
        return None
    # the last step stays inside the tensor (no partial K block to merge)
    last = var * 0 + (trip - 1)  # the last step's index, an expression of var's type
    end = int_or_none(ana.simplify(substitute(r.min, {var: last}) + r.extent))
    if end is None or end > int(buffer_shape(src.source)[k_src]):
        return None
    return k_src


def _full(region) -> bool:
    shape = buffer_shape(region.source)
    return all(int_or_none(r.min) == 0 and int_or_none(r.extent) == d
               for r, d in zip(region.region, shape)) and len(region.region) == len(shape)


def _candidate(loop, func_body):
    """A :class:`_Candidate` for ``loop``, or None."""
    extent = int_or_none(loop.extent)
    if loop.kind != tirx.ForKind.SERIAL or int_or_none(loop.min) != 0 or extent is None or extent < 2:
        return None
    items = stmts_of(loop.body)
    if len(items) != 3 or not all(isinstance(s, tirx.TilePrimitiveCall) for s in items):
        return None
    gemms = [s for s in items if s.op.name == "tirx.tile.gemm"]
    copies = [s for s in items if s.op.name == "tirx.tile.copy"]
    if len(gemms) != 1 or len(copies) != 2 or not items[2].same_as(gemms[0]):
        return None
    gemm = gemms[0]
    c_out, a, b, c_in = gemm.args[0], gemm.args[1], gemm.args[2], gemm.args[3]
    trans_a, trans_b = _flag(gemm.args[4]), _flag(gemm.args[5])
    if trans_a is None or trans_b is None:
        return None
    if not (_float_is(gemm.args[6], 1.0) and _float_is(gemm.args[7], 1.0)):
        return None  # clear_accum (beta = 0) restarts the sum every step
    if not c_out.source.same_as(c_in.source) or buffer_scope(c_out.source) != "local.fragment":
        return None
    if a.source.same_as(b.source) or not (_full(a) and _full(b) and _full(c_out)):
        return None
    ana = Analyzer()
    if not all(_full(c.args[0]) for c in copies):
        return None
    ordered, k_dims = [], []
    for operand, k_dim in ((a, 0 if trans_a else 1), (b, 1 if trans_b else 0)):
        buf = operand.source
        copy = next((c for c in copies if c.args[0].source.same_as(buf)), None)
        if copy is None or buffer_scope(buf) != "shared" or len(buffer_shape(buf)) != 2:
            return None
        k_src = _copy_k_dim(copy, k_dim, loop.loop_var, int_or_none(loop.extent), ana)
        if k_src is None:
            return None
        ordered.append(copy)
        k_dims.append((k_dim, k_src))
    cand = _Candidate(loop, ordered, gemm, k_dims)
    if int(buffer_shape(cand.shared[1])[k_dims[1][0]]) != cand.k_extent:
        return None
    # the block buffers belong to this loop alone
    for buf in cand.shared:
        refs = collect(func_body, tvm.ir.TensorRegion, lambda r, b=buf: r.source.same_as(b))
        loads = collect(func_body, tvm.ir.TensorLoad, lambda r, b=buf: r.source.same_as(b))
        stores = collect(func_body, tirx.BufferStore, lambda s, b=buf: s.buffer.same_as(b))
        if len(refs) != 2 or loads or stores:
            return None
    return cand


def _stages(loop) -> int:
    """The ring depth of blocks written in ``loop``: its num_stages (at least 1), else the
    default depth."""
    stages = (loop.annotations or {}).get(attrs.LOOP_NUM_STAGES)
    return DEFAULT_DEPTH if stages is None else max(1, const_int(stages, "num_stages", loop.span))


def _depths(body) -> dict:
    """id(buffer) -> ring depth PropagateTTLayout will give it (num_stages of the innermost
    pipelined loop writing it, else the default)."""
    out = {}
    loops = [f for f in collect(body, tirx.For) if attrs.LOOP_NUM_STAGES in (f.annotations or {})]
    for loop in loops:  # pre-order: inner loops come later and win
        for call in collect(loop.body, tirx.TilePrimitiveCall):
            out[call.args[0].source] = _stages(loop)
    return out


def l1_estimate(body) -> int:
    """An upper bound of the CB bytes the compute kernel will need: every block buffer's ring
    (tiles x tile bytes x depth) and, per accumulator, a partials CB of its dtype plus a
    double-buffered output CB of the widest dtype it is copied out to."""
    depths = _depths(body)
    accs = gemm_accumulators(body)
    copies = [c for c in collect(body, tirx.TilePrimitiveCall) if c.op.name == "tirx.tile.copy"]
    total = 0
    for alloc in collect(body, tirx.AllocBuffer):
        buf = alloc.buffer
        if buffer_scope(buf) not in ("shared", "local.fragment"):
            continue
        rows, cols = block_tiles(buf)
        tiles = max(1, rows) * max(1, cols)
        dtype = buffer_dtype(buf)
        if dtype not in ("bfloat16", "float16", "float32"):
            continue
        if any(buf.same_as(a) for a in accs):
            outs = [buffer_dtype(c.args[0].source) for c in copies if c.args[1].source.same_as(buf)]
            pages = [tile_bytes(d) for d in outs if d in ("bfloat16", "float16", "float32")]
            page = max(pages) if pages else tile_bytes(dtype)
            total += tiles * (tile_bytes(dtype) + 2 * page)
        else:
            depth = next((d for b, d in depths.items() if b.same_as(buf)), DEFAULT_DEPTH)
            total += tiles * tile_bytes(dtype) * depth
    return total


def _legal(cand, f) -> bool:
    """``f`` steps per iteration divide the trip count and make K blocks of whole tiles."""
    return cand.trip % f == 0 and f * cand.k_extent % TILE == 0


def _factor(cand, body, budget) -> int:
    """The largest legal f (:func:`_legal`) with K blocks of at most MAX_K_TILES tiles whose
    estimated footprint fits ``budget``; for K steps narrower than a tile, the smallest legal f
    when none fits (the merge is then required, not an optimisation)."""
    if any(buffer_dtype(b) not in DTYPE_BYTES for b in cand.shared):
        return 1  # no tile size to budget (InferLayoutTT refuses the dtype, naming the buffer)
    base = l1_estimate(body)
    depth = _stages(cand.loop)
    grow = sum(block_tiles(b)[0] * block_tiles(b)[1] * tile_bytes(buffer_dtype(b)) * depth
               for b in cand.shared)
    for f in range(cand.trip, 1, -1):
        if not _legal(cand, f) or f * cand.k_extent > MAX_K_TILES * TILE:
            continue
        if base + (f - 1) * grow <= budget:
            return f
    return _required_factor(cand)


def _required_factor(cand) -> int:
    """1 for K steps of whole tiles; else the fewest steps that make whole tiles (a K step of
    16 columns is half a tile), or a TTLayoutError naming the operand and the loop."""
    if cand.k_extent % TILE == 0:
        return 1
    f = next((f for f in range(2, cand.trip + 1) if _legal(cand, f)), None)
    if f is None:
        a = cand.shared[0]
        need = TILE // math.gcd(cand.k_extent, TILE)
        raise TTLayoutError(
            f"the K loop takes {cand.trip} steps of {cand.k_extent} (block_K = "
            f"{cand.k_extent}, {a.name} {list(buffer_shape(a))}); a Tensix tile is {TILE} wide, "
            f"so {need} consecutive K steps must run as one, and {cand.trip} steps are no "
            f"multiple of {need}", span=cand.loop.span,
            hint=f"use block_K = {TILE} (or a multiple), or a K that is a multiple of "
                 f"{need * cand.k_extent}")
    return f


def _coarsen(cand, f):
    """The loop rewritten to take ``f`` K steps per iteration; the new buffers' AllocBuffers."""
    loop, var = cand.loop, cand.loop.loop_var
    new_bufs, new_copies = {}, []
    for copy, (k_dim, k_src) in zip(cand.copies, cand.k_dims):
        dst, src = copy.args[0], copy.args[1]
        old = dst.source
        shape = list(buffer_shape(old))
        shape[k_dim] *= f
        buf = tirx.decl_buffer(shape, buffer_dtype(old), old.name, scope=buffer_scope(old))
        new_bufs[old] = buf
        ranges = []
        for i, r in enumerate(src.region):
            lo = substitute(r.min, {var: var * f})
            ext = r.extent * f if i == k_src else r.extent
            ranges.append(slice(lo, lo + ext))
        new_src = src.source[tuple(ranges)]
        new_dst = buf[tuple(slice(0, d) for d in shape)]
        new_copies.append(replace_tile_call(copy, args=[new_dst, new_src] + list(copy.args[2:])))
    g = cand.gemm
    args = list(g.args)
    for i in (1, 2):
        nb = new_bufs[args[i].source]
        args[i] = nb[tuple(slice(0, d) for d in buffer_shape(nb))]
    gemm = replace_tile_call(g, args=args)
    body = tirx.SeqStmt(new_copies + [gemm])
    new_loop = tirx.For(var, loop.min, int_imm(cand.trip // f, str(loop.extent.ty.dtype)),
                        loop.kind, body, loop.thread_binding, loop.annotations, loop.step,
                        loop.span)
    return new_loop, new_bufs


def coarsen_k_loops(body, budget):
    """(body, records) with every recognised K loop coarsened (module docstring)."""
    records = []
    plans = []
    for loop in collect(body, tirx.For):
        cand = _candidate(loop, body)
        if cand is None:
            continue
        f = _factor(cand, body, budget) if budget is not None else _required_factor(cand)
        if f > 1:
            plans.append((cand, f))
    if not plans:
        return body, records
    swaps, realloc = {}, {}
    for cand, f in plans:
        new_loop, new_bufs = _coarsen(cand, f)
        swaps[cand.loop] = new_loop
        realloc.update(new_bufs)
        records.append({"factor": f, "k_tiles": -(-f * cand.k_extent // TILE),
                        "steps": cand.trip // f})

    def on_for(node):
        hit = next((new for old, new in swaps.items() if old.same_as(node)), None)
        return hit if hit is not None else node

    def on_alloc(alloc):
        hit = next((new for old, new in realloc.items() if old.same_as(alloc.buffer)), None)
        return alloc if hit is None else tirx.AllocBuffer(hit, alloc.annotations, source_span(alloc.span))

    body = tt_map(body, [(tirx.For, on_for)], order="pre")
    body = tt_map(body, [(tirx.AllocBuffer, on_alloc)], order="post")
    return body, records


@tt_pass("CoarsenKLoopTT", requires=("VersionBlockBuffersTT",))
def CoarsenKLoopTT(func, mod, ctx):
    """Coarsen TileLang GEMM K loops (module docstring)."""
    options = to_py(get_attr(func, attrs.COMPILE_OPTIONS, {})) or {}
    budget = profile_of(str(get_attr(func, attrs.TARGET))).l1_usable_bytes
    if not options.get(attrs.PC_K_COARSEN, True) or \
            get_attr(func, attrs.LAYOUT_REQUEST) is not None or \
            get_attr(func, attrs.L1_ALIAS_REQUEST) is not None:
        budget = None  # the optimisation is off: only K steps narrower than a tile are merged
    body, records = coarsen_k_loops(func.body, budget)
    if not records:
        return func
    return func.with_body(body).with_attr(attrs.K_COARSEN, records)
