"""A0.1.0.0 SplitBlockRegionsTT: a block buffer used by constant, tile-aligned regions -> parts.

Requires: DropTrueGuardsTT.

TileLang kernels use constant sub-regions of block buffers: ``T.gemm(A_shared[:, block_K:],
...)`` of a ``(block_M, 2 * block_K)`` buffer, ``T.copy(O_shared[:, : D // 2], ...)`` and
``T.copy(O_shared[:, D // 2 : D], ...)``, ``T.gemm(Q_shared[:, :D], ...)`` and
``T.gemm(Q_shared[:, D:], ...)``.  A Tensix block buffer is one circular buffer of whole
blocks, so a region of it is not an operand; a region that is a block of its own is.

Guarantees: for every shared / fragment buffer of rank >= 2 and constant shape, the *cuts*
along each dim are the bounds of its tile-op regions (copies, fills, GEMM operands, ...) that
are not 0 or the dim, closed under the ops that relate two buffers' coordinates: a GEMM's K
(A's and B's), M (A's and C's) and N (B's and C's), a block -> block copy's dims, and the
loop variables of a ``T.Parallel`` nest (every block buffer indexed ``v + c`` by loop
variable ``v`` in a dim).  A buffer with cuts, whose tile-op regions are all constant and,
in its last two dims, start and end at multiples of 32 or the dim's end (other dims: any
constant), is replaced by its *parts*, the boxes between the cuts, each a block buffer of
its own (named ``<name>_r<lo>_<hi>`` / ``_c<lo>_<hi>`` / ``_d<k>_<lo>_<hi>`` for its row,
column and other dims), and every access becomes an access of the parts it covers:

* ``T.fill`` / ``T.clear``: one fill per part;
* ``T.copy``: one copy per box between the cuts of either side (the other side, a tensor or
  an unsplit block, takes the matching sub-region: its dims of extent other than 1 are the
  block side's, in order);
* ``T.gemm``: one GEMM per box of (M, N, K) between the cuts; along K they accumulate into
  the same accumulator part (the first keeps the op's ``clear_accum``, the next add);
* a ``T.Parallel`` nest: duplicated per box of its loop variables' cuts (fresh loop
  variables, ``v = v' + lo``), each element access then in one part, re-indexed to it;
* any other tile op: each split-buffer region must lie in one part.

First, a serial or unrolled loop of constant extent up to ``MAX_UNROLL`` whose variable is in
the bounds of a block buffer's region (``T.copy(C_local[:, i * w:(i + 1) * w], C_shared)``)
is unrolled (its regions simplified, then TVM's ``ConvertSSA`` gives each copy its own
inner variables), so those regions are constant.

A buffer a ``T.reshape`` / ``T.view`` views is left to A0.2.0.  A buffer whose only partial
regions are its leading tile rows (C1's ``write_from_cb`` of a part, C2's copy of a block's
leading tiles) is left as it is, and so is one with a region that is not constant or not
aligned (C1 / C2 refuse it, naming the region and what would work).  An access that would
have to span parts but cannot be split (a reduction or an expression over several parts, an
element index not of the form ``v + c`` crossing a cut), a cut that another op's cuts reach
in a buffer with a region that is not constant and aligned, or one that is not a multiple of
32 in a tiled dim (``X[i, j + 16]`` beside a buffer cut at 32), is a ``TTUnsupportedError``
naming the buffer, the region and the line.  Decided from the regions' bounds and the index
expressions only.
"""

from __future__ import annotations

import itertools

import tvm
from tvm import tirx
from tvm.sym import Analyzer

from ...errors import TTUnsupportedError
from ..common import (
    TILE, buffer_dtype, buffer_scope, buffer_shape, collect, inline_binds, region_text, seq,
    substitute,
    tt_map, tt_pass, with_tile_span,
)

_SCOPES = ("shared", "shared.dyn", "local.fragment")


def _ival(e):
    return int(e.value) if isinstance(e, tirx.IntImm) else None


