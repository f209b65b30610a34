"""Elementwise expressions of ``T.Parallel`` bodies, recognised from their TIR structure.

One module owns the *expression tree* form shared by A0 (which builds trees), C2 (which
classifies them), D4 and D5 (which evaluate them in DST).  A tree is a float32 PrimExpr:

* ``tt.expr.load(k)`` - an element of operand ``k`` (a block buffer, ``copy_tile`` into a
  fresh DST slot);
* ``tt.expr.value(k)`` - an element of operand ``k``, a block of index values the reader
  computed: a ``load`` everywhere (``copy_tile``), except that it is never the block side of
  a matrix-engine broadcast (SrcA would keep its float32 as TF32), so a vector next to it is
  broadcast into a DST slot of its own;
* ``tt.expr.load_t(k)`` - an element of operand ``k`` read transposed: operand ``k`` holds the
  destination's block transposed (``[cols, rows]``), element ``(i, j)`` reads its ``(j, i)``
  (``transpose_tile`` of tile ``(c, r)`` into a fresh DST slot for destination tile ``(r, c)``);
* a float constant (only as an operand of ``+ - * /``, applied with the float's bits);
* ``tt.expr.load(k) op tt.expr.col(m)`` (``op`` in ``+ - *``, either order) - operand ``m`` is
  a column vector (a 1-D block buffer read as ``R[i]``) broadcast along the rows: the matrix
  engine's column broadcast, straight into a DST slot; ``tt.expr.row(m)`` is a row vector
  (``R[j]``) broadcast down the columns;
* ``tt.expr.col(m)`` / ``tt.expr.row(m)`` anywhere else - the vector broadcast into a DST slot
  of its own (``unary_bcast``, through SrcB like the broadcasts above); ``tt.expr.scalar(m)``
  (``s[0]`` of a ``[1]`` buffer) always so (``unary_bcast<SCALAR>``);
* ``a + b``, ``a - b``, ``a * b``, ``a / b`` of two trees;
* ``tt.expr.<fn>(x)`` - an SFPU function (``exp``, ``relu``, ... - :data:`ops.FUNCTIONS`).

``T.exp(A[i, j] + B[i, j]) * 0.5`` is ``tt.expr.exp(load(0) + load(1)) * 0.5``.  Trees run in
a float32 DST and round once, at the pack, so casts between float types inside an expression
are read through: bfloat16 arithmetic that TVMScript spells in float32
(``bf16(f(float32(a)))``) is exactly ``f(a)``, and intermediate roundings TVMScript's typing
would put in (``bf16(a - b)`` before ``exp``) are not made - the result is the more precise
one.  D5 evaluates a tree in post-order (:func:`postfix`), left operand first; A0 puts the
deeper side of ``+`` and ``*`` first so fewer DST slots are live at once.
"""

from __future__ import annotations

import math
import struct

import tvm
import tvm_ffi
from tvm import tirx

from ... import ops
from ..common import buffer_dtype, collect

UNARY_CALLS = {"tirx.exp": "exp", "tirx.log": "log", "tirx.sqrt": "sqrt", "tirx.rsqrt": "rsqrt",
               "tirx.sigmoid": "sigmoid", "tirx.tanh": "tanh", "tirx.fabs": "abs",
               "tirx.floor": "floor", "tirx.ceil": "ceil", "prim.ceil": "ceil",
               "tirx.trunc": "trunc", "tirx.round": "round", "tirx.nearbyint": "round",
               "tirx.sin": "sin", "tirx.cos": "cos", "tirx.tan": "tan", "tirx.atan": "atan",
               "tirx.sinh": "sinh", "tirx.cosh": "cosh", "tirx.erf": "erf", "tirx.asin": "asin",
               "tirx.acos": "acos", "tirx.asinh": "asinh", "tirx.acosh": "acosh",
               "tirx.atanh": "atanh", "tirx.log1p": "log1p"}
BINARY = {tirx.Add: "add", tirx.Sub: "sub", tirx.Mul: "mul", tirx.Div: "div", tirx.Max: "max",
          tirx.Min: "min"}
