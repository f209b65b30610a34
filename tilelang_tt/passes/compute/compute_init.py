"""D4 InsertComputeInitTT: compute-engine start-up and per-op initialisation.

Requires: SplitDeviceKernel (works on the compute kernel; others pass through).

Guarantees, for the compute kernel:

* the prologue starts with ``compute_kernel_hw_startup(icb0, icb1, ocb, reverse)`` configured
  for the first compute op (``reverse = 1`` for a matmul: in0 feeds SrcB);
* every ``tt.mm.mma`` / ``tt.fpu.*`` op is preceded by its init (``matmul_init(a, b,
  transpose)``, ``<op>_init(a, b)``) and by ``reconfig_data_format_srca/srcb`` when its
  operands' data formats differ from the unpacker's current ones - unless the same
  configuration is already in force on every path (a loop whose body uses one configuration
  gets it once, before the loop);
* ``tt.compute_config`` holds the ComputeConfig: the math fidelity (the ``tt.math_fidelity``
  compile option, else HiFi4 for every kernel: TT-Metalium's ``ComputeConfig`` default, all of
  both operands' bits; HiFi2, ttnn's bf16 matmul default, drops SrcB's low bits and is an
  opt-in for speed), ``fp32_dest_acc_en`` (the
  ``tt.fp32_dest_acc_en`` option, else true when an accumulator or any compute result is
  float32, a reduction reads float32, an operand is unpacked in fp32, the compute kernel
  reads or writes a float16 CB, or an expression with intermediate values runs:
  ``tt.eltwise`` of more than one function or a copy keeps them in fp32), half-sync DST, and
  the CBs to unpack straight to DST in fp32.
  ``tt.fp32_dest_acc_en = False`` where a float32 result or float16 data needs the 32-bit DST
  is a TTCompileError.

Expressions (``tt.eltwise``), reductions and constant tiles configure the engines themselves
when expanded (D5), so after one the configuration is unknown and the next op
re-initialises.  A float32 CB any of them reads is unpacked straight to DST in fp32, unless
the matrix engine reads it (a broadcast, a reduction).
"""

from __future__ import annotations

from tvm import tirx

from ... import attrs, ops
from ...errors import TTCompileError
from ..common import (
    buffer_dtype, collect, get_attr, int_imm, require_attr, seq, split_persistent, stmt_op_name,
    to_py, tt_calls, tt_pass,
)
from ..common import tt_map
from ..frontend.eltwise_expr import is_single_function, matrix_engine_operands, postfix
from ..analysis.flow import TOP, FlowRewriter

# TT-Metalium's ``ComputeConfig::math_fidelity`` default (every kernel, whatever its dtypes)
DEFAULT_MATH_FIDELITY = "HiFi4"


def self_configured(name) -> bool:
    """Ops that configure the engines themselves when D5 expands them (the registry's
    ``self_init``)."""
    return bool(name) and bool(ops.spec(name).props.get("self_init"))


def needs_init(name) -> bool:
    """Abstract ops that need an init before them (the registry's ``init``)."""
    return bool(name) and "init" in ops.spec(name).props


def _keeps_intermediates(call) -> bool:
    """An expression with intermediate values, or a running sum (each tile's sums are stored
    to DST, so a 16-bit DST would truncate them to bfloat16): it runs with a float32 DST."""
    if call.op.name == "tt.scan.cumsum":
        return True
    return call.op.name == "tt.eltwise" and not is_single_function(ops.named(call).expr)


def matrix_engine_reads(call, dtype=None) -> list[int]:
    """Argument positions of the CBs a compute op reads through the matrix engine's source
    registers (as opposed to ``copy_tile`` into DST).  With ``dtype`` (CB -> dtype), a float32
    vector broadcast into a DST slot on its own (``unary_bcast``) is not one: the SDK's
    ``unary_bcast`` unpacks a CB whose DST format is Float32 (an ``UnpackToDestFp32`` CB)
    straight to DST and broadcasts it there, exactly."""
    if call.op.name == "tt.eltwise":
        tree = ops.named(call).expr
        found = matrix_engine_operands(tree)
        if dtype is not None:
            fpu = {k for kind, v in postfix(tree) if kind == "bcast" for k in (v[1], v[2])}
            found = [k for k in found if k in fpu or dtype(call.args[3 + k]) != "float32"]
        return [3 + k for k in found]
    if ops.spec(call.op.name).engine == "math":
        return ops.cb_reads(call)
    return []


