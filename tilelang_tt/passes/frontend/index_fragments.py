"""Integer block buffers of index values, and vectors stored into a tensor column per iteration.

A0.1.3.1 IndexFragmentsToFloatTT.  Tensix tiles hold bfloat16, float16 and float32 data and the
compute kernel has no integer arithmetic on tiles.  An integer block buffer (``local.fragment``
or ``shared``; TileLang's topk: ``expand_max_idx = T.alloc_fragment([blk_m, N], T.int32)``)
every value of which is an integer constant or an index value (an integer expression of element
and block indices, loop variables and bindings: :func:`.eltwise_expr.index_term`) is held as
float32, which holds those integers exactly: the buffer becomes float32 (same name, shape and
scope) when every write of it is

* ``T.fill`` of an integer constant,
* a ``T.Parallel`` element store whose value is an integer constant, an index value, an element
  of such a buffer, or ``T.if_then_else(cond, x, y)`` of those (``cond`` any condition that
  reads no such buffer),
* ``T.reduce_max`` / ``T.reduce_min`` or ``T.copy`` of another such buffer,

and every read of it is one of those writes' values (not a condition, not arithmetic), the source
of such a reduction or copy, or the value stored (``T.copy`` or an element store, converted or
not) into an integer tensor the kernel only writes that way.  Such a tensor parameter becomes
float32 on the device and the host converts its values back to the caller's integer dtype
(``tt.host_format`` ``convert`` of an output).  Exactness: an index value is computed by the
reader as an integer and converted to float32, the ``T.if_then_else`` is a select in DST; the
magnitude of every constant and index value (bounded by the loops' ranges and the launch's
extents) must be below 2^24.  No matrix engine reads such a buffer (it would read float32 as
TF32): a float32 ``T.reduce_max`` / ``T.reduce_min`` runs on the vector engine from DST (C2),
and a vector (a 1-D buffer) read only by copies, selects and broadcasts is unpacked straight to
DST and broadcast there (``unary_bcast``), both exact; the buffers take no arithmetic, so no
matrix-engine broadcast (``+ - * /`` with a vector) reads them.

Refused (``TTUnsupportedError`` naming the buffer, the statement's line and what disqualifies
it): such an integer buffer - one some ``T.Parallel`` store writes an index value into - with
another write (``T.reduce_sum``, arithmetic on its elements, a copy from a tensor), another read
(a condition, arithmetic), values whose bound is not provably below those limits, or stored into
a tensor the kernel also reads.  Other integer block buffers are left as they are (A1 names
their dtype).

A0.1.3.2 ColumnStoresToBlockTT.  A 1-D ``T.Parallel`` nest stores one value per row into column
``k`` of a 2-D tensor, ``k`` the variable of the serial loop the nest is directly in
(TileLang's topk: ``for k in T.serial(topk): ... for i in T.Parallel(blk_m):
topk_gates[bx * blk_m + i, k] = max_val[i]``).  A tile holds 32 columns, so no iteration can
write its column alone; the loop instead fills a block ``<T>_cols[R, E]`` in L1 (a fragment
of the tensor's dtype, ``E`` the loop's extent), which is written to the tensor once, after the
loop:

    T.fill(T_cols, 0)                       # before the loop
    for k in T.serial(E):
        ...
        for i, j in T.Parallel(R, E):       # the nest, one more dim
            T_cols[i, j] = T.if_then_else(j == k, value, T_cols[i, j])
    T.copy(T_cols, T[base, 0])              # after the loop

Every tile of the tensor's rows ``base .. base + R`` is written once by the block that owns those
rows (no read-modify-write of DRAM, nothing shared between blocks the original did not share).
Applied when: the tensor is a 2-D parameter the kernel never reads and writes only in such
stores (one per tensor), the loop runs from 0 over exactly the tensor's columns (extent = its
second dim), every statement of the nest is such a store, and the row index is ``base + i``
with ``base`` free of the loop's variables; other stores are left (C1 refuses them, naming the
tensor and the vector).

Requires: ScalarsToBindTT.  Guarantees: (A0.1.3.1) no integer block buffer holds index values;
the parameters it converts are float32 with ``tt.host_format`` ``convert``; (A0.1.3.2) no element
store of a vector into a tensor column inside a serial loop over the tensor's columns is left.
"""

from __future__ import annotations

import tvm
from tvm import tirx
from tvm.sym import Analyzer

from ...errors import TTUnsupportedError
from ..common import (buffer_dtype, buffer_scope, buffer_shape, collect, inline_binds,
                      launch_attrs, seq, stmts_of, substitute, tt_map, tt_pass, uses_var,
                      with_tile_span)