# comparisons a <op> b: the SFPU compares a - b with zero (ops.FUNCTIONS gtz ... nez)
COMPARISONS = {tirx.GT: "gtz", tirx.GE: "gez", tirx.LT: "ltz", tirx.LE: "lez", tirx.EQ: "eqz",
               tirx.NE: "nez"}
# functions computed from others: exp2(x) = exp(x ln 2), log2(x) = log(x) / ln 2,
# exp10(x) = exp(x ln 10), log10(x) = log(x) / ln 10
# x ** y and fmod(x, y) (y a constant or an expression): ops.POWER_OPS
POWER_CALLS = {"tirx.pow": "pow", "tirx.fmod": "fmod", "tirx.atan2": "atan2"}
DERIVED_CALLS = {"tirx.exp2": ("exp", 0.6931471805599453, None),
                 "prim.log2": ("log", None, 1.4426950408889634),
                 "tirx.log2": ("log", None, 1.4426950408889634),
                 "tirx.exp10": ("exp", 2.302585092994046, None),
                 "tirx.log10": ("log", None, 0.4342944819032518)}
_DERIVED_FOLDS = {"tirx.exp2": lambda x: 2.0 ** x, "prim.log2": math.log2,
                  "tirx.log2": math.log2, "tirx.exp10": lambda x: 10.0 ** x,
                  "tirx.log10": math.log10}
SUPPORTED = ("elementwise expressions of buffer elements, float constants and index values "
             "(integer expressions of indices, used as floats) built from +, -, "
             "*, /, T.exp, T.exp2, T.exp10, T.log, T.log2, T.log10, T.sqrt, T.rsqrt, T.sigmoid, "
             "T.tanh, T.abs, T.floor, T.ceil, T.trunc, T.round, T.nearbyint, T.sin, T.cos, T.tan, "
             "T.atan, T.sinh, T.cosh, T.asin, T.acos, T.asinh, T.acosh, T.atanh, T.erf, T.log1p, "
             "T.pow (of an expression or a constant and a constant or an "
             "expression), T.fmod (of an expression and a constant or an expression), "
             "T.atan2 (of two expressions), "
             "T.max / T.min (of two values), T.clamp, unary minus, and T.if_then_else (or `x if c "
             "else y`) whose condition compares such expressions (<, <=, >, >=, ==, !=); a 1-D buffer read as R[i] (possibly through those functions) only "
             "as a direct operand of +, -, * or / with a block element (A[i, j] - R[i])")


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
            return ops.FUNCTIONS[fn].fold(arg) if fn and arg is not None else None
        if type(expr) in BINARY:
            a, b = _const(expr.a), _const(expr.b)
            return ops.ARITH[BINARY[type(expr)]].fold(a, b) if None not in (a, b) else None
        if isinstance(expr, tvm.ir.Call) and isinstance(expr.op, tvm.ir.Op) and \
                expr.op.name in DERIVED_CALLS and len(expr.args) == 1:
            arg = _const(expr.args[0])
            return None if arg is None else _DERIVED_FOLDS[expr.op.name](arg)
    except (ValueError, ZeroDivisionError, OverflowError):
        return None
    return None


def constant_value(expr):
    """The float value of a constant expression (:func:`_const`), else None."""
    return _const(expr)


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
    """(fn, operand load) when ``value`` is an SFPU function of one load, else None (A0 makes
    it the tree ``fn(load(0))``)."""
    if isinstance(value, tvm.ir.Call) and isinstance(value.op, tvm.ir.Op):
        fn = UNARY_CALLS.get(value.op.name)
        operand = as_load(value.args[0], dtype) if fn and len(value.args) == 1 else None
        return (fn, operand) if operand is not None else None
    special = _special_unary(value)
    if special is not None:
        operand = as_load(special[1], dtype)
        return (special[0], operand) if operand is not None else None
    return None


# --- tree construction ------------------------------------------------------------------
def load(k: int):
    return ops.call("tt.expr.load", tirx.IntImm("int32", k))


def value_load(k: int):
    return ops.call("tt.expr.value", tirx.IntImm("int32", k))


def load_t(k: int):
    return ops.call("tt.expr.load_t", tirx.IntImm("int32", k))


