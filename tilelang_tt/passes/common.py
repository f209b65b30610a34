"""Helpers shared by the pipeline stages: pass construction, attribute access, IR queries.

All traversal goes through TVM's own ``tvm_ffi.structural_walk`` / ``structural_map``.
"""

from __future__ import annotations

import functools

import tvm
import tvm_ffi
from tvm import tirx
from tvm.sym import Analyzer

from .. import attrs, ops
from ..ops import stmt_op_name  # noqa: F401  (re-exported for the passes)
from ..errors import TTCompileError, TTVerifyError

TILE = 32


# --------------------------------------------------------------------------------------------
# pass construction
# --------------------------------------------------------------------------------------------
STAGE_LOG = attrs.STAGE_LOG
_PENDING_ERROR: list[TTCompileError] = []


def stage_log(func) -> list:
    return list(func.attrs[STAGE_LOG]) if func.attrs is not None and STAGE_LOG in func.attrs else []


def check_stage(func, name: str, requires) -> None:
    log = stage_log(func)
    missing = [r for r in requires if r not in log]
    if missing:
        raise TTVerifyError(
            f"{name} requires {', '.join(missing)} to have run first (ran: {log or 'none'})")


def record_stage(func, name: str):
    return func.with_attr(STAGE_LOG, stage_log(func) + [name]).with_attr(attrs.STAGE, name)


def _guard(fn):
    """``tvm.transform`` turns Python exceptions into RuntimeError; keep ours for run_pass."""

    @functools.wraps(fn)
    def guarded(*args):
        try:
            return fn(*args)
        except TTCompileError as err:
            _PENDING_ERROR.append(err)
            raise

    return guarded


def tt_pass(name: str, *, requires: tuple[str, ...] = (), scalar_programs: bool = False):
    """Make ``fn(func, mod, ctx) -> func`` a ``tvm.transform.Pass`` named ``name``.

    The pass checks that the stages it ``requires`` ran first (recorded in ``tt.stage_log``)
    and records itself.  A scalar program (``tt.scalar_program``: A0.00.1 ScalarProgramTT, a
    launch of scalar code the reader runs) is returned unchanged by a pass without
    ``scalar_programs`` (one about tiles, blocks or CBs, with nothing to do on it); the stage
    is still recorded.
    """

    def decorate(fn):
        def run(func, mod, ctx):
            check_stage(func, name, requires)
            if not scalar_programs and get_attr(func, attrs.SCALAR_PROGRAM) is not None:
                return record_stage(func, name)
            return record_stage(fn(func, mod, ctx), name)

        p = tirx.transform.prim_func_pass(_guard(run), opt_level=0, name=name)
        p.__doc__ = fn.__doc__
        return p

    return decorate


def tt_module_pass(name: str):
    """Make ``fn(mod, ctx) -> mod`` a module-level ``tvm.transform.Pass`` named ``name``."""

    def decorate(fn):
        p = tvm.transform.module_pass(_guard(fn), opt_level=0, name=name)
        p.__doc__ = fn.__doc__
        return p

    return decorate


def run_pass(p, mod: tvm.IRModule) -> tvm.IRModule:
    """Apply a pass, re-raising our own errors instead of TVM's wrapped ones."""
    _PENDING_ERROR.clear()
    try:
        return p(mod)
    except TTCompileError:
        raise
    except Exception:
        if _PENDING_ERROR:
            err = _PENDING_ERROR[-1]
            _PENDING_ERROR.clear()
            raise err from None
        raise


# --------------------------------------------------------------------------------------------
# attributes
# --------------------------------------------------------------------------------------------
def get_attr(func: tirx.PrimFunc, key: str, default=None):
    if func.attrs is None or key not in func.attrs:
        return default
    return func.attrs[key]


def param_index(func: tirx.PrimFunc, buf) -> int:
    """Position of the tensor parameter ``buf`` in ``func.params``."""
    for i, p in enumerate(func.params):
        if p.same_as(buf):
            return i
    raise TTVerifyError(f"{buf.name} is not a parameter of the kernel")


def layout_of(func: tirx.PrimFunc, buf) -> dict:
    """The ``tt.layout_desc`` entry of tensor parameter ``buf``."""
    return to_py(require_attr(func, attrs.LAYOUT_DESC, "layout"))[param_index(func, buf)]


def require_attr(func: tirx.PrimFunc, key: str, stage: str):
    value = get_attr(func, key)
    if value is None:
        raise TTVerifyError(f"{stage}: missing function attribute {key!r}")
    return value


