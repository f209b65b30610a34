"""A0.2.1 ReadShortBlocksFromTensorsTT: a block buffer of fewer than 32 rows that only holds a
copy of a tensor region is read from the tensor instead.

Requires: LowerParallelToTileTT (element reads ``v[i] = s[k, i]`` are tile copies by then).

TileLang's flash-decoding combine (``examples/flash_decoding/example_mha_inference.py``)
copies the ``[num_split, block_M]`` region ``glse[bz, by, :, bx * block_M:(bx + 1) *
block_M]`` of a tensor into ``lse_local = T.alloc_fragment([num_split, block_M])``, reduces
it over its rows (``T.reduce_max(lse_local, m, dim=0)``) and selects one row per loop
iteration (``T.copy(lse_local[k, :], v)``, ``v[i] = lse_local[k, i]``).  A Tensix block is
whole 32x32 tiles and ``num_split`` (4) rows are none.  Such a buffer holds nothing but the
tensor's values, so every read of it can read the tensor.

Guarantees: a shared or fragment buffer ``S`` of shape ``[n, W]`` (``2 <= n < 32``, ``W`` a
multiple of 32) that

* is written once, by a ``T.copy`` of the whole of ``S`` from a global tensor region ``G[..]``
  of ``S``'s dtype with exactly two dims of extent other than 1, of extents ``n`` (the *row
  dim*) and ``W`` in that order, outside every loop; the launch writing no element of ``G``;
* is read only by tile ops reading one row ``S[k, a:a + w]`` (``k`` any index), and by
  ``T.reduce_max / min / sum`` (``abs`` included) over ``dim=0`` of the whole of ``S``

is removed: a ``T.copy`` of row ``k`` copies the tensor's row ``G[.., r0 + k, .., c0 + a:c0 +
a + w]`` (``r0, c0`` the copy's starts), another tile op reading row ``k`` reads a new 1-D
fragment the tensor's row is copied into just before it, and the reduction becomes, after a
fill of the destination with the reduction's identity (``-inf`` for max, ``inf`` for min, 0
for the sums; kept when ``clear=False``), a serial loop over the ``n`` rows copying each
tensor row into a new 1-D fragment and folding it into the destination (``max`` / ``min`` /
``+`` of the row or its ``abs``), in row order.  Values are those of the buffer: ``S`` has
``G``'s dtype, so the copy into it changed none.

A block buffer with fewer than 32 rows that some tile op reads by one row and that is not
such a buffer is a ``TTLayoutError`` naming the buffer, the op and its line; one without such
a use is left as it is (A0.5 pairs ``block_K = 16`` GEMM operands into 32 rows; A0.5.1 holds
the rest as padded tiles, the padding masked out of reductions over the rows).  Decided from the buffer's shape and the IR of its accesses only.
"""

from __future__ import annotations

import itertools

import tvm
from tvm import tirx

from ... import attrs, ops
from ...errors import TTLayoutError, describe_span
from ..common import (buffer_dtype, buffer_scope, buffer_shape, collect, seq, tt_map, tt_pass,
                      with_tile_span)
from .eltwise_expr import apply, load

_SCOPES = ("shared", "shared.dyn", "local.fragment")
_REDUCTIONS = ("tirx.tile.max", "tirx.tile.min", "tirx.tile.sum")


def _tile_call(name, *args):
    import tvm.tirx.operator as tirx_op

    return getattr(tirx_op, name)(*args, workspace={}, config={}, dispatch=None, scope=None)


def _short(buf) -> bool:
    shape = buffer_shape(buf)
    return (buffer_scope(buf) in _SCOPES and len(shape) == 2
            and all(isinstance(s, int) for s in shape) and 2 <= shape[0] < 32
            and shape[1] % 32 == 0)


def _is_whole(region, buf) -> bool:
    return all(isinstance(r.min, tirx.IntImm) and int(r.min) == 0 and
               isinstance(r.extent, tirx.IntImm) and int(r.extent) == s
               for r, s in zip(region.region, buffer_shape(buf)))


def _ext(r):
    return int(r.extent) if isinstance(r.extent, tirx.IntImm) else None


def _op_name(call) -> str:
    name = call.op.name
    return {"tirx.tile.copy": "T.copy", "tirx.tile.max": "T.reduce_max",
            "tirx.tile.min": "T.reduce_min", "tirx.tile.sum": "T.reduce_sum",
            "tirx.tile.fill": "T.fill", "tirx.tile.gemm": "T.gemm",
            "tt.tile.expr": "a T.Parallel store"}.get(name, name)


