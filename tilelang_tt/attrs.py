"""Every attribute key the pipeline reads or writes, with its schema: the single source of truth.

Function attributes hang off the PrimFunc (``func.attrs[KEY]``); allocation annotations off
``AllocBuffer.annotations``; statement markers are ``AttrStmt`` keys; loop annotations live in
``For.annotations``.  ``check(key, value)`` validates a value against its schema (used by
VerifyTTIR and the per-pass tests).

Function attributes hold no variables: a tensor parameter is named by its position in
``func.params`` (``"param": i``), so the attributes survive kernels getting fresh variables
(SplitDeviceKernel) and TVMScript printing and parsing.
"""

from __future__ import annotations

# ---- loop annotations ----------------------------------------------------------------------
LOOP_NUM_STAGES = "num_stages"  # T.Pipelined(num_stages=k): CB depth for blocks produced inside
# frontend -> A0.00: on the outer loop of a T.Persistent(domain, wave_size, index, group_size)
# nest (one serial loop per domain dim): [wave_size, index, group_size, rank] (A0.00 makes the nest
# the launch or refuses it)
LOOP_PERSISTENT_TILES = "tt.persistent_tiles"

# ---- function attributes -------------------------------------------------------------------
TARGET = "tt.target"  # device profile name ("wormhole_b0", "blackhole")
STAGE = "tt.stage"  # name of the last pipeline stage applied
STAGE_LOG = "tt.stage_log"  # names of all stages applied, in order (requirement checks)
SCHEDULE = "tt.schedule"  # user scheduling requests (annotate_tt_schedule): {"core_grid": [x, y]}
COMPILE_OPTIONS = "tt.compile_options"  # validated pass_configs of tilelang_tt.compile / lower
LAYOUT_REQUEST = "tt.layout_request"  # annotate_tt_layout: {param name: requested layout}
# T.annotate_l1_alias: [{"name": str, "size": bytes (0: unsized), "group": {"kind": "shared" |
# "distinct", "members": [buffer name | group, ...]}}, ...] (kinds alternate down the tree)
L1_ALIAS_REQUEST = "tt.l1_alias_request"
LAYOUT_DESC = "tt.layout_desc"  # A1: one layout dict per parameter, in parameter order
# A0.00.1 ScalarProgramTT: the launch is a scalar program run by the reader ([tensor params it
# stores elements of], the plan's outputs among them); the statement attribute of the same key
# wraps the program in the body (D1 keeps it in the reader only, codegen prints it typed)
SCALAR_PROGRAM = "tt.scalar_program"
ACCESSORS = "tt.accessors"  # D2: list of accessor dicts ("param": i, index, addr_slot, page)
PARTITION = "tt.partition"  # B1: work partition dict
CORE_LAUNCH = "tt.core_launch"  # B2: {"grid": [gx, gy, gz], "block_dims": [bound dims]}
TILE_DFG = "tt.tile_dfg"  # C3: list of CB dicts (producer, consumers, id)
KERNEL_KIND = "tt.kernel_kind"  # D1: "reader" | "compute" | "writer"
KERNEL_SOURCE = "tt.kernel_source"  # D1: name of the PrimFunc the kernel was split from
COMPUTE_CONFIG = "tt.compute_config"  # D4: ComputeConfig fields
# D5: DST capacity and sub-blocking chosen per accumulator: [{"acc", "tiles", "capacity",
# "subblock", "spill_cb", ("l1_acc": True: partials accumulated by the packer), ("conditional":
# True: K steps in a branch, every step reloads and packs back the partials)}, ...]
DST_PLAN = "tt.dst_plan"
RUNTIME_ARGS = "tt.runtime_args"  # E1: ordered list of runtime-arg dicts
# D6: the CB regions (one CircularBufferConfig holding several CB indices each):
# [{"name", "source": "auto" | "spec", "cbs": [ids], "bytes", "unaliased_bytes"}, ...]
L1_REGIONS = "tt.l1_regions"
# D6.1: the CBs single-buffered to fit L1, in the order they were: [{"cb": id, "name": str,
# "depth": the depth it had, "saved_bytes": L1 it saved}, ...] (absent when the CBs fit as planned)
L1_FIT = "tt.l1_fit"
# D6.1, when the CBs do not fit even so: the CBs of depth > 1 that need their ring:
# [{"cb": id, "name": str, "depth": int, "why": str}, ...]
L1_FIT_KEPT = "tt.l1_fit_kept"
# D5.2: the CB indices intermediates of disjoint lifetimes share (more CBs than a core has):
# [{"cb": id, "names": [the members' names, in order of first use], "bytes": the shared ring,
# "unshared_bytes": the members' rings added up}, ...] (absent when every CB kept its own)
CB_SHARE = "tt.cb_share"
PERSISTENT = "tt.persistent"  # E1: {"start_slot": i, "count_slot": j} of the persistent loop
# A0.5: the GEMM K loops taking several K steps per iteration:
# [{"factor": f, "k_tiles": tiles of a K block, "steps": iterations}, ...]
K_COARSEN = "tt.k_coarsen"
# A0.0: the grid axes whose blocks of fewer than 32 rows were made blocks of 32 rows:
# [{"axis": "blockIdx.x" | "y" | "z", "rows": rows of a block before, "factor": 32 / rows}, ...]
ROW_COARSEN = "tt.row_coarsen"
# A0.0: the grid axes whose blocks of fewer than 32 columns were made blocks of 32 columns:
# [{"axis": "blockIdx.x" | "y" | "z", "columns": columns of a block before, "factor": 32 / columns}, ...]
COL_COARSEN = "tt.col_coarsen"
# A0.0.1: the serial loops over a block's rows computed as the block's rows at once:
# [{"axis": "blockIdx.x" | "y" | "z", "rows": the loop's extent (the block's rows)}, ...]
SERIAL_ROWS = "tt.serial_rows"
COL_STREAM = "tt.col_stream"  # A0.1.4: {"cols": N, "chunk": W, "phases": [chunk loops per streamed list]}
# A0.2.0 ResolveViewsTT: [{"param": i, "shape": the shape the host passes, "dtype": its dtype}]
# for a tensor the kernel accesses only through a T.reshape / T.view: the parameter has the
# view's shape and dtype (the host reshapes and reinterprets the bytes)
HOST_VIEW = "tt.host_view"
# A0.1.3.1 / A0.1.5 / A0.1.6: tensors the host hands the device in another format than the
# caller's: [{"param": i, "shape": the caller's shape, "dtype": the caller's dtype, "axes": the
# device tensor's dims as the caller's dims (the host transposes by them), "convert": the host
# converts the values to the parameter's dtype (an integer / bool tensor read as values, held
# exactly by bfloat16), or an output's back to the caller's (integer index values the device
# holds as float32, A0.1.3.1)}]
HOST_FORMAT = "tt.host_format"
# A0.3.1: the tensors stored padded with zeros (dims not tile multiples, or the grid's blocks
# reaching past them): [{"param": i, "logical": [dims], "padded": [device dims], "fill": the
# padding's value (0.0, or the tensor's T.annotate_safe_value)}, ...]
PADDED = "tt.padded"
# T.annotate_safe_value: {tensor name: the value read past its end (float, or the text of an
# expression)}; A0.3.1 fills a padded tensor's padding with it (a constant)
SAFE_VALUES = "tt.safe_values"
# A0.5.1: the block buffers held as whole 32x32 tiles though their last two dims (the dim of a
# 1-D buffer) are not multiples of 32: [{"buffer": name, "logical": [dims], "padded": [dims]}]
PADDED_BLOCKS = "tt.padded_blocks"
# A0.3.1 -> C1: the tensor dims whose block reads start at offsets read from tensor elements
# that no guard bounds to the tensor: [{"param": i, "dim": d, "start": bool, "end": bool}]
# (the sides not proven: before the tensor's start, past its end); each tile of such a read is
# checked on those sides when the reader runs (outside: the CB page zero-filled, no NOC read)
CHECKED_READS = "tt.checked_reads"
# D2.1 (reader): blocks read once per group of cores and multicast to the others:
# {"semaphores": n, "groups": [{"cb": id, "param": i, "axis": "x" | "y", "ready_sem": s,
#   "valid_sem": s, "receivers": n, "bytes": b, "cores": [[x, y, sender, sx, sy, x0, y0, x1,
#   y1], ...]}]} - logical core coordinates: this core, whether it is the group's sender, the
# sender, the receivers' rectangle
MCAST_PLAN = "tt.mcast_plan"
# D3 (reader and writer): the id of the L1 semaphore that orders an atomic's per-iteration
# read-modify-write on a core (tt.rmw_acquire / tt.rmw_release), after the multicast ones
RMW_SEMAPHORE = "tt.rmw_semaphore"
# TileLang's names: a @T.prim_func in the eager form (`C = T.empty(...)`, `return C`) records the
# parameter indices of its outputs (tilelang_tt.compile uses them when no out_idx is passed);
# T.annotate_pass_configs records pass configs compile merges under its own pass_configs
OUT_IDX = "tilelang_out_idx"  # [int, ...]
PASS_CONFIGS_ATTR = "tilelang_pass_configs"  # {key: value}
COMPILE_FLAGS_ATTR = "tilelang_compile_flags"  # [str, ...] (CUDA compiler flags; unused here)
MCAST_FIELDS = ("sender", "sender_x", "sender_y", "x0", "y0", "x1", "y1")  # tt.mcast_arg fields