def _bounds(region):
    """[(lo, hi)] per dim of a constant region, else None."""
    out = []
    for r in region.region:
        lo, ext = _ival(r.min), _ival(r.extent)
        if lo is None or ext is None:
            return None
        out.append((lo, lo + ext))
    return out


def _aligned(buf, bounds) -> bool:
    shape = buffer_shape(buf)
    rank = len(shape)
    for d, (lo, hi) in enumerate(bounds):
        if d >= rank - 2:
            for x in (lo, hi):
                if x not in (0, shape[d]) and x % TILE:
                    return False
    return True


def _is_leading_rows(region) -> bool:
    """C1's leading tile rows of a block (every dim from 0, the first a multiple of 32 below
    the dim, the others whole)."""
    shape = buffer_shape(region.source)
    b = _bounds(region)
    return b is not None and len(shape) == 2 and all(lo == 0 for lo, _ in b) and \
        0 < b[0][1] < shape[0] and b[0][1] % TILE == 0 and b[1][1] == shape[1]


def _region_str(name, bounds) -> str:
    return f"{name}[" + ", ".join(f"{lo}:{hi}" for lo, hi in bounds) + "]"


class _Split:
    """The cuts of the block buffers (buffer -> per-dim sorted set of cut points)."""

    def __init__(self, body):
        # a buffer that a T.reshape / T.view declares another over is A0.2.0's
        viewed = [d.data.args[0] for d in collect(body, tirx.DeclBuffer)
                  if isinstance(d.data, tvm.ir.Call)
                  and str(d.data.op.name) == "tirx.buffer_data"]
        self.allocs = [a.buffer for a in collect(body, tirx.AllocBuffer)
                       if buffer_scope(a.buffer) in _SCOPES and len(a.buffer.ty.shape) >= 2
                       and all(isinstance(s, int) for s in buffer_shape(a.buffer))
                       and not any(a.buffer.same_as(v) for v in viewed)]
        self.cuts = {}
        self.frozen = {}  # buffer -> a region that is not constant (or not aligned)
        self.binds = {b.var: b.value for b in collect(body, tirx.Bind)}
        self.ana = Analyzer()

    def const(self, expr):
        """The value of an integer expression that is constant once the kernel's index
        bindings are seen through (``H1 - H0`` with ``H1 = H0 + 64``), else None."""
        v = _ival(expr)
        if v is not None:
            return v
        return _ival(self.ana.simplify(inline_binds(expr, self.binds)))

    def find(self, buf):
        return next((b for b in self.allocs if b.same_as(buf)), None)

    def cuts_of(self, buf):
        key = self.find(buf)
        if key is None:
            return None
        return self.cuts.setdefault(key, [set() for _ in buffer_shape(key)])

    def add(self, buf, dim, point, span=None, why=None) -> bool:
        """Add a cut; True when it is new."""
        cuts = self.cuts_of(buf)
        if cuts is None:
            return False
        shape = buffer_shape(buf)
        if point <= 0 or point >= shape[dim] or point in cuts[dim]:
            return False
        frozen = [r for b, r in self.frozen.items() if b.same_as(buf)]
        if frozen:
            raise TTUnsupportedError(
                f"{buf.name} would have to be split at {point} in dim {dim} ({why}), but it "
                f"is also used as {region_text(frozen[0])}, which is not a constant "
                "tile-aligned region", span=span,
                hint="use regions of constant bounds at multiples of 32 (or the dim's end)")
        if dim >= len(shape) - 2 and point % TILE:
            raise TTUnsupportedError(
                f"{buf.name} would have to be split at {point} in dim {dim} ({why}), which is "
                "not a multiple of 32: its parts would not be whole tiles", span=span,
                hint="offset the regions and indices that meet here by multiples of 32")
        cuts[dim].add(point)
        return True

    def parts(self, buf):
        """[(bounds, part buffer)] of a split buffer, else None."""
        key = self.find(buf)
        if key is None or key not in self.cuts or not any(self.cuts[key]):
            return None
        return self._parts[key]

    def make_parts(self):
        self._parts = {}
        for buf, cuts in self.cuts.items():
            if not any(cuts):
                continue
            shape = buffer_shape(buf)
            rank = len(shape)
            axes = []
            for d, dim in enumerate(shape):
                pts = [0] + sorted(cuts[d]) + [dim]
                axes.append(list(zip(pts[:-1], pts[1:])))
            parts = []
            for box in itertools.product(*axes):
                name = buf.name
                for d, (lo, hi) in enumerate(box):
                    if not cuts[d]:
                        continue
                    tag = "c" if d == rank - 1 else "r" if d == rank - 2 else f"d{d}"
                    name += f"_{tag}{lo}_{hi}"
                new = tirx.decl_buffer([hi - lo for lo, hi in box], buffer_dtype(buf), name,
                                       scope=buffer_scope(buf))
                parts.append((list(box), new))
            self._parts[buf] = parts


