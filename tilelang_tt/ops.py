"""Registry of the ``tt.*`` TIR ops.

Every op the pipeline puts into TIR is a registered ``tvm.ir.Op`` (opaque call effect), printed
by TVMScript as ``T.tt.<name>(...)`` and parsed back through the ``T.tt`` script namespace.

Four families:

* **tile** ops (stages A0-C2) are tile primitives on buffer regions that TVM 0.27 has no
  primitive for: ``tt.tile.expr(dst, expr, *srcs)``;
* **expr** ops build elementwise expression trees (``tt.expr.load(k)``, ``tt.expr.exp(x)``
  ...), operands of ``tt.tile.expr`` and ``tt.eltwise``;
* **abstract** ops (stages C1-C3) describe tile dataflow without any protocol:
  ``tt.read_to_cb``, ``tt.write_from_cb``, ``tt.mm.mma``, ``tt.fpu.add``, ``tt.eltwise`` ...;
* **protocol** ops (stages D2-E1) are one-to-one with TT-Metalium calls; ``cpp`` names the
  C++ function codegen prints and ``header`` the SDK header that declares it;
* **meta** ops (``tt.alloc_cb``, ``tt.work_id``, ``tt.tensor_accessor``, ``tt.get_arg_val``)
  carry values codegen prints as declarations.
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm
import tvm_ffi
from tvm.tirx.op import call_intrin


@dataclass(frozen=True)
class OpSpec:
    name: str  # full op name, "tt.<...>"
    family: str  # "tile" | "abstract" | "dataflow" | "compute" | "meta"
    ret: str  # TIR dtype of the call
    doc: str
    cpp: str | None = None  # C++ spelling for protocol ops
    header: str | None = None  # SDK header declaring a compute op
    # protocol ops whose last `template_args` arguments are C++ template arguments: a function
    # of those (constant) arguments giving the "<...>" text ("" for the default instantiation)
    template: object = None
    template_args: int = 0


_SPECS: dict[str, OpSpec] = {}


def _op(name, family, ret, doc, cpp=None, header=None, template=None, template_args=0):
    full = f"tt.{name}"
    _SPECS[full] = OpSpec(full, family, ret, doc, cpp, header, template, template_args)


_COMPUTE = "api/compute/"
# SFPU unary functions: name -> SDK header declaring <name>_tile_init / <name>_tile
SFPU_UNARY = {
    "exp": _COMPUTE + "eltwise_unary/exp.h",
    "log": _COMPUTE + "compute_kernel_api.h",
    "sqrt": _COMPUTE + "eltwise_unary/sqrt.h",
    "rsqrt": _COMPUTE + "eltwise_unary/rsqrt.h",
    "recip": _COMPUTE + "eltwise_unary/recip.h",
    "relu": _COMPUTE + "eltwise_unary/relu.h",
    "sigmoid": _COMPUTE + "compute_kernel_api.h",
    "tanh": _COMPUTE + "compute_kernel_api.h",
    "abs": _COMPUTE + "compute_kernel_api.h",
    "negative": _COMPUTE + "eltwise_unary/negative.h",
}


# --- meta ---------------------------------------------------------------------------------
_op("alloc_cb", "meta", "int32",
    "alloc_cb(cb_id, rows, cols, depth, dtype, role): a circular buffer holding `depth` blocks "
    "of rows x cols tiles; cb_id is -1 until BuildTileDFGTT assigns it")
_op("work_id", "meta", "int32", "the work unit the persistent per-core loop is processing")
_op("get_arg_val", "meta", "int32", "get_arg_val(slot): runtime argument `slot`")
_op("tensor_accessor", "meta", "handle",
    "tensor_accessor(buffer, index, addr_slot, page_bytes): TensorAccessor over `buffer`; its "
    "compile-time args are the `index`-th TensorAccessorArgs of the kernel")
ELTWISE_BINARY = ("add", "sub", "mul")
# abstract compute op name -> function, on the matrix engine
FPU_BINARY = {f"tt.fpu.{o}": o for o in ELTWISE_BINARY}

# --- elementwise expression trees (A0-D5) ---------------------------------------------------
# An elementwise expression is a float32 PrimExpr over these leaves and functions, the
# constants and TIR's +, -, *, / (passes/eltwise_expr.py); it is an operand of tt.tile.expr
# and tt.eltwise.
_op("expr.load", "expr", "float32", "expr.load(k): an element of operand k (a block)")
_op("expr.col", "expr", "float32",
    "expr.col(k): operand k, a column vector (values in column 0 of its tiles), broadcast "
    "along the rows (R[i]); only as an operand of +, - or * with an expr.load")
_op("expr.row", "expr", "float32",
    "expr.row(k): operand k, a row vector (values in row 0 of its tiles), broadcast down the "
    "columns (R[j]); only as an operand of +, - or * with an expr.load")
# SFPU function -> its expression op (tt.expr.<fn>)
FUNCTION_OPS = {}
for _name in SFPU_UNARY:
    FUNCTION_OPS[_name] = f"tt.expr.{_name}"
    _op(f"expr.{_name}", "expr", "float32", f"expr.{_name}(x): {_name} of x on the vector engine")
VECTOR_OPS = {"col": "tt.expr.col", "row": "tt.expr.row"}

# --- tile primitives of our own (A0-C2) -----------------------------------------------------
_op("tile.expr", "tile", "void",
    "tile.expr(dst, expr, *srcs): dst = the elementwise expression `expr` (a tree over "
    "tt.expr.load(k) / col(k) / row(k) of the source regions)")
# --- abstract tile dataflow (C1-C3) --------------------------------------------------------
_op("read_to_cb", "abstract", "void",
    "read_to_cb(cb, buffer, row0, col0, rows, cols): one block of tiles from DRAM into cb")
_op("write_from_cb", "abstract", "void",
    "write_from_cb(cb, buffer, row0, col0, rows, cols): one block of tiles from cb to DRAM")
_op("acc.clear", "abstract", "void", "acc.clear(acc): the accumulator starts from zero")
_op("acc.pack", "abstract", "void", "acc.pack(acc, cb): the accumulator block is packed into cb")
_op("mm.mma", "abstract", "void",
    "mm.mma(acc, cb_a, cb_b, Mt, Nt, Kt, transpose_b): acc += A @ B on tile blocks")
_op("eltwise", "abstract", "void",
    "eltwise(cb_out, ntiles, expr, *cb_ins): the elementwise expression `expr` of the input "
    "blocks, evaluated in DST (operands copied in, SFPU functions and binary ops in place, "
    "broadcasts on the matrix engine) and packed to cb_out, which converts to its data "
    "format; expr.load(0) alone is a copy")
for _name in ("max", "sum"):
    _op(f"reduce.{_name}", "abstract", "void",
        f"reduce.{_name}(cb_out, cb_in, cb_scaler, Mt, Nt, over_rows): the {_name} of every row "
        "of the Mt x Nt block into a column vector (Mt tiles, values in column 0), or with "
        "over_rows of every column into a row vector (Nt tiles, values in row 0)")
_op("consume.begin", "abstract", "void",
    "consume.begin(cb, ntiles): the compute kernel starts using one block of cb (it waits for "
    "the block)")
_op("consume.end", "abstract", "void",
    "consume.end(cb, ntiles): the compute kernel is done with the block of cb (it frees it)")
_op("const_tile", "abstract", "void",
    "const_tile(cb, value, ntiles): a block of `ntiles` tiles of `value` pushed to cb "
    "(T.fill of a block buffer, the reduce scaler)")
for _name in ("add", "sub", "mul"):
    _op(f"fpu.{_name}", "abstract", "void",
        f"fpu.{_name}(cb_out, cb_a, cb_b, ntiles): elementwise {_name} on the matrix engine")
# --- dataflow protocol (D2-D3) -------------------------------------------------------------
for _name in ("cb_reserve_back", "cb_push_back", "cb_wait_front", "cb_pop_front"):
    _op(_name, "dataflow", "void", f"{_name}(cb, ntiles)", cpp=_name)
_op("get_write_ptr", "dataflow", "int32", "get_write_ptr(cb): L1 address of the back page", "get_write_ptr")
_op("get_read_ptr", "dataflow", "int32", "get_read_ptr(cb): L1 address of the front page", "get_read_ptr")
_op("noc_async_read_page", "dataflow", "void", "noc_async_read_page(page, accessor, l1_addr)",
    "noc_async_read_page")
_op("noc_async_write_page", "dataflow", "void", "noc_async_write_page(page, accessor, l1_addr)",
    "noc_async_write_page")
_op("noc_async_read_barrier", "dataflow", "void", "wait for this kernel's NOC reads",
    "noc_async_read_barrier")
_op("noc_async_write_barrier", "dataflow", "void", "wait for this kernel's NOC writes",
    "noc_async_write_barrier")
# --- compute protocol (D3-D5) --------------------------------------------------------------
def _compute(name, doc, header, template=None, template_args=0):
    _op(name, "compute", "void", doc, name, _COMPUTE + header, template, template_args)


def _reduce_template(pool, dim):
    return (f"<{'PoolType::MAX' if pool else 'PoolType::SUM'}, "
            f"{('ReduceDim::REDUCE_ROW', 'ReduceDim::REDUCE_COL')[dim]}>")


_compute("compute_kernel_hw_startup",
         "compute_kernel_hw_startup(icb0, icb1, ocb, reverse): one-time engine configuration; "
         "reverse=1 for matmul (in0 -> SrcB)", "compute_kernel_hw_startup.h",
         template=lambda reverse: "<SrcOrder::Reverse>" if reverse else "", template_args=1)
_compute("matmul_init", "matmul_init(in0, in1, transpose)", "matmul.h")
_compute("matmul_tiles", "matmul_tiles(in0, in1, i0, i1, idst): DST[idst] += A @ B", "matmul.h")
for _name in ELTWISE_BINARY:
    _compute(f"{_name}_init", f"{_name}_init(icb0, icb1): configure the matrix engine for {_name}_tiles",
             "eltwise_binary.h")
    _compute(f"{_name}_tiles", f"{_name}_tiles(icb0, icb1, i0, i1, idst)", "eltwise_binary.h")
for _name in (*ELTWISE_BINARY, "div"):
    _compute(f"{_name}_binary_tile_init", f"{_name}_binary_tile_init()",
             "eltwise_binary_sfpu.h")
    _compute(f"{_name}_binary_tile",
             f"{_name}_binary_tile(idst0, idst1, odst): SFPU {_name} of two DST tiles",
             "eltwise_binary_sfpu.h")
for _name in ELTWISE_BINARY:
    for _dim, _what in (("cols", "column 0 of B[i1] broadcast across the columns"),
                        ("rows", "row 0 of B[i1] broadcast down the rows")):
        _compute(f"{_name}_bcast_{_dim}_init",
                 f"{_name}_bcast_{_dim}_init(icb0, icb1)", "bcast.h")
        _compute(f"{_name}_tiles_bcast_{_dim}",
                 f"{_name}_tiles_bcast_{_dim}(icb0, icb1, i0, i1, idst): DST[idst] = A[i0] "
                 f"{_name} {_what}", "bcast.h")
_compute("reduce_init", "reduce_init(icb, scaler_cb, ocb, pool, dim): pool 0 = SUM, 1 = MAX; "
         "dim 0 = REDUCE_ROW, 1 = REDUCE_COL", "reduce.h", _reduce_template, 2)
_compute("reduce_tile", "reduce_tile(icb, scaler_cb, itile, iscaler, idst, pool, dim)", "reduce.h",
         _reduce_template, 2)
_compute("reduce_uninit", "reduce_uninit(): restore the packer after a reduction", "reduce.h")
_compute("fill_tile_init", "fill_tile_init()", "eltwise_unary/fill.h")
_compute("fill_tile", "fill_tile(idst, value): every element of DST[idst] = value",
         "eltwise_unary/fill.h")
_compute("binop_with_scalar_tile_init", "binop_with_scalar_tile_init()",
         "eltwise_unary/binop_with_scalar.h")
for _name in (*ELTWISE_BINARY, "div", "rsub"):
    _compute(f"{_name}_unary_tile",
             f"{_name}_unary_tile(idst, bits): DST[idst] {_name} the float32 scalar `bits`",
             "eltwise_unary/binop_with_scalar.h")
for _name, _header in SFPU_UNARY.items():
    _header = _header.removeprefix(_COMPUTE)
    _compute(f"{_name}_tile_init", f"{_name}_tile_init(): configure the vector engine", _header)
    _compute(f"{_name}_tile", f"{_name}_tile(idst): DST[idst] = {_name}(DST[idst])", _header)
_compute("copy_init", "copy_init(cb): configure unpack and math for copy_tile from cb", "tile_move_copy.h")
_compute("copy_tile", "copy_tile(cb, itile, idst)", "tile_move_copy.h")
for _name in ("tile_regs_acquire", "tile_regs_commit", "tile_regs_wait", "tile_regs_release"):
    _compute(_name, f"{_name}()", "reg_api.h")
_compute("pack_tile",
         "pack_tile(idst, ocb, out_index, out_of_order): DST tile to position out_index of the "
         "reserved block (out_of_order=1: pack_tile<true>, any position)", "pack.h",
         template=lambda out_of_order: "<true>" if out_of_order else "", template_args=1)
_compute("pack_reconfig_data_format", "pack_reconfig_data_format(ocb)", "pack.h")
_compute("reconfig_data_format_srca", "reconfig_data_format_srca(cb)", "common.h")
_compute("reconfig_data_format_srcb", "reconfig_data_format_srcb(cb)", "common.h")


def tile_script_name(name: str) -> str:
    """``T.tile.<this>`` spells the tile primitive ``name`` in TVMScript (tt.tile.expr ->
    tt_expr)."""
    return "tt_" + name.removeprefix("tt.tile.")


def _register_all() -> None:
    register = tvm_ffi.get_global_func("ir.RegisterOp")
    for spec in _SPECS.values():
        try:
            tvm.ir.Op.get(spec.name)
            continue  # already registered (module re-import)
        except Exception:
            pass
        register(spec.name, spec.doc)
        tvm.ir.register_op_attr(spec.name, "TCallEffectKind", 3)  # opaque
        if spec.family == "tile":  # usable as the op of a tirx.TilePrimitiveCall
            tvm.ir.register_op_attr(spec.name, "TIRxOpCategory", "tile_primitive")
            # TVMScript prints a tile primitive as T.tile.<printer name>
            tvm.ir.register_op_attr(spec.name, "TScriptPrinterName", tile_script_name(spec.name))
        else:
            tvm.ir.register_op_attr(spec.name, "TScriptPrinterName", spec.name)


_register_all()


def spec(name: str) -> OpSpec:
    return _SPECS[name]


# abstract compute op -> (argument positions read as CBs, argument positions written as CBs)
_CB_OPERANDS = {
    "tt.mm.mma": ((1, 2), ()),
    "tt.acc.pack": ((), (1,)),
    **{name: ((1, 2), (0,)) for name in FPU_BINARY},
    "tt.reduce.max": ((1, 2), (0,)),
    "tt.reduce.sum": ((1, 2), (0,)),
    "tt.const_tile": ((), (0,)),
}


def compute_cb_operands(call) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """(CB argument positions read, positions written) of an abstract compute op, else None."""
    name = call.op.name
    if name == "tt.eltwise":
        return tuple(range(3, len(call.args))), (0,)
    return _CB_OPERANDS.get(name)


def specs() -> dict[str, OpSpec]:
    return dict(_SPECS)


def op(name: str) -> tvm.ir.Op:
    return tvm.ir.Op.get(name)


def call(name: str, *args, span=None):
    """Build a ``tt.*`` call expression."""
    s = _SPECS[name]
    return call_intrin(s.ret, s.name, *args, span=span)


def evaluate(name: str, *args, span=None):
    """Build a ``tt.*`` call as a statement."""
    return tvm.tirx.Evaluate(call(name, *args, span=span))


def tt_op_name(expr) -> str | None:
    """The ``tt.*`` op name of a Call, or None."""
    if isinstance(expr, tvm.ir.Call) and isinstance(expr.op, tvm.ir.Op):
        name = expr.op.name
        if name in _SPECS:
            return name
    return None


def stmt_op_name(stmt) -> str | None:
    """The ``tt.*`` op name of an ``Evaluate(call)`` statement, or None."""
    if isinstance(stmt, tvm.tirx.Evaluate):
        return tt_op_name(stmt.value)
    return None


# --- TVMScript namespace: T.tt.<op>(...) parses back to the same Call ----------------------
class _OpsNamespace:
    """Namespace object holding callables for one dotted level of ``T.tt``."""

    def __init__(self, prefix: str):
        self._prefix = prefix


def _script_namespace():
    root = _OpsNamespace("tt")
    for name in _SPECS:
        parts = name.split(".")[1:]
        node = root
        for part in parts[:-1]:
            child = getattr(node, part, None)
            if child is None:
                child = _OpsNamespace(f"{node._prefix}.{part}")
                # The printer's namespace walker treats classes named *Namespace as nested.
                setattr(node, part, child)
            node = child
        setattr(node, parts[-1], _make_script_fn(name))
    return root


def _make_script_fn(name):
    def fn(*args, **_kwargs):
        return call(name, *args)

    fn.__name__ = name.split(".")[-1]
    return fn


def _register_tile_primitives() -> None:
    """``T.tile.tt_<name>(...)`` parses back to the TilePrimitiveCall of ``tt.tile.<name>``."""
    from tvm.tirx import TilePrimitiveCall
    from tvm.tirx.script import tile as tile_ns
    from tvm.tirx.script.builder import _ffi_api as builder_ffi
    from tvm.tirx.script.builder import tirx as builder_tile_ns
    from tvm.tirx.script.builder.tirx import ScopedOp

    for spec in _SPECS.values():
        if spec.family != "tile":
            continue

        def build(*args, scope=None, _op=spec.name, **_kwargs):
            # our tile ops carry no execution scope (as A0 builds them)
            return builder_ffi.TilePrimitiveCall(TilePrimitiveCall(*args, op=op(_op)))

        for namespace in (tile_ns, builder_tile_ns):  # T.tile in user code / in the parser
            setattr(namespace, tile_script_name(spec.name), ScopedOp(build))


def register_script_namespace() -> None:
    from tvm.tirx.script.builder import ir as builder_ir

    _register_tile_primitives()

    if getattr(builder_ir, "tt", None) is None:
        builder_ir.register_script_namespace("tt", _script_namespace())
    else:
        for module_name in ("tvm.tirx.script.builder", "tvm.tirx.script.parser",
                            "tvm.tirx.script", "tvm.script.tirx"):
            import sys
            module = sys.modules.get(module_name)
            if module is not None and getattr(module, "tt", None) is None:
                setattr(module, "tt", builder_ir.tt)
    # The namespace walker re-registers printer names only for "tirx."-prefixed ops; ours are
    # set explicitly above, so nothing is lost.


register_script_namespace()