# ---- compile options: tilelang_tt.compile(func, pass_configs={KEY: value}) ----------------------
# (TileLang's `pass_configs` dict style; validated by tilelang_tt.compiler, read by A0.5, D4, D5
# and D6)
PC_MATH_FIDELITY = "tt.math_fidelity"  # "LoFi" | "HiFi2" | "HiFi3" | "HiFi4" (default HiFi4)
PC_FP32_DEST_ACC_EN = "tt.fp32_dest_acc_en"  # bool: DST holds fp32 (True) or 16-bit data
PC_L1_ALIAS = "tt.l1_alias"  # bool: D6 shares L1 between CBs automatically (default True)
PC_K_COARSEN = "tt.k_coarsen"  # bool: A0.5 gives GEMM K loops K blocks of several tiles (True)
PC_PACKER_L1_ACC = "tt.packer_l1_acc"  # bool: D5 accumulates fp32 GEMM partials in L1 (True)
PC_MULTICAST = "tt.multicast"  # bool: D2.1 multicasts blocks several cores read (default True)
PC_L1_FIT = "tt.l1_fit"  # bool: D6.1 single-buffers CBs that do not fit L1 (default True)
PC_STREAM_COLS = "tt.stream_cols"  # int: A0.1.4 streams wide row blocks in chunks of this many columns (0: only when they do not fit L1)
PASS_CONFIGS: dict[str, object] = {
    PC_MATH_FIDELITY: ("LoFi", "HiFi2", "HiFi3", "HiFi4"),
    PC_FP32_DEST_ACC_EN: bool,
    PC_L1_ALIAS: bool,
    PC_K_COARSEN: bool,
    PC_PACKER_L1_ACC: bool,
    PC_MULTICAST: bool,
    PC_STREAM_COLS: int,
    PC_L1_FIT: bool,
}