def to_py(value):
    """Convert FFI containers (Map, Array, IntImm, String) into plain Python values."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, tvm.tirx.IntImm):
        return int(value.value)
    if isinstance(value, tvm.tirx.FloatImm):
        return float(value.value)
    if isinstance(value, tvm.ir.Var):
        return value
    if hasattr(value, "items"):
        return {(k if isinstance(k, tvm.ir.Var) else str(k)): to_py(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or type(value).__name__ == "Array":
        return [to_py(v) for v in value]
    return value


# --------------------------------------------------------------------------------------------
# IR queries
# --------------------------------------------------------------------------------------------
def walk(node, node_type, fn):
    """Call ``fn`` on every node of ``node_type`` under ``node`` (pre-order)."""
    tvm_ffi.structural_walk(node, (node_type, fn), order="pre")


def collect(node, node_type, pred=None) -> list:
    found = []

    def visit(n):
        if pred is None or pred(n):
            found.append(n)

    walk(node, node_type, visit)
    return found


BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")


def launch_attrs(body) -> list:
    """The ``thread_extent`` AttrStmts of the kernel launch, in nesting order."""
    return [a for a in collect(body, tirx.AttrStmt) if str(a.attr_key) == "thread_extent"]


def uses_var(expr, var) -> bool:
    """``var`` occurs in ``expr``."""
    return any(v.same_as(var) for v in collect(expr, tvm.ir.Var))


_NEGATED = {tirx.LT: tirx.GE, tirx.GE: tirx.LT, tirx.LE: tirx.GT, tirx.GT: tirx.LE,
            tirx.EQ: tirx.NE, tirx.NE: tirx.EQ}


def negate_condition(cond):
    """``not cond`` as a comparison (De Morgan over and / or), which the analyzer's
    constraints understand (it does not look inside ``Not``)."""
    if type(cond) in _NEGATED:
        return _NEGATED[type(cond)](cond.a, cond.b)
    if isinstance(cond, tirx.And):
        return tirx.Or(negate_condition(cond.a), negate_condition(cond.b))
    if isinstance(cond, tirx.Or):
        return tirx.And(negate_condition(cond.a), negate_condition(cond.b))
    if isinstance(cond, tirx.Not):
        return cond.a
    return tirx.Not(cond)


def int_or_none(expr):
    """The value of an integer literal, else None."""
    return int(expr.value) if isinstance(expr, tirx.IntImm) else None


def tt_calls(node, name: str | None = None) -> list:
    """All ``tt.*`` Call nodes (optionally of one op) under ``node``, in program order."""
    return collect(node, tvm.ir.Call,
                   lambda c: ops.tt_op_name(c) is not None and (name is None or c.op.name == name))


def substitute(node, mapping: dict):
    """Replace variables (by identity) in a statement or expression."""
    if not mapping:
        return node
    return tvm_ffi.structural_map(node, [(tvm.ir.Var, lambda v: mapping.get(v, v))], order="post")


def is_state_decl(value) -> bool:
    """``value`` declares a mutable scalar (``v = tt.state_var(name)``, A0.1): ``v`` is not
    its bound value after a ``tt.state_set``, so no pass may inline it."""
    return ops.tt_op_name(value) == "tt.state_var"


def state_vars(body) -> list:
    """The mutable scalars (variables bound to ``tt.state_var``) of ``body``."""
    return [b.var for b in collect(body, tirx.Bind) if is_state_decl(b.value)]


def _guarded(body, kinds, ifs: bool = True) -> list:
    """(node, conditions) for every node of ``kinds`` under ``body``: the conditions of the
    ``while`` loops and ``if`` arms it is in (an ``else`` arm's negated)."""
    out = []

    def visit(node, conds):
        if isinstance(node, kinds):
            out.append((node, conds))
        if isinstance(node, tirx.SeqStmt):
            for c in node.seq:
                visit(c, conds)
        elif isinstance(node, tirx.While):
            visit(node.body, conds + [node.condition])
        elif isinstance(node, tirx.IfThenElse):
            visit(node.then_case, conds + [node.condition] if ifs else conds)
            if node.else_case is not None:
                visit(node.else_case,
                      conds + [negate_condition(node.condition)] if ifs else conds)
        elif isinstance(node, (tirx.For, tirx.AttrStmt)):
            visit(node.body, conds)
        elif hasattr(node, "body") and isinstance(getattr(node, "body"), tirx.Stmt):
            visit(node.body, conds)

    visit(body, [])
    return out


def while_conditions(body, node) -> list:
    """The conditions of the ``while`` loops statement ``node`` is in."""
    for n, conds in _guarded(body, type(node), ifs=False):
        if n.same_as(node):
            return conds
    return []


def _int_range(var, lo: int, hi: int):
    dtype = str(var.ty.dtype)
    return tvm.ir.Range.from_min_extent(tirx.IntImm(dtype, lo), tirx.IntImm(dtype, hi - lo + 1))


def _finite(lo: int, hi: int) -> bool:
    lim = 1 << 31
    return -lim < lo <= hi < lim and hi - lo < lim


def bind_state_ranges(ana, body, binds: dict | None = None) -> None:
    """Bind every mutable scalar of ``body`` in ``ana`` to the hull of the values it takes:
    0 (its declaration's) and the values of its assignments, each under the conditions of the
    ``while`` loops and ``if`` arms around it (other variables in ``ana``'s ranges); iterated
    to a fixed point, at most 16 rounds (scalars still growing then are left unbound)."""
    svars = state_vars(body)
    if not svars:
        return
    if binds is None:
        binds = {b.var: b.value for b in collect(body, tirx.Bind)
                 if str(b.var.ty).startswith(("int", "uint", "bool")) and not tt_calls(b.value)}
    sets = [(ev, conds) for ev, conds in _guarded(body, tirx.Evaluate)
            if ops.tt_op_name(ev.value) == "tt.state_set"]
    ranges = {v: (0, 0) for v in svars}
    for _ in range(16):
        new = dict(ranges)
        scratch = Analyzer()
        for v, (lo, hi) in ranges.items():
            if _finite(lo, hi):
                scratch.bind(v, _int_range(v, lo, hi))
        for ev, conds in sets:
            var, value = ev.value.args
            value = inline_binds(value, binds)
            guard = tirx.const(True, "bool")
            for c in conds:
                guard = tirx.And(guard, inline_binds(c, binds))
            with scratch.constraint_scope(guard):
                for u in tirx.analysis.undefined_vars(value):
                    b = ana.const_int_bound(u)  # launch and loop ranges
                    if u not in ranges and _finite(b.min_value, b.max_value):
                        scratch.bind(u, _int_range(u, b.min_value, b.max_value),
                                     allow_override=True)
                b = scratch.const_int_bound(scratch.simplify(value))
            old = new[var]
            new[var] = (min(old[0], b.min_value), max(old[1], b.max_value))
        if new == ranges:
            break
        ranges = new
    else:
        return
    for v, (lo, hi) in ranges.items():
        if _finite(lo, hi):
            ana.bind(v, _int_range(v, lo, hi), allow_override=True)


def inline_binds(expr, binds: dict):
    """``expr`` with the variables of ``binds`` (var -> value, a kernel's ``Bind``s) replaced
    by their values, transitively (up to 32 levels); mutable scalars (:func:`is_state_decl`)
    stay names."""
    for _ in range(32):
        used = [v for v in tirx.analysis.undefined_vars(expr)
                if v in binds and not is_state_decl(binds[v])] \
            if isinstance(expr, tvm.ir.Expr) else []
        if not used:
            return expr
        expr = substitute(expr, {v: binds[v] for v in used})
    return expr


def data_loops(body, binds: dict | None = None) -> list:
    """The loops of ``body`` whose bounds read tensor elements (``for k in T.serial(Lens[bx])``,
    the kernel's integer bindings inlined; a loop bounded by another such loop's variable too):
    their variables take values known only when the kernel runs."""
    if binds is None:
        binds = {b.var: b.value for b in collect(body, tirx.Bind)
                 if str(b.var.ty).startswith(("int", "uint", "bool"))}
    out = []
    for lp in collect(body, tirx.For):  # outer loops first
        bounds = inline_binds(lp.min + lp.extent, binds)
        if collect(bounds, tvm.ir.TensorLoad) or reads_data(bounds, binds, out):
            out.append(lp)
    return out


def reads_data(expr, binds: dict, loops: list) -> bool:
    """``expr`` (integer bindings inlined) reads a tensor element or the variable of one of
    ``loops`` (:func:`data_loops`)."""
    expr = inline_binds(expr, binds)
    if collect(expr, tvm.ir.TensorLoad):
        return True
    used = tirx.analysis.undefined_vars(expr)
    return any(v.same_as(lp.loop_var) for v in used for lp in loops)


def seq(stmts) -> tirx.Stmt:
    """A statement from a list, flattening nested SeqStmts and dropping no-ops."""
    flat = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, tirx.SeqStmt):
            flat.extend(s.seq)
        elif isinstance(s, tirx.Evaluate) and isinstance(s.value, tvm.tirx.IntImm):
            continue
        else:
            flat.append(s)
    if not flat:
        return tirx.Evaluate(tirx.IntImm("int32", 0))
    if len(flat) == 1:
        return flat[0]
    return tirx.SeqStmt(flat)


