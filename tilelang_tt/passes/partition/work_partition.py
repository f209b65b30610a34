"""B1 LayoutAwareWorkPartitionTT: map the kernel's block grid onto the Tensix core grid.

Requires: InferTTLayout, PropagateTTLayout.

Guarantees: ``tt.partition`` = ``{mode, grid, core_grid, num_blocks, num_cores, work}``.
Blocks are numbered ``id = (bz * gy + by) * gx + bx``; the ``num_cores = min(num_blocks,
cores)`` cores each own one contiguous range of ids (the first ``num_blocks % num_cores`` cores
one more block, as ``split_work_to_cores`` splits).  Core ``c`` is logical core
``(c % core_grid_x, c // core_grid_x)``; the core grid is the device's unless
``annotate_tt_schedule(core_grid=...)`` asked for a smaller one.  ``work`` lists ``[x, y,
start_id, count]`` per core.  The grid extents must be constants.

The partition reads the tensors' layouts (``tt.layout_desc``, :func:`partition_work`): every
tensor is interleaved over the DRAM banks today (InferTTLayout rejects other placements), so
any core reads any page at the same cost and contiguous ranges are as good as any; a sharded
tensor will pin the blocks that touch a shard to the cores holding it, decided there.
"""

from __future__ import annotations

from tvm import tirx

from ... import attrs
from ...errors import TTCompileError, TTUnsupportedError
from ...target import profile_of
from ..common import collect, const_int, get_attr, require_attr, to_py, tt_pass

BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")


def launch_attrs(body) -> list:
    """The ``thread_extent`` AttrStmts of the kernel launch, in nesting order."""
    return [a for a in collect(body, tirx.AttrStmt) if str(a.attr_key) == "thread_extent"]


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


def partition_work(num_blocks: int, grid_x: int, grid_y: int, layouts: list):
    """(mode, [[x, y, start_id, count], ...]) for the blocks on a grid_x x grid_y core grid,
    given the tensors' layouts."""
    if any(lay["layout"] != "interleaved" for lay in layouts):  # InferTTLayout rejects these
        raise TTUnsupportedError("only interleaved tensors can be partitioned yet")
    return "contiguous", split_work(num_blocks, grid_x, grid_y)


@tt_pass("LayoutAwareWorkPartitionTT", requires=("InferTTLayout", "PropagateTTLayout"))
def LayoutAwareWorkPartitionTT(func, mod, ctx):
    """Partition the block grid over the device's cores (contiguous ranges)."""
    profile = profile_of(str(require_attr(func, attrs.TARGET, "LayoutAwareWorkPartitionTT")))
    _, grid = launch_grid(func.body)
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
    mode, work = partition_work(num_blocks, grid_x, grid_y, layouts)
    partition = {
        "mode": mode,
        "grid": grid,
        "core_grid": [grid_x, grid_y],
        "num_blocks": num_blocks,
        "num_cores": len(work),
        "work": work,
    }
    return func.with_attr(attrs.PARTITION, partition)
