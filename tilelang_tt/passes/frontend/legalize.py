"""A0.3 LegalizeTileOpsTT: tile ops the engines cannot do as written get engine forms.

Requires: LowerParallelToTileTT.

Guarantees:

* a region extent that is a constant once the kernel's integer bindings are inlined
  (``KV[b, start:end, ...]``, ``start`` and ``end`` bound to ``base + k * 64`` and ``base + (k
  + 1) * 64``) is that constant;
* ``T.copy`` between two global tensors moves through one staged block buffer (``tile.copy``
  in, ``tile.copy`` out: reader -> CB -> writer), 2-D when the source region is a 2-D slice
  (every other index a scalar);
* ``T.fill`` / ``T.clear`` of a tensor region fills a staged block buffer copied out after
  it; a fill value that is an expression of constants (``-T.infinity(dtype)``) is folded;
* the matrix engine reduces by sum or max only: ``T.reduce_min`` of a bfloat16 / float16
  block becomes ``-max(-x)`` (a float32 one stays: C2 gives it to the vector engine, whose
  reduction takes min) and ``T.reduce_abssum`` / ``absmax`` reduce a new fragment holding
  ``|x|`` (``tt.tile.expr`` of ``negative`` / ``abs``);
* a reduction of a 1-D block (``T.reduce_*(x, out, dim=0)`` of an ``[N]`` buffer: its full
  reduction, C2's row reduction of the row vector) has a destination of one element, ``[1]``
  (TileLang's shape for it), else a ``TTLayoutError`` naming both buffers and the line;
* ``T.reduce_*(..., clear=False)`` reduces into a new fragment and folds it into the
  destination with an elementwise ``+`` / ``max`` / ``min`` (``tt.tile.expr``);
* the matrix engine transposes only B's tiles: ``T.gemm(A, B, C, transpose_A=True)`` (A a
  ``[K, M]`` block) first transposes A into a new ``[M, K]`` block buffer (``tt.tile.expr``
  of ``load_t(0)``) and multiplies that, without ``transpose_A``;
* a ``tt.tile.expr`` operand or destination in global memory (``T.transpose`` of tensor
  regions) moves through a staged block buffer (``tile.copy`` in before, out after), 2-D when
  the region is a 2-D slice;

each new tile op carrying the source line of the op it replaces.
"""

from __future__ import annotations

import itertools

import tvm
from tvm import tirx
from tvm.sym import Analyzer

from ... import attrs, ops
from ...errors import TTLayoutError, TTUnsupportedError
from ..common import (buffer_dtype, buffer_scope, buffer_shape, collect, fold_constant,
                      inline_binds, replace_tile_call, seq, tt_map, tt_pass, with_tile_span)
from .eltwise_expr import apply, load, load_t


def _operator(name):
    import tvm.tirx.operator as tirx_op

    return getattr(tirx_op, name)


def _tile_call(name, *regions):
    return _operator(name)(*regions, workspace={}, config={}, dispatch=None, scope=None)


def _spanned(stmt, span):
    """Tile ops made for a source statement carry its line."""
    if span is None:
        return stmt
    return tt_map(stmt, [(tirx.TilePrimitiveCall,
                          lambda c: c if c.span is not None else with_tile_span(c, span))])


def _block_shape(region):
    """The 2-D block a global region stages into: the region's extents without the
    extent-1 dims around a 2-D slice (``X[b, s0:s1, h, :]``) or in front (``X[b, 0:M, 0:N]``)."""
    shape = [r.extent for r in region.region]
    sliced = [e for e in shape if not (isinstance(e, tirx.IntImm) and int(e) == 1)]
    if len(shape) > 2 and len(sliced) == 2:
        shape = sliced
    while len(shape) > 2 and isinstance(shape[0], tirx.IntImm) and int(shape[0]) == 1:
        shape = shape[1:]
    return shape