class _Short:
    """One short buffer ``S``: its copy-in from ``G`` and how its rows map onto ``G``."""

    def __init__(self, buf, alloc, body):
        self.buf, self.alloc = buf, alloc
        self.n, self.width = buffer_shape(buf)
        self.copy_in = None
        self.check(body)

    def refuse(self, why, span=None):
        n, w = self.n, self.width
        raise TTLayoutError(
            f"block buffer {self.buf.name} has shape [{n}, {w}]: {n} rows are fewer than a "
            f"32-row tile, which runs only when the buffer holds a copy of a tensor region "
            f"that it is read back from by rows or reduced over its rows; {why}"
            + (f" (buffer allocated at {describe_span(self.alloc.span)})"
               if self.alloc.span is not None else ""),
            span=span,
            hint=f"give {self.buf.name} a multiple of 32 rows, or copy the tensor's rows "
                 "into 1-D fragments one at a time")

    def check(self, body):
        S = self.buf
        loops = collect(body, tirx.For)
        for st in collect(body, tirx.BufferStore, lambda s: s.buffer.same_as(S)):
            self.refuse("an element store writes it", st.span)
        for ld in collect(body, tvm.ir.TensorLoad, lambda ld: ld.source.same_as(S)):
            self.refuse(f"an element read {S.name}[...] outside a tile op reads it")
        calls = [c for c in collect(body, tirx.TilePrimitiveCall)
                 if any(isinstance(a, tvm.ir.TensorRegion) and a.source.same_as(S)
                        for a in c.args)]
        in_loop = [x for lp in loops for x in collect(lp.body, tirx.TilePrimitiveCall)]
        for c in calls:
            regions = [a for a in c.args if isinstance(a, tvm.ir.TensorRegion)]
            writes = regions[0].source.same_as(S)
            if writes:
                if c.op.name != "tirx.tile.copy" or not _is_whole(regions[0], S):
                    self.refuse(f"{_op_name(c)} writes it", c.span)
                if self.copy_in is not None:
                    self.refuse("it is written twice", c.span)
                if any(c.same_as(x) for x in in_loop):
                    self.refuse("the copy into it is inside a loop", c.span)
                self.copy_in = c
                self.check_source(regions[1], c, body)
            elif c.op.name in _REDUCTIONS and regions[1].source.same_as(S):
                axes = [int(x) for x in c.args[2]]
                if axes != [0] or not _is_whole(regions[1], S):
                    self.refuse(f"{_op_name(c)} reduces it other than over dim=0 of the whole "
                                "buffer", c.span)
            else:
                for r in regions[1:]:
                    if r.source.same_as(S) and _ext(r.region[0]) != 1:
                        self.refuse(f"{_op_name(c)} reads more than one of its rows", c.span)
        if self.copy_in is None:
            self.refuse("no T.copy from a tensor writes it",
                        calls[0].span if calls else None)

    def check_source(self, src, call, body):
        G = src.source
        if buffer_scope(G) != "global":
            self.refuse(f"it is copied from block buffer {G.name}, not a tensor", call.span)
        if buffer_dtype(G) != buffer_dtype(self.buf):
            self.refuse(f"it is {buffer_dtype(self.buf)} and the tensor {G.name} it is copied "
                        f"from {buffer_dtype(G)} (the copy would round)", call.span)
        dims = [d for d, r in enumerate(src.region) if _ext(r) != 1]
        if len(dims) != 2 or [_ext(src.region[d]) for d in dims] != [self.n, self.width]:
            self.refuse(f"the region of {G.name} it is copied from is not {self.n} x "
                        f"{self.width} in two of its dims", call.span)
        for c in collect(body, tirx.TilePrimitiveCall):
            regs = [a for a in c.args if isinstance(a, tvm.ir.TensorRegion)]
            if regs and regs[0].source.same_as(G):
                self.refuse(f"the launch also writes {G.name}", c.span)
        for st in collect(body, tirx.BufferStore, lambda s: s.buffer.same_as(G)):
            self.refuse(f"the launch also writes {G.name}", st.span)
        self.src, (self.row_dim, self.col_dim) = src, dims

    def tensor_row(self, k, a, w):
        """The region of G holding ``S[k, a:a + w]``."""
        out = []
        for d, r in enumerate(self.src.region):
            if d == self.row_dim:
                out.append(slice(r.min + k, r.min + k + 1))
            elif d == self.col_dim:
                out.append(slice(r.min + a, r.min + a + w))
            else:
                out.append(slice(r.min, r.min + r.extent))
        return self.src.source[tuple(out)]


def _identity(kind: str, absolute: bool, dtype: str):
    if kind == "tirx.tile.max" and not absolute:
        return tirx.const(float("-inf"), dtype)
    if kind == "tirx.tile.min":
        return tirx.const(float("inf"), dtype)
    return tirx.const(0.0, dtype)