def stmts_of(stmt) -> list:
    if isinstance(stmt, tirx.SeqStmt):
        return list(stmt.seq)
    return [stmt]


def buffer_scope(buf) -> str:
    return str(buf.scope())


def buffer_dtype(buf) -> str:
    return str(buf.ty.dtype)


def buffer_shape(buf) -> list:
    return [int(s) if isinstance(s, tvm.tirx.IntImm) else s for s in buf.ty.shape]


def region_text(region) -> str:
    """``B[lo:hi, ...]`` of a buffer region, for messages."""
    return f"{region.source.name}[" + ", ".join(
        f"{r.min}:{r.min + r.extent}" for r in region.region) + "]"


def tile_dst_buffer(call: tirx.TilePrimitiveCall):
    """The buffer a tile primitive writes (its first operand)."""
    return call.args[0].source


def gemm_accumulators(body) -> list:
    """The buffers some ``tile.gemm`` accumulates into (its first operand)."""
    return [tile_dst_buffer(c) for c in collect(body, tirx.TilePrimitiveCall)
            if c.op.name == "tirx.tile.gemm"]


def block_tiles(buf) -> tuple[int, int]:
    """(rows, cols) in 32x32 tiles of a block buffer; leading dimensions fold into rows.  A 1-D
    buffer is a column vector: one tile per 32 rows, its values in column 0."""
    shape = buffer_shape(buf)
    if len(shape) == 1:
        return shape[0] // TILE, 1
    lead = 1
    for d in shape[:-2]:
        lead *= d
    return lead * shape[-2] // TILE, shape[-1] // TILE


