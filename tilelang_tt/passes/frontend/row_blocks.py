"""A0.0 CoarsenRowBlocksTT: blocks of fewer than 32 rows (or columns) become blocks of 32.

Requires: frontend TIR.  It runs first, so that no later stage (and no IR dump or round trip
of one) sees a one-row block: TVMScript prints a one-element fragment as a scalar it cannot
parse back.

TileLang's norm and online-softmax examples give each block one row of the input
(``T.Kernel(T.ceildiv(M, blk_m))`` with ``blk_m = 1``, block buffers ``(blk_m, N)`` and
``(blk_m,)``, tensor rows ``bx * blk_m + i``).  A Tensix tile has 32 rows, so a block of one
row cannot be a circular buffer of tiles.  When every row of a block is computed on its own,
``32 / b`` consecutive blocks of ``b`` rows are one block of 32 rows running the same per-row
operations, and that is what this pass makes of them.

Columns are handled as rows (``RowSlots.kind``, which only picks the words of the messages
and the record): an axis whose tensor accesses move the last dimension of a tensor of rank 2
or more (``A[by * 32 + i, bx * 16 + j]``, TileLang's ``block_N = 16`` and 16x16 / 8x8 blocks)
has blocks of ``b`` columns; the conditions below hold for them word for word (a GEMM's
columns are C's and B's N, as ``transpose_B`` places it), and the record is
``tt.col_coarsen`` (``{"axis", "columns", "factor"}``).
A 2-D block of 16x16 has both, each axis coarsened on its own.  Integer bindings of index
expressions that use a block index (``idx_i = bx * block_M + i``) are substituted into their
uses first (only when the kernel has some; the kernel is left as it was when no axis is
coarsened), and a comparison of a tensor index ``g * b + i`` with a bound in a branch
condition (TileLang's ``if idx_i < M`` guard) is a use of the row ``i``, rewritten to
``g * 32 + i < M``.

Decided from the IR structure alone, per grid axis ``g`` (a ``blockIdx`` launch of constant
extent ``G``):

* **Candidate.** Every tensor access that uses ``g`` uses it in one index only, as
  ``g * b + r`` with one constant ``b < 32`` dividing 32 (``analysis/row_slots.py`` finds
  them), and ``g`` feeds no scalar carried across loop iterations (A0.1's mutable state,
  directly or through bound names: each block then has a history of its own).  Otherwise the
  pass leaves the kernel alone.
* **Row dimensions** are found by propagation from those tensor dimensions
  (``row_slots.RowSlots``): through ``T.copy`` (dimensions aligned from the right), reductions
  (the dimensions kept), ``T.gemm`` (A's M and C's rows; B's N and C's columns, as the
  transpose flags place them) and ``T.Parallel`` nests (a
  loop variable that indexes a row dimension, or is the ``r`` of a tensor's ``g * b + r``, is
  a row variable; every dimension it indexes is a row dimension).  When no block buffer has
  its rows in one of its last two (or its only) dimension, no ``T.Parallel`` index runs over
  rows and no tensor-to-tensor ``T.copy`` moves them,
  the pass leaves the kernel alone (a leading dimension of a rank-3 block is a batch).
* **Rows stay apart.** No row dimension is reduced, a GEMM's K dimension (of A or B), an
  operand of another tile op (a transpose), copied from or to a tensor dimension that does
  not move with ``g``, or indexed in a ``T.Parallel`` nest by anything but a row variable
  (with ``b = 1``, the constant 0 in a nest that has a row variable is that variable: it has
  the value 0 there); a row variable is used only as a whole index (or as the ``r`` of a
  tensor's ``g * b + r``); tile ops cover whole rows; a store in a nest depends on
  every row variable of the nest (else the rows would write one element: ``acc[j] +=
  x[i, j]``); ``g`` appears only in those tensor indices and in guards comparing them
  with a bound (a binding ``row = bx * blk_m + k`` is seen through, and ``k`` must then be a
  row variable); row dimensions and row variables have extent ``b``, a block buffer has one row
  dimension, one of its last two (or its only one); the grid covers a multiple of 32 rows
  (``G * b``), or every tensor whose rows move with ``g`` has at most ``G * b`` of them (the
  last 32-row block then reaches past their ends only: A0.3.1 pads them with zeros and the
  host crops them, as TileLang's grid simply has no block there).  A failed condition is a ``TTLayoutError`` naming the buffer or op, its line and
  what to change.

Guarantees: the launch of ``g`` has extent ``ceil(G * b / 32)``; row dimensions and row variables
have extent 32 (block buffers are new buffers with the user's names); tensor row indices are
``g * 32 + r``; each row computes what it computed before.  ``tt.row_coarsen`` records
``{"axis": thread tag, "rows": b, "factor": 32 / b}`` per coarsened axis.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ... import attrs
from ...errors import TTVerifyError
from ..analysis.row_slots import COL_KIND, COMPARISONS, ROWS, RowSlots, linear_in
from .scalars import inline_index_binds, scalars_to_binds, state_scalars
from ..common import (BLOCK_TAGS, buffer_dtype, buffer_scope, buffer_shape, collect, int_imm,
                      launch_attrs, replace_tile_call, substitute, tt_map, tt_pass, uses_var)


def _feeds_state(body, g) -> bool:
    """``g`` reaches a scalar carried across loop iterations (A0.1's mutable state: stream-K's
    ``start_iter[0] = pid * full_iters + ...``), directly or through bound names.  Each block
    then has a history of its own, which one block of 32 rows cannot run for 32 / b blocks at
    once: the axis is left as written (A0.5.1 pads its blocks to 32 rows, which move row by
    row at rows off a tile boundary)."""
    binds = scalars_to_binds(body)
    state = state_scalars(binds)
    if not state:
        return False
    carriers = [g]
    for b in collect(binds, tirx.Bind):
        if any(uses_var(b.value, v) for v in carriers):
            carriers.append(b.var)
    return any(any(st.buffer.same_as(s) for s in state)
               and any(uses_var(st.value, v) for v in carriers)
               for st in collect(binds, tirx.BufferStore))


def _coarsen_axis(body, launch):
    """(body, record) with the row blocks along ``launch``'s axis coarsened, or None when the
    axis has none."""
    facts = RowSlots.of(body, launch)
    if facts is None or _feeds_state(body, launch.node.var):
        return None
    facts.check()
    b, g = facts.b, facts.g
    f = ROWS // b
    new_bufs = {}
    for key, buf in facts.row_buffers().items():
        dims = facts.row_dims(buf)
        shape = [ROWS if k in dims else d for k, d in enumerate(buffer_shape(buf))]
        new_bufs[key] = tirx.decl_buffer(shape, buffer_dtype(buf), buf.name,
                                         scope=buffer_scope(buf))
    g_new = tirx.Var(g.name, g.ty.dtype)

    def global_index(e):
        coef, base = linear_in(e, g)
        return g_new * ROWS + base

    def region(r):
        src = r.source
        key = src.__chandle__()
        if key in new_bufs:
            dims = facts.row_dims(src)
            nb = new_bufs[key]
            return nb[tuple(slice(0, ROWS) if k in dims else slice(x.min, x.min + x.extent)
                            for k, x in enumerate(r.region))]
        d = facts.global_dim(r)
        if d is None:
            return r
        ranges = []
        for k, x in enumerate(r.region):
            if k == d:
                lo = global_index(x.min)
                ranges.append(slice(lo, lo + ROWS))
            else:
                ranges.append(slice(x.min, x.min + x.extent))
        return src[tuple(ranges)]

    def indices(buf, idx):
        key = buf.__chandle__()
        if key in new_bufs:
            return new_bufs[key], list(idx)
        d = facts.global_index_dim(buf, idx)
        if d is None:
            return buf, list(idx)
        return buf, [global_index(e) if k == d else e for k, e in enumerate(idx)]

    def on_load(ld):
        buf, idx = indices(ld.source, ld.indices)
        if buf.same_as(ld.source) and all(a.same_as(c) for a, c in zip(idx, ld.indices)):
            return ld
        return buf[tuple(idx)]

    def on_store(st):
        buf, idx = indices(st.buffer, st.indices)
        return tirx.BufferStore(buf, st.value, idx, st.span)

    def on_call(call):
        args = [region(a) if isinstance(a, tvm.ir.TensorRegion) else a for a in call.args]
        if all(a.same_as(c) for a, c in zip(args, call.args) if hasattr(a, "same_as")):
            return call
        return replace_tile_call(call, args=args)

    def on_for(loop):
        if not facts.is_row_var(loop.loop_var):
            return loop
        return tirx.For(loop.loop_var, loop.min, int_imm(ROWS, str(loop.extent.ty.dtype)),
                        loop.kind, loop.body, loop.thread_binding, loop.annotations, loop.step,
                        loop.span)

    def on_compare(cmp):
        # a guard on a tensor row index (RowSlots accepted only those uses of g here)
        sides = [global_index(e) if uses_var(e, g) else e for e in (cmp.a, cmp.b)]
        return type(cmp)(*sides)

    def on_if(branch):
        cond = tt_map(branch.condition, [(COMPARISONS, on_compare)])
        return tirx.IfThenElse(cond, branch.then_case, branch.else_case, branch.span)

    def on_alloc(alloc):
        nb = new_bufs.get(alloc.buffer.__chandle__())
        return alloc if nb is None else tirx.AllocBuffer(nb, alloc.annotations, alloc.span)

    inner = tt_map(_const_rows(launch.body, facts), [
        (tvm.ir.TensorLoad, on_load), (tirx.BufferStore, on_store),
        (tirx.TilePrimitiveCall, on_call), (tirx.For, on_for), (tirx.AllocBuffer, on_alloc),
        (tirx.IfThenElse, on_if)])
    if any(v.same_as(g) for v in collect(inner, tvm.ir.Var)):
        # RowSlots flags every use of g outside tensor row indices; one it missed is a bug
        raise TTVerifyError(f"CoarsenRowBlocksTT: {g.name} is left outside the tensor row "
                            "indices it rewrote")
    inner = substitute(inner, {g_new: g})
    blocks = (facts.grid * b + ROWS - 1) // ROWS  # the last one partial past the tensors
    iv = tirx.IterVar(tvm.ir.Range(0, blocks), g, launch.node.iter_type, launch.node.thread_tag)
    new_launch = tirx.AttrStmt(iv, launch.attr_key, int_imm(blocks, str(launch.value.ty.dtype)),
                               inner, launch.span)
    body = tt_map(body, [(tirx.AttrStmt, lambda a: new_launch if a.same_as(launch) else a)],
                  order="pre")
    return body, {"axis": str(launch.node.thread_tag), facts.kind: b, "factor": f}


def _const_rows(body, facts):
    """With one-row blocks, a constant 0 indexing a row dimension inside a T.Parallel nest
    that has a row variable is that variable (its only value was 0): write it so."""
    if facts.b != 1:
        return body  # RowSlots.check refused constant row indices

    def fix(buf, idx, var):
        dims = facts.row_dims(buf) if buf.__chandle__() in facts.row_buffers() else set()
        return [var if k in dims and isinstance(e, tvm.tirx.IntImm) else e
                for k, e in enumerate(idx)]

    def on_for(loop):
        if loop.kind != tirx.ForKind.PARALLEL or not facts.is_row_var(loop.loop_var):
            return loop
        v = loop.loop_var
        inner = tt_map(loop.body, [
            (tvm.ir.TensorLoad, lambda ld: ld.source[tuple(fix(ld.source, ld.indices, v))]),
            (tirx.BufferStore, lambda st: tirx.BufferStore(
                st.buffer, st.value, fix(st.buffer, st.indices, v), st.span))])
        return tirx.For(v, loop.min, loop.extent, loop.kind, inner, loop.thread_binding,
                        loop.annotations, loop.step, loop.span)

    return tt_map(body, [(tirx.For, on_for)])


def coarsen_row_blocks(body):
    """(body, records): every grid axis with blocks of fewer than 32 rows (or columns)
    coarsened (module docstring).  Index bindings that use a block index (``idx_i = bx *
    block_M + i``) are seen through: when the kernel has some, it is analysed (and, when an
    axis is coarsened, rewritten) with them substituted into their uses."""
    block_vars = [a.node.var for a in launch_attrs(body)]
    binds = scalars_to_binds(body)
    prepared = inline_index_binds(binds, block_vars)
    if prepared is not binds:  # the kernel has index bindings
        done, records = _coarsen_axes(prepared)
        if records:
            return done, records
        return body, []
    return _coarsen_axes(body)


def _coarsen_axes(body):
    records = []
    for tag in BLOCK_TAGS:
        launch = next((a for a in launch_attrs(body) if str(a.node.thread_tag) == tag),
                      None)
        if launch is None:
            continue
        done = _coarsen_axis(body, launch)
        if done is not None:
            body, record = done
            records.append(record)
    return body, records


@tt_pass("CoarsenRowBlocksTT")
def CoarsenRowBlocksTT(func, mod, ctx):
    """Blocks of fewer than 32 rows coarsened to 32 rows (module docstring)."""
    body, records = coarsen_row_blocks(func.body)
    if not records:
        return func
    func = func.with_body(body)
    rows = [r for r in records if COL_KIND not in r]
    cols = [r for r in records if COL_KIND in r]
    if rows:
        func = func.with_attr(attrs.ROW_COARSEN, rows)
    if cols:
        func = func.with_attr(attrs.COL_COARSEN, cols)
    return func
