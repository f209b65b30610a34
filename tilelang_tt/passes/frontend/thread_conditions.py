"""A0.000 ResolveThreadConditionsTT: scalar code reading thread indices runs once per thread;
``if``s on the thread index that select whole tile operations are resolved; every other use of
a thread index is refused.

Requires: frontend TIR (runs first: A0.1 would turn an ``if`` around a ``T.Parallel`` nest
into a select inside it).

TileLang kernels read the CUDA thread index (``tx = T.get_thread_binding(0)``, parsed as the
one-element local ``tx`` stored once from ``tt.thread_index(dim, extent)``) to choose which
threads run a tile operation: ``if tx < 128: T.copy(A[...], A_s)``.  In TileLang a tile
operation under such a condition runs in full on the threads the condition admits (its loop
is partitioned over that thread range).  A Tensix block is one program without threads, so
here a tile operation under a condition of thread indices runs once when some thread index
in ``[0, extent)`` satisfies the condition, and not at all when none does.

Scalar code (a launch that A0.00.1 makes a scalar program: locals, loops, ``if``s, tensor
element reads and stores, no tile operation, no shared buffer) that reads thread indices
(``B[tx, 0] = T.Select(..., A[tx, 0], ...)``) is TileLang's SIMT code without communication
between threads: the launch's body runs once per thread index, in a serial loop per thread
dimension it reads (x innermost), the index the loop variable.  CUDA's threads run at once; in
thread order is one of the orders they may take, so a program whose threads do not read what
other threads write (without a barrier, which needs shared memory, not taken here) computes
what it computes on the GPU.

Guarantees: every ``if`` whose condition (thread-index scalars seen through to their values)
reads only ``tt.thread_index`` calls and constants, and whose arms hold only tile operations
(tile primitive calls, ``T.Parallel`` nests, serial loops and ``if``s of those, and
``T.print`` / ``T.device_assert``, which run once per block; no element store outside a
``T.Parallel`` nest, no allocation, no other call), is replaced by the arms
that some thread takes: the ``then`` arm when the condition holds for some thread, the
``else`` arm when it fails for some thread, both (``then`` first) when both happen, nothing
when no arm runs.  "Holds for every thread" / "for none" is proved with TVM's Analyzer over
the thread ranges; a condition it decides neither way is evaluated at each thread index
until one satisfies it (at most :data:`MAX_POINTS` points, else refused).  The thread-index
scalars nothing reads any more are removed.  Any other read of a thread index - an element
index, a stored or computed value, a loop bound, a condition mixing it with other values or
around element stores (``if tx < N: A[tx] = 1.0``), a warp id ``tx // 32`` used anywhere - is
a :class:`TTUnsupportedError` at the line of the use: SIMT per-thread work has no Tensix
counterpart.  Afterwards no ``tt.thread_index`` call is left.  Decided from the IR's
structure and the conditions' arithmetic only.
"""

from __future__ import annotations

import itertools

import tvm
from tvm import tirx
from tvm.sym import Analyzer

from ... import ops
from ...errors import TTUnsupportedError
from ..common import buffer_scope, collect, seq, substitute, tt_map, tt_pass

OP = "tt.thread_index"
MAX_POINTS = 1 << 16  # thread indices tried when the Analyzer decides neither way

_WHY = ("a Tensix block is one program per core (reader, compute and writer kernels over "
        "32x32 tiles): SIMT per-thread work has no counterpart; the only use of a thread "
        "index compiled is an `if` of thread indices and constants around whole tile "
        "operations (T.copy, T.Parallel nests, T.fill / T.clear, T.gemm, reductions), which "
        "runs them when some thread index satisfies it")


def _is_thread_call(e) -> bool:
    return isinstance(e, tvm.ir.Call) and ops.tt_op_name(e) == OP


def _thread_scalars(body) -> dict:
    """One-element local buffers stored once, from a value that reads a thread index
    (directly or through another such scalar): buffer -> its value, thread scalars inlined."""
    stores: dict = {}
    for st in collect(body, tirx.BufferStore):
        if buffer_scope(st.buffer) == "local" and \
                [int(d) for d in st.buffer.ty.shape] == [1]:
            stores.setdefault(st.buffer, []).append(st)
    out: dict = {}
    changed = True
    while changed:
        changed = False
        for buf, sts in stores.items():
            if buf in out or len(sts) != 1:
                continue
            value = _inline(sts[0].value, out)
            if collect(value, tvm.ir.Call, _is_thread_call):
                out[buf] = value
                changed = True
    return out


def _inline(expr, scalars: dict):
    """``expr`` with reads of the thread scalars replaced by their values."""
    if not scalars:
        return expr
    return tt_map(expr, [(tvm.ir.TensorLoad,
                          lambda ld: scalars.get(ld.source, ld))], order="post")