def vector(k: int, orient: str):
    return ops.call(ops.VECTOR_OPS[orient], tirx.IntImm("int32", k))


def apply(fn: str, x):
    return ops.call(ops.FUNCTION_OPS[fn], x)


_INF = float("inf")
_FLT_MAX = 3.4028234663852886e38


def const(c: float):
    return tirx.FloatImm("float32", float(struct.unpack("<f", struct.pack("<f", c))[0]))


def _combine(op: str, a, b):
    return {"add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
            "div": lambda: a / b, "max": lambda: tirx.Max(a, b),
            "min": lambda: tirx.Min(a, b)}[op]()


def where(c, x, y):
    return ops.call("tt.expr.where", c, x, y)


class VectorOperand:
    """A column (or row) vector operand: the 1-D buffer element ``load``, or the elementwise
    expression ``tree`` of it alone (``load(0)`` is the vector; A0 materialises it once per
    block with a ``tt.tile.expr`` into a new 1-D fragment).  ``block`` marks a vector used
    where only a whole block can go (``(a - v) * w``'s ``w``) is read broadcast into a DST slot
    of its own (``tt.expr.col`` / ``row`` outside a matrix-engine broadcast)."""

    def __init__(self, load_, tree=None, orient="col"):
        self.load, self.tree, self.orient = load_, tree, orient

    def then(self, fn: str) -> "VectorOperand":
        """This vector with the SFPU function ``fn`` applied."""
        return VectorOperand(self.load, apply(fn, self.tree if self.tree is not None
                                              else load(0)), self.orient)

    def same(self, other) -> bool:
        return (isinstance(other, VectorOperand) and self.orient == other.orient
                and (self.tree is None) == (other.tree is None)
                and (self.tree is None or tvm_ffi.structural_equal(self.tree, other.tree))
                and tvm_ffi.structural_equal(self.load, other.load))


def index_term(e):
    """The integer expression of an *index value* ``e``, else None: ``e`` is an integer
    expression that reads no buffer element and is not a constant (a function of element and
    block indices, loop variables and bindings: ``bx * 32 + j``), or such an expression
    converted to a float type (``T.Cast("float32", j - i)``, what TVMScript makes of
    ``a + j`` for a float ``a``)."""
    inner = e.value if isinstance(e, tirx.Cast) and _is_float(e) else e
    if not str(getattr(inner, "ty", "")).startswith(("int", "uint", "bool")):
        return None
    if _const(inner) is not None or collect(inner, tvm.ir.TensorLoad) or \
            not collect(inner, tvm.ir.Var):
        return None
    return inner


def group_index_terms(value):
    """``value`` with the index values of each float sum (``a + (by * 32 + i) * 100 + bx * 32 +
    j``: three casts of integers) added as integers first, into one index value (``a +
    float((by * 32 + i) * 100 + bx * 32 + j)``): one block for the reader to compute instead of
    several.  Exact while the partial sums are integers a float32 holds exactly (below 2^24)."""
    def terms(e, sign, out):
        if isinstance(e, (tirx.Add, tirx.Sub)) and _is_float(e):
            terms(e.a, sign, out)
            terms(e.b, sign if isinstance(e, tirx.Add) else -sign, out)
        else:
            out.append((sign, e))
        return out

    def regroup(e):
        if not (isinstance(e, (tirx.Add, tirx.Sub)) and _is_float(e)):
            return e
        parts = terms(e, 1, [])
        index = [(s, index_term(t)) for s, t in parts if index_term(t) is not None]
        if len(index) < 2:
            return e
        rest = [(s, t) for s, t in parts if index_term(t) is None]
        total = None
        for s, t in index:
            t = t if str(t.ty) == "int32" else tirx.Cast("int32", t)
            if total is None:
                total = t if s > 0 else tirx.IntImm("int32", 0) - t
            else:
                total = total + t if s > 0 else total - t
        grouped = tirx.Cast(str(e.ty), total)
        first = bool(rest) and rest[0][0] > 0
        out = rest[0][1] if first else grouped
        for s, t in rest[1:] if first else rest:
            out = out + t if s > 0 else out - t
        return out + grouped if first else out

    return tvm_ffi.structural_map(value, [(tirx.Add, regroup), (tirx.Sub, regroup)],
                                  order="post")


