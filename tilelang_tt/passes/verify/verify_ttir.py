"""F VerifyTTIR: the lowered module is complete and fits the device.

Requires: LowerPersistentLoopTT on every kernel.

Checks (``TTResourceError`` for device limits, ``TTVerifyError`` for broken invariants):

* the module holds exactly one reader, one compute and one writer kernel of one source;
* every kernel carries the attributes codegen needs and they match their schemas;
* no abstract op (``tt.read_to_cb``, ``tt.mm.mma``, ``tt.fpu.*`` ...), tile primitive or
  element access is left;
* CB ids are below 32 and every CB used by a call is allocated in its kernel; an id several
  ``tt.alloc_cb`` share (D5.2) is the compute kernel's, its CBs of one block shape and format
  with lifetimes that do not overlap (``compute/cb_share.py``'s ``share_problems``);
* the CBs' L1 footprint (pages x page size; the CBs of one ``tt.l1_regions`` region share its
  bytes) plus the core's shards of L1-sharded tensors fits the core's usable L1 (the error
  names the tensors, bytes needed and available); each CB is in at most one region, which
  holds its ring in whole blocks;
* every op's arity and operand kinds conform to the op registry;
* the TT-Metalium protocol holds on every path (:mod:`.protocol`): CB reserve/push and
  wait/pop balanced on every path and loop iteration, NOC barriers before a push (reader) and
  a pop (writer), DST acquire -> commit -> wait -> release in order with every DST index
  below the capacity of the compute configuration, every compute call after its init on
  every path;
* the data formats are supported (bfloat16, float32).
"""

from __future__ import annotations

import tvm
from tvm import tirx
from tvm.sym import Analyzer

from ... import attrs, ops
from ...errors import TTResourceError, TTVerifyError
from ...target import profile_of
from ..layout.sharding import shard_bytes
from ..common import CB_DATA_FORMAT, collect, get_attr, require_attr, to_py, tt_calls, tt_module_pass
from ..protocol.split_kernel import KINDS
from ..analysis.protocol import protocol_problems

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
    # a scalar program's locals (A0.00.1: C++ locals of the reader) are its only element accesses
    local = {str(a.buffer.name) for p in collect(func.body, tirx.AttrStmt, lambda a: str(
        a.attr_key) == attrs.SCALAR_PROGRAM) for a in collect(p, tirx.AllocBuffer)
        if str(a.buffer.scope()) in ("local", "local.var")}
    if collect(func.body, tirx.BufferStore, lambda st: str(st.buffer.name) not in local) or \
            collect(func.body, tvm.ir.TensorLoad, lambda ld: str(ld.source.name) not in local):
        raise TTVerifyError(f"{name}: element accesses left after lowering")
    allocated = {b.var for b in collect(func.body, tirx.Bind)
                 if ops.tt_op_name(b.value) == "tt.alloc_cb"}
    for call in tt_calls(func.body):
        if call.op.name.startswith("tt.cb_") or call.op.name in ("tt.get_write_ptr",
                                                                   "tt.get_read_ptr"):
            cb = call.args[0]
            if isinstance(cb, tvm.ir.Var) and cb not in allocated:
                raise TTVerifyError(f"{name}: {call.op.name} uses CB {cb.name} not allocated here")
    problems = protocol_problems(func, profile)
    for call in collect(func.body, tvm.ir.Call):
        if ops.tt_op_name(call) is not None:
            problems += [f"{name}: {p}" for p in ops.verify_call(call)]
    if problems:
        more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
        raise TTVerifyError("the lowered kernels break the TT-Metalium protocol:\n  "
                            + "\n  ".join(problems[:5]) + more)


def _l1_hint(func) -> str:
    hint = "use smaller blocks or fewer pipeline stages (num_stages)"
    coarsened = to_py(get_attr(func, attrs.ROW_COARSEN, [])) or []
    if coarsened:
        rows = ", ".join(f"{r['rows']}-row blocks along {r['axis']}" for r in coarsened)
        hint += (f"; the kernel's {rows} run as 32-row blocks (a Tensix tile has 32 rows), "
                 "so each block buffer holds 32 rows of its columns: block the columns too "
                 "(a loop over column blocks, as TileLang's rms_norm_splitk does with blk_k)")
    return hint


