"""A0.1.0.1 BoundLoopExtentsTT: loop extents that are not literals (or not whole tiles), made
constant or masked; branches in ``T.Parallel`` bodies converted to selects.

Requires: ScalarsToBindTT (scalar assignments are ``Bind``s, seen through here).

TileLang lets a loop's extent be any integer expression: a name bound before the loop
(``span = T.min(valid_len, max_len)``), a scalar parameter (specialised to its value per call
here: docs/SUPPORT.md "``tilelang.jit``"), ``T.min`` / ``T.max`` of them, or block indices
(``T.min(block_M, M - by * block_M)``).  Iterations past the extent do nothing.  A Tensix
elementwise op covers whole 32x32 tiles, so a ``T.Parallel`` nest must have constant extents
(A0.2) and a store must not overwrite elements the nest does not write.

Guarantees: every loop extent that is not an integer literal has the integer bindings it uses
inlined and is simplified; a ``T.serial`` / ``T.Pipelined`` loop whose extent becomes a
constant takes it (others keep their expression: a loop bound computed at run time).  A
``T.Parallel`` nest (starting at 0) is rewritten when a loop's extent is not a literal, or
when its extents are literals (a scalar parameter specialised to its value:
``T.Parallel(valid_len)``), its body is element assignments, and a loop covers part of a
block buffer it indexes or its stores, rounded up to whole tiles, would land on elements of
their tensor (A0.5.1 would refuse those); other literal nests are unchanged.  Rewritten:

* an extent that is a constant ``c``, or has a constant upper bound ``c`` over the launch
  extents and loop ranges (``T.min(x, 512)`` is at most 512), runs ``U`` iterations: the
  dim of the block buffers the loop variable indexes (as ``v + offset``, a constant offset;
  all the same size, at least ``c``: elementwise tile ops use whole buffers), or, when it
  indexes only tensors, ``c`` rounded up to a multiple of 32 (tensors are padded past their
  ends: A0.3.1); otherwise ``c``;
* a nest with an extent that is at most 0 is removed (it does nothing);
* when ``U`` exceeds the extent ``e`` (a run-time value, or a constant not a multiple of 32),
  every element store ``dst[idx] = v`` of the body becomes ``dst[idx] = T.if_then_else(v_k < e,
  v, old)``: the iterations past the extent keep ``dst``'s value (A0.2 computes the condition
  as an index mask).  ``old`` is ``dst[idx]`` itself, unless an earlier statement of the same
  statement list last wrote ``dst``: a ``T.Parallel`` nest of constant extents storing one
  value ``dst[w + off] = v'`` whose elements cover ``idx`` for every iteration, and whose value
  reads nothing written since, or a ``T.copy(src, dst[...])`` of a block buffer covering them
  (``src`` not written since); then ``old`` is ``v'`` (``src``) at those elements (so the
  kernel does not read back a tensor it wrote: TileLang's "zeros, then a prefix" selects
  between the prefix and the zeros).  A block buffer allocated in that statement list and
  not written since holds nothing to keep (TileLang leaves those elements undefined): its
  store stays unmasked.

A nest's body that is one ``if`` without ``else`` whose condition is a conjunction of ``v < e``
(``v`` a loop of the nest, ``e`` using none: TileLang's ``if i < valid_block_H:``) is the nest
with extents ``T.min(N, e)`` first: the same elements run the body.

A nest of literal extents, each a multiple of 32, that stores only to tensors and covers the
leading whole tile rows of the block buffers it reads (each indexed by the loops themselves:
``O[base + i, j] = f[i, j]`` over the first ``k`` of ``f``'s rows) is not masked: masking
would write the tensor's rows ``k..`` back with the values read before, a lost update when
another block owns them.  A0.2 makes it a copy of that part, and C1 writes only those tiles.
A value that is not a block buffer's element as it is (``f[i, j] * w[i, j]``, a cast) is
computed first over the whole blocks into a new fragment (named as the buffer it reads), and
the nest stores that fragment's leading rows.  A mask over rows that do not end on a tile
boundary still reads the tensor back; V0 refuses it when another block writes those rows.

Branches: before any of this, a ``T.Parallel`` body holding ``if`` statements (those A0.1.0
did not drop) is if-converted (:mod:`.if_convert`): each store under conditions ``c`` becomes
``dst[idx] = T.if_then_else(c, v, dst[idx])`` and the nest is handled as above (a masked
extent's condition is conjoined with ``c``).  The old value is forwarded as for a masked
extent, but only into the first store to ``dst`` in the body (the conditions differ per
store), only for a tensor (never read back) or a block buffer allocated and not written since
(the select goes; every select whose false value is the old element takes its true value);
a block buffer written before keeps its element, read in place, and the nest is never widened
for a branch alone.

Refused (``TTCompileError`` naming the loop and its line, saying what to change): an extent
without a constant upper bound; a masked nest whose body is not element assignments,
bindings and branches of them (:mod:`.if_convert` names what else a branch holds); a
masked or branched store to a tensor that an earlier statement wrote in a way the value
cannot be taken from.  Decided from the extents' and indices' arithmetic only.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ...errors import TTCompileError
from .if_convert import (
    has_branches, if_convert, masked, select_parts, with_old, without_old,
)
from ..common import (
    TILE, buffer_scope, buffer_shape, collect, inline_binds, launch_attrs, seq, stmts_of,
    substitute, tile_dst_buffer, tt_map, tt_pass, uses_var,
)

_INT32 = 1 << 31


def _round_up(n: int) -> int:
    return (n + TILE - 1) // TILE * TILE


def _is_int(e) -> bool:
    return isinstance(e, tirx.IntImm)


def _loop_text(loop) -> str:
    kind = "T.Parallel" if loop.kind == tirx.ForKind.PARALLEL else "T.serial"
    return f"for {loop.loop_var.name} in {kind}({loop.extent})"


def _parallel_chain(loop) -> tuple[list, tirx.Stmt]:
    loops, body = [], loop
    while isinstance(body, tirx.For) and body.kind == tirx.ForKind.PARALLEL:
        loops.append(body)
        body = body.body
    return loops, body


def _accesses(body) -> list:
    """(buffer, indices) of every element store and load of ``body``."""
    return [(s.buffer, s.indices) for s in collect(body, tirx.BufferStore)] + \
        [(ld.source, ld.indices) for ld in collect(body, tvm.ir.TensorLoad)]


def _imm(loop, value: int):
    return tirx.IntImm(str(loop.loop_var.ty.dtype), value)


def _innermost(nest, depth):
    body = nest
    for _ in range(depth):
        body = body.body
    return body


def _rebuild(nest, body, sizes):
    """``nest``'s loops (``len(sizes)`` of them) around ``body``, with extents ``sizes``."""
    loops = []
    lp = nest
    for _ in sizes:
        loops.append(lp)
        lp = lp.body
    for lp, u in reversed(list(zip(loops, sizes))):
        body = tirx.For(lp.loop_var, lp.min, tirx.IntImm(str(lp.extent.ty.dtype), u), lp.kind,
                        body, lp.thread_binding, lp.annotations, lp.step, lp.span)
    return body