def compile_expr(value, dtype, is_vector=None, is_transposed=None, index_mask=None,
                 index_value=None):
    """(tree, operands) of an elementwise expression, or None if it is not one.

    ``index_value(expr)``, when given, returns for an index value (:func:`index_term`: an
    integer expression of element and block indices used as data) the element load of a block
    of those values that A0 has the reader compute (``tt.tile.index_mask`` with the value);
    the tree reads it as any other operand.

    ``index_mask(cond)``, when given, returns for a condition of ``T.if_then_else`` that reads
    no buffer element (a function of element and block indices) the element load of a block of
    1.0 / 0.0 that A0 has the reader compute (``tt.tile.index_mask``); the condition's tree is
    then that operand itself (``where`` selects on non-zero).

    Operands are loads, or :class:`VectorOperand` for vectors (``is_vector(load)`` tells the
    1-D loads: "col" or "row").  Equal operands share one index.  A block load for which
    ``is_transposed(load)`` holds reads its block transposed (``load_t``); it never meets a
    vector in a broadcast (the matrix engine reads tiles as stored), so a vector next to it is
    broadcast into a whole block first.  A vector may be transformed
    by any elementwise expression of it alone (``s[i] * (1.0 / N) + eps``, ``T.exp(m[i])``)
    and must then meet a block element directly in ``+``, ``-``, ``*`` or ``/`` (``a / v`` is
    ``a * recip(v)``: one matrix-engine broadcast) or stand anywhere else as a block operand
    (broadcast into a DST slot of its own).
    """
    operands = []

    def operand(x):
        for k, seen in enumerate(operands):
            same = seen.same(x) if isinstance(seen, VectorOperand) else (
                not isinstance(x, VectorOperand) and tvm_ffi.structural_equal(seen, x))
            if same:
                return k
        operands.append(x)
        return len(operands) - 1

    def as_vector(e):
        """``e`` as a VectorOperand (an expression of one vector element), else None."""
        if is_vector is None:
            return None
        ld = as_load(e, dtype)
        if ld is not None:
            orient = is_vector(ld)
            return VectorOperand(ld, None, orient) if orient else None
        compiled = compile_expr(e, dtype)  # the vector read as a plain operand
        if compiled is None or len(compiled[1]) != 1 or not is_vector(compiled[1][0]):
            return None
        tree, (ld,) = compiled
        same = tvm_ffi.structural_equal(tree, load(0))  # only a dtype cast
        return VectorOperand(ld, None if same else tree, is_vector(ld))

    def transposed(ld) -> bool:
        return bool(is_transposed and is_transposed(ld))

    def block_load(e):
        """A straight block element (a broadcast's block side), else None."""
        ld = as_load(e, dtype)
        return ld if ld is not None and not (is_vector and is_vector(ld)) and \
            not transposed(ld) else None

    def broadcast(e):
        """``block op vector`` (either order) as one broadcast node, else None."""
        if type(e) not in BINARY or BINARY[type(e)] not in ops.BROADCAST_ARITH:
            return None
        op = BINARY[type(e)]
        la, lb = block_load(e.a), block_load(e.b)
        va, vb = as_vector(e.a), as_vector(e.b)
        if any(v is not None and v.orient == "scalar" for v in (va, vb)):
            return None  # a one-value operand is broadcast into a DST slot of its own
        if la is not None and vb is not None:
            if op == "div":
                vb, op = vb.then("recip"), "mul"
            return _combine(op, load(operand(la)), vector(operand(vb), vb.orient))
        if lb is not None and va is not None and op != "div":
            node = _combine(op, load(operand(lb)), vector(operand(va), va.orient))
            return apply("negative", node) if op == "sub" else node  # v - a = -(a - v)
        return None

    def side(x):
        """A tree for an operand position: a folded constant or a visited expression."""
        c = _const(x)
        return const(c) if c is not None else visit(x)

    def condition(cond):
        """The comparison tree (1.0 / 0.0) of a condition over elements, else None."""
        mask = index_mask(cond) if index_mask is not None else None
        if mask is not None:
            return load(operand(mask))
        if _is_logical(cond):  # a & b, a | b of conditions (1.0 / 0.0): a * b, max(a, b)
            parts = [condition(cond.a), condition(cond.b)]
            if any(p is None for p in parts):
                return None
            return parts[0] * parts[1] if isinstance(cond, (tirx.And, tirx.BitwiseAnd)) \
                else tirx.Max(parts[0], parts[1])
        if isinstance(cond, tirx.Not):
            inner = condition(cond.a)
            return None if inner is None else apply("eqz", inner)
        if type(cond) not in COMPARISONS:
            return None
        a, b = side(cond.a), side(cond.b)
        if a is None or b is None or all(isinstance(x, tirx.FloatImm) for x in (a, b)):
            return None
        infinite = _against_infinity(type(cond), a, b)
        if infinite is not None:
            return infinite
        return apply(COMPARISONS[type(cond)], a - b)

    def _against_infinity(kind, a, b):
        """``x <op> +-inf`` compared through the largest float32: ``x - (-inf)`` is NaN at
        ``x = -inf`` (flash attention's check ``scores_max == -inf`` would never hold), while
        ``x + FLT_MAX`` is negative exactly when ``x`` is -inf (NaN compares false)."""
        flip = {tirx.LT: tirx.GT, tirx.GT: tirx.LT, tirx.LE: tirx.GE, tirx.GE: tirx.LE}
        if isinstance(a, tirx.FloatImm) and not isinstance(b, tirx.FloatImm):
            a, b, kind = b, a, flip.get(kind, kind)
        if not isinstance(b, tirx.FloatImm) or float(b.value) not in (_INF, -_INF):
            return None
        if float(b.value) < 0:  # against -inf: shifted = x + FLT_MAX, < 0 only at -inf
            shifted = a - const(-_FLT_MAX)
            is_inf, beyond = apply("ltz", shifted), apply("gez", shifted)
            rule = {tirx.EQ: is_inf, tirx.LE: is_inf, tirx.GT: beyond,
                    tirx.NE: apply("eqz", is_inf), tirx.GE: tirx.Max(is_inf, beyond)}
        else:  # against +inf: shifted = x - FLT_MAX, > 0 only at +inf
            shifted = a - const(_FLT_MAX)
            is_inf, beyond = apply("gtz", shifted), apply("lez", shifted)
            rule = {tirx.EQ: is_inf, tirx.GE: is_inf, tirx.LT: beyond,
                    tirx.NE: apply("eqz", is_inf), tirx.LE: tirx.Max(is_inf, beyond)}
        return rule.get(kind)  # x < -inf, x > +inf: the plain form is right (never true)

    def select(cond, x, y):
        c = condition(cond)
        tx, ty = side(x), side(y)
        if c is None or tx is None or ty is None:
            return None
        return where(c, tx, ty)

    def power(fn, x, y):  # T.pow(x, y), T.fmod(x, y): y a constant or a tree; T.pow(c, y)
        base, c = visit(x), _const(y)
        cx = _const(x)
        if cx is not None and c is None and fn == "pow":  # c ** y: rpow_tile
            exponent = visit(y)
            if exponent is None or isinstance(exponent, tirx.FloatImm):
                return None
            return ops.call(ops.POWER_OPS[fn], const(cx), exponent)
        if base is None or isinstance(base, tirx.FloatImm):
            return None
        if c is not None and fn != "atan2":  # (atan2 takes two tiles only)
            return ops.call(ops.POWER_OPS[fn], base, const(c))
        exponent = visit(y)
        if exponent is None or isinstance(exponent, tirx.FloatImm):
            return None
        return ops.call(ops.POWER_OPS[fn], base, exponent)

    def visit(e):  # e's tree; None when e is not an elementwise expression
        ld = as_load(e, dtype)
        if ld is not None and not (is_vector and is_vector(ld)):
            return load_t(operand(ld)) if transposed(ld) else load(operand(ld))
        term = index_term(e) if index_value is not None else None
        if term is not None:
            return value_load(operand(index_value(term)))
        node = broadcast(e)
        if node is not None:
            return node
        vec = as_vector(e)
        if vec is not None:  # a vector anywhere else: broadcast into a DST slot of its own
            return vector(operand(vec), vec.orient)
        if isinstance(e, tirx.Cast) and _const(e) is None:
            return visit(e.value) if _is_float(e) and _is_float(e.value) else None
        if isinstance(e, tvm.ir.Call) and isinstance(e.op, tvm.ir.Op):
            if e.op.name in ("tirx.if_then_else", "prim.if_then_else") and len(e.args) == 3:
                return select(*e.args)
            if e.op.name in DERIVED_CALLS and len(e.args) == 1:
                fn, scale_in, scale_out = DERIVED_CALLS[e.op.name]
                inner = visit(e.args[0])
                if inner is None:
                    return None
                node = apply(fn, inner * const(scale_in) if scale_in else inner)
                return node * const(scale_out) if scale_out else node
            if e.op.name in POWER_CALLS and len(e.args) == 2:
                return power(POWER_CALLS[e.op.name], e.args[0], e.args[1])
            fn = UNARY_CALLS.get(e.op.name)
            inner = visit(e.args[0]) if fn is not None and len(e.args) == 1 else None
            return apply(fn, inner) if inner is not None else None
        if isinstance(e, tirx.Select):
            return select(e.condition, e.true_value, e.false_value)
        special = _special_unary(e)
        if special is not None:
            inner = visit(special[1])
            return apply(special[0], inner) if inner is not None else None
        if type(e) in BINARY:
            sides = []
            for side in (e.a, e.b):
                c = _const(side)
                sides.append(const(c) if c is not None else visit(side))
                if sides[-1] is None:
                    return None
            if all(isinstance(x, tirx.FloatImm) for x in sides):
                return None  # a constant: _const folds what it can
            op = BINARY[type(e)]
            if op in ("add", "mul") and tree_slots(sides[1]) > tree_slots(sides[0]):
                sides.reverse()  # the deeper side first: fewer DST slots at once
            return _combine(op, *sides)
        return None

    tree = visit(group_index_terms(value) if index_value is not None else value)
    if tree is None or not operands:
        return None
    return tree, operands


