"""C2 LowerTTTileIntrinsics: tile compute ops become CB-level compute ops.

Requires: LowerSharedToCB.

Guarantees (no DST handling, no init calls yet); the block buffers' allocations (whose
``tt.cb`` annotation names their CB) are gone:

* ``tile.gemm(C, A, B, C, tA, tB, 1, beta)`` with ``A``/``B`` shared and ``C`` a fragment
  becomes ``tt.mm.mma(C, cb_A, cb_B, Mt, Nt, Kt, tB)``, preceded by ``tt.acc.clear(C)`` when
  ``beta == 0`` (``clear_accum``);
* ``tile.fill(accumulator, 0)`` (``T.clear``) becomes ``tt.acc.clear(accumulator)``;
  ``tile.fill(block, c)`` (``T.fill`` / ``T.clear`` of a block buffer) becomes
  ``tt.const_tile(cb, c, ntiles)``;
* ``tile.add/sub/mul(dst, a, b)`` on block buffers (shared buffers and non-accumulator
  fragments, see A2) becomes ``tt.fpu.<op>`` for bfloat16 (matrix engine) and the
  expression ``load(0) <op> load(1)`` (below) for float32 (the vector engine keeps fp32; the
  FPU's source registers would round fp32 to TF32);
* ``tile.copy(dst, src)`` between block buffers becomes ``tt.eltwise(cb_dst, ntiles,
  tt.expr.load(0), cb_src)`` (through DST; the pack converts the data format when the dtypes
  differ; a source region of the 2-D source's leading whole tile rows, ``acc_o[:32, :]`` of
  a 64-row block, copies the first ``ntiles`` tiles of its block, which the kernel waits for
  and frees whole), and ``tt.tile.expr(dst, tree, *srcs)`` becomes ``tt.eltwise(cb_dst, ntiles, tree,
  *cb_srcs)`` (vector operands have the destination's rows and one column of tiles, or its
  columns and one row; an operand read transposed, ``tt.expr.load_t``, the destination's
  block transposed);
* ``tile.max/sum(R, S, (d,), False)`` (``T.reduce_max/sum(S, R, dim=d)``) of a 2-D block
  into a 1-D fragment (a column vector for ``d = 1``, a row vector for ``d = 0``) becomes
  ``tt.reduce.<max|sum>(cb_R, cb_S, cb_scaler, Mt, Nt, d == 0)``, preceded by ``tt.const_tile(cb_scaler, 1.0)``: the scaler tile (ones) the
  reduction reads, one CB per dtype, made right before each reduction so its uses nest with
  every other buffer's; a 1-D block reduced to one value (``dim=0`` of an ``[N]`` buffer into
  ``[1]``, one tile) is the row reduction of a row vector (``Mt = 1``, REDUCE_ROW) or the
  column reduction of a column vector (``Nt = 1``, REDUCE_COL): the value lands at element
  (0, 0), element 0 of a vector of either orientation;
  a float32 ``tile.max`` / ``tile.min`` becomes ``tt.reduce.sfpu_<max|min>(cb_R, cb_S, Mt,
  Nt, d == 0)`` instead (no scaler): the vector engine's reduction, exact where the matrix
  engine's source registers would read the float32 operand as TF32 (A0.3 leaves
  ``tile.min`` for float32 only);
* ``tt.tile.cumsum(dst, src, dim)`` (``T.cumsum``) of a 2-D block along its rows (``dim=0``)
  or of a column vector becomes ``tt.scan.cumsum(cb_dst, cb_src, Mt, Nt)``; along the
  columns (``dim=1``, or a row vector: values in row 0 of its tiles) the source's tiles are
  transposed into a new CB (``tt.eltwise`` of ``tt.expr.load_t(0)``), scanned into another new
  CB (``Nt x Mt`` tiles) and transposed back into ``cb_dst``; with ``reverse`` the scanned
  block is first turned upside down into a new CB (``tt.scan.flip_rows``: tile row ``r`` to
  ``Mt - 1 - r``, each tile's rows reversed by ``reshuffle_rows_tile`` with the row order
  ``tt.row_order_to_cb`` has the reader write into a one-page CB), scanned into another, and
  turned back;
* ``tt.tile.index_mask(dst, cond, x, y)`` becomes ``tt.mask_to_cb(cb_dst, Mt, Nt, cond, x,
  y)``: the reader computes the block;
* ``tt.tile.im2col(dst, img, nhw_step, c_step, kernel, stride, dilation, pad)`` (``T.im2col``)
  becomes ``tt.im2col_to_cb(cb_dst, img, nhw_step, c_step, Mt, Kt, N, H, W, C, kernel, stride,
  dilation, pad)`` (``N, H, W, C``: the image's logical shape, from the operand's extents):
  the reader builds the block.  Refused by name: an image that is not a 4-D tensor, a
  channel count ``C`` that is not a multiple of 32 (a 32-column segment of a row must be one
  tile row of the image: 32 channels of one pixel), a block that is not whole tiles, dtypes
  that differ;
* any other tile op is a ``TTUnsupportedError`` naming the op and source line.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ... import attrs, ops
from ...errors import TTLayoutError, TTUnsupportedError
from ..common import (
    block_tiles, buffer_dtype, buffer_scope, buffer_shape, collect, int_imm, require_attr, seq, to_py,
    tt_pass,
)
from .shared_to_cb import alloc_cb_call
from ..common import region_text, split_persistent, tt_map, with_persistent
from ..frontend.eltwise_expr import load, load_t, transposed_operands, vector_operands

_ELTWISE = {"tirx.tile.add": "add", "tirx.tile.sub": "sub", "tirx.tile.mul": "mul"}
_FPU_OPS = {"tirx.tile.add": "tt.fpu.add", "tirx.tile.sub": "tt.fpu.sub",
            "tirx.tile.mul": "tt.fpu.mul"}
_REDUCE = {"tirx.tile.sum": "T.reduce_sum", "tirx.tile.max": "T.reduce_max",
           "tirx.tile.min": "T.reduce_min"}
_REDUCE_OPS = {"tirx.tile.sum": "tt.reduce.sum", "tirx.tile.max": "tt.reduce.max"}
# float32 max: the matrix engine's source registers would read the operand as TF32
_SFPU_REDUCE_OPS = {"tirx.tile.max": "tt.reduce.sfpu_max", "tirx.tile.min": "tt.reduce.sfpu_min"}


def _whole(region, what, span):
    buf = region.source
    for r, dim in zip(region.region, buffer_shape(buf)):
        if not (isinstance(r.min, tvm.tirx.IntImm) and int(r.min) == 0
                and isinstance(r.extent, tvm.tirx.IntImm) and int(r.extent) == dim):
            raise TTUnsupportedError(
                f"{what} must use whole buffers or constant tile-aligned regions of them; "
                f"{region_text(region)} is neither", span=span,
                hint="use regions whose bounds are constants at multiples of 32 (or the dim's "
                "end) in the buffer's last two dims: each becomes a block buffer of its own")
    return buf


def _leading_tile_rows(region):
    """The shape of a 2-D block-buffer region that is its leading whole tile rows (from 0, the
    first dim's extent a multiple of 32 below the dim, the last dim whole), else None."""
    shape = buffer_shape(region.source)
    ext = [int(r.extent) if isinstance(r.extent, tvm.tirx.IntImm) else None
           for r in region.region]
    starts = all(isinstance(r.min, tvm.tirx.IntImm) and int(r.min) == 0 for r in region.region)
    if len(shape) == 2 and starts and ext[0] is not None and 0 < ext[0] < shape[0] and \
            ext[0] % 32 == 0 and ext[1] == shape[1]:
        return ext
    return None


@tt_pass("LowerTTTileIntrinsics", requires=("LowerSharedToCB",))
def LowerTTTileIntrinsics(func, mod, ctx):
    """Tile compute primitives -> tt.mm.mma / tt.fpu.* / tt.eltwise / tt.acc.clear."""
    cb_of = {a.buffer: a.annotations[attrs.CB] for a in collect(func.body, tirx.AllocBuffer)
             if attrs.CB in (a.annotations or {})}

    def cb(buf, what, span):
        if buf not in cb_of:
            where = ("a T.gemm accumulator (copy it to a shared buffer first)"
                     if buffer_scope(buf) == "local.fragment" else f"in {buffer_scope(buf)} memory")
            raise TTUnsupportedError(
                f"{what} operand {buf.name} is {where}; compute operands must be shared buffers "
                "or fragments (copy global tensors in with T.copy first)", span=span)
        return cb_of[buf]

    cb_tiles = {b.var: (int(b.value.args[1]), int(b.value.args[2]))
                for b in collect(func.body, tirx.Bind) if ops.tt_op_name(b.value) == "tt.alloc_cb"}

    def tiles_of(buf):
        """(rows, cols) in tiles as A2 laid the block buffer out (1-D: a column or row vector)."""
        return cb_tiles[cb_of[buf]] if buf in cb_of else block_tiles(buf)

    scalers = {}  # dtype -> (CB var, its Bind): a tile of ones every reduction reads
    vector_of = {a.buffer: to_py(a.annotations[attrs.CB_DESC]).get("vector", "none")
                 for a in collect(func.body, tirx.AllocBuffer)
                 if attrs.CB_DESC in (a.annotations or {})}
    staged = []  # Binds of the CBs a scan along the columns transposes through

    def scaler_cb(dtype):
        if dtype not in scalers:
            var = tirx.Var(f"reduce_scaler_{dtype}_cb", "int32")
            scalers[dtype] = (var, tirx.Bind(var, alloc_cb_call(1, 1, 1, dtype,
                                                                 f"reduce_scaler_{dtype}")))
        return scalers[dtype][0]

    def lower_reduce(call, name, span):
        what = _REDUCE[name]
        dst = _whole(call.args[0], what, span)
        src = _whole(call.args[1], what, span)
        axes = [int(a) for a in call.args[2]]
        src_shape, dst_shape = buffer_shape(src), buffer_shape(dst)
        if len(src_shape) not in (1, 2) or len(dst_shape) != 1:
            raise TTUnsupportedError(
                f"{what}({src.name}{src_shape} -> {dst.name}{dst_shape}): only 2-D blocks reduced "
                "into 1-D fragments, and 1-D blocks reduced to one value, are supported",
                span=span)
        if len(axes) != 1:
            raise TTUnsupportedError(f"{what} over several dims at once is not supported",
                                     span=span)
        if len(src_shape) == 1:
            return lower_full_reduce(call, name, src, dst, span)
        over_cols = axes[0] % 2 == 1  # dim=1: one value per row (a column vector)
        lines = "rows" if over_cols else "columns"
        if dst_shape[0] != src_shape[0 if over_cols else 1]:
            raise TTLayoutError(
                f"{what}: {dst.name} has {dst_shape[0]} elements but {src.name} has "
                f"{src_shape[0 if over_cols else 1]} {lines}", span=span)
        check_reduce_operands(call, what, src, dst, span)
        mt, nt = block_tiles(src)
        if tiles_of(dst) != ((mt, 1) if over_cols else (1, nt)):
            raise TTLayoutError(
                f"{what}: {dst.name} is used as a vector of the other orientation elsewhere",
                span=span)
        return emit_reduce(name, what, src, dst, mt, nt, 0 if over_cols else 1, span)

    def emit_reduce(name, what, src, dst, mt, nt, dim, span):
        """The scaler tile of ones, then the reduction of ``src``'s ``mt x nt`` tiles into
        ``dst`` (``dim`` 0: by columns, 1: by rows); a float32 max: the vector engine's exact
        reduction, which takes no scaler."""
        if name in _SFPU_REDUCE_OPS and buffer_dtype(src) == "float32":
            return ops.evaluate(_SFPU_REDUCE_OPS[name], cb(dst, what, span), cb(src, what, span),
                                int_imm(mt), int_imm(nt), int_imm(dim), span=span)
        if name not in _REDUCE_OPS:
            raise TTUnsupportedError(
                f"{what} of {src.name} ({buffer_dtype(src)}): only a float32 block reduces by min "
                "here (A0.3 turns others into -max(-x))", span=span)
        scaler = scaler_cb(buffer_dtype(src))
        return seq([
            ops.evaluate("tt.const_tile", scaler, tirx.FloatImm("float32", 1.0), int_imm(1),
                         span=span),
            ops.evaluate(_REDUCE_OPS[name], cb(dst, what, span), cb(src, what, span), scaler,
                         int_imm(mt), int_imm(nt), int_imm(dim), span=span),
        ])

    def check_reduce_operands(call, what, src, dst, span):
        """A reduction clearing its destination, of one dtype in and out."""
        if bool(call.args[3]):
            raise TTUnsupportedError(
                f"{what}(..., clear=False) (accumulating into {dst.name}) is not supported yet",
                span=span)
        if buffer_dtype(src) != buffer_dtype(dst):
            raise TTUnsupportedError(
                f"{what}: {src.name} is {buffer_dtype(src)} but {dst.name} is "
                f"{buffer_dtype(dst)}; reduce into a fragment of the same dtype", span=span)

    def lower_full_reduce(call, name, src, dst, span):
        """A 1-D block reduced to one value (A0.3 checked ``dst`` is ``[1]``, held as one
        tile): a row vector (``1 x Nt`` tiles, values in row 0) by rows (REDUCE_ROW of the
        ``[1, N]`` view: row 0's total in column 0), a column vector (``Mt x 1``, values in
        column 0) by columns (REDUCE_COL: column 0's total in row 0); either way the value is
        element (0, 0) of ``dst``'s one tile, which is its element 0 in either orientation."""
        what = _REDUCE[name]
        check_reduce_operands(call, what, src, dst, span)
        if tiles_of(dst) != (1, 1):
            raise TTLayoutError(
                f"{what}: {dst.name}{buffer_shape(dst)} is not one tile; a 1-D block reduces "
                "to one value", span=span)
        mt, nt = tiles_of(src)
        row = next((v for b, v in vector_of.items() if b.same_as(src)), "col") == "row"
        return emit_reduce(name, what, src, dst, mt, nt, 0 if row else 1, span)

    def lower_cumsum(call, span):
        what = "T.cumsum"
        dst = _whole(call.args[0], what, span)
        src = _whole(call.args[1], what, span)
        dim = int(call.args[2])
        shape = buffer_shape(src)
        if len(shape) > 2:
            raise TTUnsupportedError(
                f"{what}({src.name}{shape}): only 1-D and 2-D blocks are scanned", span=span)
        if tiles_of(src) != tiles_of(dst):
            raise TTLayoutError(
                f"{what}: {dst.name} and {src.name} hold their values in different tiles (a "
                "vector used in the other orientation elsewhere); use two buffers", span=span)
        rows, cols = tiles_of(src)
        if len(shape) == 1:  # a column vector runs down its tiles' column 0
            down = next((v for b, v in vector_of.items() if b.same_as(src)), "col") != "row"
        else:
            down = dim == 0
        src_cb, dst_cb = cb(src, what, span), cb(dst, what, span)
        reverse = bool(int(call.args[3]))

        def new_cb(name, r, c, dtype):
            var = tirx.Var(f"{name}_cb", "int32")
            staged.append(tirx.Bind(var, alloc_cb_call(r, c, 1, dtype, name)))
            return var

        def scan(out, inp, mt, nt, name):
            """The scan down the rows of an mt x nt block; reversed: of the block turned upside
            down (reshuffle_rows_tile per tile, tile rows in reverse), turned back after."""
            if not reverse:
                return [ops.evaluate("tt.scan.cumsum", out, inp, int_imm(mt), int_imm(nt),
                                     span=span)]
            flipped = new_cb(f"{name}_flipped", mt, nt, buffer_dtype(src))
            scanned = new_cb(f"{name}_flipped_scan", mt, nt, buffer_dtype(dst))
            orders = [new_cb(f"{name}_row_order{k}", 1, 1, "bfloat16") for k in (0, 1)]
            return [
                ops.evaluate("tt.row_order_to_cb", orders[0], span=span),
                ops.evaluate("tt.scan.flip_rows", flipped, inp, orders[0], int_imm(mt),
                             int_imm(nt), span=span),
                ops.evaluate("tt.scan.cumsum", scanned, flipped, int_imm(mt), int_imm(nt),
                             span=span),
                ops.evaluate("tt.row_order_to_cb", orders[1], span=span),
                ops.evaluate("tt.scan.flip_rows", out, scanned, orders[1], int_imm(mt),
                             int_imm(nt), span=span),
            ]

        if down:
            return seq(scan(dst_cb, src_cb, rows, cols, dst.name))
        # along the columns: scan the transposed tiles (cols x rows of them) down their rows
        t_in = new_cb(f"{src.name}_scan_in", cols, rows, buffer_dtype(src))
        t_out = new_cb(f"{dst.name}_scan_out", cols, rows, buffer_dtype(dst))
        n = int_imm(rows * cols)
        transposed = load_t(0)
        return seq([ops.evaluate("tt.eltwise", t_in, n, transposed, src_cb, span=span)]
                   + scan(t_out, t_in, cols, rows, dst.name)
                   + [ops.evaluate("tt.eltwise", dst_cb, n, transposed, t_out, span=span)])

    def lower_gemm(call, span):
        d, a, b, c, trans_a, trans_b, alpha, beta = call.args
        acc = _whole(d, "T.gemm", span)
        if buffer_scope(acc) != "local.fragment":
            raise TTUnsupportedError(
                f"T.gemm accumulates into {acc.name} ({buffer_scope(acc)}); the accumulator must "
                "be a T.alloc_fragment buffer", span=span)
        if not c.source.same_as(acc):
            raise TTUnsupportedError("T.gemm: C must be the accumulator it writes", span=span)
        if bool(trans_a):  # LegalizeTileOpsTT transposes A into a block of its own first
            raise TTUnsupportedError(
                "T.gemm(transpose_A=True) reached LowerTTTileIntrinsics: the matrix engine "
                "transposes only B tiles, and LegalizeTileOpsTT (A0.3) transposes A first; run "
                "the pipeline from the frontend", span=span)
        if float(alpha.value) != 1.0:
            raise TTUnsupportedError("T.gemm with alpha != 1 is not supported", span=span)
        a_buf = _whole(a, "T.gemm", span)
        b_buf = _whole(b, "T.gemm", span)
        mt, kt = block_tiles(a_buf)
        if bool(trans_b):
            nt, kt_b = block_tiles(b_buf)
        else:
            kt_b, nt = block_tiles(b_buf)
        cm, cn = block_tiles(acc)
        if kt != kt_b or (cm, cn) != (mt, nt):
            raise TTLayoutError(
                f"T.gemm shapes do not agree: A {a_buf.name}{buffer_shape(a_buf)}, B "
                f"{b_buf.name}{buffer_shape(b_buf)} (transpose_B={bool(trans_b)}), C "
                f"{acc.name}{buffer_shape(acc)}", span=span)
        if buffer_dtype(a_buf) != buffer_dtype(b_buf):
            raise TTUnsupportedError(
                f"T.gemm operands {a_buf.name} ({buffer_dtype(a_buf)}) and {b_buf.name} "
                f"({buffer_dtype(b_buf)}) must have the same dtype", span=span)
        mma = ops.evaluate("tt.mm.mma", acc, cb(a_buf, "T.gemm", span), cb(b_buf, "T.gemm", span),
                           int_imm(mt), int_imm(nt), int_imm(kt), int_imm(int(bool(trans_b))),
                           span=span)
        if float(beta.value) == 0.0:
            return seq([ops.evaluate("tt.acc.clear", acc, span=span), mma])
        return mma

    def lower(call: tirx.TilePrimitiveCall):
        name = call.op.name
        span = call.span
        if name == "tirx.tile.gemm":
            return lower_gemm(call, span)
        if name == "tirx.tile.fill":
            buf = _whole(call.args[0], "T.clear/T.fill", span)
            value = call.args[1]
            is_zero = (isinstance(value, int) and value == 0) or (
                hasattr(value, "value") and float(value.value) == 0.0)
            if buf in cb_of:  # a block of constant tiles
                if not isinstance(value, (int, float, tirx.IntImm, tirx.FloatImm)):
                    raise TTUnsupportedError(
                        f"T.fill({buf.name}, {value}): the value must be a constant", span=span)
                rows, cols = block_tiles(buf)
                return ops.evaluate("tt.const_tile", cb(buf, "T.fill", span),
                                    tirx.FloatImm("float32", float(getattr(value, "value", value))),
                                    int_imm(rows * cols), span=span)
            if not is_zero:
                raise TTUnsupportedError(
                    f"T.fill({buf.name}, {value}): a T.gemm accumulator can only be cleared "
                    "(T.clear)", span=span)
            return ops.evaluate("tt.acc.clear", buf, span=span)
        if name == "tirx.tile.copy":  # C1 leaves only block <- block copies
            dst = _whole(call.args[0], "T.copy", span)
            part = _leading_tile_rows(call.args[1])
            src = call.args[1].source if part else _whole(call.args[1], "T.copy", span)
            one_d = (len(buffer_shape(dst)) == 1) != (len(buffer_shape(src)) == 1)
            if part:
                # the source block's leading tile rows (TileLang's `T.copy(acc_o[:valid_H, :],
                # O_shared)`): the copy reads the first tiles of the source's block, in
                # order, the whole block waited for and freed as for any read
                rows, cols = tiles_of(src)
                if one_d or part != buffer_shape(dst) or len(part) != 2 or \
                        tiles_of(dst) != (part[0] // 32, cols):
                    raise TTLayoutError(
                        f"T.copy {src.name}[:{part[0]}] -> {dst.name}{buffer_shape(dst)}: "
                        "the shapes must hold the same tiles", span=span)
            elif tiles_of(dst) != tiles_of(src) or one_d:  # a vector's tiles are not a block's
                raise TTLayoutError(
                    f"T.copy {src.name}{buffer_shape(src)} -> {dst.name}{buffer_shape(dst)}: the "
                    "shapes must hold the same tiles", span=span)
            rows, cols = block_tiles(dst)
            return ops.evaluate("tt.eltwise", cb(dst, "T.copy", span), int_imm(rows * cols),
                                load(0), cb(src, "T.copy", span), span=span)
        if name in _ELTWISE:
            dst, a, b = call.args[0], call.args[1], call.args[2]
            if not all(isinstance(x, tvm.ir.TensorRegion) for x in (a, b)):
                raise TTUnsupportedError(
                    f"elementwise {_ELTWISE[name]} with a scalar operand is not supported yet",
                    span=span)
            bufs = [_whole(x, f"elementwise {_ELTWISE[name]}", span) for x in (dst, a, b)]
            shapes = {tuple(buffer_shape(x)) for x in bufs}
            dtypes = {buffer_dtype(x) for x in bufs}
            if len(shapes) != 1 or len(dtypes) != 1:
                raise TTUnsupportedError(
                    f"elementwise {_ELTWISE[name]} needs operands of one shape and dtype; got "
                    + ", ".join(f"{x.name}{buffer_shape(x)}:{buffer_dtype(x)}" for x in bufs),
                    span=span)
            rows, cols = block_tiles(bufs[0])
            cbs = [cb(x, f"elementwise {_ELTWISE[name]}", span) for x in bufs]
            if dtypes.pop() == "float32":  # the vector engine, in an fp32 DST
                tree = {"add": load(0) + load(1), "sub": load(0) - load(1),
                        "mul": load(0) * load(1)}[_ELTWISE[name]]
                return ops.evaluate("tt.eltwise", cbs[0], int_imm(rows * cols), tree, *cbs[1:],
                                    span=span)
            return ops.evaluate(_FPU_OPS[name], *cbs, int_imm(rows * cols), span=span)
        if name == "tt.tile.expr":
            dst = _whole(call.args[0], "elementwise expression", span)
            srcs = [_whole(r, "elementwise expression", span) for r in call.args[2:]]
            transposed = transposed_operands(call.args[1])
            scalars = {m for m, o in vector_operands(call.args[1]) if o == "scalar"}
            for k, src in enumerate(srcs):
                vector = len(buffer_shape(src)) == 1 and len(buffer_shape(dst)) == 2
                rows, cols = tiles_of(dst)
                want = {(1, 1)} if k in scalars else {(rows, 1), (1, cols)} if vector else \
                    {(cols, rows)} if k in transposed else {(rows, cols)}
                if tiles_of(src) not in want:
                    raise TTLayoutError(
                        f"elementwise expression into {dst.name}{buffer_shape(dst)}: operand "
                        f"{src.name}{buffer_shape(src)} has another shape", span=span)
            rows, cols = block_tiles(dst)
            return ops.evaluate(
                "tt.eltwise", cb(dst, "elementwise expression", span), int_imm(rows * cols),
                call.args[1], *[cb(s, "elementwise expression", span) for s in srcs], span=span)
        if name == "tt.tile.index_mask":  # the reader writes the block (LowerCBIntrinsics)
            dst = _whole(call.args[0], "index mask", span)
            rows, cols = tiles_of(dst)
            return ops.evaluate("tt.mask_to_cb", cb(dst, "index mask", span), int_imm(rows),
                                int_imm(cols), *call.args[1:], span=span)
        if name == "tt.tile.im2col":  # the reader builds the block (LowerCBIntrinsics)
            return lower_im2col(func, call, cb, tiles_of, span)
        if name in _REDUCE:
            return lower_reduce(call, name, span)
        if name == "tt.tile.cumsum":
            return lower_cumsum(call, span)
        raise TTUnsupportedError(f"tile op {name} is not supported by the Tenstorrent backend",
                                 span=span)

    body = tt_map(func.body, [(tirx.TilePrimitiveCall, lower)], order="post")
    body = tt_map(body, [(tirx.AllocBuffer, lambda a: tirx.Evaluate(int_imm(0))
                          if attrs.CB in (a.annotations or {}) else a)], order="post")
    body = tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")
    if scalers or staged:
        prologue, persistent = split_persistent(body)
        body = with_persistent([b for _, b in scalers.values()] + staged + list(prologue),
                               persistent)

    return func.with_body(body)


def lower_im2col(func, call, cb, tiles_of, span):
    """``tt.tile.im2col`` -> ``tt.im2col_to_cb`` (see the module docstring)."""
    dst_r, img_r = call.args[0], call.args[1]
    dst = _whole(dst_r, "T.im2col", span)
    img = img_r.source
    what = f"T.im2col({img.name}, {dst.name})"
    if buffer_scope(img) != "global" or len(buffer_shape(img)) != 4:
        raise TTUnsupportedError(
            f"{what}: the image must be a 4-D (N, H, W, C) tensor parameter; "
            f"{img.name} is {buffer_shape(img)} in {buffer_scope(img)} memory", span=span)
    shape = [int(r.extent) if isinstance(r.extent, tvm.tirx.IntImm) else None
             for r in img_r.region]
    if None in shape or any(not (isinstance(r.min, tvm.tirx.IntImm) and int(r.min) == 0)
                            for r in img_r.region):
        raise TTUnsupportedError(f"{what}: the image must be a whole tensor of constant shape",
                                 span=span)
    n, h, w, c = shape
    if c % 32:
        raise TTUnsupportedError(
            f"{what}: the image's channel count C = {c} is not a multiple of 32; on Tensix a "
            "32-column segment of an im2col row is 32 channels of one pixel (one row of one "
            "32x32 tile of the NHWC image): pad the channels to a multiple of 32", span=span)
    dshape = buffer_shape(dst)
    if len(dshape) != 2 or any(int(d) % 32 for d in dshape):
        raise TTUnsupportedError(
            f"{what}: the block {dst.name}{dshape} must be 2-D [block_M, block_K] of whole "
            "32x32 tiles", span=span)
    if buffer_dtype(dst) != buffer_dtype(img):
        raise TTUnsupportedError(
            f"{what}: the block's dtype {buffer_dtype(dst)} differs from the image's "
            f"{buffer_dtype(img)}; T.im2col copies elements (use a block of the image's dtype)",
            span=span)
    if buffer_dtype(img) not in ("bfloat16", "float16", "float32"):
        raise TTUnsupportedError(
            f"{what}: dtype {buffer_dtype(img)} is not supported (bfloat16, float16, float32)",
            span=span)
    rows, cols = tiles_of(dst)
    imm = [int_imm(x) for x in (rows, cols, n, h, w, c)]
    return ops.evaluate("tt.im2col_to_cb", cb(dst, "T.im2col", span), img, call.args[2],
                        call.args[3], *imm, *call.args[4:8], span=span)
