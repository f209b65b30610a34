"""F VerifyTTIR: the lowered module is complete and fits the device.

Requires: FinalizePersistentSignatureTT on every kernel.

Checks (``TTResourceError`` for device limits, ``TTVerifyError`` for broken invariants):

* the module holds exactly one reader, one compute and one writer kernel of one source;
* every kernel carries the attributes codegen needs and they match their schemas;
* no abstract op (``tt.read_to_cb``, ``tt.mm.mma``, ``tt.fpu.*`` ...), tile primitive or
  element access is left;
* CB ids are unique, at most 32, and every CB used by a call is allocated in its kernel;
* the CBs' L1 footprint (pages x page size, all CBs) fits the core's usable L1;
* every DST index used by ``matmul_tiles`` / ``copy_tile`` / ``*_tiles`` / ``pack_tile`` is
  provably below the DST capacity of the compute configuration;
* the data formats are supported (bfloat16, float32).
"""

from __future__ import annotations

import tvm
from tvm import tirx
from tvm.sym import Analyzer

from .. import attrs, ops
from ..errors import TTResourceError, TTVerifyError
from ..target import profile_of
from .common import collect, get_attr, require_attr, to_py, tt_calls, tt_module_pass
from .d1_split_kernel import KINDS

REQUIRED = {
    "reader": (attrs.KERNEL_KIND, attrs.TILE_DFG, attrs.PARTITION, attrs.ACCESSORS,
               attrs.RUNTIME_ARGS, attrs.PERSISTENT, attrs.LAYOUT_DESC),
    "writer": (attrs.KERNEL_KIND, attrs.TILE_DFG, attrs.PARTITION, attrs.ACCESSORS,
               attrs.RUNTIME_ARGS, attrs.PERSISTENT, attrs.LAYOUT_DESC),
    "compute": (attrs.KERNEL_KIND, attrs.TILE_DFG, attrs.PARTITION, attrs.RUNTIME_ARGS,
                attrs.PERSISTENT, attrs.COMPUTE_CONFIG, attrs.DST_PLAN),
}


def kernels_of(mod) -> dict:
    """kind -> PrimFunc of a split module (exactly one of each)."""
    found = {}
    for gv, func in mod.functions.items():
        kind = get_attr(func, attrs.KERNEL_KIND)
        if kind is None:
            raise TTVerifyError(f"{gv.name_hint} was not split into device kernels")
        if str(kind) in found:
            raise TTVerifyError(f"two {kind} kernels in the module")
        found[str(kind)] = func
    missing = [k for k in KINDS if k not in found]
    if missing:
        raise TTVerifyError(f"module lacks the {', '.join(missing)} kernel(s)")
    return found


def all_cbs(kernels: dict) -> list:
    """Every CB of the program (union over kernels, by id)."""
    by_id = {}
    for func in kernels.values():
        for e in to_py(get_attr(func, attrs.TILE_DFG, [])):
            by_id.setdefault(int(e["id"]), e)
    return [by_id[i] for i in sorted(by_id)]


def _check_kernel(kind, func, profile):
    name = str(func.attrs["global_symbol"])
    for key in REQUIRED[kind]:
        if get_attr(func, key) is None:
            raise TTVerifyError(f"{name}: missing attribute {key}")
        value = to_py(get_attr(func, key))
        if key == attrs.LAYOUT_DESC:  # one descriptor per parameter
            problems = [p for v in value for p in attrs.check(key, v)]
        else:
            problems = attrs.check(key, value) if isinstance(value, dict) else []
        if problems:
            raise TTVerifyError(f"{name}: " + "; ".join(problems))
    for call in tt_calls(func.body):
        spec = ops.spec(call.op.name)
        if spec.family == "abstract":
            raise TTVerifyError(f"{name}: abstract op {call.op.name} was not lowered")
    if collect(func.body, tirx.TilePrimitiveCall):
        raise TTVerifyError(f"{name}: tile primitives left after lowering")
    if collect(func.body, tirx.BufferStore) or collect(func.body, tvm.ir.TensorLoad):
        raise TTVerifyError(f"{name}: element accesses left after lowering")
    allocated = {b.var for b in collect(func.body, tirx.Bind)
                 if ops.tt_op_name(b.value) == "tt.alloc_cb"}
    for call in tt_calls(func.body):
        if call.op.name.startswith("tt.cb_") or call.op.name in ("tt.get_write_ptr",
                                                                   "tt.get_read_ptr"):
            cb = call.args[0]
            if isinstance(cb, tvm.ir.Var) and cb not in allocated:
                raise TTVerifyError(f"{name}: {call.op.name} uses CB {cb.name} not allocated here")
    if kind == "compute":
        config = to_py(func.attrs[attrs.COMPUTE_CONFIG])
        cap = profile.dst_capacity(bool(config["fp32_dest_acc_en"]),
                                   bool(config["dst_full_sync_en"]))
        ana = Analyzer()
        for loop in collect(func.body, tirx.For):
            ana.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))
        for call in tt_calls(func.body):
            for pos in ops.dst_operands(call):
                bound = ana.const_int_bound(call.args[pos])
                if bound.max_value >= cap:
                    raise TTResourceError(
                        f"{name}: {call.op.name} uses DST tile {call.args[pos]} (up to "
                        f"{bound.max_value}) but DST holds {cap} tiles in this mode")


@tt_module_pass("VerifyTTIR")
def VerifyTTIR(mod, ctx):
    """Check the lowered module (see module docstring); returns it unchanged."""
    kernels = kernels_of(mod)
    target = str(require_attr(kernels["compute"], attrs.TARGET, "VerifyTTIR"))
    profile = profile_of(target)
    for kind, func in kernels.items():
        if "FinalizePersistentSignatureTT" not in list(get_attr(func, attrs.STAGE_LOG, [])):
            raise TTVerifyError(f"{kind} kernel: FinalizePersistentSignatureTT has not run")
        _check_kernel(kind, func, profile)
    cbs = all_cbs(kernels)
    if len(cbs) > profile.max_cbs:
        raise TTResourceError(f"{len(cbs)} circular buffers; a core has {profile.max_cbs}")
    for e in cbs:
        if e["dtype"] not in ("bfloat16", "float32"):
            raise TTVerifyError(f"CB {e['name']} has unsupported data format {e['dtype']}")
    footprint = sum(cb_bytes(e) for e in cbs)
    if footprint > profile.l1_usable_bytes:
        detail = ", ".join(f"{e['name']} {cb_bytes(e) // 1024} KiB "
                           f"({e['rows']}x{e['cols']} tiles x {e['depth']})" for e in cbs)
        raise TTResourceError(
            f"circular buffers need {footprint // 1024} KiB of L1 but a {profile.name} core has "
            f"{profile.l1_usable_bytes // 1024} KiB usable: {detail}",
            hint="use smaller blocks or fewer pipeline stages (num_stages)")
    return mod


def cb_bytes(entry) -> int:
    return int(entry["rows"]) * int(entry["cols"]) * int(entry["depth"]) * int(entry["page_bytes"])