def const_int(expr, what: str, span=None) -> int:
    """The value of a constant integer expression, or a clear error."""
    if isinstance(expr, int):
        return expr
    simplified = Analyzer().simplify(expr)
    if isinstance(simplified, tvm.tirx.IntImm):
        return int(simplified.value)
    raise TTCompileError(f"{what} must be a compile-time constant, got `{expr}`", span=span)


def with_span(stmt_or_none, fallback):
    span = getattr(stmt_or_none, "span", None)
    return span if span is not None else fallback


# tile element types and their TT-Metalium DataFormat (Float16 is IEEE half; Float16_b is bf16)
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
DATA_FORMAT = {"bfloat16": "Float16_b", "float16": "Float16", "float32": "Float32"}
# the circular buffers that carry a scalar tensor's words to the compute kernel (no tiles of
# data: one page of 32-bit words, passes/dataflow/scalar_reads.py)
WORD_DTYPE = "int32"
CB_DTYPE_BYTES = {**DTYPE_BYTES, WORD_DTYPE: 4}
CB_DATA_FORMAT = {**DATA_FORMAT, WORD_DTYPE: "Int32"}


def tile_bytes(dtype: str) -> int:
    return TILE * TILE * CB_DTYPE_BYTES[dtype]


def int_imm(v: int, dtype: str = "int32"):
    return tirx.IntImm(dtype, int(v))


def simplify(expr):
    return Analyzer().simplify(expr)


def fold_constant(expr):
    """The value of an expression of numeric constants (``+ - * /``, ``min`` / ``max``, casts)
    as an IntImm / FloatImm of its dtype, else None.  TVM's simplifier leaves infinities
    alone (``T.float16("inf") * T.float16(-1.0)``, TileLang's ``-T.infinity(dtype)``)."""
    ops_ = {tirx.Add: lambda a, b: a + b, tirx.Sub: lambda a, b: a - b,
            tirx.Mul: lambda a, b: a * b, tirx.Div: lambda a, b: a / b,
            tirx.Min: min, tirx.Max: max}

    def value(e):
        if isinstance(e, (tirx.IntImm, tirx.FloatImm)):
            return e.value
        if isinstance(e, tirx.Cast):
            v = value(e.value)
            return None if v is None else (float(v) if "float" in str(e.dtype) else int(v))
        fn = ops_.get(type(e))
        if fn is None:
            return None
        a, b = value(e.a), value(e.b)
        if a is None or b is None:
            return None
        try:
            return fn(a, b)
        except (ZeroDivisionError, OverflowError):
            return None

    v = value(expr)
    if v is None:
        return None
    dtype = str(expr.dtype)
    return tirx.FloatImm(dtype, float(v)) if "float" in dtype else tirx.IntImm(dtype, int(v))


