"""Elementwise expressions of ``T.Parallel`` bodies, recognised from their TIR structure.

One module owns the *expression program* format shared by A0 (which writes programs) and D5
(which evaluates them in DST).  A program is a postfix string of space-separated tokens:

* ``%k`` pushes operand ``k`` (a block buffer, ``copy_tile`` into a fresh DST slot);
* ``#c`` pushes the scalar constant ``c`` (only as an operand of ``add/sub/mul/div``);
* ``@op:k:m`` (``op`` in ``add/sub/mul``) pushes ``operand k op operand m`` where operand
  ``m`` is a column vector (a 1-D block buffer read as ``R[i]``) broadcast along the rows -
  the matrix engine's column broadcast; ``@op:k:m:row`` is the same with a row vector
  (``R[j]``) broadcast down the columns;
* ``add`` / ``sub`` / ``mul`` / ``div`` pop two entries and push the result;
* an SFPU function name (``exp``, ``relu``, ... - :data:`ops.SFPU_UNARY`) replaces the top.

``T.exp(A[i, j] + B[i, j]) * 0.5`` is ``%0 %1 add exp #0.5 mul``.  Programs run in a
float32 DST and round once, at the pack, so casts between float types inside an expression
are read through: bfloat16 arithmetic that TVMScript spells in float32
(``bf16(f(float32(a)))``) is exactly ``f(a)``, and intermediate roundings TVMScript's typing
would put in (``bf16(a - b)`` before ``exp``) are not made - the result is the more precise
one.
"""

from __future__ import annotations

import math
import struct

import tvm
import tvm_ffi
from tvm import tirx

from .. import ops
from .common import buffer_dtype

UNARY_CALLS = {"tirx.exp": "exp", "tirx.log": "log", "tirx.sqrt": "sqrt", "tirx.rsqrt": "rsqrt",
               "tirx.sigmoid": "sigmoid", "tirx.tanh": "tanh", "tirx.fabs": "abs"}
BINARY = {tirx.Add: "add", tirx.Sub: "sub", tirx.Mul: "mul", tirx.Div: "div"}
SUPPORTED = ("elementwise expressions of buffer elements and float constants built from +, -, "
             "*, /, T.exp, T.log, T.sqrt, T.rsqrt, T.sigmoid, T.tanh, T.abs, T.max(x, 0) "
             "and unary minus; a 1-D buffer read as R[i] (possibly through those functions) only "
             "as a direct operand of +, -, * or / with a block element (A[i, j] - R[i])")


_FOLD_UNARY = {
    "exp": math.exp, "log": math.log, "sqrt": math.sqrt, "rsqrt": lambda x: 1 / math.sqrt(x),
    "sigmoid": lambda x: 1 / (1 + math.exp(-x)), "tanh": math.tanh, "abs": abs,
    "relu": lambda x: max(x, 0.0), "negative": lambda x: -x, "recip": lambda x: 1 / x,
}
_FOLD_BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b,
                "mul": lambda a, b: a * b, "div": lambda a, b: a / b}


def _const(expr):
    """The value of a constant expression (literals, casts, and the supported functions and
    operators of constants - TVMScript leaves ``T.sqrt(3.0)`` unfolded), else None."""
    if isinstance(expr, tirx.Cast):
        return _const(expr.value)
    if isinstance(expr, (tirx.FloatImm, tirx.IntImm)):
        return float(expr.value)
    try:
        if isinstance(expr, tvm.ir.Call) and isinstance(expr.op, tvm.ir.Op) and len(expr.args) == 1:
            fn, arg = UNARY_CALLS.get(expr.op.name), _const(expr.args[0])
            return _FOLD_UNARY[fn](arg) if fn and arg is not None else None
        if type(expr) in BINARY:
            a, b = _const(expr.a), _const(expr.b)
            return _FOLD_BINARY[BINARY[type(expr)]](a, b) if None not in (a, b) else None
        if isinstance(expr, tirx.Max):
            a, b = _const(expr.a), _const(expr.b)
            return max(a, b) if None not in (a, b) else None
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return None


