"""B1 LayoutAwareWorkPartitionTT: map the kernel's block grid onto the Tensix core grid.

Requires: InferTTLayout, PropagateTTLayout.

Guarantees: ``tt.partition`` = ``{mode, grid, core_grid, num_blocks, num_cores, work,
shard}``; ``work`` lists ``[x, y, start_id, count]`` per core, each core running the work
units ``start_id .. start_id + count - 1``.  The grid extents must be constants.  The mode is
decided from the tensors' layouts (``tt.layout_desc``):

* ``global`` (no L1-sharded tensor: DRAM interleaved or DRAM sharded, which any core reads
  through its accessor): blocks are numbered ``id = (bz * gy + by) * gx + bx``; the
  ``num_cores = min(num_blocks, cores)`` cores each own one contiguous range of ids (the first
  ``num_blocks % num_cores`` cores one more block, as ``split_work_to_cores`` splits).  Core
  ``c`` is logical core ``(c % core_grid_x, c // core_grid_x)``; the core grid is the
  device's unless ``annotate_tt_schedule(core_grid=...)`` asked for a smaller one.
  A GEMM (a ``tile.gemm``) whose 2-D grid tiles evenly onto ``ux x uy`` cores (``ux``, ``uy``
  the largest divisors of ``gx``, ``gy`` within the core grid; as many cores as the contiguous
  ranges would use) with ``multicast`` on, no
  loop bound depending on ``bx`` and another assignment than the contiguous one, gets a
  rectangle per core instead (``tile`` = ``[tx, ty, ux, uy]``): core ``(x, y)`` runs the
  ``tx x ty`` blocks ``bx = x * tx + i``, ``by = y * ty + j`` in the order ``j * tx + i``, as
  work units ``(y * ux + x) * tx * ty ...``, so the cores of a core row process the same ``by``
  at every step and those of a column the same ``bx`` (PlanMulticastTT multicasts A along rows
  and B down columns); otherwise ``tile`` is ``[]``.
* ``local_shard`` (some tensor is L1-sharded): the blocks that touch shard ``(sy, sx)`` run on
  the core holding it, logical core ``(sx, sy)`` (:mod:`.shard_pinning` finds them), so the
  cores are exactly the shard grid.  Work units are numbered shard-major: core ``(sx, sy)``
  runs ``count = num_blocks / (Gy * Gx)`` units from ``start_id = (sy * Gx + sx) * count``;
  GridToCoreGrid decodes a unit into block indices with ``shard`` = ``{grid [Gy, Gx],
  shard_tiles [Sm, Sn], pins, blocks [By, Bx], tensors}`` (``pins[a]``: the block dimension
  selecting the shard along rows / cols, -1 when the grid is 1 there; ``blocks[a]``: blocks
  per shard along it).
"""

from __future__ import annotations

from ... import attrs
from ...errors import TTCompileError, TTUnsupportedError
from ...target import profile_of
from ..common import (
    BLOCK_TAGS, const_int, gemm_accumulators, get_attr, launch_attrs, require_attr, to_py,
    tt_pass,
)
from .shard_pinning import pin_blocks

def launch_grid(body) -> tuple[list, list]:
    """(block vars, extents) for blockIdx.x/y/z (missing dims have extent 1, var None)."""
    found = {}
    for a in launch_attrs(body):
        tag = str(a.node.thread_tag)
        if tag not in BLOCK_TAGS:
            raise TTUnsupportedError(
                f"launch dimension {tag} has no Tenstorrent equivalent; use T.Kernel(gx, gy, gz)",
                span=a.span)
        if tag in found:
            raise TTUnsupportedError(f"{tag} is launched twice", span=a.span)
        found[tag] = (a.node.var, const_int(a.value, f"T.Kernel extent ({tag})", a.span))
    if not found:
        raise TTCompileError("the kernel has no `with T.Kernel(...)` launch; wrap its body in one")
    vars_, extents = [], []
    for tag in BLOCK_TAGS:
        var, ext = found.get(tag, (None, 1))
        vars_.append(var)
        extents.append(ext)
    return vars_, extents