def _nest_of(loop):
    """The loops of a T.Parallel nest from its outermost loop."""
    loops = [loop]
    while isinstance(loops[-1].body, tirx.For) and \
            loops[-1].body.kind == tirx.ForKind.PARALLEL:
        loops.append(loops[-1].body)
    return loops


def _outer_parallel(body):
    """The outermost loops of the T.Parallel nests under ``body``."""
    par = [lp for lp in collect(body, tirx.For) if lp.kind == tirx.ForKind.PARALLEL]
    inner_loops = [x for lp in par for x in collect(lp.body, tirx.For)]
    return [lp for lp in par if not any(lp.same_as(x) for x in inner_loops)]


def _accesses(stmt):
    """(buffer, indices, span) of every element access under ``stmt``."""
    out = [(st.buffer, list(st.indices), st.span) for st in collect(stmt, tirx.BufferStore)]
    out += [(ld.source, list(ld.indices), None) for ld in collect(stmt, tvm.ir.TensorLoad)]
    return out


def _offset(expr, var, ana):
    """``c`` when ``expr`` is ``var + c`` (c a constant), else None."""
    diff = ana.simplify(expr - var)
    c = _ival(diff)
    if c is None:
        return None
    return c


def _gemm_dims(call):
    """((A dim of M, A dim of K), (B dim of K, B dim of N)) of a tile.gemm."""
    ta, tb = bool(call.args[4]), bool(call.args[5])
    a_rank = len(call.args[1].region)
    b_rank = len(call.args[2].region)
    am, ak = (a_rank - 1, a_rank - 2) if ta else (a_rank - 2, a_rank - 1)
    bk, bn = (b_rank - 1, b_rank - 2) if tb else (b_rank - 2, b_rank - 1)
    return (am, ak), (bk, bn)


def _copy_dims(split, dst, src):
    """Pairs (dst dim, src dim) of a copy: the dims of extent other than 1, in order; None
    when their extents differ."""
    def big(r):
        return [d for d, x in enumerate(r.region) if split.const(x.extent) != 1]
    db, sb = big(dst), big(src)
    if len(db) != len(sb):
        return None
    for a, b in zip(db, sb):
        ea, eb = split.const(dst.region[a].extent), split.const(src.region[b].extent)
        if ea is None or eb is None or ea != eb:
            return None
    return list(zip(db, sb))


def _rel_cuts(split, region, dim):
    """The cuts of ``region``'s buffer inside the region along ``dim``, relative to its start."""
    cuts = split.cuts_of(region.source)
    if cuts is None:
        return set()
    lo, ext = _ival(region.region[dim].min), _ival(region.region[dim].extent)
    if lo is None or ext is None:
        return set()
    return {c - lo for c in cuts[dim] if lo < c < lo + ext}


def _share(split, pairs, span, why) -> bool:
    """Make the operands of ``pairs`` [(region, dim)] share their relative cuts."""
    rel = set()
    for region, dim in pairs:
        rel |= _rel_cuts(split, region, dim)
    changed = False
    for region, dim in pairs:
        lo = _ival(region.region[dim].min)
        if lo is None:
            continue
        for c in rel:
            changed |= split.add(region.source, dim, lo + c, span, why)
    return changed