def _written(stmt) -> list:
    """Buffers a statement writes (element stores, tile-op destinations)."""
    out = [s.buffer for s in collect(stmt, tirx.BufferStore)]
    for c in collect(stmt, tirx.TilePrimitiveCall):
        if c.args and isinstance(c.args[0], tvm.ir.TensorRegion):
            out.append(tile_dst_buffer(c))
    return out


# the old value of a block buffer no statement wrote since its allocation: TileLang leaves
# those elements undefined, so the store needs no mask
_UNDEFINED = object()


def _allocates(stmt, buf) -> bool:
    return isinstance(stmt, tirx.AllocBuffer) and stmt.buffer.same_as(buf)


def _writes(stmt, buf) -> bool:
    return any(b.same_as(buf) for b in _written(stmt))


class _Rewriter:
    def __init__(self, func):
        self.binds = {b.var: b.value for b in collect(func.body, tirx.Bind)
                      if str(b.var.ty).startswith(("int", "uint"))}
        self.ana = tvm.sym.Analyzer()
        for a in launch_attrs(func.body):
            self.ana.bind(a.node.var, tvm.ir.Range.from_min_extent(tirx.IntImm("int32", 0),
                                                                     a.value))
        # (new nest, its masked stores, its loop vars, its extents, branched?, may widen?)
        self.masked = []
        self.inner = []  # loop variables of the inner loops of T.Parallel nests
        self.flatten = False  # a nest came with allocations: flatten statement lists
        self.names = 0

    def fresh(self, stem):
        self.names += 1
        return f"{stem}_{self.names - 1}"

    def simplify(self, e):
        return self.ana.simplify(inline_binds(e, self.binds))

    def bind_loop(self, lp, extent):
        """Bind a loop variable to every value it takes (over-approximated by bounds)."""
        lo = self.ana.const_int_bound(self.simplify(lp.min)).min_value
        hi = self.ana.const_int_bound(self.simplify(lp.min + extent - 1)).max_value
        if -_INT32 < lo <= hi < _INT32:
            dtype = str(lp.loop_var.ty.dtype)
            self.ana.bind(lp.loop_var, tvm.ir.Range.from_min_extent(
                tirx.IntImm(dtype, int(lo)), tirx.IntImm(dtype, int(hi - lo + 1))),
                allow_override=True)

    # ---- loops -----------------------------------------------------------------------------
    def on_for(self, lp):
        if lp.kind == tirx.ForKind.PARALLEL:
            return self.on_parallel(lp)
        if _is_int(lp.extent):
            self.bind_loop(lp, lp.extent)
            return lp
        e = self.simplify(lp.extent)
        self.bind_loop(lp, e)
        if not _is_int(e):
            return lp
        return tirx.For(lp.loop_var, lp.min, e, lp.kind, lp.body, lp.thread_binding,
                        lp.annotations, lp.step, lp.span)

    def on_parallel(self, head):
        if any(head.loop_var.same_as(v) for v in self.inner):
            return head  # an inner loop of a nest already seen from its head
        head = self.guard_to_extents(head)
        loops, body = _parallel_chain(head)
        self.inner += [lp.loop_var for lp in loops[1:]]
        branched, original, allocs = [], body, []
        if has_branches(body):  # if-converted: element stores of selects (if_convert.py)
            literal = all(_is_int(lp.extent) for lp in loops)
            body, branched, allocs = if_convert(
                head, body, [lp.loop_var for lp in loops],
                [int(lp.extent) for lp in loops] if literal else None, self.fresh)
        literal = all(_is_int(lp.extent) for lp in loops)
        if literal and not branched:  # (a select of a branch reads the tensor's old value)
            split = self.split_tile_rows(head, loops, body)
            if split is not None:
                return split
        if literal and not self.partial_literal(loops, body):
            for lp in loops:
                self.bind_loop(lp, lp.extent)
            if body.same_as(original):
                return head
            sizes = [int(lp.extent) for lp in loops]
            nest = _rebuild(head, body, sizes)
            if branched:
                self.masked.append((nest, _first_stores(body, branched),
                                    [lp.loop_var for lp in loops], sizes, True, False))
            if allocs:  # condition blocks (if_convert.py), allocated before the nest
                self.flatten = True
                return seq(allocs + [nest])
            return nest
        extents = [self.simplify(lp.extent) for lp in loops]
        if any(not _is_int(self.simplify(lp.min)) or int(self.simplify(lp.min)) != 0
               for lp in loops):
            return head  # A0.2 names a loop that does not start at 0
        bounds = []
        for lp, e in zip(loops, extents):
            hi = self.ana.const_int_bound(e).max_value
            if hi >= _INT32 - 1:  # the int32 range itself: no bound found
                raise TTCompileError(
                    f"`{_loop_text(lp)}`: the extent `{e}` has no constant upper bound; a "
                    "T.Parallel nest runs over a block of constant size with the iterations "
                    "past the extent masked off", span=lp.span,
                    hint=f"bound it by the block size: T.Parallel(T.min({lp.extent}, N)) with "
                         "N a constant (the size of the buffers it indexes)")
            bounds.append(int(hi))
        if min(bounds) <= 0:
            return tirx.Evaluate(tirx.IntImm("int32", 0))  # no iteration runs
        sizes = [self.iterations(lp.loop_var, c, body) for lp, c in zip(loops, bounds)]
        conds = [lp.loop_var < e for lp, e, u in zip(loops, extents, sizes)
                 if not (_is_int(e) and int(e) >= u)]
        self.bind_sizes([lp.loop_var for lp in loops], sizes)
        stores = []
        if conds:
            body, stores = self.mask_body(head, body, conds)
        nest = body
        for lp, u in reversed(list(zip(loops, sizes))):
            nest = tirx.For(lp.loop_var, lp.min, tirx.IntImm(str(lp.extent.ty.dtype), u),
                            lp.kind, nest, lp.thread_binding, lp.annotations, lp.step, lp.span)
        if branched:  # the conditions differ per store: only a buffer's first store forwards
            stores = _first_stores(body, stores if stores else branched)
        if stores:
            self.masked.append((nest, stores, [lp.loop_var for lp in loops], sizes,
                                bool(branched), bool(conds)))
        if allocs:  # condition blocks of the literal extents (if_convert.py)
            if sizes != [int(lp.extent) for lp in loops]:
                raise TTCompileError(
                    f"`{_loop_text(head)}`: a branch condition in its body must be computed "
                    "into a block before the branch (its branch stores to a buffer it reads), "
                    f"and the nest runs {sizes} iterations, not its extents", span=head.span,
                    hint="compute the condition into a fragment of the nest's shape first")
            self.flatten = True
            return seq(allocs + [nest])
        return nest

    def guard_to_extents(self, head):
        """``for i in T.Parallel(N): if i < k: body`` (the whole body one ``if`` without
        ``else``, its condition a conjunction of ``v < e`` / ``e > v`` with ``v`` a loop of
        the nest and ``e`` using none) is ``for i in T.Parallel(T.min(N, k)): body``: the
        same elements run the body.  The nest is then bounded (and masked) as any other."""
        loops, body = _parallel_chain(head)
        if not isinstance(body, tirx.IfThenElse) or body.else_case is not None:
            return head
        conds, todo = [], [body.condition]
        while todo:
            c = todo.pop()
            if isinstance(c, tirx.And):
                todo += [c.a, c.b]
            else:
                conds.append(c)
        limit = {}
        for c in conds:
            if isinstance(c, tirx.LT):
                v, e = c.a, c.b
            elif isinstance(c, tirx.GT):
                v, e = c.b, c.a
            else:
                return head
            lp = next((lp for lp in loops if isinstance(v, tirx.Var)
                       and v.same_as(lp.loop_var)), None)
            if lp is None or any(uses_var(e, other.loop_var) for other in loops):
                return head
            prev = limit.get(lp.loop_var)
            limit[lp.loop_var] = e if prev is None else tirx.min(prev, e)
        sizes = []
        for lp in loops:
            e = limit.get(lp.loop_var)
            ext = lp.extent if e is None else self.simplify(tirx.min(lp.extent, e))
            sizes.append(ext)
        nest = body.then_case
        for lp, u in reversed(list(zip(loops, sizes))):
            nest = tirx.For(lp.loop_var, lp.min, u, lp.kind, nest, lp.thread_binding,
                            lp.annotations, lp.step, lp.span)
        return nest

    def partial_literal(self, loops, body) -> bool:
        """A nest of literal extents (a scalar parameter specialised to its value:
        ``T.Parallel(valid_len)``) that covers part of a block buffer it indexes, or whose
        stores, rounded up to whole tiles, would land on elements of their tensor (a body of
        element assignments only: other bodies are A0.2's to lower or name)."""
        if not all(isinstance(st, (tirx.BufferStore, tirx.Bind)) for st in stmts_of(body)):
            return False
        if self.tile_rows_of_blocks_to_tensors(loops, body):
            return False
        for lp in loops:
            c = int(lp.extent)
            if c <= 0:
                return True
            if self.iterations(lp.loop_var, c, body) <= c:
                continue
            for st in collect(body, tirx.BufferStore):
                if buffer_scope(st.buffer) != "global":
                    continue
                for ix, dim in zip(st.indices, buffer_shape(st.buffer)):
                    if not uses_var(ix, lp.loop_var) or isinstance(dim, int) and \
                            self.ana.can_prove(substitute(ix, {lp.loop_var: _imm(lp, c)}) >= dim):
                        continue
                    # whole tiles of the tensor only from a tile boundary (else A0.5.1 names
                    # the misaligned block)
                    start = self.simplify(substitute(ix, {lp.loop_var: _imm(lp, 0)}))
                    return self.ana.can_prove(tirx.floormod(start, TILE) == 0)
            if any(buffer_scope(buf) != "global" and
                   any(uses_var(ix, lp.loop_var) for ix in indices)
                   for buf, indices in _accesses(body)):
                return True
        return False

    def tile_rows_of_blocks_to_tensors(self, loops, body) -> bool:
        """A nest of literal extents, each a multiple of 32, whose stores all go to tensors
        and whose block-buffer reads index each dim by a nest loop from 0 (``v`` itself) or
        by no nest loop: it stores whole tiles of the block buffers' leading ones (the first
        ``k`` rows of a ``[block_H, dim]`` fragment) to whole tiles of the tensors.  Left as
        it is: A0.2 makes it a copy of that part of the block, and the writer writes only
        those tiles (no mask: the tensor's other rows are not written at all, so another
        block may own them)."""
        stores = collect(body, tirx.BufferStore)
        if not stores or any(buffer_scope(st.buffer) != "global" for st in stores):
            return False
        if any(int(lp.extent) <= 0 or int(lp.extent) % TILE for lp in loops):
            return False
        if all(self.iterations(lp.loop_var, int(lp.extent), body) <= int(lp.extent)
               for lp in loops):
            return False  # the whole block buffers: nothing to take a part of
        loop_vars = [lp.loop_var for lp in loops]
        for buf, indices in _accesses(body):
            if buffer_scope(buf) == "global":
                continue
            for ix in indices:
                if any(uses_var(ix, v) for v in loop_vars) and not any(
                        isinstance(ix, tirx.Var) and ix.same_as(v) for v in loop_vars):
                    return False
        return True

    def split_tile_rows(self, head, loops, body):
        """A nest :meth:`tile_rows_of_blocks_to_tensors` accepts whose stores compute values
        (not a block buffer's element as it is): each value is computed over the whole block
        buffers into a new fragment (the value's dtype, named as the first block buffer it
        reads), and the nest then stores that fragment's leading rows.  None when there is nothing to split."""
        if not self.tile_rows_of_blocks_to_tensors(loops, body):
            return None
        items = stmts_of(body)
        if any(not isinstance(st, tirx.BufferStore) for st in items):
            return None
        loop_vars = [lp.loop_var for lp in loops]

        def plain(v):
            return isinstance(v, tvm.ir.TensorLoad) and \
                buffer_scope(v.source) != "global"

        if all(plain(st.value) for st in items):
            return None
        sizes = [self.iterations(lp.loop_var, int(lp.extent), body) for lp in loops]
        if any(u < int(lp.extent) or u % TILE for lp, u in zip(loops, sizes)):
            return None
        pre, full, part = [], [], []
        for st in items:
            if plain(st.value):
                part.append(st)
                continue
            # named as the first block buffer the value reads (messages name user buffers)
            read = [ld.source for ld in collect(st.value, tvm.ir.TensorLoad)
                    if buffer_scope(ld.source) != "global"]
            name = read[0].name if read else f"{st.buffer.name}_rows"
            tmp = tirx.decl_buffer(sizes, str(st.value.ty.dtype), name, scope="local.fragment")
            pre.append(tirx.AllocBuffer(tmp, span=head.span))
            full.append(tirx.BufferStore(tmp, st.value, loop_vars, st.span))
            part.append(tirx.BufferStore(st.buffer, tmp[tuple(loop_vars)], st.indices,
                                         st.span))
        for lp, u in zip(loops, sizes):
            self.bind_loop(lp, u)
        whole = _rebuild(head, seq(full), sizes)
        # the second nest's loops are new variables (each variable is defined once)
        fresh = {v: tirx.Var(v.name, v.ty) for v in loop_vars}
        lead = seq([substitute(st, fresh) for st in part])
        for lp in reversed(loops):
            lead = tirx.For(fresh[lp.loop_var], lp.min, lp.extent, lp.kind, lead,
                            lp.thread_binding, lp.annotations, lp.step, lp.span)
        return seq(pre + [whole, lead])

    def iterations(self, var, bound, body) -> int:
        """The iterations a nest loop runs (module docstring): the whole dim of the block
        buffers ``var`` indexes (tile ops use whole buffers), else ``bound`` rounded up to
        whole tiles (tensors are padded past their ends)."""
        dims = set()
        for buf, indices in _accesses(body):
            if buffer_scope(buf) == "global":
                continue
            for ix, dim in zip(indices, buffer_shape(buf)):
                if not uses_var(ix, var):
                    continue
                off = self.simplify(ix - var)
                if not isinstance(dim, int) or not _is_int(off):
                    return bound
                dims.add(dim - int(off))
        if dims:
            return dims.pop() if len(dims) == 1 and min(dims) >= bound else bound
        return _round_up(bound)

    def mask_body(self, head, body, conds):
        """The body with every element store keeping its old value past the extents."""
        cond = conds[0]
        for c in conds[1:]:
            cond = tirx.And(cond, c)
        out, stores = [], []
        for st in stmts_of(body):
            if isinstance(st, tirx.Bind):
                out.append(st)
                continue
            if not isinstance(st, tirx.BufferStore):
                what = type(st).__name__
                if isinstance(st, tirx.For):
                    what = f"a loop `{_loop_text(st)}`"
                elif isinstance(st, tirx.IfThenElse):
                    what = f"a branch `if {st.condition}:`"
                raise TTCompileError(
                    f"`{_loop_text(head)}`: its extent is not a constant multiple of 32, so the "
                    "nest runs over whole tiles with the iterations past the extent masked off, "
                    f"which needs a body of element assignments; it holds {what}",
                    span=head.span,
                    hint="use a constant extent, or move that statement out of the T.Parallel "
                         "nest (select values with T.if_then_else(cond, value, dst[...]))")
            new = masked(cond, st)  # a select of a branch: conditions conjoined
            out.append(new)
            stores.append(new)
        return seq(out), stores

    # ---- the value a masked store keeps ------------------------------------------------------
    def on_seq(self, s):
        children = list(s.seq)
        changed = False
        for k, child in enumerate(children):
            hit = next((m for m in self.masked if m[0].same_as(child)), None)
            if hit is None:
                continue
            new = self.forward(hit, children[:k])
            if new is not child:
                children[k] = new
                changed = True
        return tirx.SeqStmt(children, s.span) if changed else s

    def forward(self, masked, before):
        """The masked nest with each store's old value taken from an earlier sibling where one
        last wrote it; the nest widened to the whole block buffers those values read."""
        nest, stores, loop_vars, sizes, branch, widen = masked
        self.bind_sizes(loop_vars, sizes)
        mapping = {st: self.old_value(nest, st, before, branch) for st in stores}
        if branch:  # a block buffer written before keeps its old value (read in place)
            mapping = {st: v if v is _UNDEFINED or buffer_scope(st.buffer) == "global" else None
                       for st, v in mapping.items()}
        if all(v is None for v in mapping.values()):
            return nest
        body = _innermost(nest, len(loop_vars))
        forwarded = seq([body] + [tirx.Evaluate(v) for v in mapping.values()
                                  if v is not None and v is not _UNDEFINED])
        wider = [self.iterations(v, u, forwarded) if widen else u
                 for v, u in zip(loop_vars, sizes)]
        if wider != sizes:
            self.bind_sizes(loop_vars, wider)
            again = {st: self.old_value(nest, st, before, branch) for st in stores}
            if branch:
                again = {st: v if v is _UNDEFINED or buffer_scope(st.buffer) == "global"
                         else None for st, v in again.items()}
            if all((a is None) == (b is None) for a, b in zip(again.values(),
                                                               mapping.values())):
                mapping, sizes = again, wider
            else:
                self.bind_sizes(loop_vars, sizes)

        def on_store(st):
            for orig, old in mapping.items():
                if old is not None and st.same_as(orig):
                    if branch:  # every read of the element's old value (merged selects too)
                        return without_old(st) if old is _UNDEFINED else with_old(st, old)
                    v = st.value
                    if old is _UNDEFINED:  # nothing to keep: the unmasked store
                        return tirx.BufferStore(st.buffer, v.args[1], st.indices, st.span)
                    return tirx.BufferStore(st.buffer, tirx.if_then_else(v.args[0], v.args[1],
                                                                         old),
                                            st.indices, st.span)
            return st

        body = tt_map(body, [(tirx.BufferStore, on_store)])
        return _rebuild(nest, body, sizes)

    def bind_sizes(self, loop_vars, sizes):
        for v, u in zip(loop_vars, sizes):
            dtype = str(v.ty.dtype)
            self.ana.bind(v, tvm.ir.Range.from_min_extent(tirx.IntImm(dtype, 0),
                                                          tirx.IntImm(dtype, u)),
                          allow_override=True)

    def old_value(self, nest, st, before, branch=False):
        """The value ``dst`` holds at the store's elements when an earlier sibling last wrote
        it, as an expression (None: read ``dst`` itself)."""
        dst = st.buffer
        last = next((k for k in range(len(before) - 1, -1, -1)
                     if _writes(before[k], dst) or _allocates(before[k], dst)), None)
        if last is None:
            return None
        if _allocates(before[last], dst):
            return _UNDEFINED
        value = self.stored_value(before[last], st, before[last + 1:])
        if value is None and buffer_scope(dst) == "global":
            writer = before[last]
            line = f" (line {writer.span.line})" if getattr(writer, "span", None) else ""
            why = ("under a condition (an `if` in its body), so the elements where it fails keep"
                   if branch else "under a mask (its extent is not a constant multiple of 32), "
                   "so the iterations past the extent keep")
            raise TTCompileError(
                f"`{_loop_text(nest)}` stores to tensor {dst.name} {why} "
                f"{dst.name}'s elements; an earlier statement{line} wrote them, and a kernel "
                "cannot read back what it wrote to a tensor", span=nest.span,
                hint=f"write {dst.name} once: compute the earlier values into a fragment and "
                     "store the fragment after the masked nest, or write them with a "
                     "T.Parallel nest of constant extents storing one value")
        return value

    def copied_value(self, writer, st, between):
        """``src[...]`` at ``st``'s elements when ``writer`` is ``T.copy(src, dst[...])`` of a
        block buffer ``src`` of the region's shape, covering every element ``st`` writes, and
        nothing wrote ``src`` since."""
        call = writer
        if call.op.name != "tirx.tile.copy" or len(call.args) < 2:
            return None
        dst, src = call.args[0], call.args[1]
        if not isinstance(dst, tvm.ir.TensorRegion) or not isinstance(src, tvm.ir.TensorRegion) \
                or not dst.source.same_as(st.buffer) or buffer_scope(src.source) == "global":
            return None
        d_dims = [k for k, r in enumerate(dst.region) if not (_is_int(r.extent)
                                                              and int(r.extent) == 1)]
        s_dims = [k for k, r in enumerate(src.region) if not (_is_int(r.extent)
                                                              and int(r.extent) == 1)]
        if len(d_dims) != len(s_dims):
            return None
        index = [r.min for r in src.region]
        for k, (ix, r) in enumerate(zip(st.indices, dst.region)):
            j = self.simplify(ix - r.min)
            if not (self.ana.can_prove(j >= 0) and self.ana.can_prove(j < r.extent)):
                return None
            if k in d_dims:
                t = s_dims[d_dims.index(k)]
                if not self.ana.can_prove(src.region[t].extent == r.extent):
                    return None
                index[t] = self.simplify(src.region[t].min + j)
        if any(b.same_as(src.source) for s in between for b in _written(s)):
            return None
        return src.source[tuple(index)]

    def stored_value(self, writer, st, between):
        """``v'`` at ``st``'s elements when ``writer`` is a constant-extent ``T.Parallel`` nest
        storing ``dst[w + off] = v'`` once, covering every element ``st`` writes (or a
        ``T.copy`` of a block buffer into ``dst``: :meth:`copied_value`)."""
        if isinstance(writer, tirx.TilePrimitiveCall):
            return self.copied_value(writer, st, between)
        if not isinstance(writer, tirx.For) or writer.kind != tirx.ForKind.PARALLEL:
            return None
        loops, body = _parallel_chain(writer)
        if not all(_is_int(lp.extent) and _is_int(lp.min) and int(lp.min) == 0
                   for lp in loops):
            return None
        items = stmts_of(body)
        local = {}
        for b in items[:-1]:
            if not isinstance(b, tirx.Bind):
                return None
            local[b.var] = substitute(b.value, local)
        w = items[-1] if items else None
        if not isinstance(w, tirx.BufferStore) or not w.buffer.same_as(st.buffer):
            return None
        at = {}
        for ix_w, ix in zip(w.indices, st.indices):
            ix_w = self.simplify(substitute(ix_w, local))
            used = [lp for lp in loops if uses_var(ix_w, lp.loop_var)]
            if not used:
                if not self.ana.can_prove(ix_w == self.simplify(ix)):
                    return None
                continue
            if len(used) > 1 or used[0].loop_var in at:
                return None
            lp = used[0]
            off = self.simplify(ix_w - lp.loop_var)
            if uses_var(off, lp.loop_var):
                return None
            j = self.simplify(ix - off)
            if not (self.ana.can_prove(j >= 0) and self.ana.can_prove(j < lp.extent)):
                return None
            at[lp.loop_var] = j
        if len(at) != len(loops):
            return None
        value = substitute(substitute(w.value, local), at)
        read = [ld.source for ld in collect(value, tvm.ir.TensorLoad)]
        later = [b for s in [writer] + list(between) for b in _written(s)]
        if any(r.same_as(b) for r in read for b in later):
            return None
        return value

    def run(self, body):
        # outer loops first (a nest is rewritten from its head; the analyzer learns outer
        # ranges before inner extents), then the statement lists holding masked nests
        body = tt_map(body, [(tirx.For, self.on_for)], order="pre")
        if self.flatten:
            body = tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")
        if not self.masked:
            return body
        body = tt_map(body, [(tirx.SeqStmt, self.on_seq)], order="post")
        if any(m[4] for m in self.masked):
            _check_kept_tensor_elements(body)
        return body