def _reads_thread(expr, scalars: dict) -> bool:
    return bool(collect(expr, tvm.ir.Call, _is_thread_call)
                or collect(expr, tvm.ir.TensorLoad, lambda ld: ld.source in scalars))


_ONCE_PER_BLOCK = ("tt.dprint", "tt.dprint_block", "tt.device_assert")


def _tile_only(stmt) -> bool:
    """``stmt`` holds only tile operations (module docstring)."""
    if isinstance(stmt, tirx.SeqStmt):
        return all(_tile_only(s) for s in stmt.seq)
    if isinstance(stmt, tirx.TilePrimitiveCall):
        return True
    if isinstance(stmt, tirx.Evaluate):
        # a no-op, or a print / device assert: once per block here, so `if tx == 0:
        # T.print(...)` prints the one line TileLang's thread 0 prints
        return isinstance(stmt.value, tirx.IntImm) or \
            ops.tt_op_name(stmt.value) in _ONCE_PER_BLOCK
    if isinstance(stmt, tirx.For):
        return stmt.kind == tirx.ForKind.PARALLEL or _tile_only(stmt.body)
    if isinstance(stmt, tirx.IfThenElse):
        return _tile_only(stmt.then_case) and (stmt.else_case is None
                                               or _tile_only(stmt.else_case))
    if isinstance(stmt, tirx.AttrStmt):
        return _tile_only(stmt.body)
    return False


def _thread_vars(expr_or_stmt):
    """(one fresh variable and the extent per thread dimension the thread-index calls in
    ``expr_or_stmt`` read, the same with those calls replaced by the variables)."""
    dims: dict = {}
    for c in collect(expr_or_stmt, tvm.ir.Call, _is_thread_call):
        dim, extent = int(c.args[0]), int(c.args[1])
        dims.setdefault(dim, (tirx.Var("t" + "xyz"[dim], "int32"), extent))
    plain = tt_map(expr_or_stmt, [(tvm.ir.Call, lambda c: dims[int(c.args[0])][0]
                                   if _is_thread_call(c) else c)], order="post")
    return dims, plain


def _thread_condition(cond):
    """``cond`` (thread scalars inlined) over fresh variables, one per thread dimension it
    reads, and their extents; None when it reads anything but thread indices and constants."""
    dims, plain = _thread_vars(cond)
    if not dims:
        return None
    if collect(plain, tvm.ir.TensorLoad) or collect(plain, tvm.ir.Call):
        return None
    free = tirx.analysis.undefined_vars(plain)
    ours = [v for v, _ in dims.values()]
    if any(not any(v.same_as(o) for o in ours) for v in free):
        return None
    return plain, list(dims.values())


def _satisfiable(cond, dims, span) -> bool:
    """Some thread index in the ranges satisfies ``cond``."""
    ana = Analyzer()
    for v, ext in dims:
        ana.bind(v, tvm.ir.Range.from_min_extent(tirx.IntImm("int32", 0), ext))
    if ana.can_prove(cond):
        return True
    if ana.can_prove(tirx.Not(cond)):
        return False
    points = 1
    for _, ext in dims:
        points *= ext
    if points > MAX_POINTS:
        raise TTUnsupportedError(
            f"cannot decide whether some thread index satisfies `{cond}` over {points} "
            f"thread indices; write the condition on one thread dimension", span=span)
    free = Analyzer()
    for values in itertools.product(*[range(ext) for _, ext in dims]):
        val = free.simplify(substitute(cond, {v: tirx.IntImm("int32", x)
                                              for (v, _), x in zip(dims, values)}))
        if isinstance(val, tirx.IntImm) and int(val) != 0:
            return True
    return False


def resolve_thread_conditions(body):
    """``body`` with its thread-index ``if``s resolved and its unused thread scalars removed
    (module docstring); raises at the first other use of a thread index."""
    if not collect(body, tvm.ir.Call, _is_thread_call):
        return body
    scalars = _thread_scalars(body)

    def resolve(stmt):
        if not _reads_thread(stmt.condition, scalars):
            return stmt
        found = _thread_condition(_inline(stmt.condition, scalars))
        if found is None or not _tile_only(stmt.then_case) or \
                (stmt.else_case is not None and not _tile_only(stmt.else_case)):
            return stmt  # refused below, at this `if`
        cond, dims = found
        arms = []
        if _satisfiable(cond, dims, stmt.span):
            arms.append(stmt.then_case)
        if stmt.else_case is not None and _satisfiable(tirx.Not(cond), dims, stmt.span):
            arms.append(stmt.else_case)
        return seq(arms)

    body = tt_map(body, [(tirx.IfThenElse, resolve)], order="post")

    # thread scalars nothing reads any more go (their allocation and their one store)
    while True:
        read = {ld.source for ld in collect(body, tvm.ir.TensorLoad)}
        unused = [b for b in scalars if b not in read and
                  collect(body, tirx.BufferStore, lambda s, b=b: s.buffer.same_as(b))]
        if not unused:
            break

        def drop(stmt, unused=unused):
            if isinstance(stmt, tirx.SeqStmt):
                kept = [s for s in stmt.seq if not (
                    isinstance(s, (tirx.BufferStore, tirx.AllocBuffer))
                    and any(s.buffer.same_as(b) for b in unused))]
                return seq(kept) if len(kept) != len(stmt.seq) else stmt
            return stmt

        body = tt_map(body, [(tirx.SeqStmt, drop)], order="post")
        if any(collect(body, tirx.BufferStore, lambda s, b=b: s.buffer.same_as(b))
               for b in unused):
            break  # a store not directly in a sequence: refused below
    _refuse_other_uses(body, scalars)
    return body