def _collect_cuts(body) -> _Split:
    split = _Split(body)
    regions = collect(body, tvm.ir.TensorRegion)
    for buf in split.allocs:
        mine = [r for r in regions if r.source.same_as(buf)]
        shape = buffer_shape(buf)
        bounds = [_bounds(r) for r in mine]
        partial = [r for r, b in zip(mine, bounds) if b != [(0, d) for d in shape]]
        if not partial:
            continue
        bad = [r for r, b in zip(mine, bounds) if b is None or not _aligned(buf, b)]
        if bad:
            split.frozen[buf] = bad[0]
            continue
        if all(_is_leading_rows(r) for r in partial):
            split.frozen[buf] = partial[0]
            continue
        cuts = split.cuts_of(buf)
        for b in bounds:
            for d, (lo, hi) in enumerate(b):
                cuts[d] |= {x for x in (lo, hi) if 0 < x < shape[d]}
    # close the cuts under the ops relating two buffers' coordinates
    calls = collect(body, tirx.TilePrimitiveCall)
    nests = _outer_parallel(body)
    changed = True
    while changed:
        changed = False
        for call in calls:
            name = call.op.name
            if name == "tirx.tile.gemm":
                c, a, b = call.args[0], call.args[1], call.args[2]
                if len(c.region) != 2:
                    continue
                (am, ak), (bk, bn) = _gemm_dims(call)
                changed |= _share(split, [(a, ak), (b, bk)], call.span, "a GEMM's K")
                changed |= _share(split, [(a, am), (c, 0)], call.span, "a GEMM's M")
                changed |= _share(split, [(b, bn), (c, 1)], call.span, "a GEMM's N")
            elif name == "tirx.tile.copy":
                dst, src = call.args[0], call.args[1]
                if split.find(dst.source) is None or split.find(src.source) is None:
                    continue
                dims = _copy_dims(split, dst, src)
                if dims is None:
                    continue
                for dd, sd in dims:
                    changed |= _share(split, [(dst, dd), (src, sd)], call.span, "a copy")
        for nest in nests:
            changed |= _nest_cuts(split, nest)
    split.make_parts()
    return split


def _nest_ana(loops):
    ana = Analyzer()
    for lp in loops:
        ana.bind(lp.loop_var, tvm.ir.Range.from_min_extent(lp.min, lp.extent))
    return ana


def _loop_uses(nest, v, ana, keep):
    """(buffer, dim, c, span) of the nest's accesses, to buffers ``keep`` accepts, that index a
    dim as ``v + c``."""
    uses = []
    for buf, idx, span in _accesses(nest):
        if keep(buf):
            for d, e in enumerate(idx):
                c = _offset(e, v, ana)
                if c is not None:
                    uses.append((buf, d, c, span))
    return uses


def _cuts_in_loop(split, uses, lo, ext):
    """The values of the loop variable (over ``lo .. lo + ext``) at which ``uses`` cross a cut."""
    return {x - c for buf, d, c, _ in uses for x in split.cuts_of(buf)[d]
            if lo + c < x < lo + ext + c}


def _nest_cuts(split, nest) -> bool:
    """Share the cuts of the block buffers a nest indexes ``v + c`` through its loop ``v``."""
    loops = _nest_of(nest)
    ana = _nest_ana(loops)
    changed = False
    for lp in loops:
        v = lp.loop_var
        lo, ext = _ival(lp.min), _ival(lp.extent)
        if lo is None or ext is None:
            continue
        uses = _loop_uses(nest, v, ana, lambda buf: split.find(buf) is not None)
        rel = _cuts_in_loop(split, uses, lo, ext)
        for buf, d, c, span in uses:
            for x in rel:
                changed |= split.add(buf, d, x + c, span or nest.span,
                                     "a T.Parallel loop over it")
    return changed


# ---------------------------------------------------------------------------------------------
# rewriting
# ---------------------------------------------------------------------------------------------
def _pieces(rel_cuts, extents):
    """Boxes [(lo, hi)] per dim of ``extents`` cut at ``rel_cuts`` (a set per dim)."""
    axes = []
    for cuts, ext in zip(rel_cuts, extents):
        pts = [0] + sorted(c for c in cuts if 0 < c < ext) + [ext]
        axes.append(list(zip(pts[:-1], pts[1:])))
    return list(itertools.product(*axes))