def split_work(num_blocks: int, grid_x: int, grid_y: int) -> list:
    num_cores = min(num_blocks, grid_x * grid_y)
    per, extra = divmod(num_blocks, num_cores)
    work, start = [], 0
    for c in range(num_cores):
        count = per + (1 if c < extra else 0)
        work.append([c % grid_x, c // grid_x, start, count])
        start += count
    return work


def _largest_divisor(n: int, limit: int) -> int:
    return max(d for d in range(1, min(n, limit) + 1) if n % d == 0)


def tiled_work(grid: list, grid_x: int, grid_y: int) -> tuple[list, list]:
    """([tx, ty, ux, uy], work) of the rectangle-per-core assignment (module docstring)."""
    gx, gy = grid[0], grid[1]
    ux, uy = _largest_divisor(gx, grid_x), _largest_divisor(gy, grid_y)
    tx, ty = gx // ux, gy // uy
    work = [[x, y, (y * ux + x) * tx * ty, tx * ty] for y in range(uy) for x in range(ux)]
    return [tx, ty, ux, uy], work


def _wants_tiles(func, block_vars, grid, grid_x, grid_y) -> bool:
    """Whether a rectangle of blocks per core lets PlanMulticastTT share A and B blocks."""
    from .grid_to_core import _bounds_loops

    options = to_py(get_attr(func, attrs.COMPILE_OPTIONS, {})) or {}
    if not options.get(attrs.PC_MULTICAST, True) or grid[2] != 1 or not gemm_accumulators(
            func.body):
        return False
    if block_vars[0] is not None and grid[0] > 2 and _bounds_loops(func.body, block_vars[0]):
        return False  # B2 folds bx (causal work balance)
    tile, work = tiled_work(grid, grid_x, grid_y)
    contiguous = split_work(grid[0] * grid[1], grid_x, grid_y)
    # the same decode and cores as the contiguous ranges: one block per core, same places
    same = tile[0] * tile[1] == 1 and work == contiguous
    # as many cores as the contiguous ranges use (a 9 x 9 grid would run on 3 x 3 cores)
    return len(work) == len(contiguous) and tile[2] * tile[3] > 1 and not same


def partition_work(num_blocks: int, grid_x: int, grid_y: int, shard: dict):
    """(mode, [[x, y, start_id, count], ...]) for the blocks on a grid_x x grid_y core grid,
    given the local-shard geometry (``{}``: none, see :func:`.shard_pinning.pin_blocks`)."""
    if not shard:
        return "global", split_work(num_blocks, grid_x, grid_y)
    gy, gx = shard["grid"]
    count = num_blocks // (gy * gx)
    return "local_shard", [[sx, sy, (sy * gx + sx) * count, count]
                           for sy in range(gy) for sx in range(gx)]


@tt_pass("LayoutAwareWorkPartitionTT", requires=("InferTTLayout", "PropagateTTLayout"), scalar_programs=True)
def LayoutAwareWorkPartitionTT(func, mod, ctx):
    """Partition the block grid over the device's cores (contiguous ranges)."""
    profile = profile_of(str(require_attr(func, attrs.TARGET, "LayoutAwareWorkPartitionTT")))
    block_vars, grid = launch_grid(func.body)
    num_blocks = grid[0] * grid[1] * grid[2]
    if num_blocks < 1:
        raise TTCompileError(f"the launch grid {grid} has no blocks")
    grid_x, grid_y = profile.grid_x, profile.grid_y
    requested = to_py(get_attr(func, attrs.SCHEDULE, {})) or {}
    if "core_grid" in requested:
        cols, rows = requested["core_grid"]
        if cols > grid_x or rows > grid_y:
            raise TTCompileError(
                f"requested core grid {cols}x{rows} exceeds the {profile.name} grid "
                f"{grid_x}x{grid_y}")
        grid_x, grid_y = cols, rows
    layouts = to_py(require_attr(func, attrs.LAYOUT_DESC, "LayoutAwareWorkPartitionTT"))
    shard = pin_blocks(func.body, list(func.params), layouts, block_vars, grid)
    if shard and "core_grid" in requested and (shard["grid"][1] > grid_x or shard["grid"][0] > grid_y):
        raise TTCompileError(
            f"L1-sharded tensor {shard['tensors'][0]} pins work to a {shard['grid'][0]}x"
            f"{shard['grid'][1]} shard grid, larger than the requested core grid "
            f"{grid_x}x{grid_y}")
    mode, work = partition_work(num_blocks, grid_x, grid_y, shard)
    tile = []
    if mode == "global" and _wants_tiles(func, block_vars, grid, grid_x, grid_y):
        tile, work = tiled_work(grid, grid_x, grid_y)
    partition = {
        "mode": mode,
        "grid": grid,
        "core_grid": [grid_x, grid_y],
        "num_blocks": num_blocks,
        "num_cores": len(work),
        "work": work,
        "shard": shard,
        "tile": tile,
    }
    return func.with_attr(attrs.PARTITION, partition)