def _is_logical(e) -> bool:
    """``a and b`` / ``a or b`` of conditions (TileLang writes ``(c1) & (c2)``, a bitwise
    operation of two booleans)."""
    if isinstance(e, (tirx.And, tirx.Or)):
        return True
    return isinstance(e, (tirx.BitwiseAnd, tirx.BitwiseOr)) and \
        str(e.ty.dtype) == "bool" and all(str(x.ty.dtype) == "bool" for x in (e.a, e.b))


def _is_float(e) -> bool:
    return str(getattr(e, "ty", "")).startswith(("float", "bfloat"))


# --- tree queries -----------------------------------------------------------------------
def leaf(node):
    """("load" | "load_t" | "col" | "row", k) for a leaf, else None."""
    name = ops.tt_op_name(node)
    if name in ("tt.expr.load", "tt.expr.value"):  # (an index-value block reads as a load)
        return "load", int(node.args[0])
    if name == "tt.expr.load_t":
        return "load_t", int(node.args[0])
    for orient, op_name in ops.VECTOR_OPS.items():
        if name == op_name:
            return orient, int(node.args[0])
    return None


def function_of(node):
    """The SFPU function a ``tt.expr.<fn>`` node applies, else None."""
    name = ops.tt_op_name(node)
    return ops.spec(name).props.get("function") if name else None


