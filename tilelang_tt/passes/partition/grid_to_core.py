"""B2 GridToCoreGrid: block indices become functions of the core's current work unit.

Requires: LayoutAwareWorkPartitionTT.

Guarantees: the ``blockIdx`` launch attributes are gone.  The kernel body is wrapped in
``AttrStmt(tt.persistent_body)``, whose body first binds each block index from
``tt.work_id()`` (``bx = id % gx``, ``by = id / gx % gy``, ``bz = id / (gx * gy)``) and then
holds the original block body unchanged.  ``tt.core_launch`` records the grid and the block
dimensions bound (``block_dims``, 0 = x).  The persistent loop over a core's work units is emitted by codegen.
"""

from __future__ import annotations

from tvm import tirx

from ... import attrs, ops
from .work_partition import launch_grid
from ..common import int_imm, require_attr, seq, tt_pass
from ..common import tt_map


@tt_pass("GridToCoreGrid", requires=("LayoutAwareWorkPartitionTT",))
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
    values = [
        tirx.floormod(work_id, int_imm(gx)),
        tirx.floormod(tirx.floordiv(work_id, int_imm(gx)), int_imm(gy)),
        tirx.floordiv(work_id, int_imm(gx * gy)),
    ]
    binds = [tirx.Bind(v, val) for v, val in zip(block_vars, values) if v is not None]
    persistent = tirx.AttrStmt(0, attrs.PERSISTENT_BODY, int_imm(gx * gy * gz),
                               seq(binds + [body]))
    launch = {"grid": [gx, gy, gz],
              "block_dims": [d for d, v in enumerate(block_vars) if v is not None]}
    return func.with_body(persistent).with_attr(attrs.CORE_LAUNCH, launch)
