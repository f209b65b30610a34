"""C2.2 LowerScalarReadsTT: branches on a tensor element get the element from the reader.

Requires: ForwardBlockCopiesTT.

A tensor the kernel reads only as scalars in ``if`` conditions (A1's ``scalars`` layout,
:mod:`..analysis.scalar_reads`: TileLang's ``if BlockMask[by, bx, k]:``) is a DRAM buffer of
32-bit words, 16 to a page.  Every kernel that has work under such a branch must take it as
the others do, or their circular-buffer protocols would part (the reader pushes A and B only
when the branch is taken, the compute kernel waits for them only then).

Guarantees: for every ``if`` whose condition reads elements of scalar tensors, and for each
element it reads (``T[i0, i1, ...]``, flat row-major index ``f``), right before the ``if``:

* ``tt.scalar_to_cb(cb, T, f // 16)`` - the reader reads the page holding the element into
  one page of a new CB (``<T>_value``, int32, one tile, depth 2, reader -> compute) and
  pushes it;
* ``v = tt.scalar_value(cb, f % 16)`` - the element's word (compute: ``read_tile_value`` of
  the page it waits for; the reader reads it from the page it filled, before the push);

and the element in the condition is ``v != 0`` (bool) or ``v`` cast to the element's dtype;
so is every read of the same element (the same flat index, given the loops' ranges and the
kernel's integer bindings) in the
``if``'s arms: block offsets (``tt.read_to_cb(cb, K, ... + v, ...)``) and the conditions of
masks the reader computes (``analysis/scalar_reads.py``: such reads are supported only under
an ``if`` whose condition reads the element).
When the writer has work under the branch (a copy to a tensor), the reader also reads the page
into a second CB (``<T>_value_w``, reader -> writer, pushed first) and ``tt.scalar_take(cb_w)``
follows the binding: the writer waits for that page, reads the word from it and pops it.

An element that places a block at rows off a tile boundary (``tt.read_rows_to_cb`` /
``tt.write_rows_from_cb``: TileLang's ``cu_seqlens[b]``, read by no ``if``; its start or row
guard), or a block read anywhere (``tt.read_to_cb``: the grouped GEMM's ``B[cur_batch, ...]``,
read by no ``if``), or that a mask the reader computes reads (``tt.mask_to_cb``), is read right
before that statement: ``tt.scalar_to_cb(cb, T, page)`` into the
tensor's row-offsets CB (``<T>_rows``, reader -> writer), ``v = tt.scalar_word(cb, word)``,
``tt.scalar_take(cb)``; the element in the statement is ``v`` (signed).  The kernel moving the
block reads the word (the reader before its push, the writer before its pop); the other one
only frees the page.  Such a read directly in a loop's body that does not change with the loop
is moved before the loop (:func:`_hoist_row_words`), and a read of an element an earlier read
in the same statement list holds is dropped, the earlier word used (:func:`_share_row_words`).

A serial / pipelined loop whose bounds read elements of scalar tensors (``for k in
T.serial(Lens[bx]):``, ``T.Pipelined(T.ceildiv(cu[b + 1] - cu[b], 32))``) gets the same reads
right before it (the loop's body as the arm: the writer's page when it has work in the loop);
its bounds and every read of the same element in its body take the words, and its extent
becomes ``max(extent, 0)`` (signed: a loop whose extent is 0 or negative runs 0 times), so the
reader, compute and writer kernels run it the same number of times.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx
from tvm.sym import Analyzer

from ... import ops
from ...errors import TTUnsupportedError
from ..analysis.scalar_reads import WORDS_PER_PAGE
from ..common import (
    WORD_DTYPE, buffer_shape, collect, get_attr, inline_binds, int_imm, seq, split_persistent,
    substitute, to_py, tt_calls, tt_map, tt_pass, with_persistent,
)
from ... import attrs
from .shared_to_cb import alloc_cb_call

# the depth of a value CB: the reader may fetch the next element while the compute kernel
# still works under the branch of this one
DEPTH = 2


def _flat(load):
    shape = buffer_shape(load.source)
    flat = int_imm(0)
    for i, d in zip(load.indices, shape):
        flat = flat * int(d) + i
    return flat


def _as_condition_value(v, dtype: str):
    """The element's value in the condition, from its 32-bit word ``v``."""
    if dtype == "bool":
        return tirx.NE(v, int_imm(0))
    if dtype == "int32":
        return ops.call("tt.as_signed", v)
    if dtype == WORD_DTYPE:
        return v
    return tirx.Cast(dtype, ops.call("tt.as_signed", v) if dtype.startswith("int") else v)