def postfix(tree) -> list[tuple[str, object]]:
    """The tree in evaluation order, as (kind, value): ("load", k), ("load_t", k) (operand
    ``k`` read transposed), ("const", c),
    ("bcast", (op, k, m, "col" | "row")), ("binary", op), ("unary", fn), ("where", None)
    (pops condition, true and false value), ("load_bcast", (k, "col" | "row")) (a vector
    leaf that is not a direct operand of + - * next to a load: broadcast into a slot)."""
    out = []

    def visit(e):
        lf = leaf(e)
        if lf is not None:
            out.append(lf if lf[0] in ("load", "load_t") else ("load_bcast", (lf[1], lf[0])))
            return
        if isinstance(e, tirx.FloatImm):
            out.append(("const", float(e.value)))
            return
        fn = function_of(e)
        if fn is not None:
            visit(e.args[0])
            out.append(("unary", fn))
            return
        power = next((fn for fn, name in ops.POWER_OPS.items() if ops.tt_op_name(e) == name), None)
        if power is not None:
            visit(e.args[0])
            visit(e.args[1])
            out.append(("binary", power))
            return
        if ops.tt_op_name(e) == "tt.expr.where":
            for x in e.args:
                visit(x)
            out.append(("where", None))
            return
        op = BINARY.get(type(e))
        if op is None:
            raise ValueError(f"`{e}` is not an elementwise expression node")
        la, lb = leaf(e.a), leaf(e.b)
        # an index-value block is never a broadcast's block side (SrcA: TF32)
        la = None if ops.tt_op_name(e.a) == "tt.expr.value" else la
        lb = None if ops.tt_op_name(e.b) == "tt.expr.value" else lb
        vec = ("col", "row")
        if op in ops.ELTWISE_BINARY and la and lb and la[0] == "load" and lb[0] in vec:
            out.append(("bcast", (op, la[1], lb[1], lb[0])))
            return
        if op in ("add", "mul") and la and lb and lb[0] == "load" and la[0] in vec:
            out.append(("bcast", (op, lb[1], la[1], la[0])))
            return
        visit(e.a)
        visit(e.b)
        out.append(("binary", op))

    visit(tree)
    return out


