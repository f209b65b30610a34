"""Shard geometry of a layout request (A1's helper): validation and projection onto the 2-D plane.

A tensor is tiled over its last two dimensions and seen as a 2-D grid of tiles of
``batch * rows`` by ``cols`` (the page order).  A sharded layout cuts that plane into
``Gy x Gx`` rectangles of ``Sm x Sn`` tiles (``projected_grid``, ``projected_shard_tiles``);
shard ``(sy, sx)`` is the ``sy * Gx + sx``-th, in row-major order, as TT-Metalium's
``ShardOrientation::ROW_MAJOR`` orders them.  Height, width and block sharding are the cases
``Gx == 1``, ``Gy == 1`` and both above 1.

Two request forms:

* 2-D: ``shard_grid=[gy, gx]`` and/or ``shard_shape=[rows, cols]`` in elements of the
  projected plane (either determines the other);
* N-D: ``nd_shard={"axes": [...], "grid": [...], "shard_shape_elems": [...], "order":
  "row_major"}`` over the tensor's own axes (axes not listed are not split).  It is projected
  onto the plane when the shards are contiguous row ranges of it: along the leading axes
  (all but the last), every axis after the first split one is whole and every axis before it
  is split into pieces of one.  Other N-D specs are a ``TTUnsupportedError``.

Placement: DRAM shards go to banks ``0 .. Gy*Gx-1`` (one shard per bank); L1 shards to logical
cores ``(sx, sy)`` of the compute grid, one shard per core, every core's shard at the same L1
address (the allocator's rule for sharded L1 buffers).
"""

from __future__ import annotations

from ...errors import TTLayoutError, TTUnsupportedError
from ..common import TILE

KINDS = ("height", "width", "block")


def _ints(value, what, name, length=None, minimum=1):
    try:
        out = [int(v) for v in value]
    except Exception:
        raise TTLayoutError(f"{name}: {what} must be a list of integers, got {value!r}") from None
    if length is not None and len(out) != length:
        raise TTLayoutError(f"{name}: {what} must have {length} entries, got {out}")
    if any(v < minimum for v in out):
        raise TTLayoutError(f"{name}: {what} entries must be at least {minimum}, got {out}")
    return out


def _project_nd(name, shape, nd):
    """(rows, cols) of one shard in the projected plane, in elements, for an N-D spec."""
    unknown = set(nd) - {"axes", "grid", "shard_shape_elems", "order"}
    if unknown:
        raise TTLayoutError(f"{name}: nd_shard has unknown keys {sorted(unknown)}")
    rank = len(shape)
    axes = _ints(nd["axes"], "nd_shard.axes", name, minimum=-rank) if "axes" in nd \
        else list(range(rank))
    if any(a >= rank for a in axes):
        raise TTLayoutError(f"{name}: nd_shard.axes {axes} name axes a rank-{rank} tensor lacks")
    axes = [a % rank for a in axes]
    if len(set(axes)) != len(axes):
        raise TTLayoutError(f"{name}: nd_shard.axes {axes} repeats an axis")
    order = str(nd.get("order", "row_major"))
    if order != "row_major":
        raise TTUnsupportedError(f"{name}: nd_shard order {order!r} is not supported; use row_major")
    sizes = list(shape)
    if "shard_shape_elems" in nd:
        elems = _ints(nd["shard_shape_elems"], "nd_shard.shard_shape_elems", name, len(axes))
        for a, e in zip(axes, elems):
            sizes[a] = e
    if "grid" in nd:
        grid = _ints(nd["grid"], "nd_shard.grid", name, len(axes))
        for a, g in zip(axes, grid):
            if "shard_shape_elems" not in nd:
                sizes[a] = shape[a] // g if shape[a] % g == 0 else -1
            if sizes[a] * g != shape[a]:
                raise TTLayoutError(
                    f"{name}: nd_shard grid {g} x shard {sizes[a]} does not cover axis {a} "
                    f"of extent {shape[a]}; shards must split the tensor evenly")
    for a in axes:
        if shape[a] % sizes[a]:
            raise TTLayoutError(
                f"{name}: nd_shard shard extent {sizes[a]} does not divide axis {a} of extent "
                f"{shape[a]}; shards must split the tensor evenly")
    # the leading axes flatten into the plane's rows: a shard is a contiguous row range iff,
    # from the first split axis on, every later leading axis is whole and every earlier one is 1
    lead = list(range(rank - 1))
    split = [a for a in lead if sizes[a] != shape[a]]
    if split:
        k = split[0]
        if any(sizes[a] != shape[a] for a in lead if a > k) or any(sizes[a] != 1 for a in lead if a < k):
            raise TTUnsupportedError(
                f"{name}: the N-D shard {sizes} of a {list(shape)} tensor is not a contiguous "
                "range of rows of the tiled (batch * rows, cols) plane, so it cannot be projected "
                "onto the 2-D core grid",
                hint="shard only the outermost axes, or keep every axis inside the split one whole")
    rows = 1
    for a in lead:
        rows *= sizes[a]
    return rows, sizes[-1]


