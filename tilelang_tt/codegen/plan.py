"""The runtime plan (``tt.plan.json``): everything the host program does, as data.

Tensors (buffer descriptors: shape, dtype, layout, pages, shards), circular buffers, kernels
with their compile-time and runtime argument layouts, the compute configuration, the partition
(``partition_mode``: ``global`` or ``local_shard``, ``core_ranges``: the used cores as
inclusive rectangles ``[x0, y0, x1, y1]``, ``layouts``: each tensor's memory, layout and shard
geometry), the CBs' L1 (``l1``: bytes with and without aliasing, ``saved_bytes``, and the
``regions`` of CBs sharing L1; each such CB names its ``region``) and, per core, its range of
work units (and in ``local_shard`` its shard).  Everything is read from the lowered module's
attributes, so building the plan takes the same time for any problem size.

On request (``build_plan(mod, pages=True)``: a debugging aid and test oracle, not used by
the host program or the runtime) each core also lists the DRAM pages its reader reads and
its writer writes, obtained by *executing* the lowered reader and writer TIR for the core's
work units (a small interpreter over the forms the pipeline produces), so they show what the
generated kernels will touch, not what anyone intended; this takes time proportional to the
number of pages.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from .. import attrs, ops
from ..errors import TTVerifyError
from ..passes.common import CB_DATA_FORMAT, DATA_FORMAT, get_attr, to_py, tt_calls
from ..passes.verify.verify_ttir import all_cbs, cb_footprint, kernels_of
from ..target import SDK_NAME, SDK_VERSION

PLAN_VERSION = 1
PROCESSORS = {"reader": ("RISCV_1", "RISCV_1_default"), "writer": ("RISCV_0", "RISCV_0_default")}

_ARITH = {
    tirx.Add: lambda a, b: a + b, tirx.Sub: lambda a, b: a - b, tirx.Mul: lambda a, b: a * b,
    tirx.FloorDiv: lambda a, b: a // b, tirx.FloorMod: lambda a, b: a % b,
    tirx.Div: lambda a, b: a // b, tirx.Mod: lambda a, b: a % b,
    tirx.EQ: lambda a, b: int(a == b), tirx.NE: lambda a, b: int(a != b),
    tirx.LT: lambda a, b: int(a < b), tirx.LE: lambda a, b: int(a <= b),
    tirx.GT: lambda a, b: int(a > b), tirx.GE: lambda a, b: int(a >= b),
    tirx.And: lambda a, b: int(bool(a) and bool(b)), tirx.Or: lambda a, b: int(bool(a) or bool(b)),
    tirx.Min: min, tirx.Max: max,
}


class PageTracer:
    """Runs a dataflow kernel's TIR for a core's range of work units and records the pages it
    moves (a debugging aid and test oracle: the time it takes grows with the problem)."""

    def __init__(self, func):
        self.func = func
        persistent = to_py(get_attr(func, attrs.PERSISTENT))
        self.start_slot, self.count_slot = persistent["start_slot"], persistent["count_slot"]
        self.env, self.args, self.pages, self.accessor_buffer = {}, {}, {}, {}

    def value(self, e):
        if isinstance(e, tvm.tirx.IntImm):
            return int(e.value)
        if isinstance(e, tvm.ir.Var):
            try:
                return self.env[hash(e)]  # FFI objects hash by node identity
            except KeyError:
                raise TTVerifyError(f"plan: unbound variable {e.name}") from None
        fn = _ARITH.get(type(e))
        if fn is not None:
            return fn(self.value(e.a), self.value(e.b))
        if isinstance(e, tirx.Not):
            return int(not self.value(e.a))
        if isinstance(e, tvm.ir.Call):
            name = ops.tt_op_name(e)
            if name == "tt.get_arg_val":
                return self.args.get(int(e.args[0]), 0)
            if name in ("tt.get_write_ptr", "tt.get_read_ptr", "tt.get_semaphore"):
                return 0
            if name == "tt.as_signed":
                return self.value(e.args[0])
            if name == "tt.l1_load_u32":  # a tensor element a branch reads (C2.2)
                raise TTVerifyError(
                    "plan: the pages this kernel moves depend on tensor elements its branches "
                    "read (a scalar tensor); they are known only when it runs")
        raise TTVerifyError(f"plan: cannot evaluate `{e}`")

    def run(self, s):
        if isinstance(s, tirx.SeqStmt):
            for x in s.seq:
                self.run(x)
        elif isinstance(s, tirx.For):
            lo, ext = self.value(s.min), self.value(s.extent)
            for i in range(lo, lo + ext):
                self.env[hash(s.loop_var)] = i
                self.run(s.body)
        elif isinstance(s, tirx.Bind):
            if ops.tt_op_name(s.value) == "tt.tensor_accessor":
                self.accessor_buffer[hash(s.var)] = str(s.value.args[0].name)
            elif ops.tt_op_name(s.value) != "tt.alloc_cb":
                self.env[hash(s.var)] = self.value(s.value)
        elif isinstance(s, tirx.IfThenElse):
            if self.value(s.condition):
                self.run(s.then_case)
            elif s.else_case is not None:
                self.run(s.else_case)
        elif isinstance(s, tirx.Evaluate):
            name = ops.tt_op_name(s.value)
            if name in ("tt.noc_async_read_page", "tt.noc_async_write_page",
                        "tt.noc_async_read_part", "tt.noc_async_write_part"):
                tile, accessor = s.value.args[0], s.value.args[1]
                buf = self.accessor_buffer[hash(accessor)]
                self.pages.setdefault(buf, []).append(self.value(tile))

    def trace(self, start: int, count: int, extra: dict | None = None) -> dict:
        self.pages, self.env = {}, {}
        self.args = {self.start_slot: start, self.count_slot: count, **(extra or {})}
        self.run(self.func.body)
        return self.pages


def _kernel_entry(kind, func):
    names = [str(p.name) for p in func.params]
    runtime = []
    for a in to_py(get_attr(func, attrs.RUNTIME_ARGS, [])):
        entry = {"kind": a["kind"]}
        if "param" in a:
            entry["tensor"] = names[a["param"]]
        if a["kind"] == "mcast":
            entry["group"], entry["field"] = int(a["group"]), str(a["field"])
        runtime.append(entry)
    compile_args = [{"kind": "tensor_accessor", "tensor": names[a["param"]],
                     "index": a["index"]} for a in to_py(get_attr(func, attrs.ACCESSORS, []))]
    entry = {"file": f"{kind}.cpp", "compile_args": compile_args, "runtime_args": runtime}
    if kind in PROCESSORS:
        entry["processor"], entry["noc"] = PROCESSORS[kind]
    else:
        entry["config"] = to_py(get_attr(func, attrs.COMPUTE_CONFIG))
        entry["dst_plan"] = to_py(get_attr(func, attrs.DST_PLAN, []))
    return entry


def core_ranges(cores) -> list[tuple[int, int, int, int]]:
    """Cover the used cores with row-wise inclusive rectangles (x0, y0, x1, y1)."""
    rows = {}
    for x, y in cores:
        rows.setdefault(y, []).append(x)
    ranges = []
    for y in sorted(rows):
        xs = sorted(rows[y])
        start = prev = xs[0]
        for x in xs[1:] + [None]:
            if x is not None and x == prev + 1:
                prev = x
                continue
            ranges.append((start, y, prev, y))
            if x is not None:
                start = prev = x
    return ranges


def _single_buffered(compute) -> dict:
    """``{"single_buffered": [...]}``: the CBs D6.1 single-buffered to fit L1 (name, id, the
    depth each had, L1 saved), or ``{}`` when none was (the plan of a kernel that fits is
    unchanged)."""
    fit = to_py(get_attr(compute, attrs.L1_FIT, [])) or []
    if not fit:
        return {}
    return {"single_buffered": [{"name": f["name"], "cb": int(f["cb"]), "depth": int(f["depth"]),
                                 "saved_bytes": int(f["saved_bytes"])} for f in fit]}


def build_plan(mod, pages: bool = False) -> dict:
    """The plan of a lowered module; ``pages`` adds each core's DRAM page lists."""
    kernels = kernels_of(mod)
    reader, writer = kernels["reader"], kernels["writer"]
    source = str(get_attr(reader, attrs.KERNEL_SOURCE))
    partition = to_py(get_attr(reader, attrs.PARTITION))
    layouts = to_py(get_attr(reader, attrs.LAYOUT_DESC))
    read_by = {a["param"] for a in to_py(get_attr(reader, attrs.ACCESSORS, []))}
    written_by = {a["param"] for a in to_py(get_attr(writer, attrs.ACCESSORS, []))}
    # a scalar program's reader stores into these (A0.00.1): read and written back, in / out
    written_by |= {int(i) for i in to_py(get_attr(reader, attrs.SCALAR_PROGRAM, []) or [])}
    for e in all_cbs(kernels):  # L1 shards used in place: read (written) through their CB
        if "in_place" in e:
            (read_by if e["producer"] == "reader" else written_by).add(int(e["in_place"]))

    tensors = []
    for index, buf in enumerate(reader.params):
        lay = layouts[index]
        name = str(buf.name)
        role = ("inout" if index in read_by and index in written_by else
                "input" if index in read_by else "output" if index in written_by else "unused")
        tensors.append({
            # the host's shape, and the device's (padded with zeros: A0.3.1)
            "name": name, "index": index, "shape": lay.get("logical_shape", lay["shape"]),
            "padded_shape": lay["shape"], "pad_value": float(lay.get("pad_value", 0.0)),
            "axes": lay["axes"],
            "dtype": lay["dtype"],
            # a scalar tensor's words are 32-bit (the host converts its elements)
            "data_format": "UInt32" if lay.get("scalars") else DATA_FORMAT[lay["dtype"]],
            "role": role, "memory": lay["memory"],
            "layout": lay["layout"], "page_bytes": lay["page_bytes"], "tiles": lay["tiles"],
            "vector": bool(lay.get("vector", len(lay["shape"]) == 1)),
            "num_pages": lay["tiles"][0] * lay["tiles"][1],
            "shard": lay.get("shard", {}),
        })
        if lay.get("scalars"):  # read as scalars in conditions: 32-bit words, not tiles
            tensors[-1]["scalars"] = True
        if "host_shape" in lay:  # T.reshape / T.view of the tensor: the caller's shape, dtype
            tensors[-1]["host_shape"] = list(lay["host_shape"])
            tensors[-1]["host_dtype"] = str(lay["host_dtype"])
        if "host_axes" in lay:  # A0.1.5 / A0.1.6: the host transposes, converts the values
            tensors[-1]["host_axes"] = [int(a) for a in lay["host_axes"]]
            tensors[-1]["host_convert"] = bool(lay["host_convert"])

    cbs = []
    for e in all_cbs(kernels):
        cbs.append({
            "id": int(e["id"]), "name": e["name"], "role": e["role"], "dtype": e["dtype"],
            "data_format": CB_DATA_FORMAT[e["dtype"]], "page_bytes": int(e["page_bytes"]),
            "block": [int(e["rows"]), int(e["cols"])], "depth": int(e["depth"]),
            "num_pages": int(e["rows"]) * int(e["cols"]) * int(e["depth"]),
            "producer": e["producer"], "consumer": e["consumer"],
        })
        if "shared" in e:  # D5.2: intermediates of disjoint lifetimes use this one index in turn
            cbs[-1]["shared"] = [str(n) for n in e["shared"]]
        if "in_place" in e:  # the ring is this tensor's L1 shard (set_globally_allocated_address)
            cbs[-1]["in_place"] = str(reader.params[int(e["in_place"])].name)
    regions = to_py(get_attr(kernels["compute"], attrs.L1_REGIONS, [])) or []
    by_id = {cb["id"]: cb for cb in cbs}
    l1_regions = []
    for r in regions:  # CBs sharing one L1 region (one CircularBufferConfig, several indices)
        ids = [int(c) for c in r["cbs"]]
        for c in ids:
            by_id[c]["region"] = r["name"]
        l1_regions.append({"name": r["name"], "source": r["source"], "cbs": ids,
                           "names": [by_id[c]["name"] for c in ids], "bytes": int(r["bytes"]),
                           "unaliased_bytes": int(r["unaliased_bytes"]),
                           "saved_bytes": int(r["unaliased_bytes"]) - int(r["bytes"])})
    own = sum(cb["num_pages"] * cb["page_bytes"] for cb in cbs if "in_place" not in cb)
    footprint = cb_footprint(all_cbs(kernels), regions)

    cores = [{"core": [x, y], "start_id": start, "count": count}
             for x, y, start, count in partition["work"]]
    if partition["mode"] == "local_shard":  # core (x, y) holds shard (y, x) of every L1 tensor
        for core in cores:
            core["shard"] = [core["core"][1], core["core"][0]]
    multicast = _multicast(reader, cores)
    if pages:
        read_tracer, write_tracer = PageTracer(reader), PageTracer(writer)
        for core in cores:
            core["reads"] = read_tracer.trace(core["start_id"], core["count"],
                                              _sender_args(reader, core))
            core["writes"] = write_tracer.trace(core["start_id"], core["count"])

    plan = {
        "version": PLAN_VERSION,
        "kernel": source,
        "target": str(get_attr(reader, attrs.TARGET)),
        "sdk": {"name": SDK_NAME, "version": SDK_VERSION},
        "grid": partition["grid"],
        "core_grid": partition["core_grid"],
        "partition_mode": partition["mode"],
        "core_ranges": [list(r) for r in core_ranges([tuple(c["core"]) for c in cores])],
        "layouts": {t["name"]: {"memory": t["memory"], "layout": t["layout"], "shard": t["shard"]}
                    for t in tensors},
        "partition": {"mode": partition["mode"], "num_blocks": partition["num_blocks"],
                      "num_cores": partition["num_cores"], "shard": partition["shard"]},
        "tensors": tensors,
        "circular_buffers": cbs,
        # L1 of the circular buffers per core: with and without the regions' sharing
        "l1": {"cb_bytes": footprint, "cb_bytes_unaliased": own, "saved_bytes": own - footprint,
               "regions": l1_regions, **_single_buffered(kernels["compute"])},
        "kernels": {kind: _kernel_entry(kind, f) for kind, f in kernels.items()},
        "cores": cores,
        "multicast": multicast,
        # the L1 semaphore ordering an atomic's per-iteration read-modify-write (or None)
        "rmw_semaphore": (None if get_attr(reader, attrs.RMW_SEMAPHORE) is None
                          else int(get_attr(reader, attrs.RMW_SEMAPHORE))),
    }
    # T.print / T.device_assert (language_debug.py): the runner turns DPRINT on for the run
    debug = sorted({str(c.op.name)[3:] for f in kernels.values() for c in tt_calls(f.body)
                    if str(c.op.name) in ("tt.dprint", "tt.dprint_element",
                                            "tt.device_assert")})
    if debug:
        plan["debug"] = debug
    return plan


