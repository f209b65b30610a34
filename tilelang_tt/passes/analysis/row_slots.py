"""Which dimensions of a kernel's block buffers hold the rows (or columns) of a grid axis (A0.0).

A grid axis ``g`` whose tensor accesses all index one dimension as ``g * b + r`` (``b`` a
constant) hands each block ``b`` rows of those tensors, or ``b`` columns when that dimension
is the last one of the tensors (``RowSlots.kind``: ``"rows"`` or ``"columns"``; the analysis is
the same for both, only the tile dimension the slots must end in, the GEMM operands they may
reach and the words of the messages differ; "rows" below means either).  :class:`RowSlots` follows those rows
through the kernel, from its IR structure: a *slot* is a block buffer's dimension or a
``T.Parallel`` loop variable; slots that must hold the same rows are joined (union-find), the
tensor dimensions that move with ``g`` seed the row class, and a slot an operation uses in a
way that mixes rows (reduced, a GEMM's K, a transpose's operand, indexed by an expression,
fed from a tensor dimension shared by all blocks, ...) is marked with the reason and the
statement's line.  Facts only: nothing is rewritten here.
"""

from __future__ import annotations

import re

import tvm
from tvm import tirx
from tvm.sym import detect_linear_equation

from ...errors import TTLayoutError
from ..common import buffer_scope, buffer_shape, collect, int_or_none, tt_map, uses_var

ROWS = 32  # rows (and columns) of a Tensix tile
ROW_KIND, COL_KIND = "rows", "columns"
_ROW = ("row",)
_BLOCK_SCOPES = ("shared", "local.fragment")
COMPARISONS = (tirx.LT, tirx.LE, tirx.GT, tirx.GE, tirx.EQ, tirx.NE)
_REDUCES = ("tirx.tile.sum", "tirx.tile.max", "tirx.tile.min")


def linear_in(expr, var):
    """(coefficient, base) with ``expr == var * coefficient + base``, or (None, None)."""
    found = detect_linear_equation(expr, [var])
    if len(found) != 2:
        return None, None
    return found[0], found[1]


def _is_block(buf) -> bool:
    return buffer_scope(buf) in _BLOCK_SCOPES


class _Problem:
    """A condition the kernel breaks, reported once the axis turns out to have row blocks."""

    def __init__(self, message, span, hint):
        self.message, self.span, self.hint = message, span, hint