def _own_exprs(stmt) -> list:
    """The expressions a statement itself evaluates (not those of statements inside it)."""
    if isinstance(stmt, tirx.IfThenElse):
        return [stmt.condition]
    if isinstance(stmt, tirx.For):
        return [stmt.min, stmt.extent]
    if isinstance(stmt, tirx.BufferStore):
        return [stmt.value, *stmt.indices]
    if isinstance(stmt, (tirx.Bind, tirx.Evaluate, tirx.AttrStmt)):
        return [stmt.value]
    if isinstance(stmt, tirx.TilePrimitiveCall):
        return [stmt]
    return []


def _name(expr, scalars) -> str:
    loads = collect(expr, tvm.ir.TensorLoad, lambda ld: ld.source in scalars)
    if loads:
        return f"the thread index `{loads[0].source.name}`"
    return "T.get_thread_binding"


def _refuse_other_uses(body, scalars) -> None:
    """Raise at the first statement, in program order, that reads a thread index other than
    as the definition of a thread scalar."""
    for stmt in collect(body, tirx.Stmt):
        if isinstance(stmt, tirx.BufferStore) and stmt.buffer in scalars:
            continue  # a thread scalar's definition: its reads are what is refused
        for expr in _own_exprs(stmt):
            if not _reads_thread(expr, scalars):
                continue
            what = _name(expr, scalars)
            if isinstance(stmt, tirx.IfThenElse):
                if _thread_condition(_inline(stmt.condition, scalars)) is None:
                    use = (f"an `if` whose condition reads {what} together with values "
                           f"that are not thread indices or constants")
                else:
                    use = (f"an `if` on {what} around statements that are not whole tile "
                           f"operations (element stores, scalar or other per-thread work)")
            elif isinstance(stmt, tirx.BufferStore):
                use = f"{what} in an element index or a stored value"
            elif isinstance(stmt, tirx.For):
                use = f"{what} in a loop bound"
            elif isinstance(stmt, tirx.TilePrimitiveCall):
                use = f"{what} in the region or an operand of a tile operation"
            else:
                use = f"{what} in a computed value"
            raise TTUnsupportedError(f"{use}: {_WHY}", span=stmt.span)
    for stmt in collect(body, tirx.Stmt):  # a definition left (one not in a plain sequence)
        if any(collect(e, tvm.ir.Call, _is_thread_call) for e in _own_exprs(stmt)):
            raise TTUnsupportedError(f"{_name(stmt.value, scalars)} where it is defined: "
                                     f"{_WHY}", span=stmt.span)


def thread_loops(func):
    """``func`` with its launch's scalar code run once per thread (module docstring), or None
    when the launch is not scalar code reading thread indices."""
    from .scalar_program import _launch, is_scalar_program  # noqa: PLC0415 (A0.00.1's test)
    outer, body = _launch(func.body)
    dims, body = _thread_vars(body)
    if not outer or not dims:
        return None
    for dim in sorted(dims):  # x innermost: the threads in their linear order
        var, extent = dims[dim]
        body = tirx.For(var, tirx.IntImm("int32", 0), tirx.IntImm("int32", extent),
                        tirx.ForKind.SERIAL, body)
    for a in reversed(outer):
        body = tirx.AttrStmt(a.node, a.attr_key, a.value, body, a.span)
    out = func.with_body(body)
    return out if is_scalar_program(out) else None


@tt_pass("ResolveThreadConditionsTT")
def ResolveThreadConditionsTT(func, mod, ctx):
    """Scalar code reading thread indices -> one run per thread; ``if``s of thread indices
    around tile operations -> the arms some thread takes; other uses of a thread index refused
    (see module docstring)."""
    looped = thread_loops(func)
    if looped is not None:
        return looped
    return func.with_body(resolve_thread_conditions(func.body))
