"""C1 LowerSharedToCB: shared buffers become circular buffers; copies become tile streams.

Requires: GridToCoreGrid.

Guarantees:

* every block buffer (an ``AllocBuffer`` with ``tt.cb_desc``: shared buffers and fragments
  that are not accumulators) gets ``cb = tt.alloc_cb(-1, rows, cols, depth, dtype, name)``
  bound before the persistent body (CBs are static per kernel); the allocation stays, with
  its CB var in the ``tt.cb`` annotation, while tile ops still use the buffer (C2 lowers
  them), and is dropped otherwise;
* ``copy(block <- global)`` becomes ``tt.read_to_cb(cb, buffer, row0, col0, rows, cols)`` and
  ``copy(global <- block)`` becomes ``tt.write_from_cb(...)``, with ``row0``/``col0`` in tiles
  of the tensor's page grid (its tiled plane, the other dims flattened into rows in the
  order of A1's ``axes``; a read of a dim A0.3.1 lists in ``tt.checked_reads``, whose start
  reads tensor elements or a ``common.data_loops`` variable, gets ``read_to_cb``'s ``valid``
  operand: the condition, over the tile's row and column in the block, that the tile is in
  the tensor on the sides A0.3.1 could not prove); when the dtypes differ the
  pages move through a staging CB of the tensor's dtype and a ``tt.eltwise`` copy converts;
* ``copy(block <- accumulator)`` becomes ``tt.acc.pack(acc, cb)``; ``copy(global <-
  accumulator)`` packs into a new output CB that is then written out;
* ``copy(block <- block)`` is a compute op and stays a tile primitive for C2;
* ``copy(global <- block[0:k, ...])`` of the block's leading whole tile rows (``k`` a
  multiple of 32 below the first dim, the other dims whole; a 1-D block's first ``k``
  values) becomes ``tt.write_from_cb(cb, buffer, row0, col0, rows, cols, block)``: the writer
  waits for the whole block (``block`` tiles), writes its leading ``rows * cols`` tiles and
  pops it, so the tensor's elements past the part are not written at all (another block may
  own them: TileLang's GQA decoding stores the first ``valid_block_H`` of ``block_H`` rows);
  a converted or transposed part goes through a staging CB of the whole block first;
* a copy between a 2-D block buffer and a tensor region whose row start (in the tensor's
  tiled plane) is not provably a multiple of 32 - static, read from tensor elements
  (TileLang's ``cu_seqlens[b] + bx * block_M``) or a sum of such - with tile-aligned columns
  becomes ``tt.read_rows_to_cb(cb, T, lead, row, col0, rows, cols, row_dim)`` /
  ``tt.write_rows_from_cb(cb, T, lead, row, col0, rows, cols, row_dim, guard)`` (:func:`
  gather_rows`; ``guard`` the copy's ``tt_row_guard``, A0.2, else true): block row ``i`` is
  tensor row ``row + i`` of plane ``lead`` (D3 moves it face row by face row); a start
  provably a multiple of 32 keeps the tile path;
* copies are checked to be whole-buffer (or leading tile rows, above) on the block side,
  tile-aligned (but for the rows above) and in bounds on the global side (``TTLayoutError`` naming the buffer and offset otherwise); other copy
  directions are ``TTUnsupportedError``.  A converting copy is ``tt.eltwise`` of the
  expression ``tt.expr.load(0)`` (a copy through DST; the pack converts);
* a copy between a 1-D tensor (a row vector in DRAM: one row of tiles, values in row 0) and
  a column-vector block buffer (A2's ``vector = "col"``: values in column 0 of its tiles)
  moves through a staging row-vector CB of the tensor's dtype, and ``tt.eltwise`` of
  ``tt.expr.load_t(0)`` converts tile by tile (``transpose_tile``; the pack converts the
  dtype too): one transpose per 32 values.
* a ``tt.dprint_block(id, ...)`` marker (``T.print(block)``) becomes the writer's print of
  the CB that the copy claiming ``id`` (its config's ``tt_print_ids``) writes out:
  ``tt.cb_peek_front`` of the tiles its ``tt.write_from_cb`` waits for, then one
  ``tt.dprint_element`` per element in row-major order, read from L1 (``lower_block_prints``);
  ``check_block_prints`` refuses (``TTUnsupportedError``) a marker no copy claims, a converting
  copy, a loop around the print the copy is not in, a branch around the copy the print is not
  under, a tile op writing the copy's block between them.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx
from tvm.sym import Analyzer, ProofStrength

from ... import attrs, ops
from ...errors import TTLayoutError, TTUnsupportedError, source_span
from ..common import (
    TILE, buffer_dtype, buffer_scope, buffer_shape, collect, data_loops, get_attr, inline_binds,
    int_imm, reads_data,
    region_text,
    require_attr,
    seq, split_persistent, stmts_of, to_py, tt_calls, tt_pass,
)
from ..common import negate_condition, tt_map
from ..frontend.eltwise_expr import load, load_t
from ..analysis.scalar_reads import WORDS_PER_PAGE

OUTPUT_DEPTH = 2


def alloc_cb_call(rows, cols, depth, dtype, name, cb_id=-1):
    return ops.call("tt.alloc_cb", int_imm(cb_id), int_imm(rows), int_imm(cols), int_imm(depth),
                    tvm.ir.StringImm(dtype), tvm.ir.StringImm(name))


def _analyzer(func) -> Analyzer:
    """An analyzer that knows the ranges of block indices and loop variables."""
    ana = Analyzer()
    launch = to_py(require_attr(func, attrs.CORE_LAUNCH, "LowerSharedToCB"))
    grid = launch["grid"]
    _, persistent = split_persistent(func.body)
    # GridToCoreGrid binds the block indices first, in block_dims order
    block_binds = stmts_of(persistent.body)[:len(launch["block_dims"])]
    for bind, dim in zip(block_binds, launch["block_dims"]):
        ana.bind(bind.var, tvm.ir.Range(0, grid[dim]))
    # loops of constant bounds first (a block dimension A0.1.1 made a loop), so that bindings
    # and loop bounds over their variables are bounded too
    loops = collect(func.body, tirx.For)
    fixed = [lp for lp in loops if isinstance(lp.min, tirx.IntImm)
             and isinstance(lp.extent, tirx.IntImm)]
    for loop in fixed:
        ana.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))
    # index expressions bound to names (`start_y = by * block_M`) are seen through
    for bind in collect(persistent.body, tirx.Bind)[len(launch["block_dims"]):]:
        if str(bind.var.ty).startswith(("int", "uint")) and not tt_calls(bind.value):
            ana.bind(bind.var, bind.value)
    for loop in loops:
        if any(loop.same_as(f) for f in fixed):
            continue
        # [min, min + extent) with the end simplified: a loop from `by * bm // bn` to
        # `seq // bn` (TileLang's causal backward) stays below `seq // bn` whatever `by` is
        lo = ana.const_int_bound(loop.min).min_value
        hi = ana.const_int_bound(ana.simplify(loop.min + loop.extent)).max_value
        if -(1 << 31) <= lo <= hi < (1 << 31):
            ana.bind(loop.loop_var, tvm.ir.Range(int(lo), int(hi)))
        else:
            ana.bind(loop.loop_var, tvm.ir.Range.from_min_extent(loop.min, loop.extent))
    return ana


def _check_whole(region, span):
    buf = region.source
    for r, dim in zip(region.region, buffer_shape(buf)):
        if not (isinstance(r.min, tvm.tirx.IntImm) and int(r.min) == 0
                and isinstance(r.extent, tvm.tirx.IntImm) and int(r.extent) == dim):
            raise TTUnsupportedError(
                f"T.copy must move whole block buffers or constant tile-aligned regions of "
                f"them; {region_text(region)} is neither", span=span,
                hint=f"copy all of {buf.name} (shape {buffer_shape(buf)}), or regions whose "
                "bounds are constants at multiples of 32 (or the dim's end) in its last two "
                "dims: each such region becomes a block buffer of its own")


def _leading_tile_rows(region, span):
    """The shape of ``region`` of a block buffer when it is the buffer's leading whole tile
    rows (every dim from 0, the first an extent of whole tiles below the dim, the others
    whole: the first ``k`` rows of a ``[block_H, dim]`` fragment, the first ``k`` values of a
    1-D one), whose tiles lead the buffer's block in its CB; None when it is the whole
    buffer; else the refusal of a partial region."""
    buf = region.source
    shape = buffer_shape(buf)
    ext = [int(r.extent) if isinstance(r.extent, tvm.tirx.IntImm) else None
           for r in region.region]
    starts = [isinstance(r.min, tvm.tirx.IntImm) and int(r.min) == 0 for r in region.region]
    if all(starts) and ext == list(shape):
        return None
    if len(shape) in (1, 2) and all(starts) and ext[0] is not None and \
            0 < ext[0] < shape[0] and ext[0] % TILE == 0 and ext[1:] == list(shape[1:]):
        return ext
    _check_whole(region, span)


def _block_tile_dims(shape) -> tuple:
    """(tile rows, tile columns) of a 1-D or 2-D block buffer's block (1-D: one row)."""
    if len(shape) == 1:
        return 1, -(-shape[0] // TILE)
    return -(-shape[-2] // TILE), -(-shape[-1] // TILE)


def _block_tiles(shape) -> int:
    rows, cols = _block_tile_dims(shape)
    return rows * cols


def global_tiles(region, block_buf, ana: Analyzer, span, axes=None, vector=False,
                 block_shape=None, facts=None, dloops=(), rows_aligned=True):
    """(row0, col0, rows, cols) in tiles of ``region`` of a global tensor whose pages hold its
    axes in the order ``axes`` (A1's ``tt.layout_desc``; default: as declared), or a clear
    error.  ``vector``: the tensor is stored as row vectors (A1's ``vector``), one row of
    tiles per index of its leading dims."""
    buf = region.source
    shape = buffer_shape(buf)
    ranges = list(region.region)
    block_shape = block_shape or buffer_shape(block_buf)
    if (len(shape) == 1 or vector) and len(block_shape) == 1:  # row vectors: a row of tiles
        r = ranges[-1]
        _check_range(buf, r, "element", shape[-1], ana, span, facts, dloops)
        if not isinstance(r.extent, tvm.tirx.IntImm) or int(r.extent) != block_shape[0]:
            raise TTLayoutError(
                f"copy between {buf.name}[..., {r.min}:+{r.extent}] and {block_buf.name} of "
                f"shape {block_shape}: the extents must match", span=span)
        lead = int_imm(0)
        for dim, lr in zip(shape[:-1], ranges[:-1]):  # one row of tiles per leading index
            if not ana.can_prove(lr.min >= 0) or not ana.can_prove(lr.min < dim):
                raise TTLayoutError(
                    f"copy of {buf.name} at index `{lr.min}` can run past the tensor's "
                    f"dimension of {dim}", span=span)
            lead = lead * dim + lr.min
        return (ana.simplify(lead), ana.simplify(tirx.floordiv(r.min, TILE)), 1,
                block_shape[0] // TILE)
    if len(block_shape) < 2 or len(shape) < 2:
        raise TTUnsupportedError(
            f"copy between {buf.name} and the 1-D buffer {block_buf.name}: a 1-D block buffer "
            "is a vector in tiles and moves to or from global memory only as a 1-D tensor's "
            "elements; copy it to a 1-D tensor, or broadcast it into a 2-D buffer first "
            "(B[i, j] = R[i])",
            span=span)
    # extents must match the block buffer: its last two dims on the tensor's tiled plane
    # (A1's ``axes``: the last two dims unless its copies slice two others), 1 elsewhere
    # (TileLang aligns shapes from the right)
    axes = axes or list(range(len(shape)))
    extents = [int(r.extent) if isinstance(r.extent, tvm.tirx.IntImm) else None for r in ranges]
    if len(block_shape) > len(shape):
        want = None
    elif len(block_shape) > 2 or axes[-2:] == [len(shape) - 2, len(shape) - 1]:
        want = [1] * (len(shape) - len(block_shape)) + block_shape
    else:
        want = [1] * len(shape)
        want[axes[-2]], want[axes[-1]] = block_shape
    if want is None or [e for e in extents] != want:
        raise TTLayoutError(
            f"copy between {buf.name} region of extent {extents} and {block_buf.name} of shape "
            f"{block_shape}: the extents must match", span=span)
    for e in extents[:-2]:
        if e != 1 and axes[-2:] == [len(shape) - 2, len(shape) - 1]:
            raise TTUnsupportedError(
                f"copy of {buf.name}: leading dimensions must be indexed one at a time", span=span)
    row_ax, col_ax = axes[-2], axes[-1]
    row_r, col_r = ranges[row_ax], ranges[col_ax]
    for r, what, dim in ((row_r, "row", shape[row_ax]), (col_r, "column", shape[col_ax])):
        _check_range(buf, r, what, dim, ana, span, facts, dloops,
                     rows_aligned or what != "row")
    lead = int_imm(0)
    for a in axes[:-2]:  # the batched dims, in page order
        lead = lead * shape[a] + ranges[a].min
    row_tiles = shape[row_ax] // TILE
    row0 = ana.simplify(lead * row_tiles + tirx.floordiv(row_r.min, TILE))
    col0 = ana.simplify(tirx.floordiv(col_r.min, TILE))
    return row0, col0, int(row_r.extent) // TILE, int(col_r.extent) // TILE


def element_free(expr):
    """``expr`` with each tensor element it reads (a block offset read from a tensor,
    ``BlockIndices[b, t, 0, i] * 32``) replaced by a fresh integer variable: any value."""
    return tvm_ffi.structural_map(
        expr, [(tvm.ir.TensorLoad, lambda ld: tirx.Var(f"{ld.source.name}_elem",
                                                       str(ld.dtype)))], order="post")


def loop_facts(func) -> list:
    """Facts about the loops whose extents are not constants (``min <= v < min + extent``,
    the kernel's integer and boolean bindings inlined): what a per-variable range loses
    when the extent depends on a block index (``T.Pipelined(T.if_then_else(by < n, 1, m -
    by))``)."""
    binds = {b.var: b.value for b in collect(func.body, tirx.Bind)
             if str(b.var.ty).startswith(("int", "uint", "bool")) and not tt_calls(b.value)}
    facts = []
    for lp in collect(func.body, tirx.For):
        if isinstance(lp.min, tirx.IntImm) and isinstance(lp.extent, tirx.IntImm):
            continue
        v = lp.loop_var
        facts.append(inline_binds(tirx.And(lp.min <= v, v < lp.min + lp.extent), binds))
    return facts, binds


def prove_split(ana: Analyzer, pred, facts=None, depth=0) -> bool:
    """``ana.can_prove(pred)``, else, with ``facts`` (:func:`loop_facts`), a proof by cases:
    each ``Select(c, a, b)`` in the predicate or the facts split into ``c`` with ``a`` and
    ``not c`` with ``b``, the facts as constraints (TVM's analyzer with its symbolic-bound
    fallback).  An index chosen by a condition of block indices, in a loop whose extent is
    chosen by the same condition, is bounded so."""
    if ana.can_prove(pred):
        return True
    if not facts:
        return False
    facts_, binds = facts
    pred = inline_binds(pred, binds)
    if depth == 0 and not collect(pred, tirx.Select) and \
            not any(collect(f, tirx.Select) for f in facts_):
        return False
    sel = collect(pred, tirx.Select) or [s for f in facts_ for s in collect(f, tirx.Select)]
    if not sel or depth > 6:
        known = facts_[0]
        for f in facts_[1:]:
            known = tirx.And(known, f)
        with ana.constraint_scope(known):
            return ana.can_prove(pred, ProofStrength.SYMBOLIC_BOUND)
    s = sel[0]

    def pick(e, arm):
        return tvm_ffi.structural_map(e, [(tirx.Select, lambda x: arm if x.same_as(s) else x)],
                                      order="post")

    for cond, arm in ((s.condition, s.true_value), (negate_condition(s.condition), s.false_value)):
        with ana.constraint_scope(cond):
            if not prove_split(ana, pick(pred, arm), ([pick(f, arm) for f in facts_], {}),
                               depth + 1):
                return False
    return True


def gather_rows(region, block_buf, ana: Analyzer, span, axes=None, vector=False, facts=None,
                dloops=()):
    """``(lead, row, col0, rows, cols, row_dim)`` when ``region`` of a 2-D-block copy starts at
    a tensor row that is not provably a multiple of 32 (a tensor element in the start taken as
    any value) while its columns are tile-aligned: the block moves row by row
    (``tt.read_rows_to_cb`` / ``tt.write_rows_from_cb``): block row ``i`` is tensor row ``row +
    i`` of the tiled plane ``lead`` (the batched dims' index in page order), whose rows are
    ``row_dim`` (the device's padded rows).  None for an aligned start (the tile path, as
    before), a vector tensor or a 1-D block.  The extents are checked as for tiles; the start is
    not bounded here (the rows outside the tensor read its safe value and are not written; the
    end is padded for by A0.3.1)."""
    buf = region.source
    shape = buffer_shape(buf)
    block_shape = buffer_shape(block_buf)
    if vector or len(shape) < 2 or len(block_shape) != 2:
        return None
    axes = axes or list(range(len(shape)))
    row_ax, col_ax = axes[-2], axes[-1]
    row_r, col_r = region.region[row_ax], region.region[col_ax]
    if ana.can_prove(tirx.floormod(element_free(row_r.min), TILE) == 0):
        return None
    # extents, leading dims and the column range: checked as for a block of tiles (the row
    # range's alignment aside)
    _, col0, nr, nc = global_tiles(region, block_buf, ana, span, axes, vector, None, facts,
                                   dloops, rows_aligned=False)
    lead = int_imm(0)
    for a in axes[:-2]:
        lead = lead * shape[a] + region.region[a].min
    return ana.simplify(lead), ana.simplify(row_r.min), col0, nr, nc, int(shape[row_ax])


def _check_range(buf, r, what, dim, ana: Analyzer, span, facts=None, dloops=(),
                 aligned=True):
    """A copy's range of one tensor dimension is tile-aligned (unless ``aligned`` is false: a
    row-gathered block, :func:`gather_rows`) and in bounds.  A start that
    reads tensor elements (or the variable of a loop whose bounds do: ``dloops``) is
    tile-aligned for every value of them; its bounds were proven by PadTensorsTT under the
    guards of its ``if``, or its reads are checked when the reader runs
    (``tt.checked_reads``; stores it cannot bound are refused there)."""
    element = reads_data(r.min, {}, list(dloops))
    if aligned and not ana.can_prove(tirx.floormod(element_free(r.min), TILE) == 0):
        raise TTLayoutError(
            f"copy of {buf.name} starts at {what} `{r.min}`, which is not a multiple of 32; "
            "block offsets must be tile-aligned" + (
                " (an offset read from a tensor element must be a multiple of 32 for every "
                "value of the element: `Idx[...] * 32`)" if element else ""), span=span)
    if element:
        return
    # a row-gathered block's rows before the tensor's start read the safe value and are not
    # written (C1, D3); its end is padded for (A0.3.1)
    if not prove_split(ana, r.min + r.extent <= dim, facts) or \
            (aligned and not prove_split(ana, r.min >= 0, facts)):
        raise TTLayoutError(
            f"copy of {buf.name} at {what} `{r.min}` with extent {r.extent} can run past "
            f"the tensor's {what} count {dim}; the launch grid times the block size must "
            f"not exceed the tensor (partial blocks are not supported)", span=span,
            hint="make the dimension a multiple of the block size")


@tt_pass("LowerSharedToCB", requires=("GridToCoreGrid",))
def LowerSharedToCB(func, mod, ctx):
    """Shared allocations -> tt.alloc_cb; copies -> tt.read_to_cb / tt.write_from_cb / acc.pack."""
    ana = _analyzer(func)
    facts = loop_facts(func)
    cb_of = {}
    vectors = {}  # block buffer -> "none" / "col" / "row"
    accumulators = []
    binds = []
    for alloc in collect(func.body, tirx.AllocBuffer):
        buf = alloc.buffer
        ann = alloc.annotations or {}
        if attrs.ACC_DESC in ann:
            accumulators.append(buf)
        if attrs.CB_DESC not in ann:
            continue
        desc = to_py(ann[attrs.CB_DESC])
        var = tirx.Var(f"{buf.name}_cb", "int32")
        cb_of[buf] = var
        vectors[buf] = desc["vector"]
        binds.append(tirx.Bind(var, alloc_cb_call(desc["rows"], desc["cols"], desc["depth"],
                                                  desc["dtype"], buf.name), alloc.span))

    def cb(buf):
        return cb_of[buf]

    layouts = to_py(get_attr(func, attrs.LAYOUT_DESC, [])) or []

    def axes_of(tensor):
        for i, p in enumerate(func.params):
            if p.same_as(tensor) and i < len(layouts):
                return [int(a) for a in layouts[i]["axes"]]
        return None

    def vector_tensor(tensor) -> bool:
        for i, p in enumerate(func.params):
            if p.same_as(tensor) and i < len(layouts):
                return bool(layouts[i].get("vector", len(buffer_shape(tensor)) == 1))
        return len(buffer_shape(tensor)) == 1

    def scalar_tensor(tensor) -> bool:
        return any(p.same_as(tensor) and i < len(layouts) and layouts[i].get("scalars")
                   for i, p in enumerate(func.params))

    def tensor_tiles(region, block_buf, span, block_shape=None):
        return global_tiles(region, block_buf, ana, span, axes_of(region.source),
                            vector_tensor(region.source), block_shape, facts, dloops)

    checked = to_py(get_attr(func, attrs.CHECKED_READS, [])) or []
    dloops = data_loops(func.body)

    def tile_validity(region, span):
        """For a block read whose start reads tensor elements in a dim A0.3.1 could not bound
        (``tt.checked_reads``): the condition, over the block's tile row and column
        (``tt.mask.index(0)`` / ``(1)``), that the tile is inside the tensor; None for any
        other read."""
        tensor = region.source
        index = next((i for i, p in enumerate(func.params) if p.same_as(tensor)), None)
        sides = {int(c["dim"]): (bool(c["start"]), bool(c["end"])) for c in checked
                 if c["param"] == index}
        dims = [d for d in sides if reads_data(region.region[d].min, {}, dloops)]
        if not dims:
            return None
        shape = buffer_shape(tensor)
        if vector_tensor(tensor) or len(shape) < 2:
            raise TTUnsupportedError(
                f"tensor {tensor.name} is read in blocks at offsets read from tensor elements "
                "that can reach outside it; the reader checks such tiles only for a tensor "
                "held as 2-D tiles (not as row vectors)", span=span,
                hint="bound the offset with an `if` around the copy (`if 0 <= offset and "
                     "offset + extent <= n:`)")
        axes = axes_of(tensor) or list(range(len(shape)))
        row_ax, col_ax = axes[-2], axes[-1]
        ok = tirx.const(True, "bool")
        for d in dims:
            start = region.region[d].min
            if d in (row_ax, col_ax):
                t = tirx.floordiv(start, TILE) + ops.call("tt.mask.index",
                                                         int_imm(0 if d == row_ax else 1))
                low, high = t >= 0, t < shape[d] // TILE
            else:
                low, high = start >= 0, start < shape[d]
            before, past = sides[d]  # the sides A0.3.1 could not prove
            for c in [low] * before + [high] * past:
                ok = tirx.And(ok, c)
        return ana.simplify(ok)

    def tensor_rows(region, block_buf, span):
        return gather_rows(region, block_buf, ana, span, axes_of(region.source),
                           vector_tensor(region.source), facts, dloops)

    def row_guard(call):
        guard = (call.config or {}).get(attrs.ROW_GUARD)
        return guard if guard is not None else tirx.const(True, "bool")

    def transposed(block, tensor):
        """A vector tensor holds row vectors: a column-vector block moves through a staging
        row vector whose tiles are its tiles transposed."""
        return vector_tensor(tensor) and vectors.get(block) == "col"

    def staging_cb(block, dtype, rows, cols, span, direction, name=None):
        """A CB next to ``block`` holding its tiles in another dtype (for converting copies)
        or transposed (a column vector's tiles as a row vector's)."""
        name = name or f"{block.name}_{direction}_{dtype}"
        var = tirx.Var(f"{name}_cb", "int32")
        depth = to_py(next(a for a in collect(func.body, tirx.AllocBuffer)
                           if a.buffer.same_as(block)).annotations[attrs.CB_DESC])["depth"]
        binds.append(tirx.Bind(var, alloc_cb_call(rows, cols, depth, dtype, name), span))
        return var

    def kind(buf):
        if buf in cb_of:
            return "block"
        if any(buf.same_as(a) for a in accumulators):
            return "accumulator"
        return buffer_scope(buf)

    printed = {}  # T.print id -> (write_from_cb call, block buffer, span)

    def lower_copy(call: tirx.TilePrimitiveCall):
        out = lower_one_copy(call)
        ids = (call.config or {}).get(attrs.PRINT_IDS) if call.op.name == "tirx.tile.copy" \
            else None
        if ids:
            writes = [c for c in tt_calls(out) if c.op.name == "tt.write_from_cb"]
            for i in ids:
                printed[int(i)] = (writes[0] if writes else None, call.args[1].source,
                                   call.span)
        return out

    def lower_one_copy(call: tirx.TilePrimitiveCall):
        if call.op.name != "tirx.tile.copy":
            return call
        dst, src = call.args[0], call.args[1]
        d_scope, s_scope = kind(dst.source), kind(src.source)
        span = call.span
        if d_scope == "block" and s_scope == "block":
            return call
        if d_scope == "block" and s_scope == "global" and scalar_tensor(src.source):
            # one element of a scalar tensor staged into a [1] block (StageScalarOperandsTT):
            # the reader puts its 32-bit word at element (0, 0) of the block's tile
            flat = int_imm(0)
            for r, d in zip(src.region, buffer_shape(src.source)):
                flat = flat * int(d) + r.min
            flat = ana.simplify(flat)
            return ops.evaluate(
                "tt.element_to_cb", cb(dst.source), src.source,
                ana.simplify(tirx.FloorDiv(flat, int_imm(WORDS_PER_PAGE))),
                ana.simplify(tirx.FloorMod(flat, int_imm(WORDS_PER_PAGE))), span=span)
        if d_scope == "block" and s_scope == "global":
            _check_whole(dst, span)
            gathered = None if transposed(dst.source, src.source) else \
                tensor_rows(src, dst.source, span)
            if gathered is not None:  # rows off a tile boundary: gathered row by row
                lead, row, c0, nr, nc, row_dim = gathered
                target = cb(dst.source)
                if buffer_dtype(src.source) != buffer_dtype(dst.source):
                    target = staging_cb(dst.source, buffer_dtype(src.source), nr, nc, span, "in")
                read = ops.evaluate("tt.read_rows_to_cb", target, src.source, lead, row, c0,
                                    int_imm(nr), int_imm(nc), int_imm(row_dim), span=span)
                if target is cb(dst.source):
                    return read
                return seq([read, ops.evaluate("tt.eltwise", cb(dst.source), int_imm(nr * nc),
                                               load(0), target, span=span)])
            r0, c0, nr, nc = tensor_tiles(src, dst.source, span)
            valid = tile_validity(src, span)
            # a read at offsets read from tensor elements that may leave the tensor: each
            # tile checked when the reader runs (zeros outside)
            extra = [valid] if valid is not None else []
            if transposed(dst.source, src.source):  # row vector in DRAM -> column vector
                staging = staging_cb(dst.source, buffer_dtype(src.source), nr, nc, span, "in",
                                     name=f"{dst.source.name}_row_in")
                return seq([
                    ops.evaluate("tt.read_to_cb", staging, src.source, r0, c0, int_imm(nr),
                                 int_imm(nc), *extra, span=span),
                    ops.evaluate("tt.eltwise", cb(dst.source), int_imm(nr * nc), load_t(0),
                                 staging, span=span),
                ])
            if buffer_dtype(src.source) == buffer_dtype(dst.source):
                return ops.evaluate("tt.read_to_cb", cb(dst.source), src.source, r0, c0,
                                    int_imm(nr), int_imm(nc), *extra, span=span)
            # DRAM pages hold the tensor's dtype: read them as they are, convert on compute
            staging = staging_cb(dst.source, buffer_dtype(src.source), nr, nc, span, "in")
            return seq([
                ops.evaluate("tt.read_to_cb", staging, src.source, r0, c0, int_imm(nr),
                             int_imm(nc), *extra, span=span),
                ops.evaluate("tt.eltwise", cb(dst.source), int_imm(nr * nc), load(0), staging,
                             span=span),
            ])
        if d_scope == "global" and s_scope == "block":
            part = _leading_tile_rows(src, span)
            if part is not None:
                # the block's leading tiles to the tensor: the writer waits for the whole
                # block, writes those tiles and pops the block (the tensor's other elements
                # are not written: another block may own them)
                # (converted or transposed first, the whole block, into a staging CB whose
                # leading tiles are the part's: a column vector's first tiles are its
                # transposed row vector's first tiles)
                r0, c0, nr, nc = tensor_tiles(dst, src.source, span, part)
                total = _block_tiles(buffer_shape(src.source))
                source, pre = cb(src.source), []
                if transposed(src.source, dst.source):
                    source = staging_cb(src.source, buffer_dtype(dst.source), 1, total, span,
                                        "out", name=f"{src.source.name}_row_out")
                    pre = [ops.evaluate("tt.eltwise", source, int_imm(total), load_t(0),
                                        cb(src.source), span=span)]
                elif buffer_dtype(src.source) != buffer_dtype(dst.source):
                    fr, fc = _block_tile_dims(buffer_shape(src.source))
                    source = staging_cb(src.source, buffer_dtype(dst.source), fr, fc, span,
                                        "out")
                    pre = [ops.evaluate("tt.eltwise", source, int_imm(total), load(0),
                                        cb(src.source), span=span)]
                return seq(pre + [ops.evaluate("tt.write_from_cb", source, dst.source, r0, c0,
                                               int_imm(nr), int_imm(nc), int_imm(total),
                                               span=span)])
            _check_whole(src, span)
            gathered = None if transposed(src.source, dst.source) else \
                tensor_rows(dst, src.source, span)
            if gathered is not None:  # rows off a tile boundary: scattered row by row
                lead, row, c0, nr, nc, row_dim = gathered
                source, pre = cb(src.source), []
                if buffer_dtype(src.source) != buffer_dtype(dst.source):
                    source = staging_cb(src.source, buffer_dtype(dst.source), nr, nc, span,
                                        "out")
                    pre = [ops.evaluate("tt.eltwise", source, int_imm(nr * nc), load(0),
                                        cb(src.source), span=span)]
                return seq(pre + [ops.evaluate(
                    "tt.write_rows_from_cb", source, dst.source, lead, row, c0, int_imm(nr),
                    int_imm(nc), int_imm(row_dim), row_guard(call), span=span)])
            if (call.config or {}).get(attrs.ROW_GUARD) is not None:
                raise TTLayoutError(
                    f"copy to {dst.source.name}: a row guard on a store at tile-aligned rows",
                    span=span)
            r0, c0, nr, nc = tensor_tiles(dst, src.source, span)
            if transposed(src.source, dst.source):  # column vector -> row vector in DRAM
                staging = staging_cb(src.source, buffer_dtype(dst.source), nr, nc, span, "out",
                                     name=f"{src.source.name}_row_out")
                return seq([
                    ops.evaluate("tt.eltwise", staging, int_imm(nr * nc), load_t(0),
                                 cb(src.source), span=span),
                    ops.evaluate("tt.write_from_cb", staging, dst.source, r0, c0, int_imm(nr),
                                 int_imm(nc), span=span),
                ])
            if buffer_dtype(src.source) == buffer_dtype(dst.source):
                return ops.evaluate("tt.write_from_cb", cb(src.source), dst.source, r0, c0,
                                    int_imm(nr), int_imm(nc), span=span)
            staging = staging_cb(src.source, buffer_dtype(dst.source), nr, nc, span, "out")
            return seq([
                ops.evaluate("tt.eltwise", staging, int_imm(nr * nc), load(0), cb(src.source),
                             span=span),
                ops.evaluate("tt.write_from_cb", staging, dst.source, r0, c0, int_imm(nr),
                             int_imm(nc), span=span),
            ])
        if d_scope == "block" and s_scope == "accumulator":
            _check_whole(dst, span)
            _check_whole(src, span)
            if buffer_shape(dst.source) != buffer_shape(src.source):
                raise TTLayoutError(
                    f"copy {src.source.name} -> {dst.source.name}: shapes "
                    f"{buffer_shape(src.source)} and {buffer_shape(dst.source)} differ", span=span)
            return ops.evaluate("tt.acc.pack", src.source, cb(dst.source), span=span)
        if d_scope == "global" and s_scope == "accumulator":
            _check_whole(src, span)
            gathered = tensor_rows(dst, src.source, span)
            if gathered is not None:  # rows off a tile boundary: packed, then scattered
                lead, row, c0, nr, nc, row_dim = gathered
            else:
                r0, c0, nr, nc = tensor_tiles(dst, src.source, span)
            out_name = f"{src.source.name}_out"
            var = tirx.Var(f"{out_name}_cb", "int32")
            binds.append(tirx.Bind(var, alloc_cb_call(nr, nc, OUTPUT_DEPTH,
                                                      buffer_dtype(dst.source), out_name), span))
            if gathered is not None:
                write = ops.evaluate("tt.write_rows_from_cb", var, dst.source, lead, row, c0,
                                     int_imm(nr), int_imm(nc), int_imm(row_dim),
                                     row_guard(call), span=span)
            else:
                write = ops.evaluate("tt.write_from_cb", var, dst.source, r0, c0, int_imm(nr),
                                     int_imm(nc), span=span)
            return seq([ops.evaluate("tt.acc.pack", src.source, var, span=span), write])
        what = {"block": "block buffer", "accumulator": "accumulator"}
        raise TTUnsupportedError(
            f"T.copy from {what.get(s_scope, s_scope)} {src.source.name} to "
            f"{what.get(d_scope, d_scope)} {dst.source.name} is not supported; supported: "
            "global->shared/fragment, shared/fragment->global, shared/fragment->shared/fragment, "
            "gemm accumulator->shared/global", span=span)

    check_block_prints(func.body)
    body = tt_map(func.body, [(tirx.TilePrimitiveCall, lower_copy)], order="post")
    body = lower_block_prints(body, printed, binds)
    still_used = [r.source for c in collect(body, tirx.TilePrimitiveCall) for r in c.args
                  if isinstance(r, tvm.ir.TensorRegion)]

    def to_cb(alloc: tirx.AllocBuffer):
        ann = dict(alloc.annotations or {})
        if attrs.CB_DESC not in ann:
            return alloc
        if not any(alloc.buffer.same_as(b) for b in still_used):
            return tirx.Evaluate(int_imm(0))
        ann[attrs.CB] = cb_of[alloc.buffer]
        return tirx.AllocBuffer(alloc.buffer, ann, source_span(alloc.span))

    body = tt_map(body, [(tirx.AllocBuffer, to_cb)], order="post")
    body = tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")
    return func.with_body(seq(binds + [body]))


def check_block_prints(body):
    """Each ``T.print(block)`` marker and the copy that claims it (``tt_print_ids``): every
    loop around the print is around the copy too (else the writer would wait, in an earlier
    iteration, for a block stored only later), every branch around the copy is around the
    print too (else the writer would wait for a block it may never get), and no tile op writes
    the block between them (the print shows the block as stored).  TTUnsupportedError
    naming the print otherwise."""
    events = []  # (kind, payload, scopes) in program order

    def walk(stmt, scopes):
        if isinstance(stmt, tirx.SeqStmt):
            for x in stmt.seq:
                walk(x, scopes)
        elif isinstance(stmt, tirx.For):
            walk(stmt.body, scopes + (("loop", stmt),))
        elif isinstance(stmt, tirx.IfThenElse):
            walk(stmt.then_case, scopes + (("then", stmt),))
            if stmt.else_case is not None:
                walk(stmt.else_case, scopes + (("else", stmt),))
        elif isinstance(stmt, tirx.Evaluate):
            c = stmt.value
            if isinstance(c, tvm.ir.Call) and isinstance(c.op, tvm.ir.Op) and \
                    c.op.name == "tt.dprint_block":
                events.append(("print", (int(c.args[0]), stmt.span), scopes))
        elif isinstance(stmt, tirx.TilePrimitiveCall):
            events.append(("tile", stmt, scopes))
        else:
            for field in ("body", "block"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, tirx.Stmt):
                    walk(inner, scopes)

    walk(body, ())

    def same(a, b):
        return a[0] == b[0] and a[1].same_as(b[1])

    for i, (kind, payload, scopes) in enumerate(events):
        if kind != "print":
            continue
        ident, span = payload
        claimer = next((e[1] for e in events[i:] if e[0] == "tile" and ident in
                        [int(x) for x in (e[1].config or {}).get(attrs.PRINT_IDS, [])]), None)
        for j in range(i + 1, len(events)):
            k2, call, scopes2 = events[j]
            if k2 != "tile":
                continue
            ids = [int(x) for x in (call.config or {}).get(attrs.PRINT_IDS, [])]
            if ident in ids:
                name = call.args[1].source.name
                if not all(any(same(s, t) for t in scopes2) for s in scopes if s[0] == "loop"):
                    raise TTUnsupportedError(
                        f"T.print({name}): the print is in a loop that the T.copy storing "
                        f"{name} after it is not in; the writer prints the block as that copy "
                        "stores it: print next to the copy (in the same loop)", span=span)
                if not all(any(same(s, t) for t in scopes) for s in scopes2 if s[0] != "loop"):
                    raise TTUnsupportedError(
                        f"T.print({name}): the T.copy storing {name} after the print is under a "
                        "branch the print is not under; print inside that branch", span=span)
                break
            regions = [a for a in call.args if isinstance(a, tvm.ir.TensorRegion)]
            if claimer is not None and regions and \
                    regions[0].source.same_as(claimer.args[1].source):
                name = claimer.args[1].source.name
                raise TTUnsupportedError(
                    f"T.print({name}): {name} is written after the print and before the "
                    "T.copy that stores it (the writer prints the block as stored): print after "
                    "its last write", span=span)


def lower_block_prints(body, printed, binds):
    """``tt.dprint_block(id, format, bx, by, bz)`` (``T.print(block)``) -> the writer's print of
    the CB that the copy claiming ``id`` writes out: ``tt.cb_peek_front`` of the tiles that
    ``tt.write_from_cb`` waits for, their L1 address, and one ``tt.dprint_element`` per element
    in row-major order (a tile's elements in its four 16x16 faces, row-major in each face;
    the block's tiles row-major in the CB)."""
    dtypes = {}
    for b in binds:
        c = b.value
        if isinstance(c, tvm.ir.Call) and c.op.name == "tt.alloc_cb":
            dtypes[b.var] = str(c.args[4].value)

    def lower(ev: tirx.Evaluate):
        c = ev.value
        if not (isinstance(c, tvm.ir.Call) and isinstance(c.op, tvm.ir.Op) and
                c.op.name == "tt.dprint_block"):
            return ev
        ident, fmt, bx, by, bz = c.args
        write, buf, span = printed.get(int(ident), (None, None, None))
        if buf is None or write is None:
            what = f"T.print({buf.name})" if buf is not None else "T.print(block)"
            raise TTUnsupportedError(
                f"{what}: a block prints in the writer, from the block the next T.copy(block, "
                "tensor) after the print stores; this block is not stored to a tensor after "
                "the print (add the copy, or print a block that is)", span=span or ev.span)
        cb = write.args[0]
        dtype = next((d for v, d in dtypes.items() if v.same_as(cb)), None)
        if dtype != buffer_dtype(buf):
            raise TTUnsupportedError(
                f"T.print({buf.name}): the writer sees the block converted to {dtype} (the "
                f"tensor's dtype), not as {buffer_dtype(buf)}; print a block stored in its own "
                "dtype", span=span)
        rows, cols = (int(d) for d in buffer_shape(buf))
        ntiles = write.args[6] if len(write.args) > 6 else int_imm((rows // 32) * (cols // 32))
        esize = 4 if dtype == "float32" else 2
        load = {"bfloat16": "tt.l1_load_bf16", "float16": "tt.l1_load_f16"}.get(
            dtype, "tt.l1_load_f32")
        # the front page's address, read per element (no variable a build without DPRINT,
        # where the DPRINT lines vanish, would leave unused)
        base = ops.call("tt.cb_peek_ptr", cb)
        r, col = tirx.Var("print_r", "int32"), tirx.Var("print_c", "int32")
        c32, c16 = int_imm(32), int_imm(16)
        tile = tirx.FloorDiv(r, c32) * int_imm(cols // 32) + tirx.FloorDiv(col, c32)
        face = tirx.FloorDiv(tirx.FloorMod(r, c32), c16) * int_imm(2) + \
            tirx.FloorDiv(tirx.FloorMod(col, c32), c16)
        within = face * int_imm(256) + tirx.FloorMod(r, c16) * c16 + tirx.FloorMod(col, c16)
        addr = base + (tile * int_imm(1024) + within) * int_imm(esize)
        element = ops.evaluate("tt.dprint_element", fmt, bx, by, bz, r * int_imm(cols) + col,
                               ops.call(load, addr), span=span)
        nest = tirx.For(r, int_imm(0), int_imm(rows), tirx.ForKind.SERIAL,
                        tirx.For(col, int_imm(0), int_imm(cols), tirx.ForKind.SERIAL, element))
        return seq([ops.evaluate("tt.cb_peek_front", cb, ntiles, span=span), nest])

    return tt_map(body, [(tirx.Evaluate, lower)], order="post")
