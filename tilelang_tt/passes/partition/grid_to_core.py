"""B2 GridToCoreGrid: block indices become functions of the core's current work unit.

Requires: LayoutAwareWorkPartitionTT.

Guarantees: the ``blockIdx`` launch attributes are gone.  The kernel body is wrapped in
``AttrStmt(tt.persistent_body)``, whose body first binds each block index from
``tt.work_id()`` and then holds the original block body unchanged.  In the ``global``
partition ``bx = id % gx``, ``by = id / gx % gy``, ``bz = id / (gx * gy)``; in ``local_shard``
the units are numbered shard-major (see LayoutAwareWorkPartitionTT): ``s = id / per``
(``per`` units per shard) is the shard ``(sy, sx) = (s / Gx, s % Gx)``, the rest ``id % per``
is decoded over the block dimensions with a pinned dimension's extent the blocks per shard,
and a pinned dimension adds its shard's first block (``sy * By`` or ``sx * Bx``); with B1's
``tile`` (a rectangle of blocks per core) unit ``(y * ux + x) * tx * ty + j * tx + i`` is block
``(x * tx + i, y * ty + j)``.  In the
``global`` partition, when a loop's bounds depend on ``bx`` (causal attention's key loop stops
at the diagonal), ``bx`` runs through its range folded - 0, gx - 1, 1, gx - 2, ... - so a
core's consecutive work units pair cheap blocks with expensive ones.  ``tt.core_launch`` records the grid and the block
dimensions bound (``block_dims``, 0 = x).  The persistent loop over a core's work units is emitted by codegen.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ... import attrs, ops
from .work_partition import launch_grid
from ..common import collect, get_attr, int_imm, require_attr, seq, to_py, tt_pass
from ..common import tt_map


@tt_pass("GridToCoreGrid", requires=("LayoutAwareWorkPartitionTT",), scalar_programs=True)
def GridToCoreGrid(func, mod, ctx):
    """Replace the block launch by per-work-unit block index bindings."""
    require_attr(func, attrs.PARTITION, "GridToCoreGrid")
    block_vars, (gx, gy, gz) = launch_grid(func.body)

    def strip(attr):
        if str(attr.attr_key) == "thread_extent":
            return attr.body
        return attr

    body = tt_map(func.body, [(tirx.AttrStmt, strip)], order="post")
    work_id = ops.call("tt.work_id")
    partition = to_py(get_attr(func, attrs.PARTITION))
    shard, tile = partition["shard"], partition.get("tile") or []
    values = _decode_tiled(work_id, tile) if tile else _decode(work_id, [gx, gy, gz], shard)
    if not shard and not tile and block_vars[0] is not None and gx > 2 and _bounds_loops(body, block_vars[0]):
        values[0] = _folded(values[0], gx)
    binds = [tirx.Bind(v, val) for v, val in zip(block_vars, values) if v is not None]
    persistent = tirx.AttrStmt(0, attrs.PERSISTENT_BODY, int_imm(gx * gy * gz),
                               seq(binds + [body]))
    launch = {"grid": [gx, gy, gz],
              "block_dims": [d for d, v in enumerate(block_vars) if v is not None]}
    return func.with_body(persistent).with_attr(attrs.CORE_LAUNCH, launch)


def _bounds_loops(body, var) -> bool:
    """Whether a loop's start or extent in ``body`` depends on the block index ``var``
    directly or through bound names (TileLang's causal attention: the key loop stops at the
    diagonal block, so blocks of larger ``bx`` do more work)."""
    depends = [var]  # the block index and the names bound to values of it
    for b in collect(body, tirx.Bind):
        if any(v.same_as(d) for v in collect(b.value, tvm.ir.Var) for d in depends):
            depends.append(b.var)
    return any(any(v.same_as(d) for v in collect(tirx.Add(loop.min, loop.extent), tvm.ir.Var)
                   for d in depends)
               for loop in collect(body, tirx.For))


def _folded(t, extent: int):
    """``t`` in ``[0, extent)`` reordered 0, extent - 1, 1, extent - 2, ...: consecutive work
    units (one core's range) pair a small block index with a large one."""
    half = tirx.floordiv(t, int_imm(2))
    return tirx.Select(tirx.EQ(tirx.floormod(t, int_imm(2)), int_imm(0)), half,
                       int_imm(extent - 1) - half)


def _decode_tiled(work_id, tile) -> list:
    """Block indices of work unit ``work_id`` with a ``tx x ty`` rectangle of blocks per core
    (B1's ``tile`` = ``[tx, ty, ux, uy]``): unit ``(y * ux + x) * tx * ty + j * tx + i`` is
    block ``(x * tx + i, y * ty + j)``."""
    tx, ty, ux, _ = (int(v) for v in tile)
    core = tirx.floordiv(work_id, int_imm(tx * ty))
    step = tirx.floormod(work_id, int_imm(tx * ty))
    return [tirx.floormod(core, int_imm(ux)) * int_imm(tx) + tirx.floormod(step, int_imm(tx)),
            tirx.floordiv(core, int_imm(ux)) * int_imm(ty) + tirx.floordiv(step, int_imm(tx)),
            int_imm(0)]


def _decode(work_id, grid, shard) -> list:
    """Block index expressions (x, y, z) of work unit ``work_id``."""
    if not shard:
        extents, offsets, local = grid, [0, 0, 0], work_id
    else:
        gy_s, gx_s = shard["grid"]
        extents = list(grid)
        offsets = [0, 0, 0]
        for axis, (dim, per) in enumerate(zip(shard["pins"], shard["blocks"])):
            if dim >= 0:
                extents[dim] = per
        per_shard = extents[0] * extents[1] * extents[2]
        sid = tirx.floordiv(work_id, int_imm(per_shard))
        coords = [tirx.floordiv(sid, int_imm(gx_s)), tirx.floormod(sid, int_imm(gx_s))]
        for axis, (dim, per) in enumerate(zip(shard["pins"], shard["blocks"])):
            if dim >= 0:
                offsets[dim] = coords[axis] * int_imm(per)
        local = tirx.floormod(work_id, int_imm(per_shard))
    ex, ey, _ = extents
    values = [tirx.floormod(local, int_imm(ex)),
              tirx.floormod(tirx.floordiv(local, int_imm(ex)), int_imm(ey)),
              tirx.floordiv(local, int_imm(ex * ey))]
    return [v if isinstance(o, int) and o == 0 else v + o for v, o in zip(values, offsets)]