def _transposed_gemm_operand(call, fresh):
    """``T.gemm(A, B, C, transpose_A=True)``: A (``[K, M]``) transposed into a new ``[M, K]``
    block buffer first, the product then taken without ``transpose_A``."""
    if call.op.name != "tirx.tile.gemm" or not bool(call.args[4]):
        return None
    a = call.args[1]
    shape = _block_shape(a)
    if len(shape) != 2:
        raise TTUnsupportedError(
            f"T.gemm(transpose_A=True): the A operand {a.source.name} must be a 2-D block "
            f"(its region has extents {list(shape)})", span=call.span)
    made = tirx.decl_buffer(shape[::-1], buffer_dtype(a.source), fresh(f"{a.source.name}_T"),
                            scope="shared")
    full = made[tuple(slice(0, e) for e in shape[::-1])]
    transpose = _staged_expr(tirx.TilePrimitiveCall(full, load_t(0), a,
                                                    op=ops.op("tt.tile.expr")), fresh)
    gemm = replace_tile_call(call, args=[call.args[0], full, *call.args[2:4], False,
                                         *call.args[5:]])
    return seq([tirx.AllocBuffer(made), transpose, gemm])


def _staged_expr(call, fresh):
    """A ``tt.tile.expr`` over global regions: each global operand staged into a new block
    buffer (``tile.copy`` in before), a global destination written through one (``tile.copy``
    out after)."""
    if call.op.name != "tt.tile.expr":
        return call
    regions = [call.args[0]] + list(call.args[2:])
    if not any(buffer_scope(r.source) == "global" for r in regions):
        return call
    allocs, before, after, staged = [], [], [], []
    for k, region in enumerate(regions):
        if buffer_scope(region.source) != "global":
            staged.append(region)
            continue
        shape = _block_shape(region)
        stage = tirx.decl_buffer(shape, buffer_dtype(region.source),
                                 fresh(f"{region.source.name}_tile"), scope="shared")
        allocs.append(tirx.AllocBuffer(stage))
        full = stage[tuple(slice(0, e) for e in shape)]
        if k == 0:
            after.append(_tile_call("Copy", region, full))
        else:
            before.append(_tile_call("Copy", full, region))
        staged.append(full)
    expr = tirx.TilePrimitiveCall(staged[0], call.args[1], *staged[1:], op=call.op)
    return seq(allocs + before + [expr] + after)


def _staged_fill(call, fresh):
    """``T.fill`` / ``T.clear`` of a tensor region fills a staged block buffer that is then
    copied out (the compute kernel makes constant tiles; the writer stores them); its value
    is folded to a constant when it is an expression of constants (``-T.infinity(dtype)``)."""
    if call.op.name != "tirx.tile.fill":
        return call
    dst, value = call.args[0], call.args[1]
    if isinstance(value, tirx.PrimExpr) and not isinstance(value, (tirx.IntImm,
                                                                     tirx.FloatImm)):
        folded = fold_constant(value)
        if folded is not None:
            call = replace_tile_call(call, args=[dst, folded] + list(call.args[2:]))
            value = folded
    if buffer_scope(dst.source) != "global":
        return call
    shape = _block_shape(dst)
    stage = tirx.decl_buffer(shape, buffer_dtype(dst.source), fresh(f"{dst.source.name}_tile"),
                             scope="shared")
    full = stage[tuple(slice(0, e) for e in shape)]
    return seq([tirx.AllocBuffer(stage), replace_tile_call(call, args=[full] + list(
        call.args[1:])), _tile_call("Copy", dst, full)])


def _staged_global_copy(call, fresh):
    """``T.copy`` between two global tensors moves through one staged block buffer."""
    if call.op.name != "tirx.tile.copy":
        return call
    dst, src = call.args[0], call.args[1]
    if buffer_scope(dst.source) != "global" or buffer_scope(src.source) != "global":
        return call
    shape = _block_shape(src)
    stage = tirx.decl_buffer(shape, buffer_dtype(src.source), fresh(f"{src.source.name}_tile"),
                             scope="shared")
    full = stage[tuple(slice(0, e) for e in shape)]
    return seq([tirx.AllocBuffer(stage), _tile_call("Copy", full, src),
                _tile_call("Copy", dst, full)])