def as_load(expr, dtype):
    """``expr`` as a buffer element of ``dtype``: a load, or a load of ``dtype`` widened by a
    cast (TVMScript computes bfloat16 arithmetic in float32), else None."""
    if isinstance(expr, tirx.Cast):
        expr = expr.value
        if not isinstance(expr, tvm.ir.TensorLoad) or buffer_dtype(expr.source) != dtype:
            return None
    return expr if isinstance(expr, tvm.ir.TensorLoad) else None


def _special_unary(value):
    """(fn, operand expression) for ``max(x, 0)``, ``x * -1`` and ``1 / x``, else None."""
    a, b = getattr(value, "a", None), getattr(value, "b", None)
    if isinstance(value, tirx.Max):
        if _const(b) == 0.0 and _const(a) is None:
            return "relu", a
        if _const(a) == 0.0 and _const(b) is None:
            return "relu", b
    if isinstance(value, tirx.Mul):
        if _const(b) == -1.0 and _const(a) is None:
            return "negative", a
        if _const(a) == -1.0 and _const(b) is None:
            return "negative", b
    if isinstance(value, tirx.Div) and _const(a) == 1.0 and _const(b) is None:
        return "recip", b
    return None


def unary_form(value, dtype):
    """(fn, operand load) when ``value`` is an SFPU function of one load, else None."""
    if isinstance(value, tvm.ir.Call) and isinstance(value.op, tvm.ir.Op):
        fn = UNARY_CALLS.get(value.op.name)
        operand = as_load(value.args[0], dtype) if fn and len(value.args) == 1 else None
        return (fn, operand) if operand is not None else None
    special = _special_unary(value)
    if special is not None:
        operand = as_load(special[1], dtype)
        return (special[0], operand) if operand is not None else None
    return None


class VectorOperand:
    """A column vector operand: the 1-D buffer element ``load``, or the elementwise program
    ``program`` of it alone (``%0`` is the vector; A0 materialises it once per block with a
    ``tt.tile.expr`` into a new 1-D fragment).  ``block`` marks a vector used where only a
    whole block can go (``(a - v) * w``'s ``w``): A0 broadcasts it into a block first."""

    def __init__(self, load, program=None, orient="col"):
        self.load, self.program, self.orient = load, program, orient
        self.block = False  # True: used as a block operand, broadcast first

    def then(self, token: str) -> "VectorOperand":
        """This vector with one more postfix token applied."""
        return VectorOperand(self.load, f"{self.program or '%0'} {token}", self.orient)

    def same(self, other) -> bool:
        return (isinstance(other, VectorOperand) and self.program == other.program
                and self.block == other.block and self.orient == other.orient
                and tvm_ffi.structural_equal(self.load, other.load))


