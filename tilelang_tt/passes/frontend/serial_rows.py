"""A0.0.1 SerialRowsToBlockTT: a serial walk over a block's rows becomes the block itself.

Requires: frontend TIR (A0.0 ran: it leaves such kernels alone, their block index moves
``n >= 32`` rows).

TileLang's layernorm backward (``examples/norm/layernorm.py``, ``_layernorm_bwd``) gives each
block ``blk_m = 32`` rows but walks them one at a time::

    for k in T.serial(blk_m):
        row = bx * blk_m + k
        T.copy(X[row, 0], X_smem)                    # X_smem: (1, D)
        m_v = Mean[row]                              # a scalar read of a 1-D tensor
        for i, j in T.Parallel(1, D):
            x_hat[i, j] = (X_smem[i, j] - m_v) * ...
        T.reduce_sum(x_hat, s, dim=1)                # s: (1,)
        for i, j in T.Parallel(1, D):
            ... s[0] ...
            acc[j] += f(i, j)                        # summed over the rows
        T.copy(DX_smem, DX[row, 0])

Its iterations are independent but for the sums they carry (``acc[j] += ...``), so it is the
same computation as the block processed as ``n`` rows at once, which is what a Tensix core can
run (a block of one row is no block of tiles).  Decided from the IR structure alone: a serial
loop ``k`` (from 0, constant extent ``n``) inside a launch of axis ``g`` is a *row walk* when a
``T.copy`` in its body moves one row ``g * n + k`` of a tensor (integer bindings of block
indices seen through) to or from a block buffer whose first dimension is 1.  Other loops are
left alone.  Then:

* **One-row buffers** - block buffers the body writes (not by a fold, below) whose first
  dimension is 1 - become ``(n, ...)`` buffers (same names): dimension 0 holds the row.  Each
  must be written in the body before it is read there (nothing carried from one row to the
  next) and not be used outside the loop.
* **Tensor regions** indexed ``g * n + k`` (extent 1) become ``g * n : g * n + n``; block regions
  of one-row buffers cover their ``n`` rows.  Only ``T.copy``, ``T.fill`` / ``T.clear`` and
  reductions along a dimension other than 0 may touch one-row buffers.
* **Scalar reads** ``v = T_[g * n + k]`` of a 1-D tensor (a binding in the body's statement
  list) become an ``[n]`` fragment named ``v`` copied from ``T_[g * n : g * n + n]`` (a column
  vector); every use of ``v`` must be inside a ``T.Parallel`` nest, where it reads the nest's
  row.
* **``T.Parallel`` nests** get a row loop of extent ``n``: their outer loop when its extent is 1,
  else a new outer loop.  A one-row buffer's row index (that loop's variable or the constant 0)
  becomes the row; a tensor index ``g * n + k`` becomes ``g * n + row``.
* **Folds across rows** ``acc[j] = acc[j] op e`` (``op`` ``+``, ``max``, ``min``; ``acc`` a 1-D
  block buffer the body writes only so, indexed by the nest's other loop, covering it) become
  ``terms[row, j] = e`` in a new ``[n, len(acc)]`` fragment ``<acc>_terms`` and, after the nest,
  ``reduce_<op>(terms, acc, dim=0, clear=False)``: the column sums added into the carried
  accumulator.  Numerics: a sum over the rows is regrouped (the ``n`` terms summed by the
  reduction, then added to ``acc``, instead of ``n`` additions in row order).

Anything else in a row walk (a one-row buffer read before the body writes it, or after the
loop; another block buffer written in the body; a reduction over the rows; another tile op on
a one-row buffer; a scalar read used outside a ``T.Parallel`` nest or of a tensor of rank 2 or
more; a read-only buffer indexed by the row; ``k`` used elsewhere; a branch or an inner loop
in the body; ``n`` not a multiple of 32) is a ``TTLayoutError`` naming the buffer or variable,
its line and what to change.

Guarantees: no row walk is left; the loop is replaced by its rewritten body; the kernel is the
one written with ``n``-row blocks (``testing/test_serial_rows.py`` checks it structurally
against the hand-written one).  ``tt.serial_rows`` records ``{"axis", "rows"}`` per loop.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ... import attrs
from ...errors import TTLayoutError, source_span
from ..analysis.row_slots import ROWS, linear_in
from ..common import (buffer_dtype, buffer_scope, buffer_shape, collect, int_imm, int_or_none,
                      launch_attrs, replace_tile_call, seq, simplify, stmts_of, tile_dst_buffer,
                      tt_map, tt_pass, uses_var, with_tile_span)
from .parallel_fold import fold_of
from .scalars import inline_index_binds, scalars_to_binds

_BLOCK_SCOPES = ("shared", "local.fragment")
_REDUCES = ("tirx.tile.sum", "tirx.tile.max", "tirx.tile.min")
_ROW_OPS = ("tirx.tile.copy", "tirx.tile.fill") + _REDUCES


def _is_block(buf) -> bool:
    return buffer_scope(buf) in _BLOCK_SCOPES


def _regions(call):
    return [a for a in call.args if isinstance(a, tvm.ir.TensorRegion)]


def _accesses(node):
    """(buffer, indices or None, span-carrier) of every load, store and tile region."""
    out = []
    for ld in collect(node, tvm.ir.TensorLoad):
        out.append((ld.source, list(ld.indices)))
    for st in collect(node, tirx.BufferStore):
        out.append((st.buffer, list(st.indices)))
    for r in collect(node, tvm.ir.TensorRegion):
        out.append((r.source, [x.min for x in r.region]))
    return out


class _RowWalk:
    """One serial loop over the rows of the blocks of axis ``g`` (module docstring)."""

    def __init__(self, launch_body, loop, g, n):
        self.body, self.loop, self.g, self.n = launch_body, loop, g, n
        self.k = loop.loop_var
        self.base = g * int_imm(n, str(g.ty.dtype))
        self.allocs = []  # new AllocBuffers, in order
        self.row_bufs = {}  # old buffer -> new (n, ...) buffer
        self.accs = {}  # accumulator -> span of its first fold
        self.vectors = {}  # scalar-read variable -> [n] fragment

    # ---- facts ---------------------------------------------------------------------------
    def is_row_index(self, e) -> bool:
        coef, base = linear_in(e, self.g)
        if coef is None or int_or_none(simplify(coef)) != self.n:
            return False
        return tvm_ffi.structural_equal(simplify(base), self.k)

    def error(self, message, span, hint):
        return TTLayoutError(f"a serial loop over the rows of a block "
                             f"(`for {self.k.name} in T.serial({self.n})`, rows "
                             f"`{self.g.name} * {self.n} + {self.k.name}`): {message}",
                             span=span if span is not None else self.loop.span, hint=hint)

    def classify(self):
        """Sort the block buffers the body writes into one-row buffers and accumulators."""
        if self.n % ROWS:
            raise self.error(f"it walks {self.n} rows, not a multiple of {ROWS}: the rows are "
                             "computed as one block of whole tiles", None,
                             f"use a row block (blk_m) that is a multiple of {ROWS}")
        for call in collect(self.loop.body, tirx.TilePrimitiveCall):
            if call.op.name in _REDUCES:
                src = _regions(call)[1].source
                if _is_block(src) and buffer_shape(src)[0] == 1 and \
                        0 in [int(d) for d in call.args[2]]:
                    raise self.error(
                        f"`{_op(call.op.name)}` reduces {src.name} over its rows (dimension "
                        "0): the rows meet", call.span,
                        "fold per-row values into a sum with `acc[j] += ...` in a "
                        "T.Parallel nest")
        writes = {}  # buffer -> [(kind, span)]
        for st in collect(self.loop.body, tirx.BufferStore):
            if _is_block(st.buffer):
                kind = "fold" if fold_of(st) is not None and len(buffer_shape(st.buffer)) == 1 \
                    and buffer_shape(st.buffer)[0] != 1 else "store"
                writes.setdefault(st.buffer, []).append((kind, st.span))
        for call in collect(self.loop.body, tirx.TilePrimitiveCall):
            dst = tile_dst_buffer(call)
            if dst is not None and _is_block(dst):
                writes.setdefault(dst, []).append(("tile", call.span))
        for buf, ws in writes.items():
            kinds = {w for w, _ in ws}
            if kinds == {"fold"}:
                self.accs[buf] = ws[0][1]
            elif "fold" not in kinds and buffer_shape(buf)[0] == 1:
                shape = [self.n] + list(buffer_shape(buf))[1:]
                self.row_bufs[buf] = tirx.decl_buffer(shape, buffer_dtype(buf), buf.name,
                                                      scope=buffer_scope(buf))
            else:
                raise self.error(
                    f"{buf.name} (shape {list(buffer_shape(buf))}) is written in every "
                    "iteration but is neither a one-row buffer (first dimension 1) nor a sum "
                    "carried across the rows (`acc[j] += ...` alone)", ws[0][1],
                    f"give {buf.name} a first dimension of 1 (one row), or only fold "
                    "values into it")
        self._check_order()
        self._check_outside()

    def _check_outside(self):
        outside = tt_map(self.body, [(tirx.For, lambda lp: tirx.Evaluate(int_imm(0))
                                      if lp.same_as(self.loop) else lp)], order="pre")
        for buf in self.row_bufs:
            used = [a for a in _accesses(outside) if a[0].same_as(buf)]
            if used:
                raise self.error(
                    f"the one-row buffer {buf.name} is used outside the loop (there it holds "
                    "one row: which one depends on the walk)", self._span_of(outside, buf),
                    f"use {buf.name} only inside the loop, or give it a row per row")
        for acc in self.accs:
            reads = [ld for ld in collect(self.loop.body, tvm.ir.TensorLoad)
                     if ld.source.same_as(acc)]
            folds = [st for st in collect(self.loop.body, tirx.BufferStore)
                     if st.buffer.same_as(acc)]
            if len(reads) != len(folds):
                raise self.error(
                    f"the sum {acc.name} carried across the rows is read in the loop "
                    "besides its own update (a row would see the rows before it)",
                    self.accs[acc], f"read {acc.name} only after the loop")

    def _span_of(self, node, buf):
        for st in collect(node, tirx.BufferStore):
            if st.buffer.same_as(buf):
                return st.span
        for call in collect(node, tirx.TilePrimitiveCall):
            if any(r.source.same_as(buf) for r in _regions(call)):
                return call.span
        return None

    def _check_order(self):
        written = set()
        for s in stmts_of(self.loop.body):
            reads = {ld.source for ld in collect(s, tvm.ir.TensorLoad)}
            for call in collect(s, tirx.TilePrimitiveCall):
                dst = tile_dst_buffer(call)
                reads |= {r.source for r in _regions(call) if not r.source.same_as(dst)}
            stores = {st.buffer for st in collect(s, tirx.BufferStore)}
            stores |= {tile_dst_buffer(c) for c in collect(s, tirx.TilePrimitiveCall)}
            for buf in self.row_bufs:
                if buf in reads and buf not in written and not self._written_first(s, buf):
                    raise self.error(
                        f"the one-row buffer {buf.name} is read before the iteration writes "
                        "it (a row would see the row before it)", self._span_of(s, buf),
                        f"write {buf.name} in every iteration before reading it")
            written |= {b for b in stores if b is not None}

    @staticmethod
    def _written_first(stmt, buf):
        """A T.Parallel nest that stores ``buf`` before any statement of it reads it."""
        if not isinstance(stmt, tirx.For):
            return False
        inner = stmt
        while isinstance(inner, tirx.For):
            inner = inner.body
        for s in stmts_of(inner):
            is_store = isinstance(s, tirx.BufferStore) and s.buffer.same_as(buf)
            if any(ld.source.same_as(buf) for ld in collect(s.value if is_store else s,
                                                               tvm.ir.TensorLoad)):
                return False
            if is_store:
                return True
        return False

    # ---- rewrite -------------------------------------------------------------------------
    def rewrite(self):
        out = []
        for s in stmts_of(self.loop.body):
            if isinstance(s, tirx.Bind):
                out.extend(self._bind(s))
            elif isinstance(s, tirx.Evaluate) and isinstance(s.value, tirx.TilePrimitiveCall):
                out.append(tirx.Evaluate(self._tile(s.value)))
            elif isinstance(s, tirx.TilePrimitiveCall):
                out.append(self._tile(s))
            elif isinstance(s, tirx.For) and s.kind == tirx.ForKind.PARALLEL:
                out.extend(self._nest(s))
            elif isinstance(s, tirx.AllocBuffer):
                out.append(s)
            else:
                raise self.error(f"the statement `{_line(s)}` in its body is not a copy, a "
                                 "fill, a reduction, a scalar read or a T.Parallel nest",
                                 getattr(s, "span", None),
                                 "keep the loop body to those statements")
        stmt = seq(self.allocs + out)
        for var in self.vectors:
            if any(v.same_as(var) for v in collect(stmt, tvm.ir.Var)):
                user = next((c for c in collect(stmt, tirx.TilePrimitiveCall)
                             if uses_var(c, var)), None)
                raise self.error(f"the per-row scalar {var.name} is used outside a T.Parallel "
                                 "nest", getattr(user, "span", None),
                                 f"use {var.name} inside a T.Parallel nest over the row")
        left = [v for v in collect(stmt, tvm.ir.Var) if v.same_as(self.k)]
        if left:
            raise self.error(f"the row index {self.k.name} is used outside tensor row indices",
                             self.loop.span, f"use {self.k.name} only in tensor row indices")
        return stmt

    def _bind(self, b):
        v = b.value
        if not (isinstance(v, tvm.ir.TensorLoad) and not _is_block(v.source) and
                any(self.is_row_index(e) for e in v.indices)):
            if uses_var(v, self.k) or any(uses_var(v, x) for x in self.vectors):
                raise self.error(f"the binding {b.var.name} uses the row", b.span,
                                 "compute per-row values in a T.Parallel nest")
            return [b]
        if len(v.indices) != 1:
            raise self.error(f"the scalar read {b.var.name} = {v.source.name}[...] reads a "
                             f"tensor of rank {len(v.indices)}", b.span,
                             "read per-row values from a 1-D tensor")
        frag = tirx.decl_buffer([self.n], buffer_dtype(v.source), b.var.name,
                                scope="local.fragment")
        self.vectors[b.var] = frag
        self.allocs.append(tirx.AllocBuffer(frag, span=source_span(b.span)))
        src = v.source[self.base:self.base + self.n]
        import tvm.tirx.operator as tirx_op

        copy = with_tile_span(tirx_op.Copy(frag[0:self.n], src, workspace={}, config={},
                                           dispatch=None, scope=None), b.span)
        return [copy]

    def _region(self, r, call):
        buf = r.source
        if buf in self.row_bufs:
            first = r.region[0]
            if int_or_none(first.min) != 0 or int_or_none(first.extent) != 1:
                raise self.error(f"{buf.name}'s row is indexed by an expression",
                                 call.span, "use the whole row")
            nb = self.row_bufs[buf]
            return nb[tuple([slice(0, self.n)] + [slice(x.min, x.min + x.extent)
                                                   for x in list(r.region)[1:]])]
        if _is_block(buf):
            return r
        dims = [d for d, x in enumerate(r.region) if self.is_row_index(x.min)]
        if not dims:
            if any(uses_var(x.min, self.k) for x in r.region):
                raise self.error(f"{buf.name} is indexed by the row in an expression",
                                 call.span, "index the tensor's rows with the row itself")
            return r
        d = dims[0]
        if int_or_none(r.region[d].extent) != 1:
            raise self.error(f"the region of {buf.name} takes more than the loop's row",
                             call.span, "copy one row per iteration")
        return buf[tuple(slice(self.base, self.base + self.n) if e == d else
                         slice(x.min, x.min + x.extent) for e, x in enumerate(r.region))]

    def _tile(self, call):
        name = call.op.name
        touches = any(r.source in self.row_bufs for r in _regions(call))
        if touches and name not in _ROW_OPS:
            row = next(r.source.name for r in _regions(call) if r.source in self.row_bufs)
            raise self.error(f"`{_op(name)}` on the one-row buffer {row} is not a copy, a "
                             "fill or a reduction", call.span,
                             "compute it elementwise in a T.Parallel nest")
        if name in _REDUCES:
            src = _regions(call)[1].source
            dims = [int(d) for d in call.args[2]]
            if src in self.row_bufs and 0 in dims:
                raise self.error(f"`{_op(name)}` reduces {src.name} over its rows (dimension "
                                 "0): the rows meet", call.span,
                                 "fold per-row values into a sum with `acc[j] += ...` in a "
                                 "T.Parallel nest")
        args = [self._region(a, call) if isinstance(a, tvm.ir.TensorRegion) else a
                for a in call.args]
        return replace_tile_call(call, args=args)

    def _nest(self, loop):
        if int_or_none(loop.extent) == 1 and int_or_none(loop.min) == 0:
            rv, inner, span = loop.loop_var, loop.body, loop.span
        else:
            rv, inner, span = tirx.Var("i", "int32"), loop, loop.span
        loops = []  # the nest's other loops
        node = inner
        while isinstance(node, tirx.For) and node.kind == tirx.ForKind.PARALLEL:
            loops.append(node)
            node = node.body
        after, folds = [], []

        def row_idx(buf, idx, span_):
            first = idx[0]
            if not (first.same_as(rv) or int_or_none(first) == 0):
                raise self.error(f"{buf.name}'s row is indexed by `{first}`", span_,
                                 "index the one-row buffer's row with the nest's row loop or 0")
            if any(uses_var(e, rv) for e in idx[1:]):
                raise self.error(f"{buf.name} is indexed by the row in a column", span_,
                                 "index columns with column loops")
            return [rv] + list(idx[1:])

        def tensor_idx(buf, idx, span_):
            out = []
            for e in idx:
                if self.is_row_index(e):
                    out.append(self.base + rv)
                elif uses_var(e, self.k) or uses_var(e, rv):
                    raise self.error(f"{buf.name} is indexed by the row in an expression",
                                     span_, "index the tensor's rows with the row itself")
                else:
                    out.append(e)
            return out

        def on_load(ld):
            buf = ld.source
            if buf in self.row_bufs:
                return self.row_bufs[buf][tuple(row_idx(buf, list(ld.indices), span))]
            if not _is_block(buf):
                return buf[tuple(tensor_idx(buf, list(ld.indices), span))]
            if any(buf.same_as(f) for f in self.vectors.values()):
                return ld
            if any(uses_var(e, rv) for e in ld.indices):
                raise self.error(f"{buf.name}, which the loop only reads, is indexed by the "
                                 "row", span, f"give {buf.name} no row index (it is the same "
                                 "for every row)")
            return ld

        def on_var(v):
            frag = self.vectors.get(v)
            return v if frag is None else frag[rv]

        def on_store(st):
            buf = st.buffer
            if buf in self.accs:
                folded = fold_of(st)
                cols = [lp for lp in loops if not lp.loop_var.same_as(rv)]
                if folded is None or len(st.indices) != 1 or len(cols) != 1 or \
                        not st.indices[0].same_as(cols[0].loop_var) or \
                        int_or_none(cols[0].extent) != buffer_shape(buf)[0]:
                    raise self.error(f"the update of {buf.name} is not a fold of the row's "
                                     "terms over a nest's column loop covering it", st.span,
                                     f"write `{buf.name}[j] += ...` in a T.Parallel(1, N) nest")
                op_name, term = folded
                terms = self._terms(buf, op_name, after, st.span, folds)
                return tirx.BufferStore(terms, term, [rv, st.indices[0]], st.span)
            if buf in self.row_bufs:
                return tirx.BufferStore(self.row_bufs[buf], st.value,
                                        row_idx(buf, list(st.indices), st.span), st.span)
            if not _is_block(buf):
                return tirx.BufferStore(buf, st.value, tensor_idx(buf, list(st.indices),
                                                                   st.span), st.span)
            return st

        body = tt_map(inner, [(tvm.ir.Var, on_var), (tvm.ir.TensorLoad, on_load),
                              (tirx.BufferStore, on_store)], order="post")
        nest = tirx.For(rv, int_imm(0), int_imm(self.n), tirx.ForKind.PARALLEL, body, span=span)
        return folds + [nest] + after

    def _terms(self, acc, op_name, after, span, folds):
        """A new ``[n, len(acc)]`` fragment of the nest's terms for ``acc`` (allocated before
        the nest) and its ``dim=0`` reduction into ``acc`` (after it)."""
        if any(a.buffer.name == f"{acc.name}_terms" for a in folds):
            raise self.error(f"{acc.name} is folded twice in one T.Parallel nest", span,
                             f"fold the sum of the terms into {acc.name} once")
        terms = tirx.decl_buffer([self.n, buffer_shape(acc)[0]], buffer_dtype(acc),
                                 f"{acc.name}_terms", scope="local.fragment")
        import tvm.tirx.operator as tirx_op

        m = buffer_shape(acc)[0]
        reduce = getattr(tirx_op, op_name)(acc[0:m], terms[0:self.n, 0:m], (0,), True,
                                           workspace={}, config={}, dispatch=None, scope=None)
        folds.append(tirx.AllocBuffer(terms, span=source_span(span)))
        after.append(with_tile_span(reduce, span))
        return terms


def _line(stmt) -> str:
    text = str(stmt).strip().splitlines()
    return text[0] if text else type(stmt).__name__


def _op(name: str) -> str:
    return name.split(".")[-1]


def _moves_a_row(walk, call) -> bool:
    """``call`` copies the loop's row of a tensor (``g * n + k``, one row) to or from a block
    buffer of one row (first dimension 1): what makes the loop a walk over the block's rows."""
    if call.op.name != "tirx.tile.copy":
        return False
    regions = _regions(call)
    tensor_row = any(not _is_block(r.source) and any(
        walk.is_row_index(x.min) and int_or_none(x.extent) == 1 for x in r.region)
        for r in regions)
    one_row = any(_is_block(r.source) and buffer_shape(r.source)[0] == 1 for r in regions)
    return tensor_row and one_row