from .eltwise_expr import index_term
from .host_formats import _entry, _host_format, _with_host_format

_BLOCK = ("local.fragment", "shared")
_EXACT_FLOAT32 = 1 << 24  # every integer below it in magnitude is a float32
_REDUCE = ("tirx.tile.max", "tirx.tile.min")


def _is_int(dtype) -> bool:
    d = str(dtype)
    return d.startswith(("int", "uint")) and int(tvm.DataType(d).bits) <= 32


def _regions(call):
    return [a for a in call.args if isinstance(a, tvm.ir.TensorRegion)]


def _ite(e):
    """(cond, x, y) of ``T.if_then_else`` / ``Select``, else None."""
    if isinstance(e, tirx.Select):
        return e.condition, e.true_value, e.false_value
    if isinstance(e, tvm.ir.Call) and hasattr(e.op, "name") and \
            str(e.op.name) in ("tirx.if_then_else", "prim.if_then_else") and len(e.args) == 3:
        return tuple(e.args)
    return None


def _const(e):
    if isinstance(e, bool):
        return None
    if isinstance(e, int):
        return e
    if isinstance(e, float):
        return int(e) if e.is_integer() else None
    if isinstance(e, tirx.IntImm):
        return int(e.value)
    if isinstance(e, tirx.FloatImm) and float(e.value).is_integer():
        return int(e.value)
    return None


def _unwrap(e):
    """A load seen through integer conversions (``T.Cast("int32", idx[i])``)."""
    while isinstance(e, tirx.Cast) and _is_int(e.ty.dtype):
        e = e.value
    return e


class _Kernel:
    """The facts A0.1.3.1 decides from: integer block buffers, their writes and reads."""

    def __init__(self, func):
        self.func = func
        body = func.body
        self.ana = Analyzer()
        for a in launch_attrs(body):
            self.ana.bind(a.node.var, tvm.ir.Range.from_min_extent(tirx.IntImm("int32", 0),
                                                                   a.value))
        for lp in collect(body, tirx.For):
            self.ana.bind(lp.loop_var, tvm.ir.Range.from_min_extent(lp.min, lp.extent))
        self.binds = {b.var: b.value for b in collect(body, tirx.Bind)
                      if str(b.var.ty).startswith(("int", "uint", "bool"))}
        self.ints = [a.buffer for a in collect(body, tirx.AllocBuffer)
                     if buffer_scope(a.buffer) in _BLOCK and _is_int(buffer_dtype(a.buffer))]
        self.calls = collect(body, tirx.TilePrimitiveCall)
        self.stores = collect(body, tirx.BufferStore)
        self.params = [p for p in func.params if tirx.is_buffer_var(p)]

    def bound(self, term):
        """An upper bound of ``|term|`` (an index value), or None."""
        b = self.ana.const_int_bound(inline_binds(term, self.binds))
        lo, hi = int(b.min_value), int(b.max_value)
        if abs(lo) >= 1 << 40 or abs(hi) >= 1 << 40:
            return None
        return max(abs(lo), abs(hi))


def _member(buf, group):
    return any(buf.same_as(b) for b in group)


def _value_facts(e, group, kernel):
    """(ok, bound, why) for a value stored into a buffer of ``group``: constants, index values,
    loads of group buffers and ``T.if_then_else`` of those (the condition reading no group
    buffer); ``bound`` bounds the constants and index values in it."""
    c = _const(e)
    if c is not None:
        return True, abs(c), None
    inner = _unwrap(e)
    if isinstance(inner, tvm.ir.TensorLoad):
        if _member(inner.source, group):
            return True, 0, None
        return False, None, f"`{e}` reads {inner.source.name}, which does not hold index values"
    ite = _ite(e)
    if ite is not None:
        cond, x, y = ite
        if any(_member(ld.source, group) for ld in collect(cond, tvm.ir.TensorLoad)):
            return False, None, f"the condition `{cond}` reads an index-value buffer"
        bound = 0
        for v in (x, y):
            ok, b, why = _value_facts(v, group, kernel)
            if not ok:
                return ok, b, why
            bound = max(bound, b)
        return True, bound, None
    term = index_term(e)
    if term is not None:
        b = kernel.bound(term)
        if b is None:
            return False, None, f"the index value `{term}` has no bound the compiler can prove"
        return True, b, None
    return False, None, (f"`{e}` is not an integer constant, an index value or a choice "
                         "between them (the float32 tiles would compute other arithmetic "
                         "with rounding)")


