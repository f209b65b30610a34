"""Which blocks touch which shard of an L1-sharded tensor (B1's helper for ``local_shard``).

An L1 shard lives in one core's L1, so the blocks that read or write it belong on that core.
For each L1-sharded tensor, every region of it that a tile op touches is examined in the
tensor's projected plane (rows = the leading dimensions flattened, cols = the last one):
along each axis the region's start is either

* affine in one block index ``v`` (``start = v * K + c(loops)``): each block's span along the
  axis must stay inside ``[v * K, (v + 1) * K)`` and ``K`` must divide the shard's extent, so
  ``B = shard / K`` consecutive blocks share a shard and the axis is *pinned* by ``v``; or
* free of block indices: the whole span must lie in one shard and the axis must not be split
  (grid extent 1).

An axis the tensor is not split along (grid extent 1) pins nothing and is not examined.

The regions are analysed symbolically (TVM's arithmetic analyzer, loop variables over their
ranges): the cost does not grow with the grid.  Every L1-sharded tensor must agree on the shard
grid and the pinning.  Failures are ``TTLayoutError`` naming the tensor and the axis.
"""

from __future__ import annotations

import tvm
from tvm import tirx
from tvm.sym import Analyzer

from ...errors import TTLayoutError
from ..common import TILE, collect, substitute

AXES = ("rows", "cols")


def _vars_in(expr) -> list:
    return [v for v in collect(expr, tirx.Var)]


def _regions(body, buf):
    """Every TensorRegion of ``buf`` operand of a tile op (the frontend's global accesses)."""
    out = []
    for call in collect(body, tirx.TilePrimitiveCall):
        for arg in call.args:
            if isinstance(arg, tvm.ir.TensorRegion) and arg.source.same_as(buf):
                out.append((arg, call.span))
    return out


def _plane_span(region, shape):
    """(row_lo, row_hi, col_lo, col_hi) expressions of a region in the projected plane."""
    ranges = list(region.region)
    stride, lo, hi = 1, tirx.IntImm("int32", 0), tirx.IntImm("int32", 1)
    for dim in range(len(shape) - 2, -1, -1):
        r = ranges[dim]
        lo = lo + r.min * stride
        hi = hi + (r.min + r.extent - 1) * stride
        stride *= shape[dim]
    last = ranges[-1]
    return lo, hi, last.min, last.min + last.extent


def _analyzer(body, block_vars, grid):
    ana = Analyzer()
    for v, ext in zip(block_vars, grid):
        if v is not None:
            ana.bind(v, tvm.ir.Range(0, ext))
    for loop in collect(body, tirx.For):
        ana.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))
    return ana


def _axis_pin(name, axis, lo, hi, shard_elems, gsplit, block_vars, grid, ana, span):
    """(block dim or -1, blocks per shard) for one axis of one region."""
    dims = [d for d, v in enumerate(block_vars)
            if v is not None and any(x.same_as(v) for x in _vars_in(lo))]
    if len(dims) > 1:
        raise TTLayoutError(
            f"{name} is L1-sharded but the {AXES[axis]} its blocks touch depend on several block "
            "indices; shard pinning needs one block index per axis", span=span)
    if not dims:
        lo_b, hi_b = ana.const_int_bound(lo), ana.const_int_bound(hi)
        if gsplit > 1 or lo_b.min_value // shard_elems != (hi_b.max_value - 1) // shard_elems:
            raise TTLayoutError(
                f"{name} is L1-sharded into {gsplit} shards along its {AXES[axis]}, but its "
                "blocks do not follow that axis (no block index selects the shard), so a "
                "block would need other cores' shards", span=span,
                hint="shard the tensor along the axes the block indices walk")
        return -1, 1
    d = dims[0]
    v = block_vars[d]
    step = ana.simplify(substitute(lo, {v: v + 1}) - lo)
    if not isinstance(step, tirx.IntImm) or int(step) <= 0:
        raise TTLayoutError(
            f"{name} is L1-sharded but the {AXES[axis]} its blocks touch are not a fixed "
            "stride of a block index", span=span)
    k = int(step)
    off_lo = ana.const_int_bound(ana.simplify(lo - v * k)).min_value
    off_hi = ana.const_int_bound(ana.simplify(hi - v * k)).max_value
    if off_lo < 0 or off_hi > k or shard_elems % k:
        raise TTLayoutError(
            f"{name} is L1-sharded with shards of {shard_elems} {AXES[axis]}, but a block "
            f"touches {AXES[axis]} [{off_lo}, {off_hi}) of each {k}-element step, which "
            "crosses a shard boundary", span=span,
            hint=f"use blocks that tile the shard: {shard_elems} must be a multiple of the block")
    per = shard_elems // k
    if grid[d] != gsplit * per:
        raise TTLayoutError(
            f"{name} has {gsplit} shards of {per} blocks along its {AXES[axis]}, but the launch "
            f"grid has {grid[d]} blocks there", span=span)
    return d, per


def pin_blocks(body, params, layouts, block_vars, grid) -> dict:
    """The local-shard geometry of the kernel, or {} when no tensor is L1-sharded:
    ``{grid [Gy, Gx], shard_tiles [Sm, Sn], pins [dim for rows, dim for cols], blocks [By, Bx],
    tensors [names]}``."""
    result = {}
    ana = None
    for buf, lay in zip(params, layouts):
        if lay["layout"] != "sharded" or lay["memory"] != "L1":
            continue
        ana = ana or _analyzer(body, block_vars, grid)
        name = str(buf.name)
        gy, gx = lay["shard"]["projected_grid"]
        sm, sn = lay["shard"]["projected_shard_tiles"]
        pins, blocks, seen = [-1, -1], [1, 1], [False, False]
        shape = [int(d) for d in lay["shape"]]
        found = _regions(body, buf)
        if not found:
            continue
        for region, span in found:
            r_lo, r_hi, c_lo, c_hi = _plane_span(region, shape)
            for axis, (lo, hi, elems, g) in enumerate(((r_lo, r_hi, sm * TILE, gy),
                                                       (c_lo, c_hi, sn * TILE, gx))):
                if g == 1:  # one shard along the axis: every block's access is on it
                    continue
                d, per = _axis_pin(name, axis, lo, hi, elems, g, block_vars, grid, ana, span)
                if seen[axis] and (pins[axis], blocks[axis]) != (d, per):
                    raise TTLayoutError(
                        f"{name}: its tile ops walk its {AXES[axis]} differently (not every "
                        "access selects the shard the same way)", span=span)
                pins[axis], blocks[axis], seen[axis] = d, per, True
        for axis, g in enumerate((gy, gx)):
            if g == 1:  # one shard along the axis: every block is on it, nothing is pinned
                pins[axis], blocks[axis] = -1, 1
        if pins[0] != -1 and pins[0] == pins[1]:
            raise TTLayoutError(f"{name}: one block index selects both its row and column shard")
        geom = {"grid": [gy, gx], "shard_tiles": [sm, sn], "pins": pins, "blocks": blocks,
                "tensors": [name]}
        if not result:
            result = geom
        elif [result[k] for k in ("grid", "pins", "blocks")] != \
                [geom[k] for k in ("grid", "pins", "blocks")]:
            raise TTLayoutError(
                f"L1-sharded tensors {result['tensors'][0]} and {name} place blocks on cores "
                f"differently (shard grids {result['grid']} and {geom['grid']}); L1-sharded "
                "tensors of one kernel need the same shard grid along the block axes")
        else:
            result["tensors"].append(name)
    return result
