"""A0.5.1 PadShortBlocksTT: block buffers that are not whole tiles held as padded tiles.

Requires: CoarsenKLoopTT (A0.0 coarsened the grid axes it could, A0.5 the ``block_K = 16`` K
loops; every access to a tensor is a ``tile.copy`` region: A0.3.1).

TileLang's tests allocate block buffers of any size in kernels whose blocks A0.0 cannot merge
(one block, or rows that meet in a reduction): a ``(16, 16)`` fragment reduced per row, a
``[4, 512]`` fragment, a ``(1,)`` or ``(8,)`` output, GEMM operands of 16 or 104 rows.  A
Tensix block is whole 32x32 tiles, so such a buffer is held as the tiles that cover it: its
last two dims (the dim of a 1-D buffer) rounded up to multiples of 32.  The padding computes
whatever the ops compute there and is never observed, except where an op folds it in, which
this pass prevents:

Guarantees: every ``shared`` / ``local.fragment`` buffer whose last two dims (the one dim of a
1-D buffer) are not multiples of 32 has them rounded up to 32 (same name, dtype, scope);
``tt.padded_blocks`` lists ``{"buffer", "logical", "padded"}`` for each.  Every tile-op region
covering a padded dim's whole logical extent covers its padded extent (element accesses keep
their indices), and so does the tensor region the block is copied from or to (the tensor's
device shape grows if the region now reaches past it: A0.3.1's ``tt.padded``).  Before

* a reduction (``tile.sum`` / ``max`` / ``min``, the engine forms of ``T.reduce_*`` and of
  reducer updates) over a padded dim, and a reverse ``T.cumsum`` along one,
* a ``T.gemm`` whose K dim is padded (both operands),

the source is replaced by a new buffer holding it with the padding set to the op's identity
(0 for sums and GEMM operands, ``-inf`` for max, ``inf`` for min): ``tt.tile.index_mask`` of
``mask.index(d) < logical`` (a 1-D buffer: ``mask.index(0) + mask.index(1) < logical``, its
element's index in either vector orientation) into a new bfloat16 block, then ``tt.tile.expr(where(mask, x,
identity))`` (A0.2's masks computed from indices) - unless the identity is 0 and the padding
already holds zeros: the source's one writer is a ``T.copy`` of a tensor region whose part
past the block's logical extent lies past the tensor's end for every block index and loop
value, the tensor's padding is filled with 0 (no ``T.annotate_safe_value``) and the launch
writes nothing of the tensor.

A 2-D block whose columns are whole tiles, copied from or to tensor rows that do not provably
start at a multiple of 32 (TileLang's GQA decoding: ``valid_block_H = 4`` heads at ``hid *
4``) keeps the region's logical rows: C1 moves the block row by row (``tt.read_rows_to_cb``:
the padded rows read the rows that follow, the tensor's safe value outside it;
``tt.write_rows_from_cb``: only the logical rows are written, so rows of the same tile that
other blocks store are never touched).  A block -> block copy into a padded block from the
leading rows of one that is not padded there (``T.copy(acc_o[:4, :], O_shared)``) reads the
padded extent of the source (from a multiple of 32, inside its buffer): the padding takes
the rows that follow.

Refused (``TTLayoutError`` naming the buffer, the op's line and what to change): a tensor
region a padded block is copied from or to that does not start at a multiple of 32 in a
padded dim but the rows of a 2-D block whose columns are whole tiles (the block would not be
tiles of the tensor); a store whose padding would
overwrite elements of the tensor (a ``[16, 16]`` block stored at row 0 of a 64-row tensor:
the padding must fall past the tensor's end, which the host crops); a tile op reading or
writing part of a padded dim (neither one index nor the whole extent); a reduction or GEMM
over a padded dim of a buffer of rank 3 or more.  Kernels without such buffers are
unchanged.  Decided from buffer shapes and the ops' regions only.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ... import attrs, ops
from ...errors import TTLayoutError
from ..common import (
    TILE, buffer_dtype, buffer_scope, buffer_shape, collect, get_attr, inline_binds,
    replace_tile_call, seq, to_py, tt_map, tt_pass, with_tile_span,
)
from ..analysis.scalar_reads import element_copy
from .eltwise_expr import const, load, where
from .pad_tensors import _analyzer, pad_to_device_shapes

_SCOPES = ("shared", "shared.dyn", "local.fragment")
_REDUCTIONS = {"tirx.tile.sum": 0.0, "tirx.tile.max": float("-inf"),
               "tirx.tile.min": float("inf")}


def _round_up(n: int) -> int:
    return (n + TILE - 1) // TILE * TILE


def padded_shape(buf):
    """The shape block buffer ``buf`` is held in, or None when it is whole tiles already (or
    no block buffer of constant shape)."""
    shape = buffer_shape(buf)
    if buffer_scope(buf) not in _SCOPES or not shape or \
            not all(isinstance(d, int) for d in shape):
        return None
    dims = {len(shape) - 1, len(shape) - 2}
    new = [_round_up(d) if k in dims else d for k, d in enumerate(shape)]
    return None if new == shape else new


def short_block_buffers(body) -> list:
    """The block buffers this pass pads (empty after it)."""
    return [a.buffer for a in collect(body, tirx.AllocBuffer) if padded_shape(a.buffer)]


def _int(e):
    return int(e) if isinstance(e, tirx.IntImm) else None


class _Padder:
    def __init__(self, func):
        self.func = func
        self.ana, self.binds = _analyzer(func.body)
        self.new = {}  # old buffer handle -> (old buffer, new buffer)
        for buf in short_block_buffers(func.body):
            self.new[buf.__chandle__()] = (buf, tirx.decl_buffer(
                padded_shape(buf), buffer_dtype(buf), buf.name, scope=buffer_scope(buf)))
        logical = {r["param"]: r["logical"] for r in to_py(get_attr(func, attrs.PADDED, []))
                   or []}
        self.logical = {p.__chandle__(): logical.get(i, buffer_shape(p))
                        for i, p in enumerate(func.params) if tirx.is_buffer_var(p)}
        safe = to_py(get_attr(func, attrs.SAFE_VALUES, {})) or {}
        fills = {r["param"]: r["fill"] for r in to_py(get_attr(func, attrs.PADDED, [])) or []}
        self.fill = {p.__chandle__(): fills.get(i, safe.get(str(p.name), 0.0))
                     for i, p in enumerate(func.params) if tirx.is_buffer_var(p)}
        self.writers, self.stored = {}, set()  # buffer handle -> tile ops writing it
        for c in collect(func.body, tirx.TilePrimitiveCall):
            if c.args and isinstance(c.args[0], tvm.ir.TensorRegion):
                self.writers.setdefault(c.args[0].source.__chandle__(), []).append(c)
        for st in collect(func.body, tirx.BufferStore):
            self.stored.add(st.buffer.__chandle__())
        self.names = {}

    def fresh(self, stem):
        n = self.names.get(stem, 0)
        self.names[stem] = n + 1
        return f"{stem}_{n}"

    # ---- regions ---------------------------------------------------------------------------
    def _block_region(self, r, call):
        """(new region, grown dims {k: (logical, padded)}) of a region of a padded buffer."""
        old, nb = self.new[r.source.__chandle__()]
        shape, padded = buffer_shape(old), buffer_shape(nb)
        ranges, grown = [], {}
        for k, rng in enumerate(r.region):
            lo, ext = rng.min, rng.extent
            whole = _int(lo) == 0 and _int(ext) == shape[k]
            if shape[k] != padded[k] and (whole or _int(ext) != 1):
                if not whole:
                    raise TTLayoutError(
                        f"block buffer {old.name} has shape {shape} and is held as whole 32x32 "
                        f"tiles, {padded}; {_op(call)} uses `{lo}` + {ext} of its "
                        f"dim {k} of {shape[k]}: neither one index nor the whole dim",
                        span=call.span,
                        hint="use block sizes that are multiples of 32, or use the whole dim")
                grown[k] = (shape[k], padded[k])
                ext = tirx.IntImm(str(ext.ty.dtype), padded[k])
            ranges.append(slice(lo, lo + ext))
        return nb[tuple(ranges)], grown

    def _tensor_region(self, r, block, grown, call, is_dst):
        """The tensor region ``r`` a copy moves padded block ``block`` (its old region, dims
        ``grown``) from or to, covering the padding."""
        dim_of = _dim_map(r, block, grown)
        old = self.new[block.source.__chandle__()][0]
        if dim_of is None:
            raise TTLayoutError(
                f"block buffer {old.name} has shape {buffer_shape(old)} and is held as whole "
                f"32x32 tiles, and {_op(call)} moves it from or to a region of "
                f"tensor {r.source.name} whose dims do not match the block's one for one",
                span=call.span, hint="use block sizes that are multiples of 32")
        ranges = [[x.min, x.extent] for x in r.region]
        size = self.logical.get(r.source.__chandle__(), buffer_shape(r.source))
        for k, (n, p) in grown.items():
            t = dim_of[k]
            start = self.ana.simplify(inline_binds(r.region[t].min, self.binds))
            what = (f"block buffer {old.name} has shape {buffer_shape(old)} and is held as whole "
                    f"32x32 tiles, {buffer_shape(self.new[block.source.__chandle__()][1])}")
            if not self.ana.can_prove(tvm.tirx.floormod(start, TILE) == 0) and \
                    len(buffer_shape(old)) == 2 and k == 0 and 1 not in grown and \
                    len(size) >= 2:
                # the rows of a 2-D block at a row off a tile boundary: the region keeps its
                # n rows, C1 moves the block row by row (tt.read_rows_to_cb: the padded rows
                # read whatever rows follow, the safe value outside the tensor;
                # tt.write_rows_from_cb: only the n rows are written, so neighbouring rows
                # other blocks own are not touched)
                continue
            if not self.ana.can_prove(tvm.tirx.floormod(start, TILE) == 0):
                raise TTLayoutError(
                    f"{what}; {_op(call)} moves it {'to' if is_dst else 'from'} "
                    f"tensor {r.source.name} starting at `{start}` in its dim {t}, which is not "
                    "a multiple of 32, so the block is not tiles of the tensor",
                    span=call.span,
                    hint="choose block sizes that are multiples of 32 (the tensors need not "
                         "be: they are padded to whole tiles), or blocks that start at multiples "
                         "of 32")
            if is_dst and not self.ana.can_prove(start + n >= size[t]):
                raise TTLayoutError(
                    f"{what}; {_op(call)} stores it to tensor {r.source.name} at "
                    f"`{start}` in its dim {t} (of {size[t]}), so its padding ({p - n} more) "
                    "would overwrite elements of the tensor; only padding past the tensor's "
                    "end is dropped",
                    span=call.span,
                    hint="choose block sizes that are multiples of 32 (the tensors need not "
                         "be: they are padded to whole tiles), or store the block where it "
                         "reaches the tensor's end")
            ranges[t][1] = tirx.IntImm(str(ranges[t][1].ty.dtype), p)
        return r.source[tuple(slice(lo, lo + ext) for lo, ext in ranges)]

    # ---- masks -----------------------------------------------------------------------------
    def _zero_padded(self, old, dims) -> bool:
        """Block buffer ``old``'s padding along ``dims`` holds zeros: its one writer is a copy
        of a tensor region whose part past the block's logical extent lies past the tensor's
        end (every block index and loop value), in padding the host fills with 0, and the
        launch writes nothing of that tensor."""
        key = old.__chandle__()
        writers = self.writers.get(key, [])
        if len(writers) != 1 or key in self.stored:
            return False
        w = writers[0]
        if w.op.name != "tirx.tile.copy" or not isinstance(w.args[1], tvm.ir.TensorRegion):
            return False
        src, shape = w.args[1], buffer_shape(old)
        t = src.source
        if buffer_scope(t) != "global" or self.fill.get(t.__chandle__()) != 0.0 or \
                t.__chandle__() in self.stored or self.writers.get(t.__chandle__()):
            return False
        if not all(_int(x.min) == 0 and _int(x.extent) == n
                   for x, n in zip(w.args[0].region, shape)):
            return False
        dim_of = _dim_map(src, w.args[0], dims)
        if dim_of is None:
            return False
        size = self.logical.get(t.__chandle__(), buffer_shape(t))
        for k in dims:
            start = self.ana.simplify(inline_binds(src.region[dim_of[k]].min, self.binds))
            if not self.ana.can_prove(start + shape[k] >= size[dim_of[k]]):
                return False
        return True

    def _masked(self, region, dims, identity, call):
        """(statements, region): a new buffer holding ``region`` (a whole padded 1-D or 2-D
        buffer) with its elements at or past the logical extent of ``dims`` ({d: logical}) set
        to ``identity``."""
        buf = region.source
        shape = buffer_shape(buf)
        if len(shape) not in (1, 2):
            raise TTLayoutError(
                f"block buffer {buf.name} is held as whole 32x32 tiles, {shape}, and "
                f"{_op(call)} folds its padded dims {sorted(dims)} in: the padding is masked "
                "out for 1-D and 2-D buffers only", span=call.span,
                hint="use block sizes that are multiples of 32")
        mask = tirx.decl_buffer(shape, "bfloat16", self.fresh(f"{buf.name}_pad_mask"),
                                scope="shared")
        out = tirx.decl_buffer(shape, buffer_dtype(buf), self.fresh(f"{buf.name}_padded"),
                               scope=buffer_scope(buf))
        full = tuple(slice(0, s) for s in shape)
        def index(d):
            return ops.call("tt.mask.index", tirx.IntImm("int32", d))

        cond = None
        for d, n in sorted(dims.items()):
            # a 1-D buffer's element k is at row k of a column vector's tiles (column 0) or
            # column k of a row vector's (row 0), an orientation A2 decides later: row + column
            # is k in either
            at = index(0) + index(1) if len(shape) == 1 else index(d)
            c = at < tirx.IntImm("int32", n)
            cond = c if cond is None else tirx.And(cond, c)
        fill = tirx.TilePrimitiveCall(mask[full], cond, tirx.FloatImm("float32", 1.0),
                                      tirx.FloatImm("float32", 0.0),
                                      op=ops.op("tt.tile.index_mask"))
        expr = tirx.TilePrimitiveCall(out[full], where(load(1), load(0), const(identity)),
                                      region, mask[full], op=ops.op("tt.tile.expr"))
        stmts = [tirx.AllocBuffer(mask), tirx.AllocBuffer(out),
                 with_tile_span(fill, call.span), with_tile_span(expr, call.span)]
        return stmts, out[full]

    def _folded_dims(self, call, args, grown):
        """[(arg position, {dim: logical}, identity)] of the operands ``call`` folds padding of."""
        name = call.op.name
        if name in _REDUCTIONS:
            src = grown.get(1, {})
            rank = len(args[1].region)
            dims = [int(d) % rank for d in call.args[2]]
            folded = {d: src[d][0] for d in dims if d in src}
            return [(1, folded, _REDUCTIONS[name])] if folded else []
        if name == "tt.tile.cumsum":
            d, reverse = int(call.args[2]), bool(call.args[3])
            src = grown.get(1, {})
            return [(1, {d: src[d][0]}, 0.0)] if reverse and d in src else []
        if name == "tirx.tile.gemm":
            ka = 0 if bool(call.args[4]) else 1
            kb = 1 if bool(call.args[5]) else 0
            a, b = grown.get(1, {}), grown.get(2, {})
            if ka not in a and kb not in b:
                return []
            if ka not in a or kb not in b:
                raise TTLayoutError(
                    f"T.gemm: its K dim is padded to whole tiles in one operand "
                    f"({(args[1] if ka in a else args[2]).source.name}) and not in the other",
                    span=call.span, hint="use a block_K that is a multiple of 32")
            return [(1, {ka: a[ka][0]}, 0.0), (2, {kb: b[kb][0]}, 0.0)]
        return []

    def on_call(self, call):
        args, grown, blocks = list(call.args), {}, {}
        for i, a in enumerate(args):
            if isinstance(a, tvm.ir.TensorRegion) and a.source.__chandle__() in self.new:
                args[i], g = self._block_region(a, call)
                if g:
                    grown[i] = g
                    blocks[i] = a
        if all(a is c or getattr(a, "same_as", lambda _: False)(c)
               for a, c in zip(args, call.args)):
            return call
        if call.op.name == "tirx.tile.copy" and list(grown) == [0] and \
                all(isinstance(a, tvm.ir.TensorRegion) and buffer_scope(a.source) in _SCOPES
                    for a in args[:2]):
            # a block -> block copy of a padded block's logical rows (TileLang's
            # `T.copy(acc_o[:valid_block_H, :], O_shared)`): the source's region grows over
            # the padding too when it starts a tile and its buffer holds the padded extent (the
            # padding then holds whatever rows follow; never the other way round: a grown
            # destination region would overwrite rows past the logical ones)
            i, g = 0, grown[0]
            j = 1
            other = list(args[j].region)
            for k, (n, p) in g.items():
                if k < len(other) and _int(other[k].min) is not None and \
                        _int(other[k].min) % TILE == 0 and _int(other[k].extent) == n and \
                        _int(other[k].min) + p <= buffer_shape(args[j].source)[k]:
                    lo = other[k].min
                    other[k] = tvm.ir.Range.from_min_extent(
                        lo, tirx.IntImm(str(other[k].extent.ty.dtype), p))
            args[j] = args[j].source[tuple(slice(x.min, x.min + x.extent) for x in other)]
        if call.op.name == "tirx.tile.copy" and element_copy(self.func, call) is None:
            # (an element copy into a [1] block stays one element: the reader places it)
            for i in (0, 1):
                r = args[i]
                if i in grown or not isinstance(r, tvm.ir.TensorRegion) or \
                        buffer_scope(r.source) != "global":
                    continue
                j = 1 - i
                if j in grown:
                    args[i] = self._tensor_region(r, blocks[j], grown[j], call, is_dst=i == 0)
        prologue = []
        for pos, dims, identity in self._folded_dims(call, args, grown):
            if identity == 0.0 and self._zero_padded(blocks[pos].source, dims):
                continue  # read from a tensor's zero padding: already the identity
            stmts, args[pos] = self._masked(args[pos], dims, identity, call)
            prologue += stmts
        return seq(prologue + [replace_tile_call(call, args=args)])

    def on_alloc(self, alloc):
        hit = self.new.get(alloc.buffer.__chandle__())
        return alloc if hit is None else tirx.AllocBuffer(hit[1], alloc.annotations, alloc.span)

    def on_load(self, ld):
        hit = self.new.get(ld.source.__chandle__())
        return ld if hit is None else hit[1][tuple(ld.indices)]

    def on_store(self, st):
        hit = self.new.get(st.buffer.__chandle__())
        return st if hit is None else tirx.BufferStore(hit[1], st.value, st.indices, st.span)

    def run(self):
        if not self.new:
            return self.func
        body = tt_map(self.func.body, [
            (tirx.TilePrimitiveCall, self.on_call), (tirx.AllocBuffer, self.on_alloc),
            (tvm.ir.TensorLoad, self.on_load), (tirx.BufferStore, self.on_store)])
        record = [{"buffer": str(old.name), "logical": buffer_shape(old),
                   "padded": buffer_shape(nb)} for old, nb in self.new.values()]
        func = self.func.with_body(body).with_attr(attrs.PADDED_BLOCKS, record)
        return pad_to_device_shapes(func)


def _dim_map(tensor_region, block_region, dims):
    """{block dim: tensor dim} for ``dims`` of a block copied from or to ``tensor_region``:
    dim for dim when the ranks agree, else the dims of extent other than 1 in order (None
    when they do not pair up)."""
    if len(tensor_region.region) == len(block_region.region):
        return {k: k for k in dims}
    t_dims = [k for k, x in enumerate(tensor_region.region) if _int(x.extent) != 1]
    b_dims = [k for k, x in enumerate(block_region.region) if _int(x.extent) != 1]
    if len(t_dims) != len(b_dims) or any(k not in b_dims for k in dims):
        return None
    return {k: t_dims[b_dims.index(k)] for k in dims}


def _op(call) -> str:
    name = call.op.name
    return {"tirx.tile.copy": "T.copy", "tirx.tile.gemm": "T.gemm", "tirx.tile.fill": "T.fill",
            "tirx.tile.sum": "T.reduce_sum", "tirx.tile.max": "T.reduce_max",
            "tirx.tile.min": "T.reduce_min", "tt.tile.cumsum": "T.cumsum"}.get(
        name, name.split(".")[-1])


@tt_pass("PadShortBlocksTT", requires=("CoarsenKLoopTT",))
def PadShortBlocksTT(func, mod, ctx):
    """Block buffers that are not whole tiles held as padded tiles (module docstring)."""
    return _Padder(func).run()