def _rewrite(body, shorts):
    counter = itertools.count()

    def find(region):
        return next((s for s in shorts if region.source.same_as(s.buf)), None)

    def vector(s, k, a, w, span):
        """A new 1-D fragment holding ``S[k, a:a + w]``, and the statements filling it."""
        buf = tirx.decl_buffer([w], buffer_dtype(s.buf), f"{s.buf.name}_row_{next(counter)}",
                               scope="local.fragment")
        copy = with_tile_span(_tile_call("Copy", buf[0:w], s.tensor_row(k, a, w)), span)
        return buf, [tirx.AllocBuffer(buf), copy]

    def reduction(s, call):
        dst = call.args[0]
        absolute = bool((call.config or {}).get(attrs.REDUCE_ABS, False))
        name = call.op.name
        r = tirx.Var("r", "int32")
        row, stmts = vector(s, r, 0, s.width, call.span)
        x = apply("abs", load(1)) if absolute else load(1)
        fold = {"tirx.tile.max": tirx.Max(load(0), x), "tirx.tile.min": tirx.Min(load(0), x),
                "tirx.tile.sum": load(0) + x}[name]
        combine = with_tile_span(tirx.TilePrimitiveCall(dst, fold, dst, row[0:s.width],
                                                        op=ops.op("tt.tile.expr")), call.span)
        loop = tirx.For(r, tirx.const(0, "int32"), tirx.const(s.n, "int32"),
                        tirx.ForKind.SERIAL, seq(stmts + [combine]))
        out = []
        if not bool(call.args[3]):  # clear: start from the identity
            out.append(with_tile_span(_tile_call(
                "Fill", dst, _identity(name, absolute, buffer_dtype(dst.source))), call.span))
        return seq(out + [loop])

    def visit(call):
        regions = [(i, a) for i, a in enumerate(call.args) if isinstance(a, tvm.ir.TensorRegion)]
        hits = [(i, a, find(a)) for i, a in regions if find(a) is not None]
        if not hits:
            return call
        i0, r0, s0 = hits[0]
        if i0 == 0:  # the copy-in: gone
            return tirx.Evaluate(tirx.IntImm("int32", 0))
        if call.op.name in _REDUCTIONS and i0 == 1:
            return reduction(s0, call)
        args, pre = list(call.args), []
        for i, r, s in hits:
            k, a, w = r.region[0].min, r.region[1].min, r.region[1].extent
            if call.op.name == "tirx.tile.copy" and i == 1:
                args[i] = s.tensor_row(k, a, w)
            else:
                buf, stmts = vector(s, k, a, w, call.span)
                pre += stmts
                args[i] = buf[0:w]
        return seq(pre + [with_tile_span(call.replace(args=args), call.span)])

    def alloc(a):
        return tirx.Evaluate(tirx.IntImm("int32", 0)) if any(
            a.buffer.same_as(s.buf) for s in shorts) else a

    body = tt_map(body, [(tirx.TilePrimitiveCall, visit), (tirx.AllocBuffer, alloc)],
                  order="post")
    return tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")


def _used_by_rows(body, buf) -> bool:
    """Some tile op reads one row of ``buf`` or reduces it over its rows (``dim=0``): uses
    only a buffer of its rows serves.  Buffers without such a use (a ``T.gemm`` operand of
    ``block_K = 16`` rows, which A0.5 pairs into 32) are left to the later passes."""
    for c in collect(body, tirx.TilePrimitiveCall):
        regions = [a for a in c.args if isinstance(a, tvm.ir.TensorRegion)]
        if not regions or regions[0].source.same_as(buf):
            continue
        if c.op.name in _REDUCTIONS and regions[1].source.same_as(buf) and \
                [int(x) for x in c.args[2]] == [0]:
            return True
        if any(r.source.same_as(buf) and _ext(r.region[0]) == 1 for r in regions[1:]):
            return True
    return False


def _read_by_row(body, buf) -> bool:
    """Some tile op reads one row of ``buf`` (other than by writing it)."""
    for c in collect(body, tirx.TilePrimitiveCall):
        regions = [a for a in c.args if isinstance(a, tvm.ir.TensorRegion)]
        if regions and not regions[0].source.same_as(buf) and any(
                r.source.same_as(buf) and _ext(r.region[0]) == 1 for r in regions[1:]):
            return True
    return False


def read_short_blocks(body):
    """``body`` with the short block buffers the module docstring describes read from their
    tensors.  One that is not such a buffer but that no op reads by one row (it is only
    reduced over its rows) is left as it is: A0.5.1 holds it as padded tiles, the padded rows
    masked out of the reduction."""
    shorts = []
    for a in collect(body, tirx.AllocBuffer):
        if not (_short(a.buffer) and _used_by_rows(body, a.buffer)):
            continue
        try:
            shorts.append(_Short(a.buffer, a, body))
        except TTLayoutError:
            if _read_by_row(body, a.buffer):
                raise
    return _rewrite(body, shorts) if shorts else body


@tt_pass("ReadShortBlocksFromTensorsTT", requires=("LowerParallelToTileTT",))
def ReadShortBlocksFromTensorsTT(func, mod, ctx):
    """Block buffers of fewer than 32 rows holding a tensor region -> reads of the tensor
    (see module docstring)."""
    return func.with_body(read_short_blocks(func.body))