def _plan(kernel):
    """(buffers converted, tensors converted) of A0.1.3.1, or raise for an index-value buffer
    that cannot be held as float32."""
    group = list(kernel.ints)
    if not group:
        return [], []
    tensors = []
    while True:
        bounds = {}
        reduced = set()
        bad = None
        tensors = []
        for b in group:
            bounds[b] = 0
        # writes and reads by tile primitives
        for c in kernel.calls:
            regs = _regions(c)
            mine = [r for r in regs if _member(r.source, group)]
            if not mine:
                continue
            name = str(c.op.name)
            dst = regs[0].source
            if name == "tirx.tile.fill" and _member(dst, group) and len(mine) == 1:
                v = _const(c.args[1])
                if v is None:
                    bad = (dst, f"T.fill with `{c.args[1]}`, not an integer constant", c.span)
                    break
                bounds[dst] = max(bounds[dst], abs(v))
                continue
            if name in _REDUCE + ("tirx.tile.copy",) and len(regs) >= 2:
                src = regs[1].source
                if _member(dst, group) and _member(src, group):
                    if name in _REDUCE:
                        reduced.add(src)
                        reduced.add(dst)
                    continue
                if name == "tirx.tile.copy" and _member(src, group) and \
                        buffer_scope(dst) == "global" and _is_int(buffer_dtype(dst)):
                    tensors.append((dst, c.span))
                    continue
            b = mine[0].source
            op = name.split(".")[-1]
            bad = (b, f"T.{op} {'into' if _member(dst, group) else 'of'} it with "
                   f"{', '.join(str(r.source.name) for r in regs)}", c.span)
            break
        if bad is None:
            for st in kernel.stores:
                if _member(st.buffer, group):
                    ok, bnd, reason = _value_facts(st.value, group, kernel)
                    if not ok:
                        bad = (st.buffer, reason, st.span)
                        break
                    bounds[st.buffer] = max(bounds[st.buffer], bnd)
                    continue
                loads = [ld for ld in collect(st.value, tvm.ir.TensorLoad)
                         if _member(ld.source, group)]
                if not loads:
                    continue
                inner = _unwrap(st.value)
                if isinstance(inner, tvm.ir.TensorLoad) and buffer_scope(st.buffer) == "global" \
                        and _is_int(buffer_dtype(st.buffer)):
                    tensors.append((st.buffer, st.span))
                    continue
                bad = (loads[0].source, f"it is read in `{st.buffer.name}[...] = {st.value}` "
                       "(index-value buffers are only selected, reduced by max / min, copied "
                       "and stored into integer tensors)", st.span)
                break
        if bad is None:
            # reads anywhere else (conditions of `if`s, loop bounds, ...)
            allowed = 0
            for st in kernel.stores:
                if _member(st.buffer, group) or collect(st.value, tvm.ir.TensorLoad,
                                                        lambda ld: _member(ld.source, group)):
                    allowed += len(collect(st.value, tvm.ir.TensorLoad,
                                           lambda ld: _member(ld.source, group)))
            total = collect(kernel.func.body, tvm.ir.TensorLoad,
                            lambda ld: _member(ld.source, group))
            if len(total) != allowed:
                seen = {id(x) for st in kernel.stores for x in
                        collect(st.value, tvm.ir.TensorLoad)}
                other = next((ld for ld in total if id(ld) not in seen), total[0])
                bad = (other.source, "it is read outside an element store (a condition or a "
                       "bound)", None)
        if bad is None:
            for t, span in tensors:
                if not _written_only_from(t, group, kernel):
                    bad = (group[0], f"it is stored into {t.name}, which the kernel also reads "
                           "or writes otherwise (the host converts a tensor written only from "
                           "index-value buffers)", span)
                    break
        if bad is None:
            # float32 holds every integer below 2^24; the reductions (vector engine) and the
            # vectors' broadcasts (unary_bcast from DST) keep float32 exactly
            top = max(bounds.values())  # values flow between the buffers: one bound for all
            if top >= _EXACT_FLOAT32:
                bad = (group[0], f"its values reach {top} in magnitude and it is held as "
                       "float32 (integers exact below 2^24)", None)
        if bad is None:
            uniq = []
            for t, _ in tensors:
                if not any(t.same_as(u) for u in uniq):
                    uniq.append(t)
            return group, uniq
        buf, reason, span = bad
        if _holds_index_values(buf, kernel):
            raise TTUnsupportedError(
                f"{buf.name} ({buffer_dtype(buf)}) holds index values, which the device keeps "
                f"in float32 tiles (the compute kernel has no integer arithmetic), but {reason}",
                span=span if span is not None else _first_span(buf, kernel),
                hint="keep the buffer's values integer constants and index values (selected, "
                     "reduced by max / min, copied, stored), or use a float32 buffer")
        group = [b for b in group if not b.same_as(buf)]
        if not group:
            return [], []