def compile_program(value, dtype, is_vector=None):
    """(program, operands) of an elementwise expression, or None if it is not one.

    Operands are loads, or :class:`VectorOperand` for column vectors (``is_vector(load)``
    tells the 1-D loads).  Equal operands share one index.  A vector may be transformed by
    any elementwise program of it alone (``s[i] * (1.0 / N) + eps``, ``T.exp(m[i])``) and must
    then meet a block element directly in ``+``, ``-``, ``*`` or ``/`` (``a / v`` is
    ``a * recip(v)``: one matrix-engine broadcast) or stand anywhere else as a block operand
    (``VectorOperand.block``).
    """
    operands, tokens = [], []

    def operand(x):
        for k, seen in enumerate(operands):
            same = seen.same(x) if isinstance(seen, VectorOperand) else (
                not isinstance(x, VectorOperand) and tvm_ffi.structural_equal(seen, x))
            if same:
                return k
        operands.append(x)
        return len(operands) - 1

    def vector(e):
        """``e`` as a VectorOperand (an expression of one column-vector element), else None."""
        if is_vector is None:
            return None
        load = as_load(e, dtype)
        if load is not None:
            orient = is_vector(load)
            return VectorOperand(load, None, orient) if orient else None
        compiled = compile_program(e, dtype)  # the vector read as a plain operand
        if compiled is None or len(compiled[1]) != 1 or not is_vector(compiled[1][0]):
            return None
        program = None if compiled[0] == "%0" else compiled[0]  # "%0": only a dtype cast
        return VectorOperand(compiled[1][0], program, is_vector(compiled[1][0]))

    def block_load(e):
        load = as_load(e, dtype)
        return load if load is not None and not (is_vector and is_vector(load)) else None

    def broadcast(e) -> bool:
        """``block op vector`` (either order) as one ``@`` token, else False."""
        if type(e) not in BINARY:
            return False
        op = BINARY[type(e)]
        la, lb = block_load(e.a), block_load(e.b)
        va, vb = vector(e.a), vector(e.b)
        if la is not None and vb is not None:
            if op == "div":
                vb, op = vb.then("recip"), "mul"
            tokens.append(f"@{op}:{operand(la)}:{operand(vb)}" + (":row" * (vb.orient == "row")))
            return True
        if lb is not None and va is not None and op != "div":
            tokens.append(f"@{op}:{operand(lb)}:{operand(va)}" + (":row" * (va.orient == "row")))
            if op == "sub":  # v - a = -(a - v)
                tokens.append("negative")
            return True
        return False

    def visit(e) -> bool:  # pushes e's tokens; False when e is not an elementwise expression
        load = as_load(e, dtype)
        if load is not None and not (is_vector and is_vector(load)):
            tokens.append(f"%{operand(load)}")
            return True
        if broadcast(e):
            return True
        vec = vector(e)
        if vec is not None:  # a vector anywhere else: broadcast into a whole block first
            vec.block = True
            tokens.append(f"%{operand(vec)}")
            return True
        if isinstance(e, tirx.Cast) and _const(e) is None:
            return _is_float(e) and _is_float(e.value) and visit(e.value)
        if isinstance(e, tvm.ir.Call) and isinstance(e.op, tvm.ir.Op):
            fn = UNARY_CALLS.get(e.op.name)
            if fn is None or len(e.args) != 1 or not visit(e.args[0]):
                return False
            tokens.append(fn)
            return True
        special = _special_unary(e)
        if special is not None:
            if not visit(special[1]):
                return False
            tokens.append(special[0])
            return True
        if type(e) in BINARY:
            sides = []
            for side in (e.a, e.b):
                c = _const(side)
                start = len(tokens)
                if c is not None:
                    tokens.append(f"#{c!r}")
                elif not visit(side):
                    return False
                sides.append(tokens[start:])
                del tokens[start:]
            if all(t[0].startswith("#") and len(t) == 1 for t in sides):
                return False  # a constant: _const folds what it can
            op = BINARY[type(e)]
            need = [program_slots(parse_program(" ".join(t))) for t in sides]
            if op in ("add", "mul") and need[1] > need[0]:
                sides.reverse()  # the deeper side first: fewer DST slots at once
            tokens.extend(sides[0] + sides[1] + [op])
            return True
        return False

    if not visit(value) or not operands:
        return None
    return " ".join(tokens), operands


def _is_float(e) -> bool:
    return str(getattr(e, "ty", "")).startswith(("float", "bfloat"))


def parse_program(program: str) -> list[tuple[str, object]]:
    """Tokens of a program as (kind, value): ("load", k), ("const", c), ("binary", op),
    ("unary", fn)."""
    out = []
    for tok in program.split():
        if tok.startswith("%"):
            out.append(("load", int(tok[1:])))
        elif tok.startswith("@"):
            op, k, m, *orient = tok[1:].split(":")
            out.append(("bcast", (op, int(k), int(m), orient[0] if orient else "col")))
        elif tok.startswith("#"):
            out.append(("const", float(tok[1:])))
        elif tok in BINARY.values():
            out.append(("binary", tok))
        elif tok in ops.SFPU_UNARY:
            out.append(("unary", tok))
        else:
            raise ValueError(f"bad expression program token {tok!r} in {program!r}")
    return out


def program_slots(tokens) -> int:
    """DST slots one tile of a parsed program needs (its deepest stack of tiles)."""
    depth = deepest = 0
    stack = []
    for kind, _ in tokens:
        if kind in ("load", "bcast", "const"):
            stack.append("const" if kind == "const" else "load")
            depth += kind != "const"
        elif kind == "binary":
            rhs, lhs = stack.pop(), stack.pop()
            depth -= rhs == "load" and lhs == "load"
            stack.append("load")
        deepest = max(deepest, depth)
    return deepest


def float_bits(value: float) -> int:
    """The IEEE-754 float32 bit pattern of ``value`` (the SFPU scalar-argument encoding)."""
    return struct.unpack("<I", struct.pack("<f", value))[0]