def shard_geometry(name: str, memory: str, shape: list, user: dict, profile) -> dict:
    """The ``shard`` entry of a sharded tensor's layout descriptor (validated)."""
    if len(shape) < 2:
        raise TTLayoutError(f"{name}: a sharded tensor needs rank >= 2, got shape {list(shape)}")
    plane_rows = 1
    for d in shape[:-1]:
        plane_rows *= d
    plane = [plane_rows, shape[-1]]
    nd = user.get("nd_shard")
    if nd is not None:
        if "shard_grid" in user or "shard_shape" in user:
            raise TTLayoutError(f"{name}: give either nd_shard or shard_grid/shard_shape, not both")
        shard = list(_project_nd(name, shape, dict(nd)))
    elif "shard_shape" in user:
        shard = _ints(user["shard_shape"], "shard_shape", name, 2)
    elif "shard_grid" in user:
        gy, gx = _ints(user["shard_grid"], "shard_grid", name, 2)
        if plane[0] % gy or plane[1] % gx:
            raise TTLayoutError(
                f"{name}: shard_grid {[gy, gx]} does not split the {plane[0]}x{plane[1]} tensor "
                "evenly")
        shard = [plane[0] // gy, plane[1] // gx]
    else:
        raise TTLayoutError(f"{name}: a sharded layout needs shard_grid, shard_shape or nd_shard")
    if shard[0] % TILE or shard[1] % TILE:
        raise TTLayoutError(
            f"{name}: shard shape {shard[0]}x{shard[1]} is not tile-aligned; shards must be "
            f"multiples of {TILE}x{TILE} elements",
            hint=f"choose shard rows and columns that are multiples of {TILE}")
    if plane[0] % shard[0] or plane[1] % shard[1]:
        raise TTLayoutError(
            f"{name}: shard shape {shard[0]}x{shard[1]} does not split the {plane[0]}x{plane[1]} "
            "tensor evenly")
    grid = [plane[0] // shard[0], plane[1] // shard[1]]
    if "shard_grid" in user and nd is None:
        asked = _ints(user["shard_grid"], "shard_grid", name, 2)
        if asked != grid:
            raise TTLayoutError(
                f"{name}: shard_grid {asked} and shard_shape {shard} disagree: {shard[0]}x{shard[1]} "
                f"shards of a {plane[0]}x{plane[1]} tensor form a {grid[0]}x{grid[1]} grid")
    if memory == "L1":
        if grid[0] > profile.grid_y or grid[1] > profile.grid_x:
            raise TTLayoutError(
                f"{name}: shard grid {grid[0]}x{grid[1]} (rows x cols) exceeds the {profile.name} "
                f"core grid of {profile.grid_y}x{profile.grid_x}",
                hint="use larger shards (one shard per core)")
    elif grid[0] * grid[1] > profile.dram_banks:
        raise TTLayoutError(
            f"{name}: {grid[0] * grid[1]} DRAM shards exceed the {profile.dram_banks} DRAM banks "
            f"of {profile.name}", hint="use larger shards (one shard per bank)")
    kind = ("block" if grid[0] > 1 and grid[1] > 1 else "width" if grid[1] > 1 else "height")
    return {
        "kind": kind,
        "projected_grid": grid,
        "projected_shard_tiles": [shard[0] // TILE, shard[1] // TILE],
        "nd": dict(nd) if nd is not None else {},
    }


def shard_bytes(layout: dict) -> int:
    """Bytes of one shard of a sharded tensor."""
    sm, sn = layout["shard"]["projected_shard_tiles"]
    return sm * sn * int(layout["page_bytes"])


def shard_owner(layout: dict, sy: int, sx: int) -> tuple[int, int]:
    """Logical core (x, y) holding L1 shard (sy, sx) (DRAM: (bank, 0))."""
    if layout["memory"] == "L1":
        return sx, sy
    return sy * layout["shard"]["projected_grid"][1] + sx, 0
