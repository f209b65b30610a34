"""Registry of the ``tt.*`` TIR ops: one entry per op, holding every property of it.

Every op the pipeline puts into TIR is a registered ``tvm.ir.Op`` (opaque call effect), printed
by TVMScript as ``T.tt.<name>(...)`` (tile primitives as ``T.tile.tt_<name>(...)``) and
parsed back through the ``T.tt`` script namespace.  An :class:`OpSpec` says:

* **family** - ``tile`` (tile primitives on buffer regions, A0-C2), ``expr`` (nodes of
  elementwise expression trees, the operand of ``tt.tile.expr`` / ``tt.eltwise``),
  ``abstract`` (tile dataflow without protocol, C1-D5), ``dataflow`` and ``compute``
  (one-to-one with TT-Metalium calls), ``meta`` (declarations: CBs, accessors, arguments);
* **operands** - name and kind of every argument (:data:`KINDS`: which are CBs read or
  written, DST slots, constants, tensors, expression trees ...), the last one repeated when
  ``variadic``; :func:`verify_call` checks arity and kinds;
* **kernel** and **engine** - the device kernel that executes it (SplitDeviceKernel keeps it
  there) and the part of the Tensix core it uses;
* **init** - for a compute call, the init call that must be in force before it (and which
  arguments must agree); **sets** - for an init, the engine state it configures; **dst** -
  the DST phase a DST-using call needs (``math``: between acquire and commit, ``pack``:
  between wait and release);
* **cpp**, **header**, **template** - the C++ spelling, the SDK header declaring it, and its
  template arguments (the last ``template_args`` operands, or a fixed string);
* **props** - what a pass needs to lower an abstract op (its init, the source registers its
  operands go through).

The elementwise functions and arithmetic of expression trees are tables of the registry too
(:data:`FUNCTIONS`, :data:`ARITH`): each names its expression op, its init and tile calls,
and how to fold constants.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field

import tvm
import tvm_ffi
from tvm.tirx.op import call_intrin

# operand kinds
KINDS = {
    "cb": "a circular buffer (an int: a tt.alloc_cb variable) the call manages",
    "cb.in": "a circular buffer the call reads tiles from",
    "cb.out": "a circular buffer the call writes tiles to",
    "dst": "a DST tile index (int expression)",
    "int": "an integer expression",
    "imm": "an integer constant",
    "float": "a float constant",
    "bits": "a uint32 constant (the bits of a float32)",
    "acc": "a GEMM accumulator (a fragment buffer)",
    "tensor": "a global tensor (a parameter buffer)",
    "accessor": "a TensorAccessor (a handle variable)",
    "expr": "an elementwise expression tree (float32)",
    "str": "a string",
    "region": "a buffer region",
    "cond": "a condition (a boolean expression of integers)",
    "value": "a float constant, or an integer expression (an index value, converted to float)",
}
KERNELS = ("reader", "compute", "writer")


@dataclass(frozen=True)
class Operand:
    name: str
    kind: str


@dataclass(frozen=True)
class OpSpec:
    name: str  # full op name, "tt.<...>"
    family: str  # tile | expr | abstract | dataflow | compute | meta
    ret: str  # TIR dtype of the call
    doc: str
    operands: tuple = ()  # Operand per argument
    variadic: bool = False  # the last operand repeats (zero or more times)
    kernel: str | None = None  # reader | compute | writer | any (None: before the split)
    engine: str | None = None  # noc | cb | riscv | unpack | math | sfpu | pack | dst | config
    # (riscv: the kernel's own core - its stores to L1, integer arithmetic)
    # C++ spelling: a function name (printed `cpp<template>(args)`), or a format string over
    # the arguments ("{0}", "{1}" ...; props["expression"]: a format without fields)
    cpp: str | None = None
    header: str | None = None  # SDK header declaring a compute call
    # the C++ template arguments: a function of the last `template_args` (constant) operands
    # giving "<...>" ("" for the default instantiation), or a fixed string
    template: object = None
    template_args: int = 0
    init: str | None = None  # init call that must be in force (compute calls)
    init_args: tuple = ()  # (operand, init operand) names that must agree
    sets: str | None = None  # init calls: the engine state configured ("math" | "sfpu")
    dst: str | None = None  # math | pack: the DST phase the call needs
    props: dict = field(default_factory=dict)

    def positions(self, nargs: int, kinds) -> list[int]:
        """Argument positions (of a call with ``nargs`` arguments) whose kind is in ``kinds``."""
        kinds = {kinds} if isinstance(kinds, str) else set(kinds)
        out = []
        for i in range(nargs):
            k = min(i, len(self.operands) - 1)
            if self.operands and self.operands[k].kind in kinds:
                out.append(i)
        return out

    def index(self, name: str) -> int:
        return next(i for i, o in enumerate(self.operands) if o.name == name)


_SPECS: dict[str, OpSpec] = {}


def _ops(text: str) -> tuple:
    """Operands from "name:kind name:kind ..."."""
    return tuple(Operand(*item.split(":", 1)) for item in text.split())


def _op(name, family, ret, doc, operands="", **kw):
    full = f"tt.{name}"
    _SPECS[full] = OpSpec(full, family, ret, doc, _ops(operands), **kw)


# --- elementwise functions and arithmetic (tables of the registry) --------------------------
_COMPUTE = "api/compute/"


@dataclass(frozen=True)
class Function:
    """An SFPU function of one DST tile."""

    name: str  # "exp"
    expr_op: str  # its expression-tree op: tt.expr.exp
    init: str  # tt.exp_tile_init
    apply: str  # tt.exp_tile
    header: str
    fold: object  # the function on Python floats (constant folding)
    args: tuple = ()  # constant operands after the DST index (round_tile's decimals)


@dataclass(frozen=True)
class Arith:
    """A binary arithmetic function and the calls that compute it."""

    name: str  # "add"
    fold: object
    fpu_init: str | None = None  # the matrix engine on two CB tiles: add_init / add_tiles
    fpu_tiles: str | None = None
    sfpu_init: str | None = None  # the vector engine on two DST tiles
    sfpu_tile: str | None = None
    scalar_tile: str | None = None  # a DST tile and a float32 scalar
    scalar_init: str = "tt.binop_with_scalar_tile_init"
    bcast_init: dict = field(default_factory=dict)  # "col" | "row" -> matrix-engine broadcast
    bcast_tiles: dict = field(default_factory=dict)


_FUNCTION_HEADERS = {
    "exp": "eltwise_unary/exp.h", "log": "compute_kernel_api.h", "sqrt": "eltwise_unary/sqrt.h",
    "rsqrt": "eltwise_unary/rsqrt.h", "recip": "eltwise_unary/recip.h",
    "relu": "eltwise_unary/relu.h", "sigmoid": "compute_kernel_api.h",
    "tanh": "compute_kernel_api.h", "abs": "compute_kernel_api.h",
    "negative": "eltwise_unary/negative.h",
    # comparisons with zero: 1.0 where x > 0 (>= 0, < 0, <= 0, == 0, != 0), else 0.0
    "gtz": "eltwise_unary/comp.h", "gez": "eltwise_unary/comp.h", "ltz": "eltwise_unary/comp.h",
    "lez": "eltwise_unary/comp.h", "eqz": "eltwise_unary/comp.h", "nez": "eltwise_unary/comp.h",
    # rounding toward -inf, +inf, 0 (one init for the three: rounding_op_tile_init)
    "floor": "eltwise_unary/rounding.h", "ceil": "eltwise_unary/rounding.h",
    "trunc": "eltwise_unary/rounding.h", "round": "eltwise_unary/rounding.h",
    # trigonometric and hyperbolic functions, erf
    "sin": "eltwise_unary/trigonometry.h", "cos": "eltwise_unary/trigonometry.h",
    "tan": "eltwise_unary/trigonometry.h", "atan": "eltwise_unary/trigonometry.h",
    "sinh": "eltwise_unary/trigonometry.h", "cosh": "eltwise_unary/trigonometry.h",
    "erf": "eltwise_unary/erf_erfc.h",
    "asin": "eltwise_unary/trigonometry.h", "acos": "eltwise_unary/trigonometry.h",
    "asinh": "eltwise_unary/trigonometry.h", "acosh": "eltwise_unary/trigonometry.h",
    "atanh": "eltwise_unary/trigonometry.h", "log1p": "eltwise_unary/log1p.h",
}
# C++ template arguments of the init and tile calls: erf's precise variant (the SDK's default,
# fast_and_approx = true, takes the denominator's reciprocal without Newton steps: ~1% error)
_FUNCTION_TEMPLATE = {"erf": "<false>"}
_FUNCTION_INIT = {"floor": "rounding_op", "ceil": "rounding_op", "trunc": "rounding_op",
                  "round": "rounding_op"}
# round_tile(idst, decimals): to 0 decimal places, ties to even
_FUNCTION_ARGS = {"round": (("decimals", 0),)}
_FOLDS = {
    "exp": math.exp, "log": math.log, "sqrt": math.sqrt, "rsqrt": lambda x: 1 / math.sqrt(x),
    "recip": lambda x: 1 / x, "relu": lambda x: max(x, 0.0),
    "sigmoid": lambda x: 1 / (1 + math.exp(-x)), "tanh": math.tanh, "abs": abs,
    "negative": lambda x: -x,
    "gtz": lambda x: float(x > 0), "gez": lambda x: float(x >= 0), "ltz": lambda x: float(x < 0),
    "lez": lambda x: float(x <= 0), "eqz": lambda x: float(x == 0), "nez": lambda x: float(x != 0),
    "floor": lambda x: float(math.floor(x)), "ceil": lambda x: float(math.ceil(x)),
    "trunc": lambda x: float(math.trunc(x)), "round": lambda x: float(round(x)),
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "atan": math.atan, "sinh": math.sinh,
    "cosh": math.cosh, "erf": math.erf, "asin": math.asin, "acos": math.acos,
    "asinh": math.asinh, "acosh": math.acosh, "atanh": math.atanh, "log1p": math.log1p,
}
FUNCTIONS = {fn: Function(fn, f"tt.expr.{fn}", f"tt.{_FUNCTION_INIT.get(fn, fn)}_tile_init",
                          f"tt.{fn}_tile", _COMPUTE + header, _FOLDS[fn],
                          tuple(tvm.tirx.IntImm("int32", v) for _, v in _FUNCTION_ARGS.get(fn, ())))
             for fn, header in _FUNCTION_HEADERS.items()}

_DIMS = {"col": "cols", "row": "rows"}
ARITH = {
    name: Arith(
        name, fold,
        fpu_init=f"tt.{name}_init" if name in ("add", "sub", "mul") else None,
        fpu_tiles=f"tt.{name}_tiles" if name in ("add", "sub", "mul") else None,
        sfpu_init=f"tt.{name}_binary_tile_init" if name != "rsub" else None,
        sfpu_tile=f"tt.{name}_binary_tile" if name != "rsub" else None,
        scalar_tile=f"tt.{name}_unary_tile",
        bcast_init={o: f"tt.{name}_bcast_{d}_init" for o, d in _DIMS.items()}
        if name in ("add", "sub", "mul") else {},
        bcast_tiles={o: f"tt.{name}_tiles_bcast_{d}" for o, d in _DIMS.items()}
        if name in ("add", "sub", "mul") else {},
    )
    for name, fold in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                       ("div", operator.truediv), ("rsub", lambda a, b: b - a))
}
# max / min of two DST tiles (binary_max_min.h) or of a tile and a float32 scalar (unary_max_tile)
for _name, _fold in (("max", max), ("min", min)):
    ARITH[_name] = Arith(_name, _fold, sfpu_init=f"tt.binary_{_name}_tile_init",
                         sfpu_tile=f"tt.binary_{_name}_tile",
                         scalar_tile=f"tt.unary_{_name}_tile",
                         scalar_init=f"tt.unary_{_name}_tile_init")
ELTWISE_BINARY = ("add", "sub", "mul")  # the matrix engine's elementwise functions
BROADCAST_ARITH = ("add", "sub", "mul", "div")  # what meets a vector operand (a broadcast)

# --- meta -----------------------------------------------------------------------------------
_op("alloc_cb", "meta", "int32",
    "alloc_cb(cb_id, rows, cols, depth, dtype, name): a circular buffer holding `depth` blocks "
    "of rows x cols tiles; cb_id is -1 until BuildTileDFGTT assigns it",
    "cb_id:imm rows:imm cols:imm depth:imm dtype:str name:str", kernel="any")
_op("work_id", "meta", "int32", "the work unit the persistent per-core loop is processing",
    kernel="any")
_op("get_arg_val", "meta", "int32", "get_arg_val(slot): runtime argument `slot`", "slot:imm",
    kernel="any", cpp="get_arg_val", template="<uint32_t>")
_op("assume", "meta", "bool",
    "assume(c, text): T.assume(c), `text` the condition as written; A0.000.1 raises when c is "
    "false for the sizes compiled for and removes it", "c:cond text:str", kernel="any")
_op("thread_index", "meta", "int32",
    "thread_index(dim, extent): TileLang's thread index of `dim` (T.get_thread_binding), in "
    "[0, extent); A0.000 resolves the `if`s it selects tile operations by, and refuses every "
    "other use (a block is one program on Tensix)", "dim:imm extent:imm")
_op("tensor_accessor", "meta", "handle",
    "tensor_accessor(tensor, index, addr_slot, page_bytes): TensorAccessor over `tensor`; its "
    "compile-time args are the `index`-th TensorAccessorArgs of the kernel",
    "tensor:tensor index:imm addr_slot:imm page_bytes:imm", kernel="any")

# --- elementwise expression trees (A0-D5) -----------------------------------------------------
# An elementwise expression is a float32 PrimExpr over these leaves and functions, float
# constants and TIR's +, -, *, / (passes/eltwise_expr.py); it is an operand of tt.tile.expr
# and tt.eltwise.
_op("expr.load", "expr", "float32", "expr.load(k): an element of operand k (a block)", "k:imm")
_op("expr.value", "expr", "float32",
    "expr.value(k): an element of operand k, a block of index values the reader computed "
    "(read as expr.load, copy_tile into a fresh DST slot, but never the block side of a "
    "matrix-engine broadcast: its SrcA would keep float32 as TF32, and the values are exact "
    "integers up to 2^24)", "k:imm")
_op("expr.load_t", "expr", "float32",
    "expr.load_t(k): an element of operand k read transposed (operand k is the destination's "
    "block transposed: element (i, j) of the result reads element (j, i) of it; on Tensix "
    "transpose_tile into a fresh DST slot)", "k:imm")
_op("expr.col", "expr", "float32",
    "expr.col(k): operand k, a column vector (values in column 0 of its tiles), broadcast "
    "along the rows (R[i]); only as an operand of +, - or * with an expr.load", "k:imm")
_op("expr.row", "expr", "float32",
    "expr.row(k): operand k, a row vector (values in row 0 of its tiles), broadcast down the "
    "columns (R[j]); only as an operand of +, - or * with an expr.load", "k:imm")
for _fn in FUNCTIONS.values():
    _op(_fn.expr_op.removeprefix("tt."), "expr", "float32",
        f"{_fn.name}(x): {_fn.name} of x on the vector engine", "x:expr",
        props={"function": _fn.name})
# x ** y and fmod(x, y): the vector engine's power and fmod (y a constant: power_tile /
# fmod_tile_init(y, 1/y) and fmod_tile; a tile: power_binary_tile / fmod_binary_tile)
_op("expr.pow", "expr", "float32",
    "expr.pow(x, y): x ** y (x, y: trees or float constants, not both constants)",
    "x:expr y:expr")
_op("expr.fmod", "expr", "float32",
    "expr.fmod(x, y): x - trunc(x / y) * y, the sign of x (y: a tree or a float constant)",
    "x:expr y:expr")
_op("expr.atan2", "expr", "float32", "expr.atan2(y, x): the angle of (x, y) (two trees)",
    "y:expr x:expr")
POWER_OPS = {"pow": "tt.expr.pow", "fmod": "tt.expr.fmod", "atan2": "tt.expr.atan2"}
_op("expr.where", "expr", "float32",
    "expr.where(c, x, y): x where c is not 0, else y (c: a comparison, 1.0 or 0.0)",
    "c:expr x:expr y:expr")
FUNCTION_OPS = {fn: f.expr_op for fn, f in FUNCTIONS.items()}
_op("expr.scalar", "expr", "float32",
    "expr.scalar(k): operand k, a one-element 1-D buffer (its value at element (0, 0) of its "
    "one tile: a 1-D block reduced to one value), broadcast to every element (s[0]); on "
    "Tensix unary_bcast<BroadcastType::SCALAR> into a DST slot of its own", "k:imm")
VECTOR_OPS = {"col": "tt.expr.col", "row": "tt.expr.row", "scalar": "tt.expr.scalar"}

# --- index masks (A0-D3) ----------------------------------------------------------------------
# A condition of element and block indices (TileLang's causal mask `bx * BM + i >= k * BN + j`)
# is computed by the reader as a block of two values (tile.index_mask, mask_to_cb); in the
# condition the element's position in the block is mask.index(d).
_op("mask.index", "expr", "int32",
    "mask.index(d): the element's index along dimension d (0: rows, 1: columns) of the block "
    "an index mask fills; only inside the condition of tile.index_mask / mask_to_cb", "d:imm")

# --- tile primitives of our own (A0-C2) -----------------------------------------------------
_op("tile.expr", "tile", "void",
    "tile.expr(dst, expr, *srcs): dst = the elementwise expression `expr` (a tree over "
    "tt.expr.load(k) / load_t(k) / col(k) / row(k) of the source regions)",
    "dst:region expr:expr srcs:region", variadic=True)

_op("tile.cumsum", "tile", "void",
    "tile.cumsum(dst, src, dim, reverse): dst = the running sum of src along dimension dim "
    "(T.cumsum: element i of a line is the sum of its elements 0..i, or with reverse of its "
    "elements i..end)", "dst:region src:region dim:imm reverse:imm")

_op("tile.index_mask", "tile", "void",
    "tile.index_mask(dst, cond, x, y): dst = x where `cond` holds, else y (each a float "
    "constant or an index value: an integer expression converted to dst's float dtype); `cond` "
    "and the index values are expressions of tt.mask.index(d) (the element's position in the "
    "block), block indices and loop variables - no buffer element",
    "dst:region cond:cond x:value y:value")

_op("tile.im2col", "tile", "void",
    "tile.im2col(dst, src, nhw_step, c_step, kernel, stride, dilation, pad): dst (a [M, K] "
    "block) = rows nhw_step * M + i (output pixels (n, oh, ow), ow fastest) and columns "
    "c_step * K + j (taps (kh, kw, c), c fastest) of the implicit-GEMM matrix of a 2-D "
    "convolution over the NHWC tensor src: src[n, oh * stride + kh * dilation - pad, ow * "
    "stride + kw * dilation - pad, c], 0 outside it (T.im2col)",
    "dst:region src:region nhw_step:int c_step:int kernel:imm stride:imm dilation:imm pad:imm")

# --- abstract tile dataflow (C1-D5) ---------------------------------------------------------
_op("read_to_cb", "abstract", "void",
    "read_to_cb(cb, tensor, row0, col0, rows, cols[, valid]): one block of tiles from DRAM into "
    "cb; with `valid` (a condition over the tile's row and column in the block, "
    "tt.mask.index(0) / (1): an offset read from tensor elements that may leave the tensor) "
    "each tile where it does not hold is zero-filled instead of read",
    "cb:cb.out tensor:tensor row0:int col0:int rows:imm cols:imm valid:cond", variadic=True,
    kernel="reader", engine="noc")
_op("write_from_cb", "abstract", "void",
    "write_from_cb(cb, tensor, row0, col0, rows, cols[, block]): one block of tiles from cb to "
    "DRAM; with `block` (the CB block's tiles, more than rows * cols) the block's leading "
    "rows * cols tiles only, the whole block waited for and popped",
    "cb:cb.in tensor:tensor row0:int col0:int rows:imm cols:imm block:imm", variadic=True,
    kernel="writer", engine="noc")
# a block whose tensor rows start off a tile boundary (C1: TileLang's variable-length rows,
# `Q[cu_seqlens[b] + bx * BM : ..., h, :]`): moved row by row, each of its 32 * rows rows two
# face rows of one DRAM tile (D3)
_op("read_rows_to_cb", "abstract", "void",
    "read_rows_to_cb(cb, tensor, lead, row, col0, rows, cols, row_dim): a rows x cols block of "
    "tiles into cb whose row i is the tensor's row `row + i` (of the plane `lead` of its tiled "
    "rows, row_dim rows each; columns from tile col0), gathered face row by face row; a row "
    "outside 0 .. row_dim - 1 reads zeros",
    "cb:cb.out tensor:tensor lead:int row:int col0:int rows:imm cols:imm row_dim:imm",
    kernel="reader", engine="noc")
_op("write_rows_from_cb", "abstract", "void",
    "write_rows_from_cb(cb, tensor, lead, row, col0, rows, cols, row_dim, guard): the block's "
    "row i to the tensor's row `row + i` (as read_rows_to_cb), face row by face row, only where "
    "`guard` holds (tt.mask.index(0): the block row) and the row is inside 0 .. row_dim - 1",
    "cb:cb.in tensor:tensor lead:int row:int col0:int rows:imm cols:imm row_dim:imm guard:cond",
    kernel="writer", engine="noc")
# an atomic whose target moves with a loop (LowerAtomicsTT): the target block is read, updated
# and written back every iteration on one core; the reader's next read of it must follow the
# writer's write (one L1 semaphore per core: the reader waits for 0 and sets 1 before the
# read, the writer sets 0 after the write's barrier; D3 lowers both)
_op("rmw_acquire", "abstract", "void",
    "rmw_acquire(): before reading a block an atomic updates in place, wait until the writer "
    "completed the previous write-back on this core", kernel="reader", engine="riscv")
_op("rmw_release", "abstract", "void",
    "rmw_release(): after an atomic's write-back (and its barrier), let the reader read the "
    "next block", kernel="writer", engine="riscv")
_op("shard_to_cb", "abstract", "void",
    "shard_to_cb(cb, tensor, ntiles): the next block of the core's L1 shard of `tensor`, which "
    "cb's ring lies on, is published to the consumer (no copy)",
    "cb:cb.out tensor:tensor ntiles:imm", kernel="reader", engine="cb")
_op("cb_to_shard", "abstract", "void",
    "cb_to_shard(cb, tensor, ntiles): the block the producer packed into cb, whose ring is the "
    "core's L1 shard of `tensor`, is final there (no copy)",
    "cb:cb.in tensor:tensor ntiles:imm", kernel="writer", engine="cb")
_op("mask_to_cb", "abstract", "void",
    "mask_to_cb(cb, rows, cols, cond, x, y): a rows x cols block of tiles, x where `cond` holds "
    "(tt.mask.index(0) / (1): the element's row / column in the block) and y elsewhere (each a "
    "float constant or an integer expression of the same, converted to cb's dtype), written "
    "into cb's L1 by the reader's RISC-V core in the tile's face layout",
    "cb:cb.out rows:imm cols:imm cond:cond x:value y:value", kernel="reader", engine="riscv")
_op("im2col_to_cb", "abstract", "void",
    "im2col_to_cb(cb, img, nhw_step, c_step, rows, cols, n, h, w, c, kernel, stride, dilation, "
    "pad): the rows x cols tiles of the implicit-GEMM matrix of a 2-D convolution over the NHWC "
    "tensor img of logical shape (n, h, w, c), starting at row nhw_step * rows * 32 and column "
    "c_step * cols * 32 (tile.im2col), built by the reader in cb's L1: each 32-column segment "
    "of a row (32 channels of one pixel: one row of one DRAM tile of img) is read from DRAM "
    "face row by face row (two reads of 16 elements), or zeroed where the tap is outside the "
    "image",
    "cb:cb.out img:tensor nhw_step:int c_step:int rows:imm cols:imm n:imm h:imm w:imm c:imm "
    "kernel:imm stride:imm dilation:imm pad:imm", kernel="reader", engine="noc")
# a tensor read as scalars in `if` conditions (passes/dataflow/scalar_reads.py): the reader
# reads the DRAM page holding the element into a CB page and pushes it; each kernel that
# branches on it binds the element's word (compute: read_tile_value of the page it waited for)
_op("scalar_to_cb", "abstract", "void",
    "scalar_to_cb(cb, tensor, page): DRAM page `page` of a scalar tensor (32-bit words) into "
    "one page of cb, pushed by the reader", "cb:cb.out tensor:tensor page:int",
    kernel="reader", engine="noc")
# a tensor element read as a scalar operand of a T.Parallel expression (staged into a [1]
# float32 block, frontend/scalar_operands.py): the reader reads the DRAM page of 32-bit words
# holding it into the block's one tile and moves the word to element (0, 0)
_op("element_to_cb", "abstract", "void",
    "element_to_cb(cb, tensor, page, word): word `word` of DRAM page `page` of a scalar tensor "
    "(float32 words) into element (0, 0) of one tile of cb, pushed by the reader",
    "cb:cb.out tensor:tensor page:int word:int", kernel="reader", engine="noc")
_op("scalar_value", "abstract", "int32",
    "scalar_value(cb, word): the 32-bit word `word` of the page scalar_to_cb pushed into cb "
    "(the compute kernel's copy of the value: read_tile_value; the reader reads it from the "
    "page it filled)", "cb:cb.in word:int", kernel="compute", engine="cb")
_op("scalar_word", "abstract", "int32",
    "scalar_word(cb, word): the 32-bit word `word` of the page scalar_to_cb pushed into cb, in "
    "the reader (read from the page it filled, before the push) and the writer (from the page "
    "the tt.scalar_take after it takes); the compute kernel never holds it (C2.2's row offsets)",
    "cb:cb word:int", kernel="any", engine="cb")
_op("scalar_take", "abstract", "void",
    "scalar_take(cb): the writer takes the page scalar_to_cb pushed into cb; a `v = "
    "tt.scalar_value(...)` right before it is the writer's copy of the value, read from that "
    "page", "cb:cb.in", kernel="writer", engine="cb")
# a scalar program (passes/frontend/scalar_program.py): element reads and stores of scalar
# tensors (32-bit words, 16 to a 64-byte DRAM page) by the reader's RISC-V core; LowerScalar
# ProgramTT makes them page reads (and read-modify-writes) through an L1 scratch page
_op("scalar.load", "abstract", "int32",
    "scalar.load(tensor, flat): the 32-bit word of element `flat` (row-major) of a scalar "
    "tensor, read by the reader", "tensor:tensor flat:int", kernel="reader", engine="noc")
_op("scalar.store", "abstract", "void",
    "scalar.store(tensor, flat, word): element `flat` (row-major) of a scalar tensor = the "
    "32-bit `word`, stored by the reader", "tensor:tensor flat:int word:int", kernel="reader",
    engine="noc")
_op("consume.begin", "abstract", "void",
    "consume.begin(cb, ntiles): the compute kernel starts using one block of cb (it waits for "
    "the block)", "cb:cb ntiles:imm", kernel="compute", engine="cb")
_op("consume.end", "abstract", "void",
    "consume.end(cb, ntiles): the compute kernel is done with the block of cb (it frees it)",
    "cb:cb ntiles:imm", kernel="compute", engine="cb")
_op("acc.clear", "abstract", "void", "acc.clear(acc): the accumulator starts from zero",
    "acc:acc", kernel="compute", engine="dst")
_op("acc.pack", "abstract", "void", "acc.pack(acc, cb): the accumulator block is packed into cb",
    "acc:acc cb:cb.out", kernel="compute", engine="pack")
_op("mm.mma", "abstract", "void",
    "mm.mma(acc, cb_a, cb_b, Mt, Nt, Kt, transpose_b): acc += A @ B on tile blocks",
    "acc:acc a:cb.in b:cb.in mt:imm nt:imm kt:imm transpose_b:imm", kernel="compute",
    engine="math",
    # matmul_init(a, b, transpose); in0 (A) feeds srcB, in1 (B) srcA
    props={"init": ("tt.matmul_init", ("a", "b", "transpose_b")), "src_a": "b", "src_b": "a"})
for _name in ELTWISE_BINARY:
    _op(f"fpu.{_name}", "abstract", "void",
        f"fpu.{_name}(cb_out, cb_a, cb_b, ntiles): elementwise {_name} on the matrix engine",
        "out:cb.out a:cb.in b:cb.in ntiles:imm", kernel="compute", engine="math",
        props={"init": (ARITH[_name].fpu_init, ("a", "b")), "src_a": "a", "src_b": "b",
               "arith": _name})
_op("eltwise", "abstract", "void",
    "eltwise(cb_out, ntiles, expr, *cb_ins): the elementwise expression `expr` of the input "
    "blocks, evaluated in DST (operands copied in, SFPU functions and binary ops in place, "
    "broadcasts on the matrix engine) and packed to cb_out, which converts to its data "
    "format; expr.load(0) alone is a copy",
    "out:cb.out ntiles:imm expr:expr ins:cb.in", variadic=True, kernel="compute",
    engine="sfpu", props={"self_init": True})
for _name in ("max", "sum"):
    _op(f"reduce.{_name}", "abstract", "void",
        f"reduce.{_name}(cb_out, cb_in, cb_scaler, Mt, Nt, over_rows): the {_name} of every row "
        "of the Mt x Nt block into a column vector (Mt tiles, values in column 0), or with "
        "over_rows of every column into a row vector (Nt tiles, values in row 0)",
        "out:cb.out src:cb.in scaler:cb.in mt:imm nt:imm over_rows:imm", kernel="compute",
        engine="math",
        # accumulates: sums over several tiles in DST (an fp32 input needs an fp32 DST)
        props={"self_init": True, "pool": 1 if _name == "max" else 0, "accumulates": True})
for _name, _pool in (("max", 2), ("min", 3)):
    _op(f"reduce.sfpu_{_name}", "abstract", "void",
        f"reduce.sfpu_{_name}(cb_out, cb_in, Mt, Nt, over_rows): the exact {_name} of every "
        "row of a float32 Mt x Nt block into a column vector (Mt tiles, values in column 0), or "
        "with over_rows of every column into a row vector (Nt tiles, values in row 0), on the "
        "vector engine (sfpu_reduce on tiles copied into a 32-bit DST: no TF32 source register)",
        "out:cb.out src:cb.in mt:imm nt:imm over_rows:imm", kernel="compute", engine="sfpu",
        props={"self_init": True, "pool": _pool, "sfpu_reduce": True})
_op("scan.cumsum", "abstract", "void",
    "scan.cumsum(cb_out, cb_in, mt, nt): the running sum of every column of the mt x nt block "
    "from top to bottom (tile row 0 to mt - 1), the vector engine's cumsum_tile carrying the "
    "column totals from one tile of a column to the next",
    "out:cb.out src:cb.in mt:imm nt:imm", kernel="compute", engine="sfpu",
    props={"self_init": True})
_op("row_order_to_cb", "abstract", "void",
    "row_order_to_cb(cb): the reader writes the bytes 31, 30, ..., 0 at the start of one page "
    "of cb: the destination rows with which reshuffle_rows_tile reverses a tile's rows",
    "cb:cb.out", kernel="reader", engine="riscv")
_op("scan.flip_rows", "abstract", "void",
    "scan.flip_rows(cb_out, cb_in, cb_order, mt, nt): the mt x nt block upside down (tile row "
    "r to mt - 1 - r, and each tile's rows reversed by reshuffle_rows_tile with the order "
    "row_order_to_cb wrote into cb_order)",
    "out:cb.out src:cb.in order:cb.in mt:imm nt:imm", kernel="compute", engine="sfpu",
    props={"self_init": True})
_op("const_tile", "abstract", "void",
    "const_tile(cb, value, ntiles): a block of `ntiles` tiles of `value` pushed to cb "
    "(T.fill of a block buffer, the reduce scaler)", "cb:cb.out value:float ntiles:imm",
    kernel="compute", engine="sfpu", props={"self_init": True})

# --- dataflow protocol (D3-) ----------------------------------------------------------------
for _name in ("cb_reserve_back", "cb_push_back", "cb_wait_front", "cb_pop_front"):
    _op(_name, "dataflow", "void", f"{_name}(cb, ntiles)", "cb:cb ntiles:int", kernel="any",
        engine="cb", cpp=_name)
_op("get_write_ptr", "dataflow", "int32", "get_write_ptr(cb): L1 address of the back page",
    "cb:cb", kernel="any", engine="cb", cpp="get_write_ptr")
_op("get_read_ptr", "dataflow", "int32", "get_read_ptr(cb): L1 address of the front page",
    "cb:cb", kernel="any", engine="cb", cpp="get_read_ptr")
_op("noc_async_read_page", "dataflow", "void", "noc_async_read_page(page, accessor, l1_addr)",
    "page:int accessor:accessor l1_addr:int", kernel="reader", engine="noc",
    cpp="noc_async_read_page")
_op("noc_async_read_part", "dataflow", "void",
    "noc_async_read_part(page, accessor, offset, l1_addr, bytes): `bytes` bytes of DRAM page "
    "`page` from byte `offset` on into L1 (an im2col row segment's face row)",
    "page:int accessor:accessor offset:int l1_addr:int bytes:int", kernel="reader",
    engine="noc", cpp="noc_async_read({1}.get_noc_addr({0}, {2}), {3}, {4})")
_op("noc_async_write_part", "dataflow", "void",
    "noc_async_write_part(page, accessor, offset, l1_addr, bytes): `bytes` bytes from L1 into "
    "DRAM page `page` from byte `offset` on (a face row of a row-scattered block)",
    "page:int accessor:accessor offset:int l1_addr:int bytes:int", kernel="writer",
    engine="noc", cpp="noc_async_write({3}, {1}.get_noc_addr({0}, {2}), {4})")
_op("noc_async_write_page", "dataflow", "void", "noc_async_write_page(page, accessor, l1_addr)",
    "page:int accessor:accessor l1_addr:int", kernel="writer", engine="noc",
    cpp="noc_async_write_page")
# T.print (language_debug.py): one DPRINT of the kernel that owns the value (scalars: the reader,
# where every block's indices are; a block buffer's elements: the kernel holding the block, reading
# its L1 words) - printed `DPRINT("format" "\n", args...)`, api/debug/dprint.h. The format holds
# the line without its newline: a StringImm holding one does not print back as TVMScript text
_op("dprint", "dataflow", "void",
    "dprint(format, args...): one DPRINT line (api/debug/dprint.h; `format` fmt's, with the "
    "arguments' `{}` fields; the newline is the op's)", "format:str args:int", variadic=True,
    kernel="reader", engine="riscv", cpp='DPRINT({0} "\\n"{rest})', header="api/debug/dprint.h")
# T.print(block buffer): the marker where the statement stands (C1 replaces it with the writer's
# print of the CB the next T.copy(block, tensor) stores: a wait on the pages it will wait on
# anyway, and a DPRINT per element read from L1)
_op("dprint_block", "abstract", "void",
    "dprint_block(id, format, bx, by, bz): T.print of a block buffer; the T.copy(block, tensor) "
    "whose config's tt_print_ids holds `id` names the block (C1 lowers it)",
    "id:imm format:str bx:int by:int bz:int", kernel="writer", engine="riscv")
_op("cb_peek_front", "dataflow", "void",
    "cb_peek_front(cb, ntiles): cb_wait_front for tiles the writer waits for (and pops) at its "
    "next cb_wait_front of cb anyway: a print looks at them first; it opens and closes nothing",
    "cb:cb ntiles:int", kernel="writer", engine="cb", cpp="cb_wait_front")
_op("cb_peek_ptr", "dataflow", "int32",
    "cb_peek_ptr(cb): get_read_ptr after cb_peek_front (the L1 address of the front page)",
    "cb:cb", kernel="writer", engine="cb", cpp="get_read_ptr")
_op("dprint_element", "dataflow", "void",
    "dprint_element(format, bx, by, bz, index, value): the DPRINT line of one element of a "
    "printed block (the writer's; the newline is the op's)",
    "format:str bx:int by:int bz:int index:int value:expr", kernel="writer", engine="riscv",
    cpp='DPRINT({0} "\\n", {1}, {2}, {3}, {4}, {5})', header="api/debug/dprint.h")
_op("l1_load_bf16", "dataflow", "float32",
    "l1_load_bf16(addr): the bfloat16 at the core's L1 address `addr`, as DPRINT's bf16_t",
    "addr:int", kernel="any", engine="riscv",
    cpp="bf16_t(*reinterpret_cast<volatile tt_l1_ptr uint16_t*>({0}))")
_op("l1_load_f16", "dataflow", "float32",
    "l1_load_f16(addr): the IEEE float16 at the core's L1 address `addr` as a float (DPRINT has "
    "no half type; subnormals, infinities and NaNs kept)", "addr:int", kernel="any",
    engine="riscv",
    cpp="([](uint32_t h) -> float {{ const uint32_t e = (h >> 10) & 0x1fu; "
        "const uint32_t m = h & 0x3ffu; "
        "const float v = e == 0 ? static_cast<float>(m) * 5.9604644775390625e-8f : "
        "__builtin_bit_cast(float, e == 31 ? (0xffu << 23) | (m << 13) : "
        "((e + 112u) << 23) | (m << 13)); return (h & 0x8000u) ? -v : v; }}"
        "(*reinterpret_cast<volatile tt_l1_ptr uint16_t*>({0})))")
_op("l1_load_f32", "dataflow", "float32",
    "l1_load_f32(addr): the float32 at the core's L1 address `addr`", "addr:int",
    kernel="any", engine="riscv", cpp="(*reinterpret_cast<volatile tt_l1_ptr float*>({0}))")
_op("dprint_newline", "dataflow", "int32",
    "dprint_newline(): a newline as a DPRINT field: the `{}` standing for a newline in a print's "
    "format (a format holds no newline: a StringImm holding one prints back as no TVMScript)",
    kernel="any", engine="riscv", cpp='"\\n"', props={"expression": True})
_op("dprint_bool", "dataflow", "int32",
    "dprint_bool(c): the word a DPRINT field shows for a condition (\"true\" / \"false\")",
    "c:cond", kernel="any", engine="riscv", cpp='(({0}) ? "true" : "false")')
_op("device_assert", "dataflow", "void",
    "device_assert(c, text): the SDK's device assert of condition c (api/debug/assert.h; checked "
    "when the watcher is on); `text` (the user's condition and message) is part of the asserted "
    "expression, so the watcher's report and the emulator's error show it",
    "c:cond text:str", kernel="reader", engine="riscv", cpp="ASSERT(({0}) && {1}, DebugAssertTripped)",
    header="api/debug/assert.h")
_op("l1_store_u32", "dataflow", "void",
    "l1_store_u32(addr, value): the 32-bit word at the core's L1 address `addr` = value (the "
    "RISC-V core's own store)", "addr:int value:int", kernel="any", engine="riscv",
    cpp="(*reinterpret_cast<volatile tt_l1_ptr uint32_t*>({0}) = {1})")
_op("l1_load_u32", "dataflow", "int32",
    "l1_load_u32(addr): the 32-bit word at the core's L1 address `addr` (the RISC-V core's own "
    "load)", "addr:int", kernel="any", engine="riscv",
    cpp="(*reinterpret_cast<volatile tt_l1_ptr uint32_t*>({0}))")
_op("as_signed", "dataflow", "int32",
    "as_signed(x): the integer x as a signed 32-bit value (kernels compute indices in uint32_t: "
    "the operands of comparisons that may be negative)", "x:int", kernel="any",
    engine="riscv", cpp="static_cast<int32_t>")
# an index value (an integer expression) written as a float element by the reader's RISC-V core,
# which has no float unit: integer arithmetic only
_INT_TO_FLOAT_BITS = (
    "([](int32_t v) -> uint32_t {{ if (v == 0) return 0u; "
    "uint32_t s = v < 0 ? 0x80000000u : 0u; "
    "uint32_t a = v < 0 ? 0u - static_cast<uint32_t>(v) : static_cast<uint32_t>(v); "
    "int32_t e = 31; while (!(a >> e)) --e; "
    "if (e <= 23) return s | (static_cast<uint32_t>(e + 127) << 23) | "
    "((a << (23 - e)) & 0x7FFFFFu); "
    "uint32_t sh = static_cast<uint32_t>(e - 23), m = a >> sh, rem = a & ((1u << sh) - 1u), "
    "half = 1u << (sh - 1u); "
    "if (rem > half || (rem == half && (m & 1u))) {{ if (++m == (1u << 24)) {{ m >>= 1; ++e; }} }} "
    "return s | (static_cast<uint32_t>(e + 127) << 23) | (m & 0x7FFFFFu); }})({0})")
_op("int_to_float_bits", "dataflow", "int32",
    "int_to_float_bits(x): the bits of the float32 nearest the signed 32-bit integer x (ties to "
    "even; exact below 2^24), in the RISC-V core's integer arithmetic (no float unit)", "x:int",
    kernel="any", engine="riscv", cpp=_INT_TO_FLOAT_BITS)
_op("int_to_bfloat16_bits", "dataflow", "int32",
    "int_to_bfloat16_bits(x): the bits of the bfloat16 nearest that float32 "
    "(int_to_float_bits(x) rounded to nearest even: exact below 2^8), in integer arithmetic",
    "x:int", kernel="any", engine="riscv",
    cpp="([](uint32_t b) -> uint32_t {{ return (b + 0x7FFFu + ((b >> 16) & 1u)) >> 16; }})("
        + _INT_TO_FLOAT_BITS + ")")
_op("int_to_float16_bits", "dataflow", "int32",
    "int_to_float16_bits(x): the bits of the float16 nearest that float32 "
    "(int_to_float_bits(x) rounded to nearest even: exact below 2^11, infinite from 65520), in "
    "integer arithmetic", "x:int", kernel="any", engine="riscv",
    cpp="([](uint32_t b) -> uint32_t {{ uint32_t s = (b >> 16) & 0x8000u; "
        "if ((b & 0x7FFFFFFFu) == 0u) return s; "
        "int32_t e = static_cast<int32_t>((b >> 23) & 0xFFu) - 112; "
        "if (e >= 31) return s | 0x7C00u; "
        "uint32_t m = b & 0x7FFFFFu, h = s | (static_cast<uint32_t>(e) << 10) | (m >> 13), "
        "rem = m & 0x1FFFu; "
        "if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h; return h; }})("
        + _INT_TO_FLOAT_BITS + ")")
# the reader's element reads and stores of a scalar program (LowerScalarProgramTT): one C++
# expression each, so they sit anywhere an expression does (a while loop's condition)
_op("scalar_read", "dataflow", "int32",
    "scalar_read(accessor, page, word, l1): DRAM page `page` of a scalar tensor read into the "
    "L1 scratch page at `l1` (read barrier), then its 32-bit word `word`",
    "accessor:accessor page:int word:int l1:int", kernel="reader", engine="noc",
    # page and word are the lambda's arguments: evaluated before the page moves (they may read
    # other elements through the same scratch page: A[Idx[0]])
    # (the word as int32_t, TIR's type of the call: signed comparisons of int32 elements)
    cpp="([&](uint32_t page, uint32_t word) -> int32_t {{ noc_async_read_page(page, {0}, {3}); "
        "noc_async_read_barrier(); return static_cast<int32_t>("
        "reinterpret_cast<volatile tt_l1_ptr uint32_t*>({3})[word]); }})({1}, {2})")
_op("scalar_write", "dataflow", "void",
    "scalar_write(accessor, page, word, l1, value): word `word` of DRAM page `page` of a scalar "
    "tensor = value, as a read-modify-write of the page through the L1 scratch page at `l1` "
    "(read, barrier, the word set, the page written back, write barrier)",
    "accessor:accessor page:int word:int l1:int value:int", kernel="reader", engine="noc",
    cpp="([&](uint32_t page, uint32_t word, uint32_t v) {{ "
        "noc_async_read_page(page, {0}, {3}); noc_async_read_barrier(); "
        "reinterpret_cast<volatile tt_l1_ptr uint32_t*>({3})[word] = v; "
        "noc_async_write_page(page, {0}, {3}); noc_async_write_barrier(); }})({1}, {2}, {4})")
_op("bits_to_float", "dataflow", "float32",
    "bits_to_float(w): the float32 whose bits are the 32-bit word w", "w:int", kernel="any",
    engine="riscv", cpp="__builtin_bit_cast(float, static_cast<uint32_t>({0}))")
for _name, _dt in (("bits_to_bfloat16", "bfloat16"), ("bits_to_float16", "float16")):
    _op(_name, "dataflow", _dt,
        f"{_name}(w): the {_dt} value whose float32 bits are the 32-bit word w (a {_dt} "
        "element the host wrote as a float32 word: exact; a scalar program holds it in a C++ "
        "float)", "w:int", kernel="any", engine="riscv",
        cpp="__builtin_bit_cast(float, static_cast<uint32_t>({0}))")
_op("float_to_bits", "dataflow", "int32",
    "float_to_bits(x): the bits of the float32 x as a 32-bit word", "x:expr", kernel="any",
    engine="riscv", cpp="__builtin_bit_cast(uint32_t, static_cast<float>({0}))")
_op("noc_async_read_barrier", "dataflow", "void", "wait for this kernel's NOC reads",
    kernel="reader", engine="noc", cpp="noc_async_read_barrier")
_op("noc_async_write_barrier", "dataflow", "void", "wait for this kernel's NOC writes "
    "(the writer's page writes; the reader's multicasts)",
    kernel="any", engine="noc", cpp="noc_async_write_barrier")

# --- multicast of a block read once for several cores (PlanMulticastTT, D3-) ------------------
# A semaphore is a word of every core's L1 (get_semaphore(id): its address); the group's sender
# reads the block, waits for its receivers' `ready`, multicasts the block into their CB and
# then its `valid` word; a receiver clears `valid`, increments the sender's `ready`, and waits
# for `valid` before it pushes (docs/PIPELINE.md "Multicast").
_op("mcast_read_to_cb", "abstract", "void",
    "mcast_read_to_cb(cb, tensor, row0, col0, rows, cols, group): read_to_cb whose block the "
    "cores of a multicast group (tt.mcast_plan group `group`) all need at the same step: the "
    "group's sender reads it from DRAM and multicasts it into the receivers' cb",
    "cb:cb.out tensor:tensor row0:int col0:int rows:imm cols:imm group:imm", kernel="reader",
    engine="noc")
_op("mcast_arg", "meta", "int32",
    "mcast_arg(group, field): the core's value of a multicast group's runtime field (0: this "
    "core is the sender, 1 / 2: the sender's NOC x / y, 3..6: the receivers' NOC rectangle "
    "x0, y0, x1, y1); LowerPersistentLoopTT makes it a runtime arg",
    "group:imm field:imm", kernel="reader")
_op("get_semaphore", "dataflow", "int32",
    "get_semaphore(id): L1 address of the program's semaphore `id` (CreateSemaphore) on this "
    "core", "id:imm", kernel="any", engine="riscv", cpp="get_semaphore")
_SEM_PTR = "reinterpret_cast<volatile tt_l1_ptr uint32_t*>({0})"
_op("noc_semaphore_wait", "dataflow", "void",
    "noc_semaphore_wait(sem, value): wait until this core's semaphore at `sem` holds `value`",
    "sem:int value:int", kernel="any", engine="riscv",
    cpp=f"noc_semaphore_wait({_SEM_PTR}, {{1}})")
_op("noc_semaphore_set", "dataflow", "void",
    "noc_semaphore_set(sem, value): this core's semaphore at `sem` = value",
    "sem:int value:int", kernel="any", engine="riscv",
    cpp=f"noc_semaphore_set({_SEM_PTR}, {{1}})")
_op("noc_semaphore_inc", "dataflow", "void",
    "noc_semaphore_inc(x, y, sem, incr): the semaphore at `sem` of the core at NOC (x, y) += "
    "incr", "x:int y:int sem:int incr:int", kernel="any", engine="noc",
    cpp="noc_semaphore_inc(get_noc_addr({0}, {1}, {2}), {3})")
_op("noc_async_write_multicast", "dataflow", "void",
    "noc_async_write_multicast(src, x0, y0, x1, y1, dst, bytes, num_dests): `bytes` of this "
    "core's L1 at `src` to `dst` of every core of the NOC rectangle (x0, y0)-(x1, y1) but this "
    "one (num_dests of them)",
    "src:int x0:int y0:int x1:int y1:int dst:int bytes:int num_dests:int", kernel="any",
    engine="noc",
    cpp="noc_async_write_multicast({0}, get_noc_multicast_addr({1}, {2}, {3}, {4}, {5}), {6}, "
        "{7})")
_op("noc_semaphore_set_multicast", "dataflow", "void",
    "noc_semaphore_set_multicast(src, x0, y0, x1, y1, dst, num_dests): the word at this core's "
    "`src` to the semaphore `dst` of every core of the rectangle but this one, after the "
    "core's earlier multicasts", "src:int x0:int y0:int x1:int y1:int dst:int num_dests:int",
    kernel="any", engine="noc",
    cpp="noc_semaphore_set_multicast({0}, get_noc_multicast_addr({1}, {2}, {3}, {4}, {5}), {6})")


# --- compute protocol (D4-) -----------------------------------------------------------------
def _compute(name, doc, header, operands="", **kw):
    _op(name, "compute", "void", doc, operands, kernel="compute", cpp=name,
        header=_COMPUTE + header, **kw)


def _reduce_template(pool, dim):
    return (f"<{'PoolType::MAX' if pool else 'PoolType::SUM'}, "
            f"{('ReduceDim::REDUCE_ROW', 'ReduceDim::REDUCE_COL')[dim]}>")


_compute("compute_kernel_hw_startup",
         "compute_kernel_hw_startup(icb0, icb1, ocb, reverse): one-time engine configuration; "
         "reverse=1 for matmul (in0 -> SrcB)", "compute_kernel_hw_startup.h",
         "icb0:cb icb1:cb ocb:cb reverse:imm", engine="config",
         template=lambda reverse: "<SrcOrder::Reverse>" if reverse else "", template_args=1)
_compute("matmul_init", "matmul_init(in0, in1, transpose)", "matmul.h",
         "in0:cb in1:cb transpose:imm", engine="math", sets="math")
_compute("matmul_tiles", "matmul_tiles(in0, in1, i0, i1, idst): DST[idst] += A @ B", "matmul.h",
         "in0:cb.in in1:cb.in i0:int i1:int idst:dst", engine="math", init="tt.matmul_init",
         dst="math")
for _a in ARITH.values():
    if _a.fpu_init:
        _compute(_a.fpu_init.removeprefix("tt."),
                 f"{_a.name}_init(icb0, icb1): configure the matrix engine for {_a.name}_tiles",
                 "eltwise_binary.h", "icb0:cb icb1:cb", engine="math", sets="math")
        _compute(_a.fpu_tiles.removeprefix("tt."), f"{_a.name}_tiles(icb0, icb1, i0, i1, idst)",
                 "eltwise_binary.h", "icb0:cb.in icb1:cb.in i0:int i1:int idst:dst",
                 engine="math", init=_a.fpu_init, dst="math")
    if _a.sfpu_init:
        _h = "binary_max_min.h" if _a.name in ("max", "min") else "eltwise_binary_sfpu.h"
        _compute(_a.sfpu_init.removeprefix("tt."), f"{_a.sfpu_init.removeprefix('tt.')}()",
                 _h, engine="sfpu", sets="sfpu")
        _compute(_a.sfpu_tile.removeprefix("tt."),
                 f"{_a.sfpu_tile.removeprefix('tt.')}(idst0, idst1, odst): SFPU {_a.name} of two "
                 "DST tiles", _h, "idst0:dst idst1:dst odst:dst", engine="sfpu",
                 init=_a.sfpu_init, dst="math")
    for _orient, _init in _a.bcast_init.items():
        _what = ("column 0 of B[i1] broadcast across the columns" if _orient == "col" else
                 "row 0 of B[i1] broadcast down the rows")
        _compute(_init.removeprefix("tt."), f"{_init.removeprefix('tt.')}(icb0, icb1)", "bcast.h",
                 "icb0:cb icb1:cb", engine="math", sets="math")
        _compute(_a.bcast_tiles[_orient].removeprefix("tt."),
                 f"{_a.bcast_tiles[_orient].removeprefix('tt.')}(icb0, icb1, i0, i1, idst): "
                 f"DST[idst] = A[i0] {_a.name} {_what}", "bcast.h",
                 "icb0:cb.in icb1:cb.in i0:int i1:int idst:dst", engine="math", init=_init,
                 dst="math")
def _bcast_template(bcast):
    return f"<BroadcastType::{('NONE', 'COL', 'ROW', 'SCALAR')[bcast]}>"


_compute("unary_bcast_init", "unary_bcast_init(icb, bcast): configure unary_bcast; bcast 1 = COL "
         "(column 0 across the columns), 2 = ROW (row 0 down the rows)", "bcast.h",
         "icb:cb bcast:imm", engine="math", sets="math", template=_bcast_template, template_args=1)
_compute("unary_bcast", "unary_bcast(icb, itile, idst, bcast): DST[idst] = tile itile of icb "
         "broadcast (through SrcB, or exactly for an UnpackToDestFp32 CB)", "bcast.h",
         "icb:cb.in itile:int idst:dst bcast:imm", engine="math", init="tt.unary_bcast_init",
         init_args=(("bcast", "bcast"),), dst="math", template=_bcast_template, template_args=1)
_compute("reduce_init", "reduce_init(icb, scaler_cb, ocb, pool, dim): pool 0 = SUM, 1 = MAX; "
         "dim 0 = REDUCE_ROW, 1 = REDUCE_COL", "reduce.h", "icb:cb scaler:cb ocb:cb pool:imm dim:imm",
         engine="math", sets="math", template=_reduce_template, template_args=2)
_compute("reduce_tile", "reduce_tile(icb, scaler_cb, itile, iscaler, idst, pool, dim)", "reduce.h",
         "icb:cb.in scaler:cb.in itile:int iscaler:int idst:dst pool:imm dim:imm",
         engine="math", init="tt.reduce_init", init_args=(("pool", "pool"), ("dim", "dim")),
         dst="math", template=_reduce_template, template_args=2)
_compute("reduce_uninit", "reduce_uninit(): restore the packer after a reduction", "reduce.h",
         engine="pack")


def _sfpu_reduce_template(pool, dim=None):
    what = f"<PoolType::{('SUM', 'AVG', 'MAX', 'MIN')[pool]}, DataFormat::Float32"
    return what + (">" if dim is None else
                   f", {('ReduceDim::REDUCE_ROW', 'ReduceDim::REDUCE_COL')[dim]}>")


_compute("sfpu_reduce_init", "sfpu_reduce_init(pool): configure the vector engine's reduction "
         "of Float32 DST tiles; pool 2 = MAX, 3 = MIN (PoolType)", "compute_kernel_api.h",
         "pool:imm", engine="sfpu", sets="sfpu", template=_sfpu_reduce_template, template_args=1)
_compute("sfpu_reduce",
         "sfpu_reduce(idst, ct, rt, pool, dim): the vector engine's exact max / min (SFPSWAP) of "
         "Float32 DST tiles; dim 0 = REDUCE_ROW: each row of the ct x rt block of tiles from idst "
         "(tile idst + i * ct + j) into column 0 of the row's first tile; dim 1 = REDUCE_COL (one "
         "tile, ct = rt = 1): each column into row 0; the rest of the block is clobbered",
         "compute_kernel_api.h", "idst:dst ct:int rt:int pool:imm dim:imm", engine="sfpu",
         init="tt.sfpu_reduce_init", init_args=(("pool", "pool"),), dst="math",
         template=_sfpu_reduce_template, template_args=2)
_compute("fill_tile_init", "fill_tile_init()", "eltwise_unary/fill.h", engine="sfpu", sets="sfpu")
_compute("fill_tile", "fill_tile(idst, value): every element of DST[idst] = value",
         "eltwise_unary/fill.h", "idst:dst value:float", engine="sfpu", init="tt.fill_tile_init",
         dst="math")
_compute("fill_tile_bitcast",
         "fill_tile_bitcast(idst, bits): every element of DST[idst] = the float32 `bits` (any "
         "value: kernels are built with finite math, so infinities cannot be float literals)",
         "eltwise_unary/fill.h", "idst:dst bits:bits", engine="sfpu", init="tt.fill_tile_init",
         dst="math")
_compute("binop_with_scalar_tile_init", "binop_with_scalar_tile_init()",
         "eltwise_unary/binop_with_scalar.h", engine="sfpu", sets="sfpu")
for _a in ARITH.values():
    _h = "compute_kernel_api.h" if _a.name in ("max", "min") else \
        "eltwise_unary/binop_with_scalar.h"
    if _a.scalar_init != "tt.binop_with_scalar_tile_init":
        _compute(_a.scalar_init.removeprefix("tt."), f"{_a.scalar_init.removeprefix('tt.')}()",
                 _h, engine="sfpu", sets="sfpu")
    _compute(_a.scalar_tile.removeprefix("tt."),
             f"{_a.scalar_tile.removeprefix('tt.')}(idst, bits): DST[idst] {_a.name} the float32 "
             "scalar `bits`" + (" (the SDK multiplies by `bits`: pass the divisor's reciprocal)"
                                if _a.name == "div" else ""),
             _h, "idst:dst bits:bits", engine="sfpu", init=_a.scalar_init, dst="math")
_compute("where_tile_init", "where_tile_init()", "eltwise_unary/where.h", engine="sfpu",
         sets="sfpu")
_compute("where_tile",
         "where_tile(icond, idst1, idst2, odst, fp32): DST[odst] = DST[idst1] where DST[icond] is "
         "not 0, else DST[idst2]; fp32 selects the data format (Float32 for a 32-bit DST, "
         "Float16_b for a 16-bit one)", "eltwise_unary/where.h",
         "icond:dst idst1:dst idst2:dst odst:dst fp32:imm", engine="sfpu", init="tt.where_tile_init",
         dst="math", template=lambda fp32: "<DataFormat::Float32>" if fp32 else
         "<DataFormat::Float16_b>", template_args=1)
for _fn in FUNCTIONS.values():
    _header = _fn.header.removeprefix(_COMPUTE)
    if _fn.init not in _SPECS:  # floor / ceil / trunc share theirs
        _compute(_fn.init.removeprefix("tt."),
                 f"{_fn.init.removeprefix('tt.')}(): configure the vector engine for "
                 f"{_fn.name}_tile", _header, engine="sfpu", sets="sfpu",
                 template=_FUNCTION_TEMPLATE.get(_fn.name))
    _extra = [name for name, _ in _FUNCTION_ARGS.get(_fn.name, ())]
    _compute(_fn.apply.removeprefix("tt."), f"{_fn.name}_tile(idst{''.join(', ' + n for n in _extra)}"
             f"): DST[idst] = {_fn.name}(DST[idst])", _header,
             " ".join(["idst:dst"] + [f"{n}:imm" for n in _extra]), engine="sfpu", init=_fn.init,
             dst="math", template=_FUNCTION_TEMPLATE.get(_fn.name))
_compute("cumsum_tile_init", "cumsum_tile_init(): configure the vector engine for cumsum_tile "
         "(the running totals in its registers are kept)", "cumsum.h", engine="sfpu", sets="sfpu")
_compute("cumsum_tile",
         "cumsum_tile(idst, first): every column of DST[idst] replaced by its running sum from "
         "the top, starting from the column totals the previous cumsum_tile left (first=0) or "
         "from zero (first=1); no other SFPU op may run between the calls of one column",
         "cumsum.h", "idst:dst first:imm", engine="sfpu", init="tt.cumsum_tile_init", dst="math")
_compute("reshuffle_rows_tile_init", "reshuffle_rows_tile_init()", "reshuffle.h",
         engine="sfpu", sets="sfpu")
_compute("reshuffle_rows_tile",
         "reshuffle_rows_tile(idst, idx_addr): row r of DST[idst] added into row idx[r] of "
         "DST[idst + 1] (idx: the 32 bytes at L1 address idx_addr + 16)", "reshuffle.h",
         "idst:dst idx_addr:int", engine="sfpu", init="tt.reshuffle_rows_tile_init", dst="math")
_op("get_tile_address", "compute", "uint32",
    "get_tile_address(cb, index): the L1 byte address of tile `index` from the front of cb "
    "(the same on the three compute threads)", "cb:cb index:int", kernel="compute",
    engine="cb", cpp="get_tile_address", header=_COMPUTE + "cb_api.h")
_op("read_tile_value", "compute", "int32",
    "read_tile_value(cb, tile, word): the 32-bit word `word` of tile `tile` from the front of "
    "cb (the same on the three compute threads)", "cb:cb.in tile:int word:int",
    kernel="compute", engine="cb", cpp="read_tile_value", header=_COMPUTE + "cb_api.h")
_compute("power_tile_init", "power_tile_init(): configure the vector engine for power_tile",
         "compute_kernel_api.h", engine="sfpu", sets="sfpu")
_compute("power_tile", "power_tile(idst, bits): DST[idst] = DST[idst] ** (the float32 `bits`)",
         "compute_kernel_api.h", "idst:dst bits:bits", engine="sfpu", init="tt.power_tile_init",
         dst="math")
_compute("atan2_binary_tile_init", "atan2_binary_tile_init()", "atan2.h", engine="sfpu",
         sets="sfpu")
_compute("atan2_binary_tile", "atan2_binary_tile(idst0, idst1, odst): DST[odst] = "
         "atan2(DST[idst0], DST[idst1]) (y, x)", "atan2.h", "idst0:dst idst1:dst odst:dst",
         engine="sfpu", init="tt.atan2_binary_tile_init", dst="math")
_compute("rpow_tile_init", "rpow_tile_init(): configure the vector engine for rpow_tile",
         "eltwise_unary/rpow.h", engine="sfpu", sets="sfpu")
_compute("rpow_tile", "rpow_tile(idst, bits): DST[idst] = (the float32 `bits`) ** DST[idst]",
         "eltwise_unary/rpow.h", "idst:dst bits:bits", engine="sfpu", init="tt.rpow_tile_init",
         dst="math")
_compute("power_binary_tile_init", "power_binary_tile_init()", "eltwise_binary_sfpu.h",
         engine="sfpu", sets="sfpu")
_compute("power_binary_tile", "power_binary_tile(idst0, idst1, odst): DST[odst] = DST[idst0] ** "
         "DST[idst1]", "eltwise_binary_sfpu.h", "idst0:dst idst1:dst odst:dst", engine="sfpu",
         init="tt.power_binary_tile_init", dst="math")
_compute("fmod_tile_init", "fmod_tile_init(bits, recip_bits): configure the vector engine for "
         "fmod_tile by the float32 `bits` (recip_bits: its reciprocal)", "eltwise_unary/fmod.h",
         "bits:bits recip_bits:bits", engine="sfpu", sets="sfpu")
_compute("fmod_tile", "fmod_tile(idst): DST[idst] = fmod(DST[idst], the init's divisor)",
         "eltwise_unary/fmod.h", "idst:dst", engine="sfpu", init="tt.fmod_tile_init", dst="math")
_compute("fmod_binary_tile_init", "fmod_binary_tile_init()", "binary_fmod.h", engine="sfpu",
         sets="sfpu")
_compute("fmod_binary_tile", "fmod_binary_tile(idst0, idst1, odst): DST[odst] = fmod(DST[idst0], "
         "DST[idst1])", "binary_fmod.h", "idst0:dst idst1:dst odst:dst", engine="sfpu",
         init="tt.fmod_binary_tile_init", dst="math")
_compute("copy_init", "copy_init(cb): configure unpack and math for copy_tile from cb",
         "tile_move_copy.h", "cb:cb", engine="unpack", sets="math")
_compute("copy_tile", "copy_tile(cb, itile, idst)", "tile_move_copy.h",
         "cb:cb.in itile:int idst:dst", engine="unpack", init="tt.copy_init", dst="math")
_compute("transpose_init",
         "transpose_init(icb): configure unpack and math for transpose_tile from icb",
         "transpose.h", "icb:cb", engine="unpack", sets="math")
_compute("transpose_tile",
         "transpose_tile(icb, itile, idst): DST[idst] = tile itile of icb transposed (B[w, h] = "
         "A[h, w]; a float32 CB unpacked straight to DST is transposed there, exactly)",
         "transpose.h", "icb:cb.in itile:int idst:dst", engine="unpack",
         init="tt.transpose_init", dst="math")
for _name in ("tile_regs_acquire", "tile_regs_commit", "tile_regs_wait", "tile_regs_release"):
    _compute(_name, f"{_name}()", "reg_api.h", engine="dst")
_compute("pack_tile",
         "pack_tile(idst, ocb, out_index, out_of_order): DST tile to position out_index of the "
         "reserved block (out_of_order=1: pack_tile<true>, any position)", "pack.h",
         "idst:dst ocb:cb.out out_index:int out_of_order:imm", engine="pack", dst="pack",
         template=lambda out_of_order: "<true>" if out_of_order else "", template_args=1)
_compute("pack_reconfig_data_format", "pack_reconfig_data_format(ocb)", "pack.h", "ocb:cb",
         engine="config")
_compute("pack_reconfig_l1_acc",
         "pack_reconfig_l1_acc(enable): later packs add to the L1 tile they pack into (1) or "
         "overwrite it (0)", "pack.h", "enable:imm", engine="config")
_compute("reconfig_data_format_srca", "reconfig_data_format_srca(cb)", "common.h", "cb:cb",
         engine="config")
_compute("reconfig_data_format_srcb", "reconfig_data_format_srcb(cb)", "common.h", "cb:cb",
         engine="config")


# --- queries --------------------------------------------------------------------------------
def spec(name: str) -> OpSpec:
    return _SPECS[name]


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
    """The ``tt.*`` op name of a Call (or TilePrimitiveCall), or None."""
    if isinstance(expr, (tvm.ir.Call, tvm.tirx.TilePrimitiveCall)) and \
            isinstance(expr.op, tvm.ir.Op):
        name = expr.op.name
        if name in _SPECS:
            return name
    return None


def stmt_op_name(stmt) -> str | None:
    """The ``tt.*`` op name of an ``Evaluate(call)`` statement, or None."""
    if isinstance(stmt, tvm.tirx.Evaluate):
        return tt_op_name(stmt.value)
    return None


def cb_reads(c) -> list[int]:
    """Argument positions of the CBs a call reads tiles from."""
    return _SPECS[c.op.name].positions(len(c.args), "cb.in")


def cb_writes(c) -> list[int]:
    """Argument positions of the CBs a call writes tiles to."""
    return _SPECS[c.op.name].positions(len(c.args), "cb.out")


def dst_operands(c) -> list[int]:
    """Argument positions of the DST tile indices of a call."""
    return _SPECS[c.op.name].positions(len(c.args), "dst")


class Args:
    """A call's arguments by operand name (``named(call).ntiles``); a variadic operand is the
    list of the remaining arguments."""

    def __init__(self, c):
        s = _SPECS[c.op.name]
        args = list(c.args)
        for i, o in enumerate(s.operands):
            last = s.variadic and i == len(s.operands) - 1
            setattr(self, o.name, args[i:] if last else args[i] if i < len(args) else None)


def named(c) -> Args:
    return Args(c)


# --- verification ---------------------------------------------------------------------------
def _is_int_expr(x) -> bool:
    return isinstance(x, tvm.ir.Expr) and str(x.ty).startswith(("int", "uint"))


def _check_kind(kind: str, x) -> bool:
    from tvm import tirx

    if kind in ("cb", "cb.in", "cb.out", "dst", "int"):
        return _is_int_expr(x)
    if kind == "imm":
        return isinstance(x, tirx.IntImm)
    if kind == "float":
        return isinstance(x, tirx.FloatImm)
    if kind == "bits":
        return isinstance(x, tirx.IntImm) and str(x.ty) == "uint32"
    if kind in ("acc", "tensor"):
        return isinstance(x, tvm.ir.Var) and tirx.is_buffer_var(x)
    if kind == "accessor":
        return isinstance(x, tvm.ir.Var) and not tirx.is_buffer_var(x)
    if kind == "expr":
        return isinstance(x, tvm.ir.Expr) and str(x.ty).startswith(("float", "bfloat"))
    if kind == "str":
        return isinstance(x, (str, tvm.ir.StringImm)) or type(x).__name__ == "String"
    if kind == "region":
        return isinstance(x, tvm.ir.TensorRegion)
    if kind == "cond":
        return isinstance(x, tvm.ir.Expr) and str(x.ty) == "bool"
    if kind == "value":
        return isinstance(x, tirx.FloatImm) or _is_int_expr(x)
    return False


def verify_call(c) -> list[str]:
    """Problems with the arity and operand kinds of a ``tt.*`` call (empty when it conforms)."""
    s = _SPECS[c.op.name]
    n, m = len(c.args), len(s.operands)
    if (n < m - 1 if s.variadic else n != m):
        want = f"at least {m - 1}" if s.variadic else str(m)
        return [f"{s.name} takes {want} arguments ({', '.join(o.name for o in s.operands)}), "
                f"got {n}"]
    problems = []
    for i, x in enumerate(c.args):
        o = s.operands[min(i, m - 1)]
        if not _check_kind(o.kind, x):
            problems.append(f"{s.name}: argument {i} ({o.name}) must be {KINDS[o.kind]}, got "
                            f"`{x}`")
    return problems


# --- registration ---------------------------------------------------------------------------
def tile_script_name(name: str) -> str:
    """``T.tile.<this>`` spells the tile primitive ``name`` in TVMScript (tt.tile.expr ->
    tt_expr)."""
    return "tt_" + name.removeprefix("tt.tile.")


def _register_all() -> None:
    register = tvm_ffi.get_global_func("ir.RegisterOp")
    # ops registered already (module re-import) are kept; asked once, not by a failing
    # Op.get per op (a TVM error costs about a millisecond: its C++ backtrace)
    known = {str(name) for name in tvm.ir.Op.list_op_names()}
    for s in _SPECS.values():
        if s.name in known:
            continue
        register(s.name, s.doc)
        tvm.ir.register_op_attr(s.name, "TCallEffectKind", 3)  # opaque
        if s.family == "tile":  # usable as the op of a tirx.TilePrimitiveCall
            tvm.ir.register_op_attr(s.name, "TIRxOpCategory", "tile_primitive")
            # TVMScript prints a tile primitive as T.tile.<printer name>
            tvm.ir.register_op_attr(s.name, "TScriptPrinterName", tile_script_name(s.name))
        else:
            tvm.ir.register_op_attr(s.name, "TScriptPrinterName", s.name)


_register_all()


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

    for s in _SPECS.values():
        if s.family != "tile":
            continue

        def build(*args, scope=None, _op=s.name, **_kwargs):
            # our tile ops carry no execution scope (as A0 builds them); an integer constant
            # operand (tile.cumsum's dim) is an int32 IntImm, printed as a bare number
            args = [tvm.tirx.IntImm("int32", a) if isinstance(a, int) and not isinstance(a, bool)
                    else a for a in args]
            return builder_ffi.TilePrimitiveCall(TilePrimitiveCall(*args, op=op(_op)))

        for namespace in (tile_ns, builder_tile_ns):  # T.tile in user code / in the parser
            setattr(namespace, tile_script_name(s.name), ScopedOp(build))


def register_script_namespace() -> None:
    import sys

    from tvm.tirx.script.builder import ir as builder_ir

    _register_tile_primitives()
    if getattr(builder_ir, "tt", None) is None:
        builder_ir.register_script_namespace("tt", _script_namespace())
    else:
        for module_name in ("tvm.tirx.script.builder", "tvm.tirx.script.parser",
                            "tvm.tirx.script", "tvm.script.tirx"):
            module = sys.modules.get(module_name)
            if module is not None and getattr(module, "tt", None) is None:
                setattr(module, "tt", builder_ir.tt)
    # The namespace walker re-registers printer names only for "tirx."-prefixed ops; ours are
    # set explicitly above, so nothing is lost.


register_script_namespace()