def _row_walks(body):
    """(launch, loop, n) of every serial loop over a block's rows."""
    found = []
    for launch in launch_attrs(body):
        g = launch.node.var
        if int_or_none(launch.value) is None:
            continue
        for loop in collect(launch.body, tirx.For):
            n = int_or_none(loop.extent)
            if loop.kind != tirx.ForKind.SERIAL or int_or_none(loop.min) != 0 or n is None \
                    or n < 2:
                continue
            walk = _RowWalk(launch.body, loop, g, n)
            if any(_moves_a_row(walk, call)
                   for call in collect(loop.body, tirx.TilePrimitiveCall)):
                found.append(walk)
    return found


def serial_rows_to_block(body):
    """(body, records): every row walk rewritten (module docstring); ``body`` unchanged and
    no records when the kernel has none."""
    block_vars = [a.node.var for a in launch_attrs(body)]
    prepared = inline_index_binds(scalars_to_binds(body), block_vars)
    walks = _row_walks(prepared)
    if not walks:
        return body, []
    records = []
    for walk in walks:
        walk.body = next(a.body for a in launch_attrs(prepared) if a.node.var.same_as(walk.g))
        walk.classify()
        new = walk.rewrite()

        def on_alloc(a, walk=walk):
            nb = walk.row_bufs.get(a.buffer)
            return a if nb is None else tirx.AllocBuffer(nb, a.annotations, source_span(a.span))

        prepared = tt_map(prepared, [(tirx.For, lambda lp, walk=walk, new=new:
                                      new if lp.same_as(walk.loop) else lp),
                                     (tirx.AllocBuffer, on_alloc)], order="pre")
        records.append({"axis": str(next(a.node.thread_tag for a in launch_attrs(prepared)
                                          if a.node.var.same_as(walk.g))), "rows": walk.n})
    prepared = tt_map(prepared, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")
    return prepared, records


@tt_pass("SerialRowsToBlockTT")
def SerialRowsToBlockTT(func, mod, ctx):
    """A serial loop over a block's rows -> the block's rows at once (module docstring)."""
    body, records = serial_rows_to_block(func.body)
    if not records:
        return func
    return func.with_body(body).with_attr(attrs.SERIAL_ROWS, records)
