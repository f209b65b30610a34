"""DST lowering, shared parts: the per-kernel context and the shape of one DST round.

Used by D5 (:mod:`.d5_dst_management`), :mod:`.dst_accumulator` and :mod:`.dst_streams`.
"""

from __future__ import annotations

from tvm import tirx

from ... import attrs, ops
from ...errors import TTUnsupportedError
from ...target import profile_of
from ..dataflow.shared_to_cb import alloc_cb_call
from ..common import int_imm, loop_nest, require_attr, seq, tile_bytes, to_py
from .compute_init import CBInfo

# compute ops that stream blocks through DST (they cannot run while an accumulator holds it)
ELTWISE = {name for name, s in ops.specs().items()
           if s.family == "abstract" and s.kernel == "compute"
           and ("arith" in s.props or s.props.get("self_init"))}


def ev(name, *args):
    return ops.evaluate(name, *args)


def largest_divisor(n: int, cap: int) -> int:
    return max(d for d in range(1, min(n, max(cap, 1)) + 1) if n % d == 0)


class DstContext:
    """What the DST lowering of one compute kernel needs: CB facts, DST capacity, the data
    format configuration, spill CBs created on the way and the sub-blocking plan."""

    def __init__(self, func):
        self.func = func
        self.info = CBInfo(func)
        config = to_py(require_attr(func, attrs.COMPUTE_CONFIG, "InsertDSTManagementTT"))
        self.config = config
        profile = profile_of(str(require_attr(func, attrs.TARGET, "InsertDSTManagementTT")))
        self.capacity = profile.dst_capacity(bool(config["fp32_dest_acc_en"]),
                                             bool(config["dst_full_sync_en"]))
        dtypes = {e["dtype"] for e in self.info.entries}
        self.new_cbs = []  # spill CBs: (Bind, dfg entry)
        self.multi_format = len(dtypes) > 1
        self.plan = []
        options = to_py(func.attrs[attrs.COMPILE_OPTIONS]) if func.attrs is not None and \
            attrs.COMPILE_OPTIONS in func.attrs else {}
        self.packer_l1_acc = bool((options or {}).get(attrs.PC_PACKER_L1_ACC, True))

    def note_dtype(self, dtype):
        dtypes = {e["dtype"] for e in self.info.entries} | {dtype}
        self.multi_format = len(dtypes) > 1

    def pack_cfg(self, cb):
        return [ev("tt.pack_reconfig_data_format", cb)] if self.multi_format else []

    def srca_cfg(self, cb):
        return [ev("tt.reconfig_data_format_srca", cb)] if self.multi_format else []

    def srcb_cfg(self, cb):
        return [ev("tt.reconfig_data_format_srcb", cb)] if self.multi_format else []

    def tiles(self, cb) -> int:
        entry = self.info._find(cb)
        return int(entry["rows"]) * int(entry["cols"])

    def new_spill_cb(self, acc, rows, cols, dtype):
        used = {int(e["id"]) for e in self.info.entries}
        free = [i for i in range(24, 32) if i not in used] or \
            [i for i in range(32) if i not in used]
        if not free:
            raise TTUnsupportedError(
                f"no circular buffer left for the partial results of {acc.name} (32 in use)")
        var = tirx.Var(f"{acc.name}_partials_cb", "int32")
        entry = {"name": f"{acc.name}_partials", "rows": rows, "cols": cols,
                 "depth": 1, "dtype": dtype, "page_bytes": tile_bytes(dtype),
                 "producer": "compute", "consumer": "compute", "role": "spill", "id": free[0]}
        self.info.entries.append(entry)
        self.info.var_ids[var] = free[0]
        bind = tirx.Bind(var, alloc_cb_call(rows, cols, 1, dtype, entry["name"], cb_id=free[0]))
        self.new_cbs.append(bind)
        self.note_dtype(dtype)
        return var, entry


def pack_round(cx: DstContext, out, base, chunk, slot=lambda d: d):
    """End of a DST round: hand DST to the packer and pack tiles ``base .. base + chunk`` of
    the reserved ``out`` block from their slots."""
    return [ev("tt.tile_regs_commit"), ev("tt.tile_regs_wait")] + cx.pack_cfg(out) + [
        loop_nest([chunk], lambda d: ev("tt.pack_tile", slot(d), out, base + d, int_imm(0)),
                  ["d"]),
        ev("tt.tile_regs_release"),
    ]


def in_chunks(out, n, chunk, group):
    """The ``n``-tile output block reserved, produced ``chunk`` tiles per DST round, pushed."""
    return seq([
        ev("tt.cb_reserve_back", out, int_imm(n)),
        loop_nest([n // chunk], group, ["chunk"]),
        ev("tt.cb_push_back", out, int_imm(n)),
    ])