def _written_only_from(t, group, kernel) -> bool:
    """Tensor ``t`` is never read and written only from buffers of ``group``."""
    if collect(kernel.func.body, tvm.ir.TensorLoad, lambda ld: ld.source.same_as(t)):
        return False
    for c in kernel.calls:
        regs = _regions(c)
        if any(r.source.same_as(t) for r in regs[1:]):
            return False
        if regs and regs[0].source.same_as(t) and not (
                str(c.op.name) == "tirx.tile.copy" and len(regs) >= 2
                and _member(regs[1].source, group)):
            return False
    for st in kernel.stores:
        if st.buffer.same_as(t):
            inner = _unwrap(st.value)
            if not (isinstance(inner, tvm.ir.TensorLoad) and _member(inner.source, group)):
                return False
    return True


def _holds_index_values(buf, kernel) -> bool:
    """Some T.Parallel store writes an index value into ``buf``."""
    def has_index(e):
        """Some integer sub-expression of ``e`` is an index value."""
        return bool(collect(e, tvm.ir.Expr, lambda x: str(getattr(x, "ty", "")) not in (
            "bool", "") and index_term(x) is not None))

    return any(st.buffer.same_as(buf) and has_index(st.value) for st in kernel.stores)


def _first_span(buf, kernel):
    return next((st.span for st in kernel.stores if st.buffer.same_as(buf)), None)


def _as_float(e, new):
    """A value A0.1.3.1 accepted, as float32 over the new buffers."""
    c = _const(e)
    if c is not None:
        return tirx.FloatImm("float32", float(c))
    inner = _unwrap(e)
    if isinstance(inner, tvm.ir.TensorLoad):
        nb = next(v for k, v in new.items() if k.same_as(inner.source))
        return nb[tuple(inner.indices)]
    ite = _ite(e)
    if ite is not None:
        cond, x, y = ite
        return tirx.if_then_else(cond, _as_float(x, new), _as_float(y, new))
    return tirx.Cast("float32", index_term(e))


@tt_pass("IndexFragmentsToFloatTT", requires=("ScalarsToBindTT",))
def IndexFragmentsToFloatTT(func, mod, ctx):
    kernel = _Kernel(func)
    group, tensors = _plan(kernel)
    if not group:
        return func
    new = {b: tirx.decl_buffer(buffer_shape(b), "float32", str(b.name), scope=buffer_scope(b))
           for b in group}
    params = list(func.params)
    entries = _host_format(func)
    tnew = {}
    for t in tensors:
        index = next(i for i, p in enumerate(params) if p.same_as(t))
        tnew[t] = tirx.decl_buffer(buffer_shape(t), "float32", str(t.name))
        _entry(func, entries, index)["convert"] = True
        params[index] = tnew[t]

    every = {**new, **tnew}

    def on_store(st):
        nb = next((v for k, v in every.items() if st.buffer.same_as(k)), None)
        if nb is None:
            return st
        return tirx.BufferStore(nb, _as_float(st.value, new), st.indices, st.span)

    def on_call(c):
        if str(c.op.name) == "tirx.tile.fill" and _member(_regions(c)[0].source, group):
            return with_tile_span(c.replace(args=[c.args[0], tirx.FloatImm(
                "float32", float(_const(c.args[1])))] + list(c.args[2:])), c.span)
        return c

    def on_alloc(a):
        nb = next((v for k, v in new.items() if a.buffer.same_as(k)), None)
        return a if nb is None else tirx.AllocBuffer(nb, a.annotations, a.span)

    body = tt_map(func.body, [(tirx.BufferStore, on_store), (tirx.TilePrimitiveCall, on_call),
                              (tirx.AllocBuffer, on_alloc)])
    body = substitute(body, every)
    out = tirx.PrimFunc(params, body, func.ret_type, func.attrs, func.span)
    return _with_host_format(out, entries) if tensors else out


# ---- A0.1.3.2 ----------------------------------------------------------------------------------
def _column_store(st, loop, nest, func):
    """(tensor, base) when ``st`` stores into column ``loop.loop_var`` of a 2-D tensor parameter
    at row ``base + nest.loop_var``, else None."""
    t = st.buffer
    if buffer_scope(t) != "global" or len(st.indices) != 2 or \
            not any(p.same_as(t) for p in func.params):
        return None
    row, col = st.indices
    if not (isinstance(col, tvm.ir.Var) and col.same_as(loop.loop_var)):
        return None
    i = nest.loop_var
    base = Analyzer().simplify(row - i)
    if uses_var(base, i) or uses_var(base, loop.loop_var):
        return None
    if uses_var(st.value, loop.loop_var):
        return None
    shape = buffer_shape(t)
    if not isinstance(shape[1], int) or not isinstance(loop.extent, tirx.IntImm) or \
            int(loop.extent) != shape[1] or not (isinstance(loop.min, tirx.IntImm)
                                                 and int(loop.min) == 0):
        return None
    return t, base