def _reduction_on_engines(call, fresh):
    """The engines reduce by sum or max only: ``T.reduce_min`` becomes ``-max(-x)``, and
    ``T.reduce_abssum`` / ``absmax`` reduce a new fragment holding ``|x|``."""
    name = call.op.name
    absolute = name in ("tirx.tile.sum", "tirx.tile.max") and bool(
        (call.config or {}).get(attrs.REDUCE_ABS, False))
    if name != "tirx.tile.min" and not absolute:
        return call
    if name == "tirx.tile.min" and buffer_dtype(call.args[1].source) == "float32":
        return call  # the vector engine's exact reduction (C2)
    dst, src, axes, accum = call.args[0], call.args[1], call.args[2], call.args[3]
    stmts = []

    def fragment_like(region, what):
        buf = region.source
        made = tirx.decl_buffer(buffer_shape(buf), buffer_dtype(buf), fresh(f"{buf.name}_{what}"),
                                scope="local.fragment")
        stmts.append(tirx.AllocBuffer(made))
        return made[tuple(slice(0, d) for d in buffer_shape(buf))]

    def unary(out, x, fn):
        return tirx.TilePrimitiveCall(out, apply(fn, load(0)), x, op=ops.op("tt.tile.expr"))

    def reduce(kind, out, x):
        return _operator(kind)(out, x, axes, accum, workspace={}, config={}, dispatch=None,
                               scope=None)

    if absolute:
        abs_x = fragment_like(src, "abs")
        stmts += [unary(abs_x, src, "abs"),
                  reduce("Sum" if name == "tirx.tile.sum" else "Max", dst, abs_x)]
    else:
        neg_x, neg_r = fragment_like(src, "neg"), fragment_like(dst, "neg")
        stmts += [unary(neg_x, src, "negative"), reduce("Max", neg_r, neg_x),
                  unary(dst, neg_r, "negative")]
    return seq(stmts)


_REDUCE_NAMES = {"tirx.tile.sum": "T.reduce_sum", "tirx.tile.max": "T.reduce_max",
                 "tirx.tile.min": "T.reduce_min"}


def _check_vector_reduction(call):
    """A 1-D source reduces fully (its one dim, ``dim=0`` or ``-1``) into a ``[1]`` buffer."""
    name = call.op.name
    if name not in _REDUCE_NAMES or len(buffer_shape(call.args[1].source)) != 1:
        return
    src, dst = call.args[1].source, call.args[0].source
    dims = [int(d) for d in call.args[2]]
    what = f"{_REDUCE_NAMES[name]}({src.name}{buffer_shape(src)}, {dst.name}{buffer_shape(dst)})"
    if any(d not in (0, -1) for d in dims):
        raise TTLayoutError(f"{what}: dim={dims[0] if len(dims) == 1 else dims} is not a dim of "
                            f"the 1-D buffer {src.name}", span=call.span,
                            hint="use dim=0 (the whole buffer reduced to one value)")
    if buffer_shape(dst) != [1]:
        raise TTLayoutError(
            f"{what}: a 1-D buffer reduces to one value, so {dst.name} must have shape [1]",
            span=call.span, hint=f"allocate {dst.name} as T.alloc_fragment((1,), dtype)")


def _check_matrix_reduction(call):
    """A 2-D source reduced along ``dim`` into a 1-D buffer: the buffer holds one value per
    index of the other dim (``dim=1``: one per row), so its extent is that dim's."""
    name = call.op.name
    if name not in _REDUCE_NAMES:
        return
    src, dst = call.args[1].source, call.args[0].source
    shape, dst_shape = buffer_shape(src), buffer_shape(dst)
    dims = [int(d) for d in call.args[2]]
    if len(shape) != 2 or len(dst_shape) != 1 or len(dims) != 1 or dims[0] not in (0, 1, -1, -2):
        return
    kept = shape[1] if dims[0] in (0, -2) else shape[0]
    if isinstance(kept, int) and isinstance(dst_shape[0], int) and dst_shape[0] != kept:
        what = (f"{_REDUCE_NAMES[name]}({src.name}{shape}, {dst.name}{dst_shape}, "
                f"dim={dims[0]})")
        raise TTLayoutError(
            f"{what}: reducing along dim {dims[0]} leaves {kept} values (one per "
            f"{'column' if dims[0] in (0, -2) else 'row'}), so {dst.name} must have shape "
            f"[{kept}]", span=call.span,
            hint=f"allocate {dst.name} as T.alloc_fragment(({kept},), dtype), or reduce a 1-D "
            "buffer to reach one value")