class RowSlots:
    """The row slots of one grid axis (module docstring)."""

    def __init__(self, body, launch, b, kind=ROW_KIND):
        self.launch, self.g, self.b = launch, launch.node.var, b
        self.kind = kind
        self.noun = "row" if kind == ROW_KIND else "column"
        self.grid = int_or_none(launch.value)
        self.parent = {}
        self.bufs = {}  # chandle -> buffer
        self.loops = {}  # chandle -> For (T.Parallel loop variables)
        self.marks = {}  # slot -> (reason, span) of a use that mixes rows
        self.regions = []  # (slot, Range, span, op name) block regions of tile ops
        self.consts = []  # (slot, value, nest vars, span): constant indices in nests
        self.stores = []  # (buffer, nest vars, index vars, constant-index slots, span)
        self.problems = []  # _Problem, in program order
        self.staged_copies = 0  # tensor-to-tensor copies whose staged block holds the rows
        self._visit(launch.body, [], launch.span)

    # ---- construction ------------------------------------------------------------------------
    @classmethod
    def of(cls, body, launch):
        """The facts of ``launch``'s axis, or None when it has no block of fewer than 32 rows."""
        g, grid = launch.node.var, int_or_none(launch.value)
        if grid is None:
            return None
        coefs, places = set(), set()
        for buf, idx in _global_accesses(launch.body):
            dims = [k for k, e in enumerate(idx) if uses_var(e, g)]
            if len(dims) > 1:
                return None  # the block index in several dimensions of one access
            if not dims:
                continue
            coef, _ = linear_in(idx[dims[0]], g)
            coefs.add(int_or_none(coef) if coef is not None else None)
            if len(idx) >= 2:  # (a 1-D tensor's only index fits rows and columns alike)
                places.add(COL_KIND if dims[0] == len(idx) - 1 else ROW_KIND)
        if len(coefs) != 1:
            return None
        (b,) = coefs
        if b is None or not 0 < b < ROWS or ROWS % b:
            return None
        # the columns when a tensor of rank 2 or more moves with g in its last dimension (a
        # transpose_B GEMM's B moves its N columns in its first dimension)
        kind = COL_KIND if COL_KIND in places else ROW_KIND
        facts = cls(body, launch, b, kind)
        return facts if facts.has_row_blocks() else None

    @staticmethod
    def tile_dims(rank: int) -> set:
        """The dimensions of a block buffer of ``rank`` that may hold the slots: one of its tile
        dimensions (the last two, or the only one); a leading dimension is a batch."""
        return {rank - 1} if rank < 2 else {rank - 2, rank - 1}

    def has_row_blocks(self) -> bool:
        """A block of ``b`` rows exists: a block buffer with the rows in one of its last two (or
        only) dimension, a T.Parallel index over them (a nest over tensor elements, which
        A0.2 stages through blocks of the nest's shape) or a tensor-to-tensor T.copy of them.  Rows that only reach a leading
        dimension of a buffer of rank 3 or more are a batch index, not rows."""
        for buf in self.row_buffers().values():
            if self.tile_dims(len(buffer_shape(buf))) & self.row_dims(buf):
                return True
        return self.staged_copies > 0 or any(self._is_row(("var", key)) for key in self.loops)

    # ---- union-find over slots ---------------------------------------------------------------
    def _find(self, s):
        while self.parent.get(s, s) != s:
            s = self.parent[s]
        return s

    def _join(self, a, b):
        ra, rb = self._find(a), self._find(b)
        if ra != rb:
            if rb == _ROW:
                ra, rb = rb, ra
            self.parent[rb] = ra

    def _is_row(self, s) -> bool:
        return self._find(s) == _ROW

    def _buf_slot(self, buf, k):
        key = buf.__chandle__()
        self.bufs[key] = buf
        return ("buf", key, k)

    def _var_slot(self, var):
        return ("var", var.__chandle__())

    def _mark(self, slot, reason, span):
        self.marks.setdefault(slot, (reason, span))

    def _problem(self, message, span, hint):
        self.problems.append(_Problem(message, span, hint))

    # ---- the walk ----------------------------------------------------------------------------
    def _visit(self, stmt, nest, span):
        span = getattr(stmt, "span", None) or span
        if isinstance(stmt, tirx.SeqStmt):
            for s in stmt.seq:
                self._visit(s, nest, span)
        elif isinstance(stmt, tirx.For):
            self._expr(stmt.min, nest, span)
            self._expr(stmt.extent, nest, span)
            if stmt.kind == tirx.ForKind.PARALLEL:
                self.loops[stmt.loop_var.__chandle__()] = stmt
                self._visit(stmt.body, nest + [stmt.loop_var], span)
            else:
                self._visit(stmt.body, nest, span)
        elif isinstance(stmt, tirx.BufferStore):
            self._expr(stmt.value, nest, span)
            self._access(stmt.buffer, list(stmt.indices), nest, span, store=True)
        elif isinstance(stmt, tirx.TilePrimitiveCall):
            self._tile(stmt, nest, span)
        elif isinstance(stmt, tirx.IfThenElse):
            self._condition(stmt.condition, nest, span)
            self._visit(stmt.then_case, nest, span)
            if stmt.else_case is not None:
                self._visit(stmt.else_case, nest, span)
        elif isinstance(stmt, (tirx.Bind, tirx.LetStmt)):
            if uses_var(_blank_indices(stmt.value, self.g), self.g):
                self._problem(f"`{stmt.var.name} = {stmt.value}` names a row index of the "
                              f"block index {self.g.name}", span,
                              f"write the tensor index inline (`X[{self.g.name} * {self.b} + i, "
                              "...]`)")
            self._expr(stmt.value, nest, span)
            if getattr(stmt, "body", None) is not None:  # LetStmt (Bind has no body)
                self._visit(stmt.body, nest, span)
        elif isinstance(stmt, tirx.Evaluate):
            self._expr(stmt.value, nest, span)
        elif isinstance(stmt, tirx.AttrStmt):
            self._expr(stmt.value, nest, span)
            self._visit(stmt.body, nest, span)
        elif isinstance(stmt, tirx.While):
            self._expr(stmt.condition, nest, span)
            self._visit(stmt.body, nest, span)
        elif isinstance(stmt, tirx.AssertStmt):
            self._expr(stmt.condition, nest, span)
        # AllocBuffer, DeclBuffer, Break, Continue: nothing to see

    def _expr(self, expr, nest, span):
        for ld in collect(expr, tvm.ir.TensorLoad):
            self._access(ld.source, list(ld.indices), nest, span)
        # a nest variable outside a whole index, or the block index outside a tensor row
        # index, is a stray use: blank out the allowed positions and look at what is left
        self._strays(_blank_indices(expr, self.g), nest, span, shown=expr)

    def guard_row(self, expr, nest):
        """The T.Parallel index ``i`` of ``expr == g * b + i``, or None."""
        coef, base = linear_in(expr, self.g)
        if coef is None or int_or_none(coef) != self.b:
            return None
        return next((v for v in nest if base.same_as(v)), None)

    def _condition(self, cond, nest, span):
        """A branch condition.  A comparison of a tensor row index ``g * b + i`` with a bound
        (TileLang's ``if idx_i < M`` guard) uses the row ``i`` as a tensor index does (A0.0
        makes it ``g * 32 + i``); any other use of ``g`` or of a nest variable is a stray."""
        for ld in collect(cond, tvm.ir.TensorLoad):
            self._access(ld.source, list(ld.indices), nest, span)
        zero = tvm.tirx.IntImm("int32", 0)

        def side(e):
            v = self.guard_row(e, nest) if uses_var(e, self.g) else None
            if v is None:
                return e
            self._join(self._var_slot(v), _ROW)
            return zero

        blanked = tt_map(_blank_indices(cond, self.g),
                         [(COMPARISONS, lambda c: type(c)(side(c.a), side(c.b)))])
        self._strays(blanked, nest, span, shown=cond)

    def _strays(self, expr, nest, span, shown=None):
        """Flag the block index and the nest variables ``expr`` uses (``shown``: the expression
        to name in messages)."""
        shown = expr if shown is None else shown
        for v in collect(expr, tvm.ir.Var):
            if v.same_as(self.g):
                self._problem(f"the block index {self.g.name} is used in `{shown}`, not only in "
                              f"tensor row indices `{self.g.name} * {self.b} + i`", span,
                              "compute the row from the T.Parallel index alone")
            elif any(v.same_as(n) for n in nest):
                self._mark(self._var_slot(v), f"used in the expression `{shown}`", span)

    def _access(self, buf, idx, nest, span, store=False):
        """An element access ``buf[idx]`` in the nest ``nest``.  A store records the nest
        variables it is indexed by: a row variable it is not indexed by would make the rows
        write one element."""
        whole, const_slots = [], []
        if store and nest and (_is_block(buf) or buffer_scope(buf) == "global"):
            # (a local scalar assigned in a nest is the iteration's own temporary)
            self.stores.append((buf, list(nest), whole, const_slots, span))
        if _is_block(buf):
            for k, e in enumerate(idx):
                slot = self._buf_slot(buf, k)
                if any(e.same_as(v) for v in nest):
                    self._join(slot, self._var_slot(e))
                    whole.append(e)
                elif int_or_none(e) is not None:
                    self.consts.append((slot, int_or_none(e), list(nest), span))
                    const_slots.append(slot)
                else:
                    self._mark(slot, f"indexed by `{e}`", span)
                    self._strays(e, nest, span)
            return
        if buffer_scope(buf) != "global":
            for e in idx:
                self._strays(e, nest, span)
            return
        for k, e in enumerate(idx):
            if not uses_var(e, self.g):
                self._strays(e, nest, span)
                continue
            coef, base = linear_in(e, self.g)
            v = next((n for n in nest if base is not None and base.same_as(n)), None)
            if v is None:
                self._problem(f"{buf.name}[{', '.join(str(x) for x in idx)}]: the row index "
                              f"`{e}` is not `{self.g.name} * {self.b} + i` with i an index of "
                              "the enclosing T.Parallel", span,
                              f"index the rows of {buf.name} as `{self.g.name} * {self.b} + i`")
            else:
                self._join(self._var_slot(v), _ROW)
                whole.append(v)
        for e in idx:  # a tensor's other indices that are loop variables
            if any(e.same_as(n) for n in nest):
                whole.append(e)

    def _regions(self, call):
        return [a for a in call.args if isinstance(a, tvm.ir.TensorRegion)]

    def _tile(self, call, nest, span):
        span = call.span or span
        op = str(call.op.name)
        regions = self._regions(call)
        for a in call.args:  # a fill value, ...
            if isinstance(a, tvm.ir.Expr) and not isinstance(a, tvm.ir.TensorRegion):
                self._expr(a, nest, span)
        for r in regions:
            d = self.global_dim(r)
            for k, x in enumerate(r.region):
                if k != d:
                    self._expr(x.min, nest, span)
                    self._expr(x.extent, nest, span)
            if _is_block(r.source):
                for k, x in enumerate(r.region):
                    self.regions.append((self._buf_slot(r.source, k), x, span, op))
            else:
                self._global_region(r, span)
        if op == "tirx.tile.copy":
            self._copy(regions[0], regions[1], span)
        elif op in _REDUCES:
            dst, src = regions[0], regions[1]
            reduced = {int(d) % len(src.region) for d in call.args[2]}
            kept = [k for k in range(len(src.region)) if k not in reduced]
            for k in reduced:
                if _is_block(src.source):
                    self._mark(self._buf_slot(src.source, k), f"reduced by `{_op(op)}`", span)
            if _is_block(dst.source) and _is_block(src.source):
                for kd, ks in zip(range(len(dst.region)), kept):
                    self._join(self._buf_slot(dst.source, kd), self._buf_slot(src.source, ks))
        elif op == "tirx.tile.gemm":
            self._gemm(call, *regions[:4], span)
        elif op != "tirx.tile.fill":
            for r in regions:
                if _is_block(r.source):
                    for k in range(len(r.region)):
                        self._mark(self._buf_slot(r.source, k), f"an operand of `{_op(op)}`",
                                   span)

    def _gemm(self, call, c, a, bm, c2, span):
        """``C += A @ B``: row m of C is row m of A times B, column n of C is A times column n
        of B, so C's rows are A's M rows and C's columns B's N columns (as the transpose flags
        place them); the K dimensions of A and B combine rows (or columns)."""
        ta, tb = _flag(call.args[4]), _flag(call.args[5])
        a_m, a_k = (1, 0) if ta else (0, 1)
        b_n, b_k = (0, 1) if tb else (1, 0)
        self._join(self._buf_slot(a.source, a_m), self._buf_slot(c.source, 0))
        self._join(self._buf_slot(bm.source, b_n), self._buf_slot(c.source, 1))
        for k in range(2):
            self._join(self._buf_slot(c2.source, k), self._buf_slot(c.source, k))
        self._mark(self._buf_slot(a.source, a_k), "the K dimension of a T.gemm", span)
        self._mark(self._buf_slot(bm.source, b_k), "the K dimension of a T.gemm", span)

    def _tensor_copy(self, dst, src, span):
        """A tensor-to-tensor T.copy: A0.3 stages it through a block of the regions' shape (their
        sliced dimensions), so its rows are that block's rows when both regions move with the
        block index in the staged block's tile dimension (not when a region slices two other
        dimensions: ``dQ[bz, bx * 64:(bx + 1) * 64, by, :]`` is a 2-D block per ``by``)."""
        dims = [self.global_dim(r) for r in (dst, src)]
        if all(d is None for d in dims):
            return
        if any(d is None for d in dims):
            fixed = dst if dims[0] is None else src
            self._problem(f"T.copy between {src.source.name} and {dst.source.name}: "
                          f"{fixed.source.name}'s region does not move with the block index, so "
                          "every block copies to or from the same rows", span,
                          "move both regions with the block index")
            return
        for r, d in zip((dst, src), dims):
            if len([k for k, x in enumerate(r.region)
                    if k != d and int_or_none(x.extent) != 1]) >= 2:
                return  # a 2-D block over two other dims: the block index is a batch index
            kept = [k for k, x in enumerate(r.region) if k == d or int_or_none(x.extent) != 1]
            if kept.index(d) not in self.tile_dims(len(kept)):
                return
        self.staged_copies += 1

    def _global_region(self, r, span):
        d = self.global_dim(r)
        if d is None:
            return
        coef, base = linear_in(r.region[d].min, self.g)
        if int_or_none(base) != 0 or int_or_none(r.region[d].extent) != self.b:
            self._problem(f"{r.source.name}: rows `{r.region[d].min}` .. + "
                          f"{r.region[d].extent} are not the block's {self.b} rows "
                          f"`{self.g.name} * {self.b}` .. + {self.b}", span,
                          f"copy whole blocks of {self.b} rows")

    def _copy(self, dst, src, span):
        """Join the dimensions a copy carries into each other.  Between two blocks of one rank,
        dimension by dimension; between a tensor region and a block, the tensor's dimensions
        that are sliced (extent other than 1) or move with the block index, in order, are the
        block's (TileLang's copy drops a region's unit dimensions)."""
        if _is_block(dst.source) and _is_block(src.source):
            if len(dst.region) == len(src.region):
                for k in range(len(dst.region)):
                    self._join(self._buf_slot(dst.source, k), self._buf_slot(src.source, k))
            else:
                for r in (dst, src):
                    for k in range(len(r.region)):
                        self._mark(self._buf_slot(r.source, k),
                                   "copied between blocks of different ranks", span)
            return
        blk, glb = (dst, src) if _is_block(dst.source) else (src, dst)
        if not _is_block(blk.source):
            self._tensor_copy(dst, src, span)
            return
        d = self.global_dim(glb)
        kept = [k for k, x in enumerate(glb.region) if k == d or int_or_none(x.extent) != 1]
        if len(kept) != len(blk.region):
            if d is not None:
                self._problem(f"T.copy between {glb.source.name} (rows `{glb.region[d].min}`) "
                              f"and {blk.source.name}: {blk.source.name} has no dimension for "
                              "those rows", span,
                              f"give {blk.source.name} the block's rows as a dimension")
            for k in range(len(blk.region)):
                self._mark(self._buf_slot(blk.source, k),
                           f"copied from or to {glb.source.name}, whose rows every block shares",
                           span)
            return
        for kb, kg in enumerate(kept):
            slot = self._buf_slot(blk.source, kb)
            if kg == d:
                self._join(slot, _ROW)
            else:
                self._mark(slot, f"copied from or to {glb.source.name}, whose rows every block "
                                 "shares", span)

    # ---- queries ----------------------------------------------------------------------------
    def global_dim(self, region):
        """The dimension of a tensor region that moves with the block index, or None."""
        if _is_block(region.source):
            return None
        return next((k for k, x in enumerate(region.region) if uses_var(x.min, self.g)), None)

    def global_index_dim(self, buf, idx):
        if _is_block(buf) or buffer_scope(buf) != "global":
            return None
        return next((k for k, e in enumerate(idx) if uses_var(e, self.g)), None)

    def row_buffers(self) -> dict:
        """chandle -> block buffer with a row dimension."""
        out = {}
        for slot in list(self.parent) + [s for s, *_ in self.regions]:
            if slot[0] == "buf" and self._is_row(slot):
                out[slot[1]] = self.bufs[slot[1]]
        return out

    def row_dims(self, buf) -> set:
        key = buf.__chandle__()
        return {k for k in range(len(buffer_shape(buf))) if self._is_row(("buf", key, k))}

    def is_row_var(self, var) -> bool:
        return self._is_row(self._var_slot(var))

    def nest_row_var(self, nest):
        """The row variable among a nest's loop variables, or None."""
        rows = [v for v in nest if self.is_row_var(v)]
        return rows[0] if len(rows) == 1 else None

    # ---- the conditions ---------------------------------------------------------------------
    def check(self):
        """Raise a TTLayoutError for the first condition the kernel breaks (module docstring of
        frontend/row_blocks.py)."""
        g, b = self.g.name, self.b
        rows = f"{b} row{'s' if b > 1 else ''}"
        where = f"blocks of {rows} along {self.launch.node.thread_tag} ({g})"
        if self.problems:
            p = self.problems[0]
            raise self._error(f"{where}: {p.message}", span=p.span, hint=p.hint)
        for slot, (reason, span) in self.marks.items():
            if not self._is_row(slot):
                continue
            if slot[0] == "buf":
                buf = self.bufs[slot[1]]
                what = f"dimension {slot[2]} of {buf.name} holds the block's rows and is {reason}"
            else:
                what = f"the T.Parallel index {self.loops[slot[1]].loop_var.name} runs over the " \
                       f"block's rows and is {reason}"
            raise self._error(
                f"{where}: {what}; that combines or tells apart the rows of a block, so "
                f"{ROWS // b} blocks cannot run as one block of {ROWS} rows (a Tensix tile has "
                f"{ROWS} rows)", span=span,
                hint=f"use blocks of a multiple of 32 rows (blk_m = 32), or keep each row's "
                     "computation to that row")
        for key, buf in self.row_buffers().items():
            shape = buffer_shape(buf)
            dims = sorted(self.row_dims(buf))
            for k in dims:
                if len(dims) > 1 or k not in self.tile_dims(len(shape)) or shape[k] != b:
                    raise self._error(
                        f"{where}: {buf.name} {list(shape)} holds the block's rows in "
                        f"dimension{'s' if len(dims) > 1 else ''} "
                        f"{', '.join(str(d) for d in dims)}; they must be one of its "
                        f"{'last two dimensions' if len(shape) >= 2 else 'only dimension'}, of "
                        f"extent {b}", span=self._alloc_span(buf),
                        hint=f"allocate {buf.name} with the block's {b} rows as its rows")
        for key, loop in self.loops.items():
            if self._is_row(("var", key)) and int_or_none(loop.extent) != b:
                raise self._error(
                    f"{where}: the T.Parallel index {loop.loop_var.name} runs over the block's "
                    f"rows with extent {loop.extent}, not {b}", span=loop.span,
                    hint=f"iterate the rows as T.Parallel({b}, ...)")
        for slot, rng, span, op in self.regions:
            if self._is_row(slot) and (int_or_none(rng.min) != 0 or int_or_none(rng.extent) != b):
                buf = self.bufs[slot[1]]
                raise self._error(
                    f"{where}: `{_op(op)}` covers rows {rng.min} .. + {rng.extent} of "
                    f"{buf.name}, not all {b}", span=span,
                    hint="operate on whole blocks")
        for buf, nest, whole, const_slots, span in self.stores:
            for v in nest:
                if not self.is_row_var(v) or any(v.same_as(w) for w in whole):
                    continue
                if b == 1 and any(self._is_row(c) for c in const_slots):
                    continue  # buf[0, ...] of a one-row block: the row (below)
                raise self._error(
                    f"{where}: the T.Parallel index {v.name} runs over the block's rows but the "
                    f"store to {buf.name}[...] does not depend on it: with {ROWS} rows in a "
                    "block, the rows would write the same element", span=span,
                    hint=f"give {buf.name} a row dimension indexed by {v.name} (and reduce it "
                         "with T.reduce_* where a sum over rows is meant), or use blocks of a "
                         "multiple of 32 rows")
        for slot, value, nest, span in self.consts:
            if not self._is_row(slot):
                continue
            buf = self.bufs[slot[1]]
            if b != 1 or value != 0 or self.nest_row_var(nest) is None:
                raise self._error(
                    f"{where}: {buf.name} is indexed by the constant {value} in dimension "
                    f"{slot[2]}, which holds the block's rows; that reads one row for all",
                    span=span, hint=f"index {buf.name} by the T.Parallel row index")
        if self.grid * b % ROWS:
            # the last block of 32 rows reaches past the grid's rows: harmless when they are
            # past the end of every tensor whose rows move with the grid (A0.3.1 pads those
            # tensors with zeros and the host crops them), as TileLang's last partial blocks
            for buf, idx in _global_accesses(self.launch.body):
                d = self.global_index_dim(buf, idx)
                size = buffer_shape(buf)[d] if d is not None else None
                if d is not None and not (isinstance(size, int) and size <= self.grid * b):
                    raise self._error(
                        f"{where}: the grid covers {self.grid} x {b} = {self.grid * b} rows, "
                        f"not a multiple of {ROWS}; blocks of {rows} run as blocks of {ROWS} "
                        f"rows (a Tensix tile), and the last one would reach rows of "
                        f"{buf.name} (dimension {d} of size {size}) that no block of the grid "
                        "touches", span=self.launch.span,
                        hint=f"launch a block for every row of {buf.name}, or pad the "
                             f"tensors' rows to a multiple of {ROWS}")

    def _error(self, message, span=None, hint=None):
        """A TTLayoutError; the messages are written for rows and say columns for columns."""
        return TTLayoutError(self._say(message), span=span,
                             hint=None if hint is None else self._say(hint))

    def _say(self, text: str) -> str:
        if self.kind == ROW_KIND:
            return text
        parts = text.split("`")  # the odd parts quote the user's code: left as written
        for k in range(0, len(parts), 2):
            t = parts[k]
            for old, new in _COLUMN_WORDS:
                t = re.sub(old, new, t)
            parts[k] = t
        return "`".join(parts)

    def _alloc_span(self, buf):
        for a in collect(self.launch.body, tirx.AllocBuffer):
            if a.buffer.same_as(buf):
                return a.span
        return None


