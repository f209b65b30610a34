"""A0.1.3 LowerReducersTT: TileLang reducers as tile reductions into loop-carried fragments.

Requires: LowerAtomicsTT (the frontend's ``T.alloc_reducer`` allocations carry
``tt.reducer`` = ``{"op", "v1"}``; ``T.reducer_update`` stores sit under ``AttrStmt``
``tt.reducer_update``; see ``tilelang_tt/language_reducer.py``).

A reducer is a fragment folded across the ``T.Parallel`` loop it is updated in (and across the
serial / pipelined loops around it, which makes it loop-carried state).  Decided from the IR
only:

* a v2 reducer (``"v1": false``: allocated without ``replication`` and used with a v2
  call; one no v2 call touches is a legacy reducer, as in TileLang) is written only by marked
  updates and the init / finalize tile ops and read by none of its statements: any other store is
  ``illegal store to reducer``, any element read ``illegal read of reducer`` (read the
  ``T.finalize_reducer`` destination instead), a ``TTCompileError`` naming the line;
* an update (marked, or a v1 reducer's ``r[i] += e`` / ``r[i] = T.max(r[i], e)``) whose
  combine is not the reducer's op is a ``TTCompileError``;
* a two-loop ``T.Parallel`` nest whose body folds into a 1-D reducer indexed by one loop
  variable becomes ``terms[a, b] = e`` and ``reduce_<op>(terms, r, dim, clear=False)``
  (:func:`parallel_fold.fold_nest_as_reduction`: ``dim=1`` into a column vector per row,
  ``dim=0`` into a row vector per column);
* ``for i in T.serial(M): for k in T.Parallel(K): r[i] op= e`` (one element per serial
  iteration, independent iterations) is the same as the ``T.Parallel(M, K)`` nest;
* a nest whose update uses every loop variable (``r[i, j] += e``) is an elementwise update and
  stays for A0.2; any other update of a reducer (a ``T.Parallel`` loop folded into one element,
  three or more loops) is a ``TTUnsupportedError`` saying what to write.

Guarantees: no ``tt.reducer_update`` marker is left; reducer allocations keep their
annotation (A0.2 and later treat them as fragments).
"""

from __future__ import annotations

import itertools

import tvm
from tvm import tirx

from ... import attrs
from ...errors import TTCompileError, TTUnsupportedError
from ..common import collect, int_or_none, stmts_of, substitute, tt_map, tt_pass, uses_var
from .parallel_fold import fold_nest_as_reduction, fold_of

_OP_OF = {"Sum": "sum", "Max": "max", "Min": "min"}


def _reducers(body) -> dict:
    """{buffer: {"op", "v1"}} from the reducers' allocation annotations."""
    out = {}
    for a in collect(body, tirx.AllocBuffer):
        ann = a.annotations.get(attrs.REDUCER) if a.annotations else None
        if ann is not None:
            out[a.buffer] = {"op": str(ann["op"]), "v1": bool(ann["v1"])}
    return out


def _info(reducers, buf):
    for b, info in reducers.items():
        if b.same_as(buf):
            return info
    return None


def _check_v2_access(body, reducers) -> None:
    """Plain stores and element reads of v2 reducers (module docstring)."""
    marked = [a.body for a in collect(body, tirx.AttrStmt) if a.attr_key == attrs.REDUCER_UPDATE]

    def is_marked(store):
        return any(store.same_as(m) for m in marked)

    for store in collect(body, tirx.BufferStore):
        info = _info(reducers, store.buffer)
        if info is not None and not info["v1"] and not is_marked(store):
            name = store.buffer.name
            raise TTCompileError(
                f"illegal store to reducer {name}: a T.alloc_reducer buffer is written only by "
                f"T.reducer_init({name}[, value]) and T.reducer_update({name}[...], value) "
                f"(the `{name}[...] += v` form belongs to alloc_reducer(replication=...))",
                span=store.span)
    for node in itertools.chain(collect(body, tirx.BufferStore), collect(body, tirx.Bind),
                                collect(body, tirx.IfThenElse), collect(body, tirx.Evaluate)):
        if isinstance(node, tirx.BufferStore):
            exprs = list(node.indices) + [_contribution(node) if is_marked(node) else node.value]
        elif isinstance(node, tirx.Bind):
            exprs = [node.value]
        elif isinstance(node, tirx.IfThenElse):
            exprs = [node.condition]
        else:
            exprs = [node.value]
        for e in exprs:
            for ld in collect(e, tvm.ir.TensorLoad):
                info = _info(reducers, ld.source)
                if info is not None and not info["v1"]:
                    name = ld.source.name
                    raise TTCompileError(
                        f"illegal read of reducer {name}: its value is defined only after "
                        f"T.finalize_reducer({name}, result); read `result` instead",
                        span=getattr(node, "span", None))


def _contribution(store):
    """The value a marked update ``r[I] = r[I] op v`` contributes (``v``; the frontend writes
    the reducer's element as the combine's first operand, which is not a read)."""
    value = store.value
    if isinstance(value, (tirx.Add, tirx.Max, tirx.Min)) and \
            isinstance(value.a, tvm.ir.TensorLoad) and value.a.source.same_as(store.buffer):
        return value.b
    return value