# ---- allocation annotations ----------------------------------------------------------------
CB_DESC = "tt.cb_desc"  # A2: on shared AllocBuffers
ACC_DESC = "tt.acc_desc"  # A2: on fragment AllocBuffers (accumulators)
# frontend -> A0.1.3 (T.alloc_reducer): {"op": "sum" | "max" | "min", "v1": replication given}
REDUCER = "tt.reducer"
CB = "tt.cb"  # C1: on block-buffer AllocBuffers still used by tile ops: the CB var (until C2)

# ---- tile primitive config keys (frontend -> A0) -------------------------------------------
REDUCE_ABS = "tt.reduce_abs"  # T.reduce_abssum / absmax: reduce |x| (A0 inserts the abs)
# T.print(buffer) -> C1: on a T.copy(block, tensor), the ids of the tt.dprint_block markers
# (earlier T.print of the block) that print the block this copy stores (language_debug.py)
PRINT_IDS = "tt_print_ids"  # a TVMScript keyword of the copy (no dot: it parses back)
# A0.2 -> C1: on a T.copy(block, tensor) whose tensor rows start off a tile boundary, the row
# guard of TileLang's store (`if bx * BM + i < len: Out[start + bx * BM + i, d] = ...`) with
# the block's row as tt.mask.index(0): the writer stores only the rows where it holds
ROW_GUARD = "tt_row_guard"

# ---- statement markers (AttrStmt keys) -----------------------------------------------------
PERSISTENT_BODY = "tt.persistent_body"  # B2-D5: the per-work-unit part of the body (E1: a loop)
DST_SCOPE = "tt.dst_scope"  # D5: accumulator lives in DST for the body
# frontend -> A0.1.1: a store that is a TileLang atomic (T.atomic_add / max / min); the node is
# the kind ("add" | "max" | "min"), the body the store `dst = dst op value`
ATOMIC = "tt.atomic"
# frontend -> A0.1.3: a store that is T.reducer_update (node: the reducer's op); the body the
# store `r[I] = r[I] op value`
REDUCER_UPDATE = "tt.reducer_update"