def _only_written_here(t, func, store) -> bool:
    body = func.body
    if collect(body, tvm.ir.TensorLoad, lambda ld: ld.source.same_as(t)):
        return False
    if any(any(r.source.same_as(t) for r in _regions(c))
           for c in collect(body, tirx.TilePrimitiveCall)):
        return False
    return all(s.same_as(store) for s in collect(body, tirx.BufferStore,
                                                 lambda s: s.buffer.same_as(t)))


def _rewrite_loop(loop, func):
    """``loop`` with its column-store nests over blocks, and the statements before / after it;
    None when it has none."""
    body = stmts_of(loop.body)
    inner_vars = [lp.loop_var for lp in collect(loop.body, tirx.For)] + \
        [b.var for b in collect(loop.body, tirx.Bind)]
    before, after, out = [], [], []
    changed = False
    for s in body:
        if not (isinstance(s, tirx.For) and s.kind == tirx.ForKind.PARALLEL and
                isinstance(s.extent, tirx.IntImm) and isinstance(s.min, tirx.IntImm)
                and int(s.min) == 0):
            out.append(s)
            continue
        stores = stmts_of(s.body)
        found = [(_column_store(st, loop, s, func) if isinstance(st, tirx.BufferStore) else None)
                 for st in stores]
        if not stores or any(f is None for f in found) or \
                any(any(uses_var(base, v) for v in inner_vars) for _, base in found) or \
                len({id(t) for t, _ in found}) != len(found) or \
                not all(_only_written_here(t, func, st) for (t, _), st in zip(found, stores)):
            out.append(s)
            continue
        rows = int(s.extent)
        cols = int(loop.extent)
        j = tirx.Var("j", "int32")
        i = s.loop_var
        new_stores = []
        for (t, base), st in zip(found, stores):
            acc = tirx.decl_buffer([rows, cols], buffer_dtype(t), f"{t.name}_cols",
                                   scope="local.fragment")
            whole = acc[0:rows, 0:cols]
            import tvm.tirx.operator as tirx_op

            before.append(tirx.AllocBuffer(acc))
            before.append(with_tile_span(tirx_op.Fill(
                whole, tirx.const(0, buffer_dtype(t)), workspace={}, config={}, dispatch=None,
                scope=None), st.span))
            value = tirx.if_then_else(j == loop.loop_var, st.value, acc[i, j])
            new_stores.append(tirx.BufferStore(acc, value, [i, j], st.span))
            after.append(with_tile_span(tirx_op.Copy(
                t[base:base + rows, 0:cols], whole, workspace={}, config={}, dispatch=None,
                scope=None), st.span))
        inner = tirx.For(j, tirx.IntImm("int32", 0), tirx.IntImm("int32", cols),
                         tirx.ForKind.PARALLEL, seq(new_stores))
        out.append(tirx.For(i, s.min, s.extent, tirx.ForKind.PARALLEL, inner,
                            s.thread_binding, s.annotations, s.step, s.span))
        changed = True
    if not changed:
        return None
    new_loop = tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind, seq(out),
                        loop.thread_binding, loop.annotations, loop.step, loop.span)
    return seq(before + [new_loop] + after)


@tt_pass("ColumnStoresToBlockTT", requires=("ScalarsToBindTT",))
def ColumnStoresToBlockTT(func, mod, ctx):
    def on_for(loop):
        if loop.kind != tirx.ForKind.SERIAL:
            return loop
        new = _rewrite_loop(loop, func)
        return loop if new is None else new

    body = tt_map(func.body, [(tirx.For, on_for)])
    return func if body.same_as(func.body) else func.with_body(body)


def index_value_fragments(func) -> list:
    """The integer block buffers of ``func`` some ``T.Parallel`` store writes an index value
    into (none is left after A0.1.3.1: it converts them or refuses)."""
    kernel = _Kernel(func)
    return [b for b in kernel.ints if _holds_index_values(b, kernel)]


def column_store_loops(func) -> int:
    """How many serial loops of ``func`` A0.1.3.2 would rewrite (none after it)."""
    return sum(_rewrite_loop(lp, func) is not None for lp in collect(func.body, tirx.For)
               if lp.kind == tirx.ForKind.SERIAL)