_COLUMN_WORDS = (
    (r"\bnext-to-last\b", "last"),
    (r"blk_m = 32", "block_N = 32"),
    (r"T\.Parallel\((\d+), \.\.\.\)", r"T.Parallel(..., \1)"),
    (r"\brow(s?)\b", r"column\1"),
)


def _flag(expr) -> bool:
    """A transpose flag of a tile.gemm (a Python bool or a constant)."""
    if isinstance(expr, bool):
        return expr
    value = getattr(expr, "value", None)
    return bool(value) if value is not None else bool(int_or_none(expr))


def _op(name: str) -> str:
    return name.replace("tirx.tile.", "tile.")


def _global_accesses(body):
    """(tensor, indices) of every access to a global buffer: element loads and stores, and
    tile-op regions (their starts)."""
    out = []
    for ld in collect(body, tvm.ir.TensorLoad):
        if buffer_scope(ld.source) == "global":
            out.append((ld.source, list(ld.indices)))
    for st in collect(body, tirx.BufferStore):
        if buffer_scope(st.buffer) == "global":
            out.append((st.buffer, list(st.indices)))
    for r in collect(body, tvm.ir.TensorRegion):
        if buffer_scope(r.source) == "global":
            out.append((r.source, [x.min for x in r.region]))
    return out


def _blank_indices(expr, g):
    """``expr`` with its allowed index positions replaced by 0 (a block buffer index that is a
    variable, a tensor's row index ``g * b + r``), so the variables left are stray uses."""
    zero = tvm.tirx.IntImm("int32", 0)

    def blank(ld):
        buf = ld.source
        if _is_block(buf):
            idx = [zero if isinstance(e, tvm.ir.Var) else e for e in ld.indices]
        elif buffer_scope(buf) == "global":
            idx = [zero if uses_var(e, g) else e for e in ld.indices]
        else:
            return ld
        total = zero
        for e in idx:
            total = total + e
        return tvm.tirx.Cast(ld.ty.dtype, total)

    return tt_map(expr, [(tvm.ir.TensorLoad, blank)])