_COMBINE = {"tirx.tile.sum": lambda a, b: a + b, "tirx.tile.max": tirx.Max,
            "tirx.tile.min": tirx.Min}


def _accumulating_reduction(call, fresh):
    """``T.reduce_*(src, dst, clear=False)`` folds the reduction into what ``dst`` holds:
    the reduction of ``src`` into a new fragment, then ``dst = dst + part`` (``max`` /
    ``min``) as an elementwise expression."""
    name = call.op.name
    if name not in _COMBINE or not bool(call.args[3]):
        return None
    dst = call.args[0]
    buf = dst.source
    made = tirx.decl_buffer(buffer_shape(buf), buffer_dtype(buf), fresh(f"{buf.name}_part"),
                            scope="local.fragment")
    part = made[tuple(slice(0, d) for d in buffer_shape(buf))]
    reduce = call.replace(args=[part, call.args[1], call.args[2], False])
    combine = tirx.TilePrimitiveCall(dst, _COMBINE[name](load(0), load(1)), dst, part,
                                     op=ops.op("tt.tile.expr"))
    return seq([tirx.AllocBuffer(made), _reduction_on_engines(reduce, fresh), combine])


@tt_pass("LegalizeTileOpsTT", requires=("LowerParallelToTileTT",))
def LegalizeTileOpsTT(func, mod, ctx):
    """Staged global copies and expressions, gemm's transposed A and reduction engine forms
    (see module docstring)."""
    counter = itertools.count()

    def fresh(stem):
        return f"{stem}_{next(counter)}"

    def engine_forms(call):
        if call.op.name == "tirx.tile.copy":
            return _spanned(_staged_global_copy(call, fresh), call.span)
        if call.op.name == "tirx.tile.fill":
            return _spanned(_staged_fill(call, fresh), call.span)
        if call.op.name == "tt.tile.expr":
            return _spanned(_staged_expr(call, fresh), call.span)
        _check_vector_reduction(call)
        _check_matrix_reduction(call)
        transposed = _transposed_gemm_operand(call, fresh)
        if transposed is not None:
            return _spanned(transposed, call.span)
        folded = _accumulating_reduction(call, fresh)
        if folded is not None:
            return _spanned(folded, call.span)
        return _spanned(_reduction_on_engines(call, fresh), call.span)

    body = _fold_region_extents(func.body)
    body = tt_map(body, [(tirx.TilePrimitiveCall, engine_forms)], order="post")
    return func.with_body(tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post"))


def _fold_region_extents(body):
    """Region extents that are constants once the kernel's integer bindings are inlined
    (``KV[b, start:end, h, :]`` with ``start = base + k * 64``, ``end = base + (k + 1) * 64``:
    64) become those constants; the starts are kept."""
    binds = {b.var: b.value for b in collect(body, tirx.Bind)
             if str(b.var.ty).startswith(("int", "uint"))}
    if not binds:
        return body
    ana = Analyzer()

    def fold(call):
        args, changed = [], False
        for a in call.args:
            if isinstance(a, tvm.ir.TensorRegion) and not all(
                    isinstance(r.extent, tirx.IntImm) for r in a.region):
                ranges = []
                for r in a.region:
                    ext = r.extent if isinstance(r.extent, tirx.IntImm) else \
                        ana.simplify(inline_binds(r.extent, binds))
                    if not isinstance(ext, tirx.IntImm):
                        ext = r.extent
                    changed |= not ext.same_as(r.extent)
                    ranges.append(tvm.ir.Range.from_min_extent(r.min, ext))
                a = tvm.ir.TensorRegion(a.source, ranges, a.ty)
            args.append(a)
        return replace_tile_call(call, args=args) if changed else call

    return tt_map(body, [(tirx.TilePrimitiveCall, fold)], order="post")