def _sub(split, region, sub, span, what):
    """The region ``sub`` [(lo, hi)] (relative to ``region``'s start, per dim) of ``region``:
    of the part holding it when the buffer is split."""
    parts = split.parts(region.source)
    starts = [r.min for r in region.region]
    if parts is None:
        return region.source[tuple(slice(s + lo, s + hi) for s, (lo, hi) in zip(starts, sub))]
    box = [(_ival(s) + lo, _ival(s) + hi) for s, (lo, hi) in zip(starts, sub)]
    for pbox, part in parts:
        if all(plo <= lo and hi <= phi for (lo, hi), (plo, phi) in zip(box, pbox)):
            return part[tuple(slice(lo - plo, hi - plo) for (lo, hi), (plo, _) in zip(box, pbox))]
    raise TTUnsupportedError(
        f"{what} uses {_region_str(region.source.name, box)}, which spans several parts of "
        f"{region.source.name} (split at {_cut_str(split, region.source)})", span=span,
        hint="use regions that each lie between those bounds")


def _cut_str(split, buf):
    cuts = split.cuts_of(buf)
    return "; ".join(f"dim {d}: {sorted(c)}" for d, c in enumerate(cuts) if c)


def _extents(region):
    return [_ival(r.extent) for r in region.region]


def _split_call(split, call):
    name = call.op.name
    span = call.span
    regions = [a for a in call.args if isinstance(a, tvm.ir.TensorRegion)]
    if not any(split.parts(r.source) is not None for r in regions):
        return call
    what = {"tirx.tile.copy": "T.copy", "tirx.tile.fill": "T.fill", "tirx.tile.gemm": "T.gemm",
            "tirx.tile.sum": "T.reduce_sum", "tirx.tile.max": "T.reduce_max",
            "tirx.tile.min": "T.reduce_min", "tt.tile.expr": "an elementwise op",
            "tt.tile.cumsum": "T.cumsum"}.get(name, name)
    if name == "tirx.tile.fill":
        r = call.args[0]
        rel = [_rel_cuts(split, r, d) for d in range(len(r.region))]
        return seq([with_tile_span(call.replace(args=[_sub(split, r, box, span, what),
                                                      *call.args[1:]]), span)
                    for box in _pieces(rel, _extents(r))])
    if name == "tirx.tile.copy":
        dst, src = call.args[0], call.args[1]
        dims = _copy_dims(split, dst, src)
        if dims is None:
            raise TTUnsupportedError(
                f"T.copy between {region_text(dst)} and {region_text(src)} of a split block "
                "buffer: the extents of the two sides must match", span=span)
        ext = [split.const(dst.region[dd].extent) for dd, _ in dims]
        rel = [_rel_cuts(split, dst, dd) | _rel_cuts(split, src, sd) for dd, sd in dims]
        out = []
        for box in _pieces(rel, ext):
            dsub = [(0, 1)] * len(dst.region)
            ssub = [(0, 1)] * len(src.region)
            for (dd, sd), b in zip(dims, box):
                dsub[dd] = b
                ssub[sd] = b
            out.append(with_tile_span(call.replace(args=[
                _sub(split, dst, dsub, span, what), _sub(split, src, ssub, span, what),
                *call.args[2:]]), span))
        return seq(out)
    if name == "tirx.tile.gemm" and len(call.args[0].region) == 2:
        c, a, b = call.args[0], call.args[1], call.args[2]
        (am, ak), (bk, bn) = _gemm_dims(call)
        mext, next_, kext = _ival(c.region[0].extent), _ival(c.region[1].extent), \
            _ival(a.region[ak].extent)
        rel_m = _rel_cuts(split, c, 0) | _rel_cuts(split, a, am)
        rel_n = _rel_cuts(split, c, 1) | _rel_cuts(split, b, bn)
        rel_k = _rel_cuts(split, a, ak) | _rel_cuts(split, b, bk)
        out = []
        for (m, n) in _pieces([rel_m, rel_n], [mext, next_]):
            for i, (kk,) in enumerate(_pieces([rel_k], [kext])):
                asub = [(0, 1)] * len(a.region)
                asub[am], asub[ak] = m, kk
                bsub = [(0, 1)] * len(b.region)
                bsub[bk], bsub[bn] = kk, n
                csub = _sub(split, c, [m, n], span, what)
                args = [csub, _sub(split, a, asub, span, what), _sub(split, b, bsub, span, what),
                        csub, *call.args[4:]]
                if i > 0:
                    args[7] = tirx.FloatImm(str(call.args[7].ty.dtype), 1.0)
                out.append(with_tile_span(call.replace(args=args), span))
        return seq(out)
    args = []
    for x in call.args:
        if isinstance(x, tvm.ir.TensorRegion) and split.parts(x.source) is not None:
            x = _sub(split, x, [(0, e) for e in _extents(x)], span, what)
        args.append(x)
    return with_tile_span(call.replace(args=args), span)