@tt_pass("LowerScalarReadsTT", requires=("ForwardBlockCopiesTT",))
def LowerScalarReadsTT(func, mod, ctx):
    """The elements that branch conditions read -> the reader's page reads and each kernel's
    copy of the value (see module docstring)."""
    layouts = to_py(get_attr(func, attrs.LAYOUT_DESC, [])) or []
    scalars = [p for i, p in enumerate(func.params)
               if i < len(layouts) and layouts[i].get("scalars")]
    if not scalars:
        return func
    ana = Analyzer()
    for loop in collect(func.body, tirx.For):  # an element an arm reads at a loop's only value
        if isinstance(loop.min, tirx.IntImm) and isinstance(loop.extent, tirx.IntImm):
            ana.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))
    binds = {b.var: b.value for b in collect(func.body, tirx.Bind)
             if str(b.var.ty).startswith(("int", "uint"))}
    new_cbs = []

    def is_scalar(buf):
        return any(buf.same_as(p) for p in scalars)

    def read_before(loads, arms, span):
        """The statements reading each element of ``loads`` before a statement whose
        ``arms`` may have work, and [(load, its word)]."""
        kernels = set()
        for arm in arms:
            kernels |= {ops.spec(c.op.name).kernel for c in tt_calls(arm)}
        writer = "writer" in kernels
        before, values = [], []
        for load in loads:
            same = next((v for ld, v in values if tvm_ffi.structural_equal(ld, load)), None)
            if same is not None:
                values.append((load, same))
                continue
            name = str(load.source.name)
            cb = tirx.Var(f"{name}_value_cb", "int32")
            new_cbs.append(tirx.Bind(cb, alloc_cb_call(1, 1, DEPTH, WORD_DTYPE, f"{name}_value")))
            flat = ana.simplify(_flat(load))
            v = tirx.Var(f"{name}_value", "int32")
            page = ana.simplify(tirx.FloorDiv(flat, int_imm(WORDS_PER_PAGE)))
            if writer:  # the writer's own page of the element, pushed first
                cb_w = tirx.Var(f"{name}_value_w_cb", "int32")
                new_cbs.append(tirx.Bind(cb_w, alloc_cb_call(1, 1, DEPTH, WORD_DTYPE,
                                                             f"{name}_value_w")))
                before.append(ops.evaluate("tt.scalar_to_cb", cb_w, load.source, page,
                                           span=span))
            before += [
                ops.evaluate("tt.scalar_to_cb", cb, load.source, page, span=span),
                tirx.Bind(v, ops.call("tt.scalar_value", cb, ana.simplify(
                    tirx.FloorMod(flat, int_imm(WORDS_PER_PAGE))), span=span)),
            ]
            if writer:
                before.append(ops.evaluate("tt.scalar_take", cb_w, span=span))
            values.append((load, v))
        return before, values

    def replacers(values):
        def replace(e):
            for ld, v in values:
                if e.same_as(ld):
                    return _as_condition_value(v, str(ld.dtype))
            return e

        def replace_in_arm(e):  # a block offset or a mask reading the same element
            if not is_scalar(e.source):
                return e
            for ld, v in values:
                if ld.source.same_as(e.source) and ana.can_prove(
                        ana.simplify(inline_binds(_flat(ld), binds)) ==
                        ana.simplify(inline_binds(_flat(e), binds))):
                    return _as_condition_value(v, str(ld.dtype))
            return e

        return replace, replace_in_arm

    def on_if(node):
        loads = [x for x in collect(node.condition, tvm.ir.TensorLoad) if is_scalar(x.source)]
        if not loads:
            return node
        arms = [node.then_case] + ([node.else_case] if node.else_case is not None else [])
        before, values = read_before(loads, arms, node.span)
        replace, replace_in_arm = replacers(values)
        then_case = _map_arm(node.then_case, replace_in_arm)
        else_case = None if node.else_case is None else _map_arm(node.else_case, replace_in_arm)
        cond = _fold_bool_compares(tvm_ffi_map(node.condition, replace))
        if str(cond.ty) != "bool":  # `if Mask[...]:` of an integer tensor: its truth
            cond = tirx.NE(cond, tirx.const(0, str(cond.ty)))
        return seq(before + [tirx.IfThenElse(cond, then_case, else_case, node.span)])

    def on_for(node):
        loads = [x for x in collect(node.min, tvm.ir.TensorLoad) +
                 collect(node.extent, tvm.ir.TensorLoad) if is_scalar(x.source)]
        if not loads:
            return node
        before, values = read_before(loads, [node.body], node.span)
        replace, replace_in_arm = replacers(values)
        lo = ana.simplify(tvm_ffi_map(node.min, replace))
        # a loop whose extent is 0 or negative runs 0 times (compared as signed integers)
        extent = tirx.Max(ana.simplify(tvm_ffi_map(node.extent, replace)),
                          tirx.const(0, str(node.extent.ty)))
        body = _map_arm(node.body, replace_in_arm)
        return seq(before + [tirx.For(node.loop_var, lo, extent, node.kind, body,
                                      node.thread_binding, node.annotations, node.step,
                                      node.span)])

    row_cbs = {}  # scalar tensor -> its reader -> writer CB of row offsets

    def on_rows(ev):
        """A block at rows placed by elements no ``if`` reads (TileLang's ``cu_seqlens[b]``):
        right before it, for each element, the reader reads its page into the tensor's row
        offsets CB (reader -> writer) and takes the word before the push, and the writer
        takes the page (``tt.scalar_word`` + ``tt.scalar_take``: the kernel moving the block
        holds the value, the other one just frees the page)."""
        call = ev.value
        if not isinstance(call, tvm.ir.Call) or ops.tt_op_name(call) not in (
                "tt.read_rows_to_cb", "tt.write_rows_from_cb", "tt.mask_to_cb",
                "tt.read_to_cb"):
            return ev
        first = 3 if ops.tt_op_name(call) == "tt.mask_to_cb" else 2
        given = next((g for e, g in provided if e.same_as(ev)), [])
        loads = [x for a in call.args[first:] for x in collect(a, tvm.ir.TensorLoad)
                 if is_scalar(x.source) and not any(_same_element(x, g) for g in given)]
        if not loads:
            return ev
        before, values = [], []
        for load in loads:
            if any(tvm_ffi.structural_equal(ld, load) for ld, _ in values):
                continue
            name = str(load.source.name)
            cb = next((c for t, c in row_cbs.items() if t.same_as(load.source)), None)
            if cb is None:
                cb = tirx.Var(f"{name}_rows_cb", "int32")
                new_cbs.append(tirx.Bind(cb, alloc_cb_call(1, 1, DEPTH, WORD_DTYPE,
                                                           f"{name}_rows")))
                row_cbs[load.source] = cb
            flat = ana.simplify(_flat(load))
            v = tirx.Var(f"{name}_value", "int32")
            before += [
                ops.evaluate("tt.scalar_to_cb", cb, load.source,
                             ana.simplify(tirx.FloorDiv(flat, int_imm(WORDS_PER_PAGE))),
                             span=call.span),
                tirx.Bind(v, ops.call("tt.scalar_word", cb, ana.simplify(
                    tirx.FloorMod(flat, int_imm(WORDS_PER_PAGE))), span=call.span)),
                ops.evaluate("tt.scalar_take", cb, span=call.span)]
            values.append((load, v))

        def replace(e):
            for ld, v in values:
                if tvm_ffi.structural_equal(ld, e):
                    return _as_condition_value(v, str(ld.dtype))
            return e

        return seq(before + [tirx.Evaluate(tvm_ffi_map(call, replace), ev.span)])

    # the elements an enclosing `if` condition or serial loop's bounds read: on_if / on_for
    # give the statements under them their values
    provided = []

    def walk(stmt, given):
        if isinstance(stmt, tirx.SeqStmt):
            for x in stmt.seq:
                walk(x, given)
        elif isinstance(stmt, tirx.IfThenElse):
            inner = given + [x for x in collect(stmt.condition, tvm.ir.TensorLoad)
                             if is_scalar(x.source)]
            walk(stmt.then_case, inner)
            if stmt.else_case is not None:
                walk(stmt.else_case, inner)
        elif isinstance(stmt, tirx.For):
            inner = given + [x for x in collect(stmt.min, tvm.ir.TensorLoad) +
                             collect(stmt.extent, tvm.ir.TensorLoad) if is_scalar(x.source)]
            walk(stmt.body, inner)
        elif isinstance(stmt, tirx.Evaluate):
            provided.append((stmt, given))
        else:
            for field in ("body", "block"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, tirx.Stmt):
                    walk(inner, given)

    def _same_element(a, b):
        return a.source.same_as(b.source) and ana.can_prove(
            ana.simplify(inline_binds(_flat(a), binds)) == ana.simplify(inline_binds(_flat(b), binds)))

    walk(func.body, [])
    # the row offsets first: a loop or branch around them then sees the writer's page takes
    # (work of the writer under it) and gives the writer its bounds / condition too
    body = tt_map(func.body, [(tirx.Evaluate, on_rows)], order="post")
    body = tt_map(body, [(tirx.IfThenElse, on_if), (tirx.For, on_for)], order="post")
    body = tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq)), (tvm.ir.Call, _word_select)],
                  order="post")
    body = tt_map(body, [(tirx.For, _hoist_row_words)], order="post")
    body = _share_row_words(tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post"))
    prologue, persistent = split_persistent(body)
    return func.with_body(with_persistent(new_cbs + list(prologue), persistent))


def _row_word(items, k):
    """The read ``tt.scalar_to_cb(cb, T, page)``, ``v = tt.scalar_word(cb, word)``,
    ``tt.scalar_take(cb)`` starting at ``items[k]`` as (cb, page, word, v), else None."""
    if k + 2 >= len(items) or ops.stmt_op_name(items[k]) != "tt.scalar_to_cb":
        return None
    bind, take = items[k + 1], items[k + 2]
    if not (isinstance(bind, tirx.Bind) and ops.tt_op_name(bind.value) == "tt.scalar_word"
            and ops.stmt_op_name(take) == "tt.scalar_take"):
        return None
    cb, _, page = items[k].value.args
    if not (bind.value.args[0].same_as(cb) and take.value.args[0].same_as(cb)):
        return None
    return cb, page, bind.value.args[1], bind.var


def _hoist_row_words(loop):
    """The row-offset reads (``tt.scalar_to_cb`` / ``tt.scalar_word`` / ``tt.scalar_take`` of
    ``<T>_rows``) directly in ``loop``'s body whose page and word do not change with the loop
    (no loop variable, no name bound in the body): moved before the loop, in order, so the
    reader reads such an element once, not every iteration (the grouped GEMM's offsets in
    its K loop).  Reader and writer both run the reads before the loop instead of in it, in
    the same order: their pages still pair up."""
    items = list(loop.body.seq) if isinstance(loop.body, tirx.SeqStmt) else [loop.body]
    inner = {loop.loop_var} | {b.var for b in collect(loop.body, tirx.Bind)} | \
        {f.loop_var for f in collect(loop.body, tirx.For)}
    hoisted, kept, k = [], [], 0
    while k < len(items):
        word = _row_word(items, k)
        if word is not None and not any(
                v in inner for e in (word[1], word[2])
                for v in tirx.analysis.undefined_vars(e)):
            hoisted += items[k:k + 3]
            k += 3
            continue
        kept.append(items[k])
        k += 1
    if not hoisted:
        return loop
    return seq(hoisted + [tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind, seq(kept),
                                   loop.thread_binding, loop.annotations, loop.step,
                                   loop.span)])