class CBInfo:
    """CB var -> its ``tt.tile_dfg`` entry (matched through the ``tt.alloc_cb`` id)."""

    def __init__(self, func):
        self.entries = to_py(require_attr(func, attrs.TILE_DFG, "compute pass"))
        self.var_ids = {}
        for b in collect(func.body, tirx.Bind):
            if ops.tt_op_name(b.value) == "tt.alloc_cb":
                self.var_ids[b.var] = int(b.value.args[0])

    def var_of(self, entry):
        return next(v for v, i in self.var_ids.items() if i == int(entry["id"]))

    def _find(self, cb):
        cb_id = self.var_ids[cb]
        return next(e for e in self.entries if int(e["id"]) == cb_id)

    def dtype(self, cb) -> str:
        return self._find(cb)["dtype"]

    def id(self, cb) -> int:
        return int(self._find(cb)["id"])


def _op_config(call, info: CBInfo):
    """(init key, init statement, required (srcA cb, srcB cb)) of an abstract compute op
    that needs an init, from its registry entry; else None."""
    spec = ops.spec(call.op.name)
    if "init" not in spec.props:
        return None
    init, names = spec.props["init"]
    a = ops.named(call)
    args = [getattr(a, n) for n in names]
    key = (init, *[info.id(x) if isinstance(x, tirx.Var) else int(x) for x in args])
    return key, ops.evaluate(init, *args), (getattr(a, spec.props["src_a"]),
                                            getattr(a, spec.props["src_b"]))


def _pack_target(body, acc):
    for call in tt_calls(body, "tt.acc.pack"):
        if call.args[0].same_as(acc):
            return call.args[1]
    return None


class _InitInsertion(FlowRewriter):
    """Engine configuration as a forward dataflow fact: ``(init key, srcA format, srcB
    format)``, each ``TOP`` where paths disagree.  An op whose configuration is not the fact
    in force on every path reaching it gets its reconfiguration and init; after it, its
    configuration is in force (whether or not one was inserted).  Ops that configure
    themselves when D5 expands them leave everything unknown."""

    def __init__(self, info: CBInfo):
        self.info = info

    def configs_in(self, node):
        keys, unknown = set(), False
        for call in tt_calls(node):
            if self_configured(call.op.name):
                unknown = True
            cfg = _op_config(call, self.info)
            if cfg is not None:
                keys.add((cfg[0], tuple(self.info.dtype(s) for s in cfg[2])))
        return keys, unknown

    def setup(self, call, state):
        """(statements bringing the engine into ``call``'s configuration, state after)."""
        key, init, (src_a, src_b) = _op_config(call, self.info)
        fmt_a, fmt_b = self.info.dtype(src_a), self.info.dtype(src_b)
        out = []
        if state[1] != fmt_a:
            out.append(ops.evaluate("tt.reconfig_data_format_srca", src_a))
        if state[2] != fmt_b:
            out.append(ops.evaluate("tt.reconfig_data_format_srcb", src_b))
        if state[0] != key:
            out.append(init)
        return out, (key, fmt_a, fmt_b)

    def before_loop(self, loop, state, rewrite):
        # a loop whose body uses one configuration (and nothing self-configuring) gets it
        # once, before the loop
        if not isinstance(loop, tirx.For):
            return [], state
        keys, unknown = self.configs_in(loop.body)
        if len(keys) != 1 or unknown:
            return [], state
        call = next(c for c in tt_calls(loop.body) if _op_config(c, self.info) is not None)
        return self.setup(call, state)

    def leaf(self, stmt, state, rewrite):
        name = stmt_op_name(stmt)
        if self_configured(name):
            return stmt, (TOP, TOP, TOP)
        if needs_init(name):
            pre, state = self.setup(stmt.value, state)
            return (pre + [stmt] if pre else stmt), state
        return stmt, state