def _split_nest(split, nest):
    """The nest duplicated per box of its loop variables' cuts, accesses re-indexed."""
    loops = _nest_of(nest)
    ana = _nest_ana(loops)
    if not any(split.parts(buf) is not None for buf, _, _ in _accesses(nest)):
        return nest
    rel = []
    for lp in loops:
        v = lp.loop_var
        lo, ext = _ival(lp.min), _ival(lp.extent)
        cuts = set()
        if lo is not None and ext is not None:
            uses = _loop_uses(nest, v, ana, lambda buf: split.parts(buf) is not None)
            cuts = {x - lo for x in _cuts_in_loop(split, uses, lo, ext)}
        rel.append(cuts)
    exts = [_ival(lp.extent) for lp in loops]
    if any(e is None for e in exts):
        boxes = [[(0, None)] * len(loops)]
    else:
        boxes = _pieces(rel, exts)
    out = []
    inner = loops[-1].body
    for box in boxes:
        fresh = {}
        new_loops = []
        for lp, (lo, hi) in zip(loops, box):
            nv = tirx.Var(lp.loop_var.name, str(lp.loop_var.ty.dtype))
            if hi is None:
                nlo, next_ = lp.min, lp.extent
                fresh[lp.loop_var] = nv
            else:
                nlo, next_ = lp.min, tirx.IntImm(str(lp.extent.ty.dtype), hi - lo)
                fresh[lp.loop_var] = nv + lo if lo else nv
            new_loops.append((lp, nv, nlo, next_))
        body = substitute(inner, fresh)
        pana = Analyzer()
        for _, nv, nlo, next_ in new_loops:
            pana.bind(nv, tvm.ir.Range.from_min_extent(nlo, next_))
        body = _reindex(split, body, pana, nest.span)
        for lp, nv, nlo, next_ in reversed(new_loops):
            body = tirx.For(nv, nlo, next_, lp.kind, body, lp.thread_binding, lp.annotations,
                            span=lp.span)
        out.append(body)
    return seq(out)


def _locate(split, buf, idx, ana, span):
    """(part, indices in it) of an element access of a split buffer."""
    box = []
    for e in idx:
        b = ana.const_int_bound(ana.simplify(e))
        box.append((int(b.min_value), int(b.max_value) + 1))
    for pbox, part in split.parts(buf):
        if all(plo <= lo and hi <= phi for (lo, hi), (plo, phi) in zip(box, pbox)):
            return part, [ana.simplify(e - plo) if plo else e for e, (plo, _) in zip(idx, pbox)]
    shown = ", ".join(str(e) for e in idx)
    raise TTUnsupportedError(
        f"the element access {buf.name}[{shown}] spans several parts of {buf.name} (split "
        f"at {_cut_str(split, buf)} by its regions) and is not split by a loop variable",
        span=span, hint="index the split dims as `loop variable + constant`")