def _check_kept_tensor_elements(body):
    """A select into a tensor that keeps the tensor's own element where its condition fails
    reads that element: refused, naming it, when a loop around the store writes the same
    element in an earlier iteration (the store's indices do not use the loop's variable):
    the kernel would read back what it wrote (V0 would find it, without the reason)."""
    for lp in collect(body, tirx.For, lambda f: f.kind != tirx.ForKind.PARALLEL):
        for st in collect(lp.body, tirx.BufferStore, lambda s: buffer_scope(s.buffer) == "global"):
            if select_parts(st.value) is None or any(uses_var(ix, lp.loop_var)
                                                     for ix in st.indices):
                continue
            if not any(ld.source.same_as(st.buffer) and
                       tvm_ffi.structural_equal(list(ld.indices), list(st.indices))
                       for ld in collect(st.value, tvm.ir.TensorLoad)):
                continue
            raise TTCompileError(
                f"the store to tensor {st.buffer.name} under a condition keeps "
                f"{st.buffer.name}'s element where the condition fails, so it reads that "
                f"element; it runs in every iteration of `{_loop_text(lp)}`, which stores the "
                "same element in an earlier iteration, and a kernel cannot read back what it "
                "wrote to a tensor", span=st.span or lp.span,
                hint=f"select into a fragment inside the loop and copy it to "
                     f"{st.buffer.name} after the loop")


def _first_stores(body, candidates) -> list:
    """The stores of ``candidates`` that are the first store to their buffer in ``body``:
    only there is the element's old value the one an earlier statement left."""
    seen, out = [], []
    for st in stmts_of(body):
        if not isinstance(st, tirx.BufferStore):
            continue
        if not any(st.buffer.same_as(b) for b in seen) and \
                any(st.same_as(c) for c in candidates):
            out.append(st)
        seen.append(st.buffer)
    return out


def bound_loop_extents(func):
    """``func``'s body with its loop extents bounded (module docstring)."""
    return _Rewriter(func).run(func.body)


@tt_pass("BoundLoopExtentsTT", requires=("ScalarsToBindTT",))
def BoundLoopExtentsTT(func, mod, ctx):
    """Loop extents that are not literals: constants, or a masked T.Parallel nest over a
    constant bound (module docstring)."""
    body = bound_loop_extents(func)
    return func if body.same_as(func.body) else func.with_body(body)