def program_slots(tokens) -> int:
    """DST slots one tile of an expression needs (its deepest stack of tiles), from its
    :func:`postfix` form."""
    depth = deepest = 0
    stack = []
    for kind, _ in tokens:
        if kind in ("load", "load_t", "load_bcast", "bcast", "const"):
            stack.append("const" if kind == "const" else "load")
            depth += kind != "const"
        elif kind == "binary":
            rhs, lhs = stack.pop(), stack.pop()
            depth -= rhs == "load" and lhs == "load"
            stack.append("load")
        elif kind == "where":  # constant operands are filled into slots of their own first
            args = [stack.pop() for _ in range(3)]
            held = sum(a == "load" for a in args)
            deepest = max(deepest, depth + 3 - held)
            depth += 1 - held
            stack.append("load")
        deepest = max(deepest, depth)
    return deepest


def tree_slots(tree) -> int:
    """DST slots one tile of ``tree`` needs (0 for a constant)."""
    if isinstance(tree, tirx.FloatImm):
        return 0
    return program_slots(postfix(tree))


def is_copy(tree) -> bool:
    """The expression is operand 0 unchanged (a copy through DST, converting the dtype)."""
    return leaf(tree) == ("load", 0)


def is_single_function(tree) -> bool:
    """One SFPU function of operand 0, or a copy (transposed or not): no intermediate value to
    keep in fp32."""
    def moved(t):
        return leaf(t) in (("load", 0), ("load_t", 0))

    return moved(tree) or (function_of(tree) is not None and moved(tree.args[0]))


def transposed_operands(tree) -> list[int]:
    """Operands the tree reads transposed (``load_t``)."""
    return sorted({v for kind, v in postfix(tree) if kind == "load_t"})


def matrix_engine_operands(tree) -> list[int]:
    """Operands the matrix engine reads (through its source registers): both sides of every
    broadcast, and every vector broadcast into a slot (SrcB)."""
    found = set()
    for kind, v in postfix(tree):
        if kind == "bcast":
            found |= {v[1], v[2]}
        elif kind == "load_bcast":
            found.add(v[0])
    return sorted(found)


def vector_operands(tree) -> list[tuple[int, str]]:
    """(operand, "col" | "row" | "scalar") of every vector leaf."""
    return [(v[2], v[3]) if kind == "bcast" else v for kind, v in postfix(tree)
            if kind in ("bcast", "load_bcast")]


def float_bits(value: float) -> int:
    """The IEEE-754 float32 bit pattern of ``value`` (the SFPU scalar-argument encoding)."""
    return struct.unpack("<I", struct.pack("<f", value))[0]