def _share_row_words(body):
    """A row-offset read of an element an earlier read of the same statement list already
    holds (the same CB, page and word: scalar tensors are never written) -> dropped, its
    name the earlier one's."""
    def share(s):
        items, out, seen, mapping = list(s.seq), [], [], {}
        k = 0
        while k < len(items):
            word = _row_word(items, k)
            if word is not None:
                cb, page, w, v = word
                page, w = substitute(page, mapping), substitute(w, mapping)
                same = next((u for c, p, x, u in seen if c.same_as(cb) and
                             tvm_ffi.structural_equal(p, page) and
                             tvm_ffi.structural_equal(x, w)), None)
                if same is not None:
                    mapping[v] = same
                    k += 3
                    continue
                seen.append((cb, page, w, v))
                out += [substitute(x, mapping) for x in items[k:k + 3]]
                k += 3
                continue
            out.append(substitute(items[k], mapping))
            k += 1
        return seq(out) if mapping else s

    return tt_map(body, [(tirx.SeqStmt, share)], order="post")


def _word_select(call):
    """An integer ``T.if_then_else(c, a, b)`` whose elements are now words (A0.1 kept it a
    call because it read elements: the grouped GEMM's batch chosen by ``m >= offsets[i]``)
    -> ``Select(c, a, b)``, which the kernels evaluate as C++'s ``c ? a : b``."""
    op = getattr(call, "op", None)
    if isinstance(op, tvm.ir.Op) and op.name in ("tirx.if_then_else", "prim.if_then_else") \
            and len(call.args) == 3 and \
            str(call.ty).startswith(("int", "uint", "bool")) and \
            not collect(call, tvm.ir.TensorLoad):
        return tirx.Select(*call.args)
    return call


def _fold_bool_compares(expr):
    """``b != False`` / ``b == True`` -> ``b``, ``b == False`` / ``b != True`` -> ``!b`` for a
    bool ``b`` (a bool element compared with 0, ``if Mask[...] != 0:``, is ``(v != 0) !=
    False`` once its word ``v`` stands in; TVMScript would print that as a chained comparison,
    which parses back as another expression)."""

    def fold(e):
        for x, c in ((e.a, e.b), (e.b, e.a)):
            if isinstance(c, tirx.IntImm) and str(c.ty) == "bool" and str(x.ty) == "bool":
                keep = bool(c.value) == isinstance(e, tirx.EQ)
                return x if keep else tirx.Not(x)
        return e

    return tvm_ffi.structural_map(expr, [(tirx.NE, fold), (tirx.EQ, fold)], order="post")


def _map_arm(stmt, fn):
    """``stmt`` with its element loads mapped by ``fn`` (the offsets of its tt ops' operands
    and its masks' conditions)."""
    return tvm_ffi.structural_map(stmt, [(tvm.ir.TensorLoad, fn)], order="post")


def tvm_ffi_map(expr, fn):
    return tvm_ffi.structural_map(expr, [(tvm.ir.TensorLoad, fn)], order="post")