@tt_module_pass("VerifyTTIR")
def VerifyTTIR(mod, ctx):
    """Check the lowered module (see module docstring); returns it unchanged."""
    kernels = kernels_of(mod)
    target = str(require_attr(kernels["compute"], attrs.TARGET, "VerifyTTIR"))
    profile = profile_of(target)
    for kind, func in kernels.items():
        if "LowerPersistentLoopTT" not in list(get_attr(func, attrs.STAGE_LOG, [])):
            raise TTVerifyError(f"{kind} kernel: LowerPersistentLoopTT has not run")
        _check_kernel(kind, func, profile)
    cbs = all_cbs(kernels)
    if len(cbs) > profile.max_cbs:
        raise TTResourceError(
            f"{len(cbs)} circular buffers; a core has {profile.max_cbs}: "
            + ", ".join(f"{e['name']} ({e['role']})" for e in cbs),
            hint="each block buffer (and each version of one updated in place) is a circular "
            "buffer: compute into fewer block buffers (reuse one whose value is dead), or split "
            "the kernel into two launches")
    high = [e for e in cbs if not 0 <= int(e["id"]) < profile.max_cbs]
    if high:
        raise TTVerifyError("CB ids past the core's " f"{profile.max_cbs}: "
                            + ", ".join(f"{e['name']} ({e['id']})" for e in high))
    from ..compute.cb_share import share_problems  # (it imports this module)

    shared = share_problems(kernels)
    if shared:
        raise TTVerifyError("circular buffers share an index unsafely:\n  "
                            + "\n  ".join(shared))
    for e in cbs:
        if e["dtype"] not in CB_DATA_FORMAT:
            raise TTVerifyError(f"CB {e['name']} has unsupported data format {e['dtype']}")
    # a CB used in place occupies its tensor's L1 shard, counted with the shards; the CBs of
    # one region (PlanL1AliasTT) share its bytes
    regions = to_py(get_attr(kernels["compute"], attrs.L1_REGIONS, [])) or []
    _check_regions(regions, cbs)
    footprint = cb_footprint(cbs, regions)
    layouts = to_py(get_attr(kernels["compute"], attrs.LAYOUT_DESC, [])) or []
    shards = [(d["name"], shard_bytes(d)) for d in layouts
              if d["memory"] == "L1" and d["layout"] == "sharded"]
    if shards and footprint + sum(b for _, b in shards) > profile.l1_usable_bytes:
        need = footprint + sum(b for _, b in shards)
        raise TTResourceError(
            "L1 over capacity: " + ", ".join(f"{n}'s shard needs {b} bytes" for n, b in shards)
            + f" and the circular buffers {footprint} bytes: {need} bytes needed but a "
            f"{profile.name} core has {profile.l1_usable_bytes} bytes of L1 available",
            hint="use smaller shards (more cores), smaller blocks or fewer pipeline stages")
    if footprint > profile.l1_usable_bytes:
        detail = ", ".join(f"{e['name']} {cb_bytes(e) // 1024} KiB "
                           f"({e['rows']}x{e['cols']} tiles x {e['depth']})" for e in cbs)
        fit = to_py(get_attr(kernels["compute"], attrs.L1_FIT, [])) or []
        kept = to_py(get_attr(kernels["compute"], attrs.L1_FIT_KEPT, [])) or []
        done = (" (already single-buffered to fit: "
                + ", ".join(dict.fromkeys(f["name"] for f in fit)) + ")") if fit else ""
        if kept:
            done += "; " + "; ".join(f"{k['name']} keeps its {k['depth']} blocks: {k['why']}"
                                     for k in kept)
        raise TTResourceError(
            f"circular buffers need {footprint // 1024} KiB of L1 but a {profile.name} core has "
            f"{profile.l1_usable_bytes // 1024} KiB usable: {detail}{done}",
            hint=_l1_hint(kernels["compute"]) + (
                "; or pass_configs={'tt.multicast': False}: every core then reads its own "
                "blocks, which one block of ring serves" if any("multicast" in k["why"]
                                                                 for k in kept) else ""))
    return mod


def cb_footprint(cbs, regions) -> int:
    """L1 bytes of the CBs: a region's once, every other CB's ring (CBs on L1 shards: 0)."""
    in_region = {int(c) for r in regions for c in r["cbs"]}
    return sum(int(r["bytes"]) for r in regions) + sum(
        cb_bytes(e) for e in cbs if "in_place" not in e and int(e["id"]) not in in_region)


def _check_regions(regions, cbs):
    """Each CB in at most one region; a region holds every member's ring, in whole blocks."""
    by_id = {int(e["id"]): e for e in cbs}
    seen = set()
    for r in regions:
        for c in r["cbs"]:
            c = int(c)
            e = by_id.get(c)
            if e is None or c in seen or "in_place" in e:
                raise TTVerifyError(f"L1 region {r['name']}: CB {c} is unknown, on an L1 shard "
                                    "or in two regions")
            seen.add(c)
            block = int(e["rows"]) * int(e["cols"]) * int(e["page_bytes"])
            if int(r["bytes"]) < cb_bytes(e) or int(r["bytes"]) % block:
                raise TTVerifyError(f"L1 region {r['name']} ({r['bytes']} bytes) does not hold "
                                    f"CB {e['name']}'s ring of {cb_bytes(e)} bytes in whole "
                                    "blocks")


def cb_bytes(entry) -> int:
    return int(entry["rows"]) * int(entry["cols"]) * int(entry["depth"]) * int(entry["page_bytes"])