def split_persistent(body):
    """(prologue statements, the ``tt.persistent_body`` AttrStmt) of a kernel body."""
    items = stmts_of(body)
    for i, s in enumerate(items):
        if isinstance(s, tirx.AttrStmt) and str(s.attr_key) == attrs.PERSISTENT_BODY:
            if i != len(items) - 1:
                raise TTVerifyError("statements after the persistent body")
            return items[:i], s
    raise TTVerifyError("kernel body has no tt.persistent_body marker (GridToCoreGrid not run?)")


def with_persistent(prologue, persistent, new_body=None):
    """Rebuild a kernel body from its prologue and persistent body (optionally replaced)."""
    if new_body is not None:
        persistent = tirx.AttrStmt(persistent.node, persistent.attr_key, persistent.value,
                                   new_body, persistent.span)
    return seq(list(prologue) + [persistent])


def loop_nest(extents: list, make_body, names=None):
    """Nested serial loops over ``extents`` (extent-1 loops folded to the constant 0).

    ``make_body(*indices)`` builds the innermost statement from the loop variables.
    """
    names = names or [f"i{k}" for k in range(len(extents))]
    idx = [tirx.Var(n, "int32") if e > 1 else int_imm(0) for n, e in zip(names, extents)]
    stmt = make_body(*idx)
    for var, ext in reversed(list(zip(idx, extents))):
        if ext > 1:
            stmt = tirx.For(var, int_imm(0), int_imm(ext), tirx.ForKind.SERIAL, stmt)
    return stmt


def tt_map(node, entries, order: str = "post"):
    """``tvm_ffi.structural_map`` that lets a :class:`TTCompileError` raised in a callback
    escape unchanged (the FFI boundary would otherwise turn it into a RuntimeError)."""
    raised: list[TTCompileError] = []

    def guard(fn):
        def inner(x):
            try:
                return fn(x)
            except TTCompileError as err:
                raised.append(err)
                raise

        return inner

    try:
        return tvm_ffi.structural_map(node, [(t, guard(f)) for t, f in entries], order=order)
    except Exception:
        if raised:
            raise raised[0] from None
        raise


def with_tile_span(call, span):
    """``call`` (a TilePrimitiveCall) carrying ``span``.

    TilePrimitiveCall has no span constructor argument and ``replace`` drops the span; TVM's
    IR builder attaches its current source span to a tile primitive it adds to a frame, which
    is how the parser gives user ops their source line.  Rebuilt or new tile ops keep the
    line of the statement they come from the same way, so errors can name it."""
    if span is None or call.span is not None and call.span.same_as(span):
        return call
    from tvm.script.ir_builder import IRBuilder
    from tvm.script.ir_builder import tirx as IB
    from tvm.tirx.script.builder import _ffi_api as builder_ffi

    push = tvm_ffi.get_global_func("script.ir_builder.IRBuilderPushSourceSpan")
    pop = tvm_ffi.get_global_func("script.ir_builder.IRBuilderPopSourceSpan")
    with IRBuilder() as ib:
        with IB.prim_func():
            IB.func_name("span_carrier")
            push(ib, span)
            builder_ffi.TilePrimitiveCall(call)
            pop(ib)
    return ib.get().body


def replace_tile_call(call, **changes):
    """``call.replace(**changes)`` keeping the call's source span."""
    return with_tile_span(call.replace(**changes), call.span)


def reduction_identity(kind: str, absolute: bool, dtype: str):
    """The value a ``T.reduce_*`` (tile op ``kind``; ``absolute`` for abssum / absmax) starts
    from: -inf for max, inf for min, 0 for sums and absolute maxima; for an integer dtype its
    smallest / largest value (an integer has no infinity)."""
    if dtype.startswith(("int", "uint")):
        bits = int(dtype.lstrip("uint") or 32)
        lo, hi = (0, 2 ** bits - 1) if dtype.startswith("uint") else (-2 ** (bits - 1),
                                                                        2 ** (bits - 1) - 1)
        if kind == "tirx.tile.max" and not absolute:
            return tirx.const(lo, dtype)
        return tirx.const(hi if kind == "tirx.tile.min" else 0, dtype)
    if kind == "tirx.tile.max" and not absolute:
        return tirx.const(float("-inf"), dtype)
    if kind == "tirx.tile.min":
        return tirx.const(float("inf"), dtype)
    return tirx.const(0.0, dtype)