def _strip(body):
    return tt_map(body, [(tirx.AttrStmt, lambda a: a.body
                          if a.attr_key == attrs.REDUCER_UPDATE else a)])


def _nest(loop):
    loops, body = [loop], loop.body
    while isinstance(body, tirx.For) and body.kind == tirx.ForKind.PARALLEL:
        loops.append(body)
        body = body.body
    return loops, body


def _reducer_stores(loop, reducers):
    return [s for s in collect(loop, tirx.BufferStore) if _info(reducers, s.buffer) is not None]


def _rows_as_parallel(loop, reducers):
    """``for i in T.serial(M): for k in T.Parallel(K): <update of r[i]>`` as the
    ``T.Parallel(M, K)`` nest, or None.  Its iterations are independent: each folds into its
    own element ``r[i]`` (``i`` exactly, a 1-D reducer) values that do not read ``r``."""
    if len(loop.annotations) or int_or_none(loop.min) != 0 or int_or_none(loop.extent) is None:
        return None
    body = stmts_of(loop.body)
    if len(body) != 1 or not isinstance(body[0], tirx.For) or \
            body[0].kind != tirx.ForKind.PARALLEL or isinstance(body[0].body, tirx.For):
        return None
    par = body[0]
    stmts = stmts_of(par.body)
    store = stmts[-1]
    if not isinstance(store, tirx.BufferStore) or \
            not all(isinstance(b, tirx.Bind) for b in stmts[:-1]):
        return None
    info = _info(reducers, store.buffer)
    if info is None or len(store.indices) != 1 or not store.indices[0].same_as(loop.loop_var) \
            or fold_of(store, par.loop_var) is None:
        return None
    return tirx.For(loop.loop_var, 0, loop.extent, tirx.ForKind.PARALLEL, par, span=loop.span)


@tt_pass("LowerReducersTT", requires=("LowerAtomicsTT",))
def LowerReducersTT(func, mod, ctx):
    """Reducer updates -> tile reductions (see module docstring)."""
    reducers = _reducers(func.body)
    if not reducers:
        return func
    _check_v2_access(func.body, reducers)
    body = _strip(func.body)
    counter = itertools.count()
    settled = []  # loops inside a nest already decided

    def fresh(stem):
        return f"{stem}_{next(counter)}"

    def rewrite(loop):
        if any(loop.same_as(s) for s in settled):
            return loop
        if loop.kind == tirx.ForKind.SERIAL:
            nest = _rows_as_parallel(loop, reducers)
            return loop if nest is None else rewrite(nest)
        if loop.kind != tirx.ForKind.PARALLEL:
            return loop
        stores = _reducer_stores(loop, reducers)
        if not stores:
            return loop
        loops, inner = _nest(loop)
        settled.extend(collect(loop.body, tirx.For))
        loop_vars = [lp.loop_var for lp in loops]
        for store in stores:
            info = _info(reducers, store.buffer)
            name = store.buffer.name
            binds = {}
            for s in stmts_of(inner):
                if isinstance(s, tirx.Bind):
                    binds[s.var] = substitute(s.value, binds)
            seen = substitute(store, binds)
            free = [v for v in loop_vars if not any(uses_var(ix, v) for ix in seen.indices)]
            if not free:
                continue  # an elementwise update: A0.2 lowers it
            folded = None
            for v in free:
                folded = folded or fold_of(seen, v)
            if folded is None:
                raise TTCompileError(
                    f"the store to reducer {name} is not an update: write "
                    f"T.reducer_update({name}[...], value) (or `{name}[...] += value`, "
                    f"T.max / T.min of {name}[...] and the value)", span=store.span)
            if _OP_OF[folded[0]] != info["op"]:
                raise TTCompileError(
                    f"reducer {name} combines with {info['op']} but this update folds with "
                    f"{_OP_OF[folded[0]]}: update it with the reducer's op", span=store.span)
        lowered = fold_nest_as_reduction(loop, fresh)
        if lowered is not None:
            return tirx.SeqStmt(lowered)
        if all(not [v for v in loop_vars
                    if not any(uses_var(ix, v) for ix in substitute(s, {}).indices)]
               for s in stores):
            return loop
        store = stores[0]
        name = store.buffer.name
        raise TTUnsupportedError(
            f"the update of reducer {name} folds a {len(loops)}-loop T.Parallel nest in a form "
            "with no tile reduction: a reducer runs as a row or column reduction of a 2-D "
            f"T.Parallel(M, N) nest into a 1-D reducer indexed by one of its loop variables "
            f"({name}[i] for a sum over j, {name}[j] for a sum over i); a T.Parallel loop "
            "folded into one element has no Tensix lowering (each reducer element is a "
            "32-element tile row or column)", span=store.span)

    body = tt_map(body, [(tirx.For, rewrite)], order="pre")
    return func.with_body(body)
