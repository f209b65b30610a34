"""A0.3 LegalizeTileOpsTT: tile ops the engines cannot do as written get engine forms.

Requires: LowerParallelToTileTT.

Guarantees:

* ``T.copy`` between two global tensors moves through one staged block buffer (``tile.copy``
  in, ``tile.copy`` out: reader -> CB -> writer), 2-D when the source region is a 2-D slice
  (every other index a scalar);
* the engines reduce by sum or max only: ``T.reduce_min`` becomes ``-max(-x)`` and
  ``T.reduce_abssum`` / ``absmax`` reduce a new fragment holding ``|x|``
  (``tt.tile.expr`` of ``negative`` / ``abs``);
* ``T.reduce_*(..., clear=False)`` reduces into a new fragment and folds it into the
  destination with an elementwise ``+`` / ``max`` / ``min`` (``tt.tile.expr``);

each new tile op carrying the source line of the op it replaces.
"""

from __future__ import annotations

import itertools

import tvm
from tvm import tirx

from ... import attrs, ops
from ..common import buffer_dtype, buffer_scope, buffer_shape, seq, tt_map, tt_pass, with_tile_span
from .eltwise_expr import apply, load


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


def _staged_global_copy(call, fresh):
    """``T.copy`` between two global tensors moves through one staged block buffer."""
    if call.op.name != "tirx.tile.copy":
        return call
    dst, src = call.args[0], call.args[1]
    if buffer_scope(dst.source) != "global" or buffer_scope(src.source) != "global":
        return call
    shape = [r.extent for r in src.region]
    sliced = [e for e in shape if not (isinstance(e, tirx.IntImm) and int(e) == 1)]
    if len(shape) > 2 and len(sliced) == 2:
        shape = sliced  # a 2-D slice, every other index a scalar (X[b, s0:s1, h, :])
    while len(shape) > 2 and isinstance(shape[0], tirx.IntImm) and int(shape[0]) == 1:
        shape = shape[1:]  # leading dims indexed one at a time
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
    """Staged global copies and reduction engine forms (see module docstring)."""
    counter = itertools.count()

    def fresh(stem):
        return f"{stem}_{next(counter)}"

    def engine_forms(call):
        if call.op.name == "tirx.tile.copy":
            return _spanned(_staged_global_copy(call, fresh), call.span)
        folded = _accumulating_reduction(call, fresh)
        if folded is not None:
            return _spanned(folded, call.span)
        return _spanned(_reduction_on_engines(call, fresh), call.span)

    body = tt_map(func.body, [(tirx.TilePrimitiveCall, engine_forms)], order="post")
    return func.with_body(tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post"))