@tt_pass("InsertComputeInitTT", requires=("SplitDeviceKernel",), scalar_programs=True)
def InsertComputeInitTT(func, mod, ctx):
    """Insert hw start-up, per-op init and data-format reconfiguration in the compute kernel."""
    if str(require_attr(func, attrs.KERNEL_KIND, "InsertComputeInitTT")) != "compute":
        return func
    info = CBInfo(func)
    calls = [c for c in tt_calls(func.body)
             if needs_init(c.op.name) or self_configured(c.op.name)]
    accs = [a.buffer for a in collect(func.body, tirx.AllocBuffer)
            if attrs.ACC_DESC in (a.annotations or {})]
    sfpu = [c for c in calls if _keeps_intermediates(c)]
    # float32 CBs that only copy_tile / unary_bcast / the SFPU reduction read go straight to
    # DST; one the matrix engine reads (matmul, FPU eltwise, reduce, broadcast into an FPU op)
    # must go through its source registers
    matrix_read = {info.id(c.args[i]) for c in calls for i in matrix_engine_reads(c, info.dtype)}
    fp32_unpacked = sorted({info.id(c.args[i]) for c in calls if self_configured(c.op.name)
                            for i in ops.cb_reads(c)
                            if info.dtype(c.args[i]) == "float32"} - matrix_read)
    # what needs a 32-bit DST: packing a float32 result from a 16-bit DST would round it to bf16
    needs_fp32 = (
        [f"the float32 accumulator {a.name!r}" for a in accs if buffer_dtype(a) == "float32"]
        + [f"the float32 result {e['name']!r}" for e in info.entries
           if e["producer"] == "compute" and e["dtype"] == "float32"]
        + [f"the float32 operand of a reduction ({c.op.name})" for c in calls
           if ops.spec(c.op.name).props.get("accumulates")
           and info.dtype(ops.named(c).src) == "float32"]
        + [f"CB {cb} (float32, unpacked straight to DST)" for cb in fp32_unpacked]
        # the emulated 16-bit DST holds bf16 only: float16 data goes through the 32-bit DST
        + [f"the float16 CB {e['name']!r}" for e in info.entries
           if e["dtype"] == "float16" and "compute" in (e["producer"], e["consumer"])])
    options = to_py(get_attr(func, attrs.COMPILE_OPTIONS, {})) or {}
    fp32_dst = options.get(attrs.PC_FP32_DEST_ACC_EN)
    if fp32_dst is None:
        fp32_dst = bool(needs_fp32 or sfpu)
    elif not fp32_dst and needs_fp32:
        raise TTCompileError(
            f"pass_configs[{attrs.PC_FP32_DEST_ACC_EN!r}] = False, but {needs_fp32[0]} needs "
            "the 32-bit DST (a 16-bit DST holds bfloat16 here); drop the option or use bfloat16 there")
    config = {
        # TT-Metalium's ComputeConfig default; HiFi2 / HiFi3 / LoFi only when asked for
        "math_fidelity": options.get(attrs.PC_MATH_FIDELITY, DEFAULT_MATH_FIDELITY),
        "fp32_dest_acc_en": bool(fp32_dst),
        "dst_full_sync_en": False,
        "unpack_to_dest_fp32": fp32_unpacked,
        "math_approx_mode": False,
    }
    if not calls:
        return func.with_attr(attrs.COMPUTE_CONFIG, config)

    first = next((c for c in calls if ops.cb_reads(c)), calls[0])
    if first.op.name == "tt.mm.mma":
        a, b = ops.named(first).a, ops.named(first).b
        out = _pack_target(func.body, ops.named(first).acc)
        reverse = 1
        src_a, src_b = b, a
    else:
        reads, writes = ops.cb_reads(first), ops.cb_writes(first)
        out, reverse = first.args[writes[0]], 0
        a, b = (first.args[reads[0]], first.args[reads[-1]]) if reads else (out, out)
        src_a, src_b = a, b
    if out is None:
        outs = [info.var_of(e) for e in info.entries if e["producer"] == "compute"]
        out = outs[0] if outs else a
    prologue_ops = [ops.evaluate("tt.compute_kernel_hw_startup", a, b, out, int_imm(reverse))]
    prologue, persistent = split_persistent(func.body)
    # hw start-up configures the unpacker formats, but no op's init
    entry = (None, info.dtype(src_a), info.dtype(src_b))
    new_persistent, _ = _InitInsertion(info).run(persistent, entry)
    body = seq(list(prologue) + prologue_ops + [new_persistent])
    body = tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")
    return func.with_body(body).with_attr(attrs.COMPUTE_CONFIG, config)