def _reindex(split, body, ana, span):
    def store(st):
        if split.parts(st.buffer) is None:
            return st
        part, idx = _locate(split, st.buffer, list(st.indices), ana, st.span or span)
        return tirx.BufferStore(part, st.value, idx, span=st.span)

    def load(ld):
        if split.parts(ld.source) is None:
            return ld
        part, idx = _locate(split, ld.source, list(ld.indices), ana, span)
        return part[tuple(idx)]

    return tt_map(body, [(tirx.BufferStore, store), (tvm.ir.TensorLoad, load)], order="post")


MAX_UNROLL = 8


def _unroll_region_loops(body):
    """Serial / unrolled loops of constant extent up to ``MAX_UNROLL`` whose variable is in the
    bounds of a block buffer's tile-op region (``C_local[:, i * w:(i + 1) * w]``) -> one copy
    of the body per iteration, the variable a constant (so the regions are constant); True
    as second value when a loop was unrolled."""
    blocks = [a.buffer for a in collect(body, tirx.AllocBuffer)
              if buffer_scope(a.buffer) in _SCOPES]
    done = []

    def on_loop(lp):
        if lp.kind not in (tirx.ForKind.SERIAL, tirx.ForKind.UNROLLED) or \
                _ival(lp.min) is None or _ival(lp.extent) is None or \
                not 1 < _ival(lp.extent) <= MAX_UNROLL:
            return lp
        v = lp.loop_var
        used = [r for r in collect(lp.body, tvm.ir.TensorRegion)
                if any(r.source.same_as(b) for b in blocks)
                # only the tiled (last two) dims: a leading dim indexed by the loop variable is
                # one slice per iteration (A0.1.2's block slices), not a region to split
                and any(v.same_as(x) for rg in list(r.region)[-2:]
                        for x in collect(rg.min, tvm.ir.Var) + collect(rg.extent, tvm.ir.Var))]
        if not used:
            return lp
        done.append(lp)
        lo = _ival(lp.min)
        ana = Analyzer()

        def region(r):
            ranges = [(ana.simplify(rg.min), ana.simplify(rg.extent)) for rg in r.region]
            return r.source[tuple(slice(m, m + e) if _ival(e) != 1 or _ival(m) is None
                                  else slice(m, m + 1) for m, e in ranges)]

        return seq([tt_map(substitute(lp.body, {v: tirx.IntImm(str(v.ty.dtype), lo + i)}),
                           [(tvm.ir.TensorRegion, region)])
                    for i in range(_ival(lp.extent))])

    body = tt_map(body, [(tirx.For, on_loop)], order="post")
    return body, bool(done)


def split_block_regions(body):
    """``body`` with the block buffers the module docstring describes split into parts."""
    split = _collect_cuts(body)
    if not split._parts:
        return body
    nests = _outer_parallel(body)

    def loop(lp):
        if any(lp.same_as(n) for n in nests):
            return _split_nest(split, lp)
        return lp

    def alloc(a):
        parts = split.parts(a.buffer)
        if parts is None:
            return a
        return seq([tirx.AllocBuffer(p, a.annotations, a.span) for _, p in parts])

    body = tt_map(body, [(tirx.For, loop)], order="pre")
    # element accesses outside T.Parallel (constant indices)
    body = _reindex(split, body, Analyzer(), None)
    body = tt_map(body, [(tirx.TilePrimitiveCall, lambda c: _split_call(split, c)),
                         (tirx.AllocBuffer, alloc)], order="post")
    return tt_map(body, [(tirx.SeqStmt, lambda s: seq(list(s.seq)))], order="post")


@tt_pass("SplitBlockRegionsTT", requires=("DropTrueGuardsTT",))
def SplitBlockRegionsTT(func, mod, ctx):
    """Block buffers used by constant tile-aligned regions -> one block buffer per part
    (see module docstring)."""
    body, unrolled = _unroll_region_loops(func.body)
    func = func.with_body(body)
    if unrolled:
        # the copies of an unrolled body define its inner variables again: one each
        func = tvm.tirx.transform.ConvertSSA()(tvm.IRModule({"f": func}))["f"]
    return func.with_body(split_block_regions(func.body))
