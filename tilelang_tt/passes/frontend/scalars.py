"""A0.1 ScalarsToBindTT: scalar assignments become bindings.

Requires: frontend TIR.

TVMScript parses a Python-level assignment in a kernel (``y = by * 32 + i``,
``start_y = by * block_M``) as a one-element local buffer plus one store.  Guarantees: every
such buffer stored exactly once (and not read by its own store) is a ``Bind`` of a scalar
variable instead, so index arithmetic stays plain expressions later passes can see through;
a serial loop of constant extent (at most :data:`UNROLL_LIMIT` iterations) whose body only
binds names and assigns integer ones (TileLang's grouped GEMM: ``for i in range(batch_count):
cur = T.if_then_else(m >= offsets[i], i, cur)``) is unrolled first
(:func:`unroll_scalar_loops`); a scalar assigned several times in straight-line code (``s =
T.alloc_var(...)``, ``s = 2.0``, ``s += 1.0``) becomes one ``Bind`` per assignment; an int32
scalar assigned inside a loop or a branch whose values read no buffer element but such scalars
is mutable state (:func:`replicate_state_scalars`: ``v = tt.state_var(name)``,
``tt.state_set(v, value)``, reads ``v``; every kernel that reads it keeps its own copy); a
float scalar assigned inside a loop or a branch whose every read is in a ``T.Parallel`` body or
in the value of such a scalar's assignment is a one-element block buffer (``float_state.py``:
its assignments ``T.Parallel(1)`` nests, computed on the compute kernel); any other scalar
assigned inside a loop or a branch is a TTUnsupportedError naming it; other local buffers are
left for VerifyTileProgramTT to reject.  A floating-point binding
whose value reads no buffer and no variable (``inv_D = T.float32(1.0) / T.Cast("float32",
D)``, a constant written in TIR) is substituted into its uses and dropped, so expressions
that use it see a constant (elementwise expressions fold it); so is an integer binding whose
value reads elements of tensor parameters the kernel never writes (``i_s =
BlockIndices[b, t, h, i] * BS``; a bool one too): its uses read the element.  An element read
of a tensor parameter at an index chosen by a select (the grouped GEMM's
``batch_sizes[cur]``, ``cur`` a chain of selects) is a select of element reads at the choices
(:func:`distribute_element_selects`): no element read is indexed by another.

Integer selects are normalised (:func:`normalise_index_selects`, from the IR's structure):
``T.if_then_else(c, a, b)`` of integer or boolean values reading no buffer element is
``Select(c, a, b)``; a comparison with such a select on a side (seen through names bound to
one) is ``(c and a OP k) or (not c and b OP k)``, folded; nested selects sharing a value are
one select of the conjoined conditions; an ``if`` of index arithmetic whose two arms are the
same tile primitives but for the starts of tensor regions is one primitive from the chosen
start; an ``if`` of index arithmetic around one ``T.Parallel`` store nest (no ``else``, or an
``else`` filling the whole destination) is the nest storing ``T.if_then_else(c, v, old)``.
Guarantees: no integer ``T.if_then_else`` call reading no buffer element is left.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ... import ops
from ...errors import TTUnsupportedError
from .float_state import float_state_to_blocks
from ..common import (buffer_scope, collect, replace_tile_call, seq, substitute, tt_map,
                      tt_pass, uses_var)


def _is_scalar_local(buf) -> bool:
    return buffer_scope(buf) == "local" and [int(d) for d in buf.ty.shape] == [1]


def _loads_of(node, buf) -> int:
    return len(collect(node, tvm.ir.TensorLoad, lambda ld: ld.source.same_as(buf)))


def _replace_loads(node, buf, var):
    return tt_map(node, [(tvm.ir.TensorLoad,
                          lambda ld: var if ld.source.same_as(buf) else ld)], order="post")


def straight_line_scalars(body):
    """A scalar assigned several times in one statement sequence and nowhere else (``s =
    T.alloc_var(T.float32)``, ``s = 2.0``, ``s += 1.0``; no assignment inside a loop or a
    branch) becomes one ``Bind`` per assignment, each read seeing the latest; a scalar read
    before its first assignment or outside that sequence is left for later stages to reject.
    """
    stores = {}
    for st in collect(body, tirx.BufferStore):
        if _is_scalar_local(st.buffer):
            stores.setdefault(st.buffer, []).append(st)
    several = {b: len(sts) for b, sts in stores.items()
               if len(sts) > 1 or _loads_of(sts[0].value, b)}
    total = {b: _loads_of(body, b) for b in several}
    done = set()

    def rewrite(s):
        children, changed = list(s.seq), False
        for buf, n_stores in several.items():
            at = [k for k, c in enumerate(children)
                  if isinstance(c, tirx.BufferStore) and c.buffer.same_as(buf)]
            if buf in done or len(at) != n_stores or \
                    any(_loads_of(c, buf) for c in children[:at[0]]) or \
                    sum(_loads_of(c, buf) for c in children) != total[buf]:
                continue
            current, out = None, []
            for k, c in enumerate(children):
                if k in at:
                    value = c.value if current is None else _replace_loads(c.value, buf, current)
                    current = tirx.Var(buf.name, str(buf.ty.dtype))
                    out.append(tirx.Bind(current, value, c.span))
                else:
                    out.append(c if current is None else _replace_loads(c, buf, current))
            children, changed = out, True
            done.add(buf)
        return tirx.SeqStmt(children) if changed else s

    if not several:
        return body
    body = tt_map(body, [(tirx.SeqStmt, rewrite)], order="post")
    if not done:
        return body
    body = tt_map(body, [(tirx.AllocBuffer, lambda a: tirx.Evaluate(tirx.IntImm("int32", 0))
                          if a.buffer in done else a)], order="post")
    return tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")


# the most iterations a loop that only assigns scalars is unrolled over (A0.1)
UNROLL_LIMIT = 64


def _scalar_only_body(stmt) -> bool:
    """``stmt`` holds only bindings, stores to one-element integer local buffers and such
    loops of constant extent (no tile primitive, no tensor store, no branch), and at least one
    store.  (A float carried across iterations is a one-element block: ``float_state.py``.)"""
    items = _stmts(stmt)
    stores = 0
    for s in items:
        if isinstance(s, tirx.Bind) or (
                isinstance(s, tirx.AllocBuffer) and _is_scalar_local(s.buffer)):
            continue
        if isinstance(s, tirx.BufferStore) and _is_scalar_local(s.buffer) and \
                str(s.buffer.dtype).startswith(("int", "uint", "bool")):
            stores += 1
            continue
        if isinstance(s, tirx.For) and _unrollable(s):
            stores += 1
            continue
        return False
    return stores > 0


def _unrollable(loop) -> bool:
    return loop.kind in (tirx.ForKind.SERIAL, tirx.ForKind.UNROLLED) and \
        isinstance(loop.min, tirx.IntImm) and isinstance(loop.extent, tirx.IntImm) and \
        0 <= int(loop.extent.value) <= UNROLL_LIMIT and \
        not (getattr(loop, "step", None) is not None and not (
            isinstance(loop.step, tirx.IntImm) and int(loop.step.value) == 1)) and \
        _scalar_only_body(loop.body)


def _unroll_iteration(body, mapping):
    """The statements of one iteration of a scalar-only loop body, the loop variable (and the
    body's bindings) substituted: bindings are inlined into the statements after them, so an
    iteration is only stores (and inner loops, unrolled the same way)."""
    out, mapping, local, values = [], dict(mapping), [], {}

    def inline(node):
        node = substitute(node, mapping)
        return tt_map(node, [(tvm.ir.TensorLoad, lambda ld: next(
            (v for b, v in values.items() if ld.source.same_as(b)), ld))], order="post")

    for s in _stmts(body):
        if isinstance(s, tirx.Bind):
            mapping[s.var] = inline(s.value)
        elif isinstance(s, tirx.AllocBuffer):
            local.append(s.buffer)  # a name bound in the body (`inb = m >= offsets[i]`)
        elif isinstance(s, tirx.BufferStore) and any(s.buffer.same_as(b) for b in local):
            values[s.buffer] = inline(s.value)
        elif isinstance(s, tirx.For):
            for k in range(int(s.extent.value)):
                inner = {**mapping, s.loop_var: tirx.const(int(s.min.value) + k,
                                                           str(s.loop_var.ty))}
                out += [inline(x) for x in _unroll_iteration(s.body, inner)]
        else:
            out.append(inline(s))
    return out


def unroll_scalar_loops(body):
    """A serial loop of constant extent (at most :data:`UNROLL_LIMIT` iterations) whose body
    only binds names and assigns one-element integer local buffers (TileLang's grouped GEMM: ``for i
    in range(batch_count): cur = T.if_then_else(m >= offsets[i], i, cur)``) -> its
    iterations one after another, the loop variable a constant in each and the body's
    bindings inlined, so the scalar is assigned in straight-line code (a chain of ``Bind``s,
    :func:`straight_line_scalars`)."""
    def unroll(loop):
        if not _unrollable(loop):
            return loop
        stmts = []
        for k in range(int(loop.extent.value)):
            stmts += _unroll_iteration(loop.body, {loop.loop_var: tirx.const(
                int(loop.min.value) + k, str(loop.loop_var.ty))})
        return seq(stmts) if stmts else tirx.Evaluate(tirx.IntImm("int32", 0))

    body = tt_map(body, [(tirx.For, unroll)], order="post")
    return tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")


def _fold_equal_selects(e):
    parts = _select_parts(e)
    if parts is not None and tvm_ffi.structural_equal(parts[1], parts[2]):
        return parts[1]
    return e


def distribute_element_selects(body, func):
    """An element read of a tensor parameter at an index chosen by a select that reads
    elements, ``T[.., T.if_then_else(c, a, b), ..]`` (the grouped GEMM's ``batch_sizes[cur]``,
    ``cur`` a chain of selects on other elements), -> ``T.if_then_else(c, T[.., a, ..], T[..,
    b, ..])``, repeatedly, so no element read is indexed by an element read: each element the
    kernel reads is at an index of block indices, loop variables and constants
    (``analysis/scalar_reads.py``).  Names bound to integer constants are seen through and
    selects of two equal values folded (in such indices and in the starts of tensor regions
    that read elements)."""
    params = [p for p in func.params if tirx.is_buffer_var(p)]
    # names bound to integer constants (a scalar's first assignment, `cur = 0`) seen through
    consts = {b.var: b.value for b in collect(body, tirx.Bind)
              if _integer(b.var) and isinstance(b.value, tirx.IntImm)}
    folds = [(tvm.ir.Call, _fold_equal_selects), (tirx.Select, _fold_equal_selects)]

    def fold(e):
        return tt_map(substitute(e, consts), folds, order="post")

    def split(ld):
        if not any(ld.source.same_as(p) for p in params) or \
                not any(collect(ix, tvm.ir.TensorLoad) for ix in ld.indices):
            return ld
        idx = [fold(ix) for ix in ld.indices]
        for k, ix in enumerate(idx):
            parts = _select_parts(ix)
            if parts is None or not collect(ix, tvm.ir.TensorLoad):
                continue  # a select of index arithmetic alone stays an index
            c, a, b = parts
            yes, no = (split(ld.source[tuple(idx[:k] + [v] + idx[k + 1:])])
                       for v in (a, b))
            return _fold_equal_selects(tirx.if_then_else(c, yes, no))
        return ld

    body = tt_map(body, [(tvm.ir.TensorLoad, split)], order="post")
    # selects whose conditions read elements (the grouped GEMM's batch index in a block's
    # start) see through the constants too
    return tt_map(body, [(tvm.ir.TensorRegion, lambda r: tvm.ir.TensorRegion(
        r.source, [tvm.ir.Range.from_min_extent(fold(x.min), x.extent) for x in r.region],
        r.ty) if any(collect(x.min, tvm.ir.TensorLoad) for x in r.region) else r)] + folds,
        order="post")


def _reads_in_scope(body, store) -> bool:
    """Every read of ``store``'s buffer comes after it in the statement sequence holding it
    (where a ``Bind`` in its place is in scope), none when nothing holds it in a sequence
    (the body of a loop or a branch arm)."""
    total = _loads_of(body, store.buffer)
    for s in collect(body, tirx.SeqStmt):
        for k, c in enumerate(s.seq):
            if c.same_as(store):
                return sum(_loads_of(x, store.buffer) for x in s.seq[k + 1:]) == total
    return total == 0


def _bindable(body, store) -> bool:
    """``store`` is its buffer's only store, does not read the buffer, and every read of the
    buffer is where a ``Bind`` in its place is in scope (:func:`scalars_to_binds`)."""
    return _loads_of(store.value, store.buffer) == 0 and _reads_in_scope(body, store)


def scalars_to_binds(body):
    """``y = expr`` parses as a 1-element local buffer plus one store: make it ``Bind(y, expr)``.

    Only buffers stored exactly once (and not read by their own store), and read only where
    the binding is in scope, are rewritten; any other use of local buffers is left for later
    stages to reject (a store in a loop read after it: ``refuse_carried_scalars``).
    """
    stores = {}
    for st in collect(body, tirx.BufferStore):
        if _is_scalar_local(st.buffer):
            stores.setdefault(st.buffer, []).append(st)
    single = {}
    for buf, sts in stores.items():
        reads_self = any(ld.source.same_as(buf) for ld in collect(sts[0].value, tvm.ir.TensorLoad))
        if len(sts) == 1 and not reads_self and _reads_in_scope(body, sts[0]):
            single[buf] = tirx.Var(buf.name, str(buf.ty.dtype))
    if not single:
        return body

    def rewrite(node):
        if isinstance(node, tirx.AllocBuffer) and node.buffer in single:
            return tirx.Evaluate(tirx.IntImm("int32", 0))
        if isinstance(node, tirx.BufferStore) and node.buffer in single:
            return tirx.Bind(single[node.buffer], node.value, node.span)
        if isinstance(node, tvm.ir.TensorLoad) and node.source in single:
            return single[node.source]
        return node

    body = tt_map(
        body, [((tirx.AllocBuffer, tirx.BufferStore, tvm.ir.TensorLoad), rewrite)], order="post")
    return tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")


def _reads_nothing(expr) -> bool:
    return not collect(expr, tvm.ir.TensorLoad) and not collect(expr, tvm.ir.Var)


def _inline_binds(body, dtypes, wanted):
    """``body`` with the ``Bind``s of a variable whose dtype starts with one of ``dtypes`` and
    whose value (earlier such bindings substituted) satisfies ``wanted`` substituted into
    their uses and dropped."""
    values = {}
    for b in collect(body, tirx.Bind):  # program order: a value may use an earlier binding
        if str(b.var.ty).startswith(dtypes):
            value = substitute(b.value, values)
            if wanted(value):
                values[b.var] = value
    if not values:
        return body
    body = tt_map(body, [(tirx.Bind, lambda b: tirx.Evaluate(tirx.IntImm("int32", 0))
                          if b.var in values else b)], order="post")
    body = substitute(body, values)
    return tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")


def inline_float_constants(body):
    """Substitute floating-point ``Bind``s of constant expressions into their uses."""
    return _inline_binds(body, ("float", "bfloat"), _reads_nothing)


def inline_index_binds(body, block_vars):
    """Substitute integer ``Bind``s of index expressions that use a block index and read no
    buffer (``idx_i = bx * block_M + i``) into their uses, and drop them (A0.0 sees the
    tensor index ``bx * block_M + i`` where the kernel wrote ``idx_i``)."""
    return _inline_binds(body, ("int", "uint"), lambda value: (
        not collect(value, tvm.ir.TensorLoad) and any(uses_var(value, g) for g in block_vars)))


def inline_element_binds(func, body):
    """Substitute integer (and bool) ``Bind``s whose value reads elements of tensor parameters the kernel
    never writes (``i_s = BlockIndices[b, t, h, i] * BS``) into their uses, and drop them: the
    condition, the block offsets and the masks that use the name then read the element itself
    (``analysis/scalar_reads.py`` decides which such reads are supported).  The tensor is
    read-only, so the element has the same value at every use."""
    params = [p for p in func.params if tirx.is_buffer_var(p)]
    written = [st.buffer for st in collect(body, tirx.BufferStore)]
    for call in collect(body, tirx.TilePrimitiveCall):
        if call.args and isinstance(call.args[0], tvm.ir.TensorRegion):
            written.append(call.args[0].source)

    def read_only_param(buf):
        return any(buf.same_as(p) for p in params) and not any(buf.same_as(w) for w in written)

    def wanted(value):
        loads = collect(value, tvm.ir.TensorLoad)
        return bool(loads) and all(read_only_param(ld.source) for ld in loads)

    return _inline_binds(body, ("int", "uint", "bool"), wanted)


def state_scalars(body) -> set:
    """The int32 scalars (one-element local buffers) still assigned after the rewrites whose
    every assigned value reads no buffer element but of such scalars: constants, block
    indices, loop variables, bound names and the other state scalars.  Each kernel keeps its
    own copy and runs the same assignments (replicated state, docs/SUPPORT.md "Scalars
    carried across loops")."""
    stores = {}
    for st in collect(body, tirx.BufferStore):
        if _is_scalar_local(st.buffer):
            stores.setdefault(st.buffer, []).append(st)
    state = {b for b in stores if str(b.dtype) == "int32"}
    changed = True
    while changed:
        changed = False
        for b in list(state):
            if any(not any(ld.source.same_as(s) for s in state)
                   for st in stores[b] for ld in collect(st.value, tvm.ir.TensorLoad)):
                state.discard(b)
                changed = True
    return state


def refuse_carried_scalars(body, allowed=()) -> None:
    """A scalar still assigned after the rewrites is assigned inside a loop or a branch."""
    stores = [st for st in collect(body, tirx.BufferStore) if _is_scalar_local(st.buffer)
              and not any(st.buffer.same_as(b) for b in allowed)]
    if stores:  # name the last assignment: the one in the loop when there is one
        st = stores[-1]
        raise TTUnsupportedError(
            f"scalar {st.buffer.name} is assigned inside a loop or a branch (or read before "
            "its first assignment): a scalar value carried across loop iterations is not "
            "supported by the Tenstorrent backend", span=st.span,
            hint="compute it from loop variables, or keep per-row values in a 1-D fragment "
                 "updated with T.Parallel")


_COMPARISONS = (tirx.EQ, tirx.NE, tirx.LT, tirx.LE, tirx.GT, tirx.GE)


def _integer(e) -> bool:
    return str(getattr(e, "ty", "")).startswith(("int", "uint", "bool"))


def _bool(value: bool):
    return tirx.IntImm("bool", 1 if value else 0)


def _truth(e):
    """True / False for a constant condition, else None."""
    return bool(int(e.value)) if isinstance(e, tirx.IntImm) else None


def _and(a, b):
    ta, tb = _truth(a), _truth(b)
    if ta is False or tb is False:
        return _bool(False)
    return b if ta else a if tb else tirx.And(a, b)


def _or(a, b):
    ta, tb = _truth(a), _truth(b)
    if ta or tb:
        return _bool(True)
    return b if ta is False else a if tb is False else tirx.Or(a, b)


def _not(a):
    t = _truth(a)
    return _bool(not t) if t is not None else tirx.Not(a)


def _compare(kind, a, b):
    """``a <kind> b`` with a select on either side split over its condition, folded."""
    for side in (a, b):
        if isinstance(side, tirx.Select):
            c = side.condition
            pick = (lambda v: (v, b)) if side is a else (lambda v: (a, v))
            yes, no = (_compare(kind, *pick(v)) for v in (side.true_value, side.false_value))
            if tvm_ffi.structural_equal(yes, no):
                return yes
            return _or(_and(c, yes), _and(_not(c), no))
    if isinstance(a, tirx.IntImm) and isinstance(b, tirx.IntImm):
        ops_ = {tirx.EQ: int.__eq__, tirx.NE: int.__ne__, tirx.LT: int.__lt__,
                tirx.LE: int.__le__, tirx.GT: int.__gt__, tirx.GE: int.__ge__}
        return _bool(ops_[kind](int(a.value), int(b.value)))
    return kind(a, b)


def normalise_index_selects(body):
    """``T.if_then_else(c, a, b)`` of integer (or bool) values reading no buffer element ->
    ``Select(c, a, b)`` (index arithmetic: evaluating both sides is harmless), and a
    comparison with such a select on a side -> ``(c and a OP k) or (not c and b OP k)``,
    folded where the sides are constants (``T.if_then_else(q == k, 1, 0) > 0`` is ``q ==
    k``), so that a mask condition, loop extent or binding built from nested integer
    selects is plain index arithmetic (and / or / not of comparisons)."""
    def select(call):
        op = getattr(call, "op", None)
        if isinstance(op, tvm.ir.Op) and op.name in ("tirx.if_then_else", "prim.if_then_else") \
                and len(call.args) == 3 and _integer(call) and \
                not any(collect(a, tvm.ir.TensorLoad) for a in call.args):
            c, a, b = call.args
            if _truth(c) is not None:
                return a if _truth(c) else b
            return tirx.Select(c, a, b)
        return call

    body = tt_map(body, [(tvm.ir.Call, select)], order="post")
    bound = {}
    for b in collect(body, tirx.Bind):  # names bound to integer selects: seen through
        if _integer(b.var) and not collect(b.value, tvm.ir.TensorLoad):
            value = substitute(b.value, bound)
            if isinstance(value, tirx.Select):
                bound[b.var] = value

    def compare(e):
        a, b = (substitute(x, bound) if isinstance(x, tvm.ir.Var) and x in bound else x
                for x in (e.a, e.b))
        if (isinstance(a, tirx.Select) or isinstance(b, tirx.Select)) and \
                _integer(a) and _integer(b):
            return _compare(type(e), a, b)
        return e

    body = tt_map(body, [(k, compare) for k in _COMPARISONS], order="post")
    body = tt_map(body, [(tirx.IfThenElse, _merge_branch)], order="post")
    body = tt_map(body, [(tvm.ir.Call, _flatten_select), (tirx.Select, _flatten_select)],
                  order="post")
    return tt_map(body, [(tvm.ir.Call, select)], order="post")  # the branches' new selects


def _select_parts(e):
    """(c, x, y) of ``T.if_then_else(c, x, y)`` or ``Select(c, x, y)``, else None."""
    if isinstance(e, tirx.Select):
        return e.condition, e.true_value, e.false_value
    op = getattr(e, "op", None)
    if isinstance(e, tvm.ir.Call) and isinstance(op, tvm.ir.Op) and \
            op.name in ("tirx.if_then_else", "prim.if_then_else") and len(e.args) == 3:
        return tuple(e.args)
    return None


def _flatten_select(e):
    """A select of a select sharing a value -> one select of the conjoined conditions:
    ``ite(c, ite(a, x, y), y)`` = ``ite(c and a, x, y)``, ``ite(c, ite(a, x, y), x)`` =
    ``ite(not c or a, x, y)`` and the mirrored forms, so that a choice between two constants
    under nested conditions stays one choice (the reader writes it)."""
    parts = _select_parts(e)
    if parts is None:
        return e
    c, t, f = parts
    same = tvm_ffi.structural_equal
    make = tirx.Select if isinstance(e, tirx.Select) else tirx.if_then_else
    inner = _select_parts(t)
    if inner is not None:
        a, x, y = inner
        if same(f, y):
            return make(_and(c, a), x, y)
        if same(f, x):
            return make(_or(_not(c), a), x, y)
    inner = _select_parts(f)
    if inner is not None:
        a, x, y = inner
        if same(t, x):
            return make(_or(c, a), x, y)
        if same(t, y):
            return make(_and(_not(c), a), x, y)
    return e


def _parallel_store(stmt):
    """(loops, bindings, store) of a ``T.Parallel`` nest from 0 over constant extents whose
    body is bindings then one store at the loop variables, else None."""
    loops, body = [], stmt
    while isinstance(body, tirx.For) and body.kind == tirx.ForKind.PARALLEL:
        if not (isinstance(body.min, tirx.IntImm) and int(body.min.value) == 0
                and isinstance(body.extent, tirx.IntImm)):
            return None
        loops.append(body)
        body = body.body
    if not loops:
        return None
    items = _stmts(body)
    binds, store = items[:-1], items[-1]
    if not isinstance(store, tirx.BufferStore) or \
            not all(isinstance(b, tirx.Bind) for b in binds) or \
            len(store.indices) != len(loops) or \
            not all(ix.same_as(lp.loop_var) for ix, lp in zip(store.indices, loops)):
        return None
    return loops, binds, store


def _merge_branch(branch):
    return _merge_region_branches(branch) or _branch_into_nest(branch) or branch


def _whole_fill(stmt, buf, extents):
    """The value of ``T.fill(buf, v)`` / ``T.clear(buf)`` over the whole of ``buf`` (of
    shape ``extents``), else None."""
    if not (isinstance(stmt, tirx.TilePrimitiveCall) and stmt.op.name == "tirx.tile.fill"):
        return None
    region, value = stmt.args[0], stmt.args[1]
    if not (isinstance(region, tvm.ir.TensorRegion) and region.source.same_as(buf)):
        return None
    shape = [int(d) for d in buf.ty.shape]
    for r, n, e in zip(region.region, shape, extents):
        if not (isinstance(r.min, tirx.IntImm) and int(r.min.value) == 0
                and isinstance(r.extent, tirx.IntImm) and int(r.extent.value) == n == e):
            return None
    return value


def _branch_into_nest(branch):
    """``if c:`` around one ``T.Parallel`` store nest (bindings then ``dst[i, j] = v``, ``dst`` a
    block buffer), with no
    ``else`` or an ``else`` that fills the whole of ``dst`` (``T.clear(dst)``), the condition
    index arithmetic (no buffer element) -> the nest storing ``T.if_then_else(c, v, old)``
    (``old`` = ``dst[i, j]``, or the fill value): the branch of the whole block becomes a
    choice per element, which a mask condition computes (TileLang's ``if needs_mask != 0:
    for i, j in T.Parallel(...): acc_s[i, j] = ...  else: T.clear(acc_s)``)."""
    cond = branch.condition
    if collect(cond, tvm.ir.TensorLoad) or not _integer(cond):
        return None
    nest = _parallel_store(branch.then_case)
    if nest is None:
        return None
    loops, binds, store = nest
    if buffer_scope(store.buffer) == "global":
        return None  # a tensor's element is stored where the branch runs only
    extents = [int(lp.extent.value) for lp in loops]
    if branch.else_case is None:
        old = store.buffer[tuple(store.indices)]
    else:
        old = _whole_fill(branch.else_case, store.buffer, extents)
        if old is None:
            return None
        dtype = str(store.value.ty)
        if isinstance(old, (int, float)):
            old = tirx.const(old, dtype)
        elif isinstance(old, (tirx.IntImm, tirx.FloatImm)):
            old = tirx.const(old.value, dtype)
        elif str(old.ty) != dtype:
            old = tirx.Cast(dtype, old)
    body = seq(binds + [tirx.BufferStore(store.buffer, tirx.if_then_else(cond, store.value, old),
                                         store.indices)])
    for lp in reversed(loops):
        body = tirx.For(lp.loop_var, lp.min, lp.extent, lp.kind, body, lp.thread_binding,
                        lp.annotations, span=lp.span)
    return body


def _stmts(s):
    return list(s.seq) if isinstance(s, tirx.SeqStmt) else [s]


def _merge_region_branches(branch):
    """``if c: op(R[a:...]) else: op(R[b:...])`` -> ``op(R[Select(c, a, b):...])``: both arms
    the same tile primitives in the same order, differing only in the starts of their regions
    of tensors (same tensors and extents), the condition and the starts integer index
    arithmetic (no buffer element).  TileLang's ``if diag: T.copy(K[.., bx * B ..], K_s) else: T.copy(K[..,
    half + s * B ..], K_s)`` is then one copy whose start the reader chooses."""
    cond = branch.condition
    if branch.else_case is None or collect(cond, tvm.ir.TensorLoad) or not _integer(cond):
        return None
    yes, no = _stmts(branch.then_case), _stmts(branch.else_case)
    if len(yes) != len(no):
        return None
    merged = []
    for a, b in zip(yes, no):
        if not (isinstance(a, tirx.TilePrimitiveCall) and isinstance(b, tirx.TilePrimitiveCall)
                and a.op.same_as(b.op) and len(a.args) == len(b.args)):
            return None
        args = []
        for x, y in zip(a.args, b.args):
            if tvm_ffi.structural_equal(x, y):
                args.append(x)
                continue
            if not (isinstance(x, tvm.ir.TensorRegion) and isinstance(y, tvm.ir.TensorRegion)
                    and x.source.same_as(y.source) and len(x.region) == len(y.region)
                    and buffer_scope(x.source) == "global"):
                return None
            ranges = []
            for rx, ry in zip(x.region, y.region):
                if not tvm_ffi.structural_equal(rx.extent, ry.extent) or any(
                        collect(m, tvm.ir.TensorLoad) for m in (rx.min, ry.min)):
                    return None
                lo = rx.min if tvm_ffi.structural_equal(rx.min, ry.min) else \
                    tirx.Select(cond, rx.min, ry.min)
                ranges.append(tvm.ir.Range.from_min_extent(lo, rx.extent))
            args.append(tvm.ir.TensorRegion(x.source, ranges, x.ty))
        merged.append(replace_tile_call(a, args=args))
    return seq(merged)


def replicate_state_scalars(body, state):
    """Each scalar of ``state`` (:func:`state_scalars`) -> a variable bound to
    ``tt.state_var(name)`` where its buffer was allocated, its stores ``tt.state_set(var,
    value)``, its reads the variable.  Later passes see an opaque integer name (not a tensor
    element, not a binding they may inline), which every kernel keeps (D1)."""
    if not state:
        return body
    names = {b: tirx.Var(b.name, str(b.dtype)) for b in state}

    def pick(buf):
        return next((v for b, v in names.items() if b.same_as(buf)), None)

    def rewrite(node):
        if isinstance(node, tirx.AllocBuffer) and pick(node.buffer) is not None:
            return tirx.Bind(pick(node.buffer), ops.call("tt.state_var",
                             tirx.StringImm(node.buffer.name)), node.span)
        if isinstance(node, tirx.BufferStore) and pick(node.buffer) is not None:
            value = node.value
            if str(value.ty) != str(pick(node.buffer).ty):
                value = tirx.Cast(str(pick(node.buffer).ty), value)
            return tirx.Evaluate(ops.call("tt.state_set", pick(node.buffer), value,
                                          span=node.span), node.span)
        if isinstance(node, tvm.ir.TensorLoad) and pick(node.source) is not None:
            return pick(node.source)
        return node

    return tt_map(body, [((tirx.AllocBuffer, tirx.BufferStore, tvm.ir.TensorLoad), rewrite)],
                  order="post")


@tt_pass("ScalarsToBindTT")
def ScalarsToBindTT(func, mod, ctx):
    """Scalar assignments -> ``Bind`` (see module docstring); integer selects normalised
    (:func:`normalise_index_selects`)."""
    body = straight_line_scalars(unroll_scalar_loops(func.body))
    body = scalars_to_binds(float_state_to_blocks(body, _bindable))
    state = state_scalars(body)
    refuse_carried_scalars(body, state)
    body = replicate_state_scalars(body, state)
    body = normalise_index_selects(body)
    body = inline_element_binds(func, inline_float_constants(body))
    return func.with_body(distribute_element_selects(body, func))