# ---- schemas -------------------------------------------------------------------------------
# field -> type(s) (or tuple of allowed string values for enums)
SCHEMAS: dict[str, dict[str, object]] = {
    LAYOUT_DESC: {
        "name": str,  # the parameter's name (for messages and the plan)
        "memory": ("DRAM", "L1"),
        "layout": ("interleaved", "sharded"),
        "dtype": str,
        "tile": list,
        "shape": list,  # the device shape (padded: A0.3.1 ``tt.padded``)
        "logical_shape": list,  # the data's shape on the host (equal to ``shape`` unless padded)
        # (optional, with ``host_dtype``) the shape and dtype the caller passes, when the
        # kernel views the tensor in ``logical_shape`` / ``dtype`` (T.reshape / T.view:
        # A0.2.0 ``tt.host_view``; the host reshapes, row-major, and reinterprets the bytes)
        # (optional, A0.1.5 / A0.1.6 ``tt.host_format``, with ``host_shape`` / ``host_dtype``)
        # ``host_axes``: the device tensor is the caller's transposed by them; ``host_convert``:
        # its values converted to ``dtype`` (else its bytes reinterpreted)
        "pad_value": float,  # the value the host fills the padding with (A0.3.1's ``fill``)
        # the tensor's axes in the order of its device pages: the last two are the tiled
        # plane (the tensor's last two dims unless its copies slice two others), the rest
        # batched in order; the host permutes the elements when it is not the identity
        "axes": list,
        "tiles": list,  # [rows, cols] in tiles of the plane, batched dims folded into rows
        # stored as row vectors (values in row 0 of each tile): a 1-D tensor, or one row of
        # tiles per index of the leading dims of a tensor of rank >= 3 copied only as 1-D slices
        "vector": bool,
        "page_bytes": int,
        # sharded: {kind, projected_grid [Gy, Gx], projected_shard_tiles [Sm, Sn], nd};
        # otherwise {} (passes/layout/sharding.py)
        "shard": dict,
        # (optional) True for a tensor read only as scalars in `if` conditions
        # (passes/analysis/scalar_reads.py): not tiled; its elements are 32-bit words,
        # row-major, ``page_bytes / 4`` to a DRAM page, ``tiles = [1, pages]``; ``dtype`` is
        # the tensor's own (bool, int8 ... int32), which the host converts
    },
    CB_DESC: {
        "rows": int,  # block rows in tiles
        "cols": int,  # block cols in tiles
        "depth": int,  # blocks the ring holds
        "dtype": str,
        "page_bytes": int,
        "vector": ("none", "col", "row"),  # a 1-D buffer: column or row vector of tiles
    },
    ACC_DESC: {"rows": int, "cols": int, "dtype": str},
    REDUCER: {"op": ("sum", "max", "min"), "v1": bool},
    PARTITION: {
        # global: any core may serve any block (contiguous ranges of block ids);
        # local_shard: L1-sharded tensors pin blocks to the cores holding their shards
        "mode": ("global", "local_shard"),
        "grid": list,  # [gx, gy, gz]
        "core_grid": list,  # [cols, rows] of the device grid used
        "num_blocks": int,
        "num_cores": int,
        "work": list,  # [[core_x, core_y, start_id, count], ...]
        # local_shard: {grid [Gy, Gx], shard_tiles [Sm, Sn], blocks [Bm, Bn] per shard,
        # pins {"y": block dim or -1, "x": ...}}; global: {}
        "shard": dict,
    },
    MCAST_PLAN: {"semaphores": int, "groups": list},
    COMPUTE_CONFIG: {
        "math_fidelity": ("LoFi", "HiFi2", "HiFi3", "HiFi4"),
        "fp32_dest_acc_en": bool,
        "dst_full_sync_en": bool,
        "unpack_to_dest_fp32": list,  # CB ids unpacked straight to DST in fp32
        "math_approx_mode": bool,
    },
}


def check(key: str, value) -> list[str]:
    """Problems with ``value`` as the attribute ``key`` (empty when it conforms)."""
    schema = SCHEMAS.get(key)
    if schema is None:
        return []
    problems = []
    for field, kind in schema.items():
        if field not in value:
            problems.append(f"{key}: missing field {field!r}")
            continue
        v = value[field]
        if isinstance(kind, tuple):
            if str(v) not in kind:
                problems.append(f"{key}.{field}: {v!r} not one of {kind}")
        elif kind is int:
            try:
                int(v)
            except Exception:
                problems.append(f"{key}.{field}: expected an integer, got {v!r}")
        elif kind is bool:
            if not isinstance(v, bool) and str(v) not in ("True", "False", "0", "1"):
                problems.append(f"{key}.{field}: expected a bool, got {v!r}")
        elif kind is list:
            if isinstance(v, str) or not hasattr(v, "__len__"):
                problems.append(f"{key}.{field}: expected a list, got {v!r}")
        elif kind is dict:
            if not hasattr(v, "keys"):
                problems.append(f"{key}.{field}: expected a dict, got {v!r}")
        elif kind is str:
            if not isinstance(v, str):
                problems.append(f"{key}.{field}: expected a string, got {v!r}")
    return problems