def _multicast(reader, cores) -> dict:
    """The reader's multicast groups (``tt.mcast_plan``) with tensor names; each core gets its
    ``mcast`` rows: per group [sender?, sender x, y, receivers x0, y0, x1, y1] (logical)."""
    plan = to_py(get_attr(reader, attrs.MCAST_PLAN, {})) or {}
    groups = []
    for index, g in enumerate(plan.get("groups", [])):
        groups.append({k: g[k] for k in ("cb", "axis", "ready_sem", "valid_sem", "receivers",
                                         "bytes")})
        groups[-1]["tensor"] = str(reader.params[int(g["param"])].name)
        rows = {(int(r[0]), int(r[1])): [int(v) for v in r[2:]] for r in g["cores"]}
        for core in cores:
            core.setdefault("mcast", []).append(rows[tuple(core["core"])])
    return {"semaphores": int(plan.get("semaphores", 0)), "groups": groups}


def _sender_args(reader, core) -> dict:
    """Runtime args of the reader's multicast fields on ``core`` (the page oracle reads them)."""
    out = {}
    for slot, a in enumerate(to_py(get_attr(reader, attrs.RUNTIME_ARGS, []))):
        if a["kind"] == "mcast":
            field = list(attrs.MCAST_FIELDS).index(str(a["field"]))
            out[slot] = core["mcast"][int(a["group"])][field]
    return out
