"""If-conversion of the branches in a ``T.Parallel`` body (used by A0.1.0.1 BoundLoopExtentsTT).

A Tensix elementwise op computes every element of a tile: a ``T.Parallel`` body cannot
branch per element.  TileLang kernels branch on element values (``if A_s[i, j] > 0:``,
``if x[i] > thr: ... else: ...``), on indices, or on both (``and`` / ``or``, nested ``if``).
An element store under a condition is the same as a store of a select:

    if c:                         dst[I] = T.if_then_else(c, v, dst[I])
        dst[I] = v         ==>
    else:                         dst2[J] = T.if_then_else(not c, w, dst2[J])
        dst2[J] = w

(conditions of nested branches conjoined, in order), evaluated store by store in program order:
the stores before a store see what the branch stored, as in the branched program, and a
condition must still read what it read where the branch was: when the branch stores to a
buffer its condition reads before a later store under it, the condition is first computed
into a new ``bfloat16`` block of the nest's shape, ``if_cond[i, j] = T.if_then_else(c, 1.0,
0.0)``, where the branch was, and the stores select on ``if_cond[i, j] != 0``.  The old value
``dst[I]`` is then replaced where A0.1.0.1's forwarding knows it better (``loop_extents``:
a block buffer never written since its allocation holds nothing to keep, so the select goes;
a tensor an earlier statement wrote is not read back but takes that statement's value).

:func:`if_convert` guarantees: the body is bindings and element stores only, in the order of
the original statements (bindings of a branch arm hoisted in place: they are pure); every
store under a branch is ``dst[I] = T.if_then_else(cond, v, dst[I])``; stores to one tensor
element in the body are merged into one store at the last one's place (the earlier value in
place of the tensor's old element: the kernel cannot read back a tensor element it wrote),
from the last pair back; an ``if`` / ``else`` pair under the same outer conditions ``P`` is
one select, ``if c: B[..] = x else: B[..] = y`` is ``B[..] = T.if_then_else(c, x, y)`` (under
``P``: ``T.if_then_else(P, T.if_then_else(c, x, y), B[..])``), so ``if`` / ``elif`` / ``else``
nests its selects; other pairs select the later value over the earlier one.

A body holding another statement (an atomic, a tile op, a loop outside the branches: a fold
A0.2 lowers as a reduction) is left as it is (A0.1.1 and A0.2 name it).  Refused (``TTUnsupportedError`` naming the statement and its line, saying what to
change): a branch arm holding a loop; a condition that needs a block (above) in a nest whose
extents are not constants; stores to one tensor element that cannot be
merged (a statement between reads that element, or writes a buffer the earlier value reads).
Decided from the IR's structure only.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ...errors import TTUnsupportedError
from ..common import buffer_scope, collect, seq, stmts_of, substitute, tt_map
from .parallel_diagnose import not_elementwise

_SELECT_OPS = ("tirx.if_then_else", "prim.if_then_else")


class _Unchanged(Exception):
    """The body holds a statement other than bindings, stores, branches and loops (an
    atomic's marker, a tile op): it is left as it is, for the stage that handles it."""


def has_branches(body) -> bool:
    """The body of a ``T.Parallel`` nest holds an ``if``."""
    return bool(collect(body, tirx.IfThenElse))


def select_parts(value):
    """(cond, x, y) when ``value`` is ``T.if_then_else(cond, x, y)``, else None."""
    if isinstance(value, tvm.ir.Call) and isinstance(value.op, tvm.ir.Op) and \
            value.op.name in _SELECT_OPS and len(value.args) == 3:
        return tuple(value.args)
    return None


def self_load(store):
    """``dst[I]`` of the store ``dst[I] = ...``: its element's old value."""
    return store.buffer[tuple(store.indices)]


def _same_load(expr, store) -> bool:
    return isinstance(expr, tvm.ir.TensorLoad) and expr.source.same_as(store.buffer) and \
        tvm_ffi.structural_equal(list(expr.indices), list(store.indices))


def masked(cond, store):
    """``store`` kept where ``cond`` fails: its condition conjoined with ``cond`` when it is
    already such a store, else a select of its value."""
    old = self_load(store)
    parts = select_parts(store.value)
    if parts is not None and _same_load(parts[2], store):
        value = tirx.if_then_else(tirx.And(cond, parts[0]), parts[1], old)
    else:
        value = tirx.if_then_else(cond, store.value, old)
    return tirx.BufferStore(store.buffer, value, store.indices, store.span)


def without_old(store):
    """The store with its old value dropped (the element held nothing defined): each select
    whose false value is the element's old value is its true value."""
    def strip(value):
        parts = select_parts(value)
        if parts is None:
            return value
        if _same_load(parts[2], store):
            return parts[1]
        return tirx.if_then_else(parts[0], parts[1], strip(parts[2]))

    return tirx.BufferStore(store.buffer, strip(store.value), store.indices, store.span)


def with_old(store, old):
    """The store with every read of its element's old value reading ``old`` instead."""
    def swap(ld):
        return old if _same_load(ld, store) else ld

    value = tt_map(store.value, [(tvm.ir.TensorLoad, swap)])
    return tirx.BufferStore(store.buffer, value, store.indices, store.span)


def _line(node) -> str:
    span = getattr(node, "span", None)
    return f" (line {span.line})" if span is not None and getattr(span, "line", None) else ""


def _reads(expr, binds) -> list:
    """Buffers ``expr`` reads, through the bindings it uses."""
    return [ld.source for ld in collect(substitute(expr, binds), tvm.ir.TensorLoad)]


def if_convert(head, body, loop_vars=None, extents=None, fresh=None):
    """(body, stores, allocations): ``body`` (of the ``T.Parallel`` nest ``head``) with its
    branches converted to selects (module docstring), the stores made conditional, and the
    condition blocks to allocate before the nest (``fresh(stem)`` names them; ``extents`` are
    the nest's constant extents, None when they are not constants)."""
    flat = []  # (statement, [(condition, index in flat where its branch started, if)])

    def walk(stmt, path):
        for st in stmts_of(stmt):
            if isinstance(st, (tirx.Bind, tirx.BufferStore)):
                flat.append((st, path))
            elif isinstance(st, tirx.IfThenElse):
                start = len(flat)
                walk(st.then_case, path + [(st.condition, start, st)])
                if st.else_case is not None:
                    walk(st.else_case, path + [(tirx.Not(st.condition), start, st)])
            elif isinstance(st, tirx.Evaluate) and isinstance(st.value, tirx.IntImm):
                continue  # a no-op
            elif not isinstance(st, tirx.For) or not path:
                raise _Unchanged()  # an atomic, a tile op: the later stages name it
            else:
                raise TTUnsupportedError(
                    "T.Parallel body: a branch arm holds "
                    f"{not_elementwise(st)}; only bindings, element assignments and nested "
                    "`if`s are converted to selects", span=getattr(st, "span", None) or head.span,
                    hint="move that statement out of the T.Parallel nest")

    try:
        walk(body, [])
    except _Unchanged:
        return body, [], []
    binds = {}
    stale = []  # branches whose condition is computed into a block first
    for k, (st, path) in enumerate(flat):
        if isinstance(st, tirx.Bind):
            binds[st.var] = substitute(st.value, binds)
            continue
        for cond, start, branch in path:
            read = _reads(cond, binds)
            for prev, _ in flat[start:k]:
                if not isinstance(prev, tirx.BufferStore) or \
                        not any(prev.buffer.same_as(b) for b in read):
                    continue
                if extents is not None and fresh is not None:
                    if not any(branch.same_as(b) for b in stale):
                        stale.append(branch)
                    break
                raise TTUnsupportedError(
                        f"T.Parallel body: the condition `{branch.condition}` of the branch "
                        f"at{_line(branch)} reads {prev.buffer.name}, which the branch stores "
                        f"to{_line(prev)} before its store to {st.buffer.name}{_line(st)}; a "
                        "branch becomes one select per store, and that select would see the "
                        f"new {prev.buffer.name}", span=getattr(branch, "span", None) or head.span,
                        hint="compute the condition into a fragment first (`c[i, j] = "
                             "T.if_then_else(cond, 1.0, 0.0)`) and branch on `c[i, j] > 0`, or "
                             f"store to {prev.buffer.name} last")
    allocs, flags = [], {}
    for branch in stale:  # c[i, j] = T.if_then_else(cond, 1.0, 0.0) where the branch was
        block = tirx.decl_buffer(list(extents), "bfloat16", fresh("if_cond"),
                                 scope="local.fragment")
        allocs.append(tirx.AllocBuffer(block))
        element = block[tuple(loop_vars)]
        flags[branch] = (tirx.BufferStore(block, tirx.if_then_else(
            branch.condition, tirx.const(1.0, "bfloat16"), tirx.const(0.0, "bfloat16")),
            list(loop_vars), branch.span), element != tirx.const(0.0, "bfloat16"))
    out, placed = [], []  # (statement, its branch conditions: [] when not under a branch)
    for k, (st, path) in enumerate(flat):
        for _, start, branch in path:
            flag = next((f for b, f in flags.items() if b.same_as(branch)), None)
            if flag is not None and start == k and not any(branch.same_as(b) for b in placed):
                placed.append(branch)
                out.append((flag[0], []))
        if isinstance(st, tirx.Bind):
            out.append((st, []))
            continue
        conds = []
        for cond, _, branch in path:
            flag = next((f for b, f in flags.items() if b.same_as(branch)), None)
            if flag is not None:
                cond = tirx.Not(flag[1]) if isinstance(cond, tirx.Not) and \
                    cond.a.same_as(branch.condition) else flag[1]
            conds.append(cond)
        out.append((st, conds))
    out = _merge_tensor_stores(head, out)
    stmts, conditional = [], []
    for st, conds in out:
        if isinstance(st, tirx.BufferStore) and conds:
            st = masked(_conjoin(conds), st)
            conditional.append(st)
        elif isinstance(st, tirx.BufferStore) and select_parts(st.value) is not None and \
                any(_same_load(ld, st) for ld in collect(st.value, tvm.ir.TensorLoad)):
            conditional.append(st)  # merged stores of a tensor element keeping its old value
        stmts.append(st)
    return seq(stmts), conditional, allocs


def _conjoin(conds):
    out = conds[0]
    for c in conds[1:]:
        out = tirx.And(out, c)
    return out


def _negates(a, b) -> bool:
    """``a`` is ``not b``."""
    return isinstance(a, tirx.Not) and tvm_ffi.structural_equal(a.a, b)


def _value(store, conds):
    """The element's value after ``store`` under ``conds``."""
    if not conds:
        return store.value
    return tirx.if_then_else(_conjoin(conds), store.value, self_load(store))


def _merge(first, second):
    """Two stores to one tensor element (``(store, conditions)``, ``first`` earlier) as one at
    ``second``'s place: ``second``'s reads of the element read ``first``'s value.  An
    ``if`` / ``else`` pair (conditions ``P + [c]`` and ``P + [not c]``) is ``P``'s store of
    ``T.if_then_else(c, x, y)``: one condition computed once, fewer DST tiles."""
    (s1, c1), (s2, c2) = first, second
    reads_old = any(_same_load(ld, s2) for ld in collect(s2.value, tvm.ir.TensorLoad))
    if c1 and c2 and len(c1) == len(c2) and not reads_old and \
            all(tvm_ffi.structural_equal(x, y) for x, y in zip(c1[:-1], c2[:-1])):
        if _negates(c2[-1], c1[-1]):
            value = tirx.if_then_else(c1[-1], s1.value, s2.value)
        elif _negates(c1[-1], c2[-1]):
            value = tirx.if_then_else(c2[-1], s2.value, s1.value)
        else:
            value = None
        if value is not None:
            return tirx.BufferStore(s2.buffer, value, s2.indices, s2.span), c1[:-1]
    merged = with_old(tirx.BufferStore(s2.buffer, _value(s2, c2), s2.indices, s2.span),
                      _value(s1, c1))
    return merged, []


def _merge_tensor_stores(head, out):
    """Stores to one tensor element merged into the last one, from the last pair back
    (module docstring): an ``if`` / ``elif`` / ``else`` chain nests its selects."""
    k = len(out) - 1
    while k >= 0:
        st, _ = out[k]
        if not isinstance(st, tirx.BufferStore) or buffer_scope(st.buffer) != "global":
            k -= 1
            continue
        prev = next((m for m in range(k - 1, -1, -1)
                     if isinstance(out[m][0], tirx.BufferStore)
                     and out[m][0].buffer.same_as(st.buffer)), None)
        if prev is None or not tvm_ffi.structural_equal(list(out[prev][0].indices),
                                                        list(st.indices)):
            k -= 1  # (two indices of one buffer: A0.2 names them)
            continue
        first = out[prev][0]
        read = [ld.source for ld in collect(_value(first, out[prev][1]), tvm.ir.TensorLoad)]
        for between, _ in out[prev + 1:k]:
            written = [between.buffer] if isinstance(between, tirx.BufferStore) else []
            if any(ld.source.same_as(st.buffer)
                   for ld in collect(between.value, tvm.ir.TensorLoad)) \
                    or any(w.same_as(r) for w in written for r in read):
                raise TTUnsupportedError(
                    f"T.Parallel body: tensor {st.buffer.name} is stored to{_line(first)} and "
                    f"again{_line(st)}, and the statement{_line(between)} between them "
                    f"{'reads it' if not written else 'changes what the first value reads'}; "
                    "stores to one tensor element are merged into one (a kernel cannot read "
                    "back a tensor element it wrote), which this order prevents",
                    span=getattr(st, "span", None) or head.span,
                    hint=f"compute {st.buffer.name}'s value into a fragment and store it once")
        out[k] = _merge(out[prev], out[k])
        del out[prev]
        k -= 1
    return out
