"""A0.2.0 ResolveViewsTT: ``T.reshape`` / ``T.view`` buffers resolved to one buffer per data.

``T.reshape(src, shape)`` / ``T.view(src, shape, dtype)`` parse as a ``DeclBuffer`` of a new
buffer over ``src.data``.  On Tensix a tensor and a block buffer are stored as 32x32 tiles of
their last two dims (a 1-D one as a row vector: one row of tiles, values in row 0), so a view
has a meaning only where it keeps the tiles:

* a view of a kernel's tensor argument: the same row-major data, which the host lays out in
  DRAM in any shape (numpy's reshape is free; ``main.cpp`` tilizes what it is given).  When
  every access to the tensor goes through buffers of one shape, that shape becomes the
  parameter's (the view's buffer replaces the parameter's) and ``tt.host_view`` records
  ``{"param": i, "shape": the declared shape}``: the host takes and returns the tensor in its
  declared shape and hands the device the view's (the runtime reshapes); a ``T.view`` to
  another of float32 / float16 / bfloat16 likewise (the host views the bytes).
* a view of a block buffer (shared / fragment) that keeps every 32x32 tile: same dtype, both
  of rank >= 2, the same last dim, the second-to-last a multiple of 32 in both (leading dims
  merged or split).  Nothing moves: the lowest-rank buffer is kept (a fresh buffer of its
  shape) and the fills and copies of the others are re-indexed onto its rows (a region of
  whole rows that is a box there, a copy's extents unchanged).
* a block-buffer view that moves elements across tiles (to or from 1-D, a changed last dim):
  when every buffer of the other shape is only copied or filled whole, to and from buffers of
  the new shape or whole-copied buffers of its own shape, all of those take the new shape
  (the shape of the family's element accesses and reductions, else the higher-rank one; whole
  tiles), tensors among them on the host (``tt.host_view``).

Requires: LowerParallelToTileTT (``T.Parallel`` copies are ``tile.copy``, so they count as
whole-buffer copies).  Guarantees: no ``DeclBuffer`` shares the data of a parameter or an
allocation with another buffer.  Refused (``TTUnsupportedError`` naming the op, the shapes and
the line): a block-buffer view changing the dtype; a block-buffer view that moves elements across tiles
other than as above; a tensor argument accessed through two different shapes; element
accesses or reductions through a block view of higher rank than the kept buffer; a copy
region that is no box of whole rows with the same extents in the kept buffer; views of
non-constant shapes.  Decided from the buffers' shapes and the IR's accesses only.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ... import attrs
from ...errors import TTAssertionError, TTUnsupportedError
from .pad_tensors import _analyzer
from ..common import (TILE, buffer_dtype, buffer_scope, buffer_shape, collect, substitute,
                      tt_map, tt_pass)

_FILL = "tirx.tile.fill"
# dtypes the host holds tensors in: a T.view of a tensor argument between two of them is a
# numpy view of its bytes on the host (exact, free)
_HOST_DTYPES = {"float32", "float16", "bfloat16"}
_REGION_OPS = ("tirx.tile.copy", _FILL)
_HINT_TILES = ("reshape the kernel's tensor argument instead (T.reshape of a T.Tensor "
               "parameter is free: the host lays the tensor out in the new shape), or keep the "
               "last dim and merge / split only leading dims, the second-to-last a multiple of 32")


def _shape(buf) -> list:
    return buffer_shape(buf)


def _owner(decl):
    """The buffer whose data a DeclBuffer views (its ``buffer_data(owner)``), else None."""
    data = decl.data
    if isinstance(data, tvm.ir.Call) and str(data.op.name) == "tirx.buffer_data":
        return data.args[0]
    return None


def _op_name(view, src) -> str:
    return "T.view" if buffer_dtype(view) != buffer_dtype(src) else "T.reshape / T.view"


def _span_of(decl, body):
    if decl.span is not None:
        return decl.span
    for c in collect(body, tirx.TilePrimitiveCall):
        if any(isinstance(a, tvm.ir.TensorRegion) and a.source.same_as(decl.buffer)
               for a in c.args):
            return c.span
    for st in collect(body, tirx.BufferStore):
        if st.span is not None and (st.buffer.same_as(decl.buffer) or any(
                ld.source.same_as(decl.buffer) for ld in collect(st.value, tvm.ir.TensorLoad))):
            return st.span
    return None


def _bits(buf):
    total = tvm.DataType(buffer_dtype(buf)).bits
    for d in _shape(buf):
        if not isinstance(d, (int, tirx.IntImm)):
            return None
        total *= int(d)
    return total


def _check_size(decl, owner, body):
    """A view must hold as many bits as the buffer it views (``T.reshape`` / ``T.view`` check
    it when called; TileLang's ``T.Tensor(shape, dtype, A.data)`` re-view does not)."""
    a, b = _bits(decl.buffer), _bits(owner)
    if a is not None and b is not None and a != b:
        raise TTAssertionError(
            f"{decl.buffer.name}{[int(x) for x in _shape(decl.buffer)]} "
            f"{buffer_dtype(decl.buffer)} views {owner.name}"
            f"{[int(x) for x in _shape(owner)]} {buffer_dtype(owner)}: it holds {a} bits, "
            f"{owner.name} {b}; a view over another buffer's data must hold the same elements "
            "(times the dtype widths)", span=_span_of(decl, body))


def _tile_keeping(src_shape, new_shape) -> str | None:
    """Why a block-buffer reshape moves elements across 32x32 tiles (None: it does not)."""
    if len(src_shape) < 2 or len(new_shape) < 2:
        return ("a 1-D block buffer is a row vector (its values in row 0 of one row of "
                "tiles), so reshaping to or from 1-D moves elements between tiles")
    if src_shape[-1] != new_shape[-1]:
        return ("it changes the last dim, so rows of one tile land in others")
    for s in (src_shape, new_shape):
        if not isinstance(s[-2], int) or s[-2] % TILE:
            return (f"the second-to-last dim {s[-2]} of {s} is not a multiple of 32, so merged "
                    "leading dims split tiles")
    return None


def _uses(body):
    """buffer -> span of an element access or a region in a tile op other than tile.copy /
    tile.fill ("rich" uses); buffer -> its TensorRegions in tile.copy / tile.fill."""
    rich, regions = {}, {}
    for c in collect(body, tirx.TilePrimitiveCall):
        plain = str(c.op.name) in _REGION_OPS
        for a in c.args:
            if isinstance(a, tvm.ir.TensorRegion):
                if plain:
                    regions.setdefault(a.source, []).append((a, str(c.op.name) == _FILL, c.span))
                else:
                    rich[a.source] = c.span
    for ld in collect(body, tvm.ir.TensorLoad):
        rich.setdefault(ld.source, None)
    for st in collect(body, tirx.BufferStore):
        rich.setdefault(st.buffer, st.span)
    return rich, regions


def _extents(region) -> list:
    """The extents of a region other than 1 (a copy's operands agree on these)."""
    out = []
    for r in region.region:
        e = r.extent
        if not (isinstance(e, tirx.IntImm) and int(e) == 1):
            out.append(int(e) if isinstance(e, tirx.IntImm) else str(e))
    return out


def _rows_to_box(lead, lo, n, ana):
    """Ranges over the leading dims ``lead`` of a row interval [lo, lo + n) of the flattened
    leading dims, or None when the interval is no box."""
    inner = 1
    for j in range(len(lead) - 1, -1, -1):
        d = lead[j]
        if n <= inner * d and n % inner == 0 and ana.can_prove(tirx.floormod(lo, inner) == 0):
            q = n // inner
            first = ana.simplify(tirx.floormod(tirx.floordiv(lo, inner), d))
            if q != d and not ana.can_prove(first + q <= d):
                return None
            ranges, outer = [], tirx.floordiv(lo, inner * d)
            for k in range(j - 1, -1, -1):
                ranges.insert(0, tvm.ir.Range.from_min_extent(
                    ana.simplify(tirx.floormod(outer, lead[k])), 1))
                outer = tirx.floordiv(outer, lead[k])
            ranges.append(tvm.ir.Range.from_min_extent(first if q != d else 0, q))
            ranges += [tvm.ir.Range.from_min_extent(0, e) for e in lead[j + 1:]]
            return ranges
        inner *= d
    return None


def _remap_region(region, target, ana):
    """``region`` (of a tile-keeping view of ``target``) as a region of ``target``."""
    shape = _shape(region.source)
    rng = list(region.region)
    lead = shape[:-1]
    # the region's rows must be contiguous: single points, then one range, then whole dims
    p = 0
    while p < len(lead) - 1 and ana.can_prove(rng[p].extent == 1):
        p += 1
    for k in range(p + 1, len(lead)):
        if not (ana.can_prove(rng[k].min == 0) and ana.can_prove(rng[k].extent == lead[k])):
            return None
    if not isinstance(ana.simplify(rng[p].extent), tirx.IntImm):
        return None
    inner = 1
    for d in lead[p + 1:]:
        inner *= d
    lo = 0
    for k in range(p + 1):
        lo = lo * lead[k] + rng[k].min
    lo = ana.simplify(lo * inner)
    n = int(ana.simplify(rng[p].extent)) * inner
    box = _rows_to_box(_shape(target)[:-1], lo, n, ana)
    if box is None:
        return None
    return target[tuple(slice(r.min, r.min + r.extent) for r in box + [rng[-1]])]


def _whole(region) -> bool:
    shape = _shape(region.source)
    return all(isinstance(r.min, tirx.IntImm) and int(r.min) == 0 and
               isinstance(r.extent, tirx.IntImm) and int(r.extent) == shape[k]
               for k, r in enumerate(region.region))


def _spread(family, copies, rich, regions, params, views, taken):
    """A reshape that moves elements across tiles, done by giving its other-shaped buffers the
    target shape: (target shape, the buffers outside ``family`` that take it too) when every
    buffer of the other shape is only copied (or filled) whole, to and from buffers of the
    target shape or buffers of its own shape that are themselves only copied whole (tensors
    among them take the target shape on the host), else None.  The target is the shape of
    the family's element accesses and reductions, else the highest-rank one."""
    rich_shapes = {tuple(_shape(b)) for b in family if b in rich}
    if len(rich_shapes) > 1:
        return None
    target = next(iter(rich_shapes)) if rich_shapes else \
        tuple(_shape(max(family, key=lambda b: len(_shape(b)))))
    if len(target) < 2 or any(not isinstance(d, int) or d % TILE for d in target[-2:]):
        return None  # the new shape must be whole tiles
    todo = [b for b in family if tuple(_shape(b)) != target]
    seen = list(todo)
    others = []

    def has(xs, b):
        return any(b.same_as(x) for x in xs)

    while todo:
        b = todo.pop()
        if b in rich or any(not _whole(r) for r, _fill, _span in regions.get(b, [])):
            return None
        for dst, src in copies:
            for mine, other in ((dst, src), (src, dst)):
                if not mine.source.same_as(b):
                    continue
                o = other.source
                if not _whole(other):
                    return None
                if has(seen, o) or has(family, o) and tuple(_shape(o)) == target:
                    continue
                if tuple(_shape(o)) != tuple(_shape(b)) or has(views, o) or has(family, o) \
                        or has(taken, o):  # another family's reshape already took it
                    return None
                seen.append(o)
                others.append(o)
                todo.append(o)
    return target, others


def _fresh(shape, like, family, params):
    """A new buffer of ``shape`` for ``like`` (a parameter keeps its name and scope)."""
    if any(like.same_as(p) for p in params):
        return tirx.decl_buffer(list(shape), buffer_dtype(like), str(like.name))
    named = next((b for b in family if tuple(_shape(b)) == tuple(shape)), like)
    return tirx.decl_buffer(list(shape), buffer_dtype(like), str(named.name),
                            scope=buffer_scope(like))


@tt_pass("ResolveViewsTT", requires=("LowerParallelToTileTT",))
def ResolveViewsTT(func: tirx.PrimFunc, mod=None, ctx=None) -> tirx.PrimFunc:
    body = func.body
    params = list(func.params)
    allocs = [a.buffer for a in collect(body, tirx.AllocBuffer)]

    def root(buf):
        for d in decls:
            if d.buffer.same_as(buf):
                up = _owner(d)
                return buf if up is None else root(up)
        return buf

    decls = [d for d in collect(body, tirx.DeclBuffer) if _owner(d) is not None]
    views = {}  # owner buffer -> [DeclBuffer]
    for d in decls:
        owner = root(d.buffer)
        if owner.same_as(d.buffer) or not any(owner.same_as(b) for b in params + allocs):
            continue
        views.setdefault(owner, []).append(d)
        _check_size(d, owner, body)
    if not views:
        return func

    ana, _ = _analyzer(body)  # block indices and loop variables bounded
    rich, regions = _uses(body)
    host_view, replace, remap, drop, wholes = [], {}, {}, [], {}
    copies = [(c.args[0], c.args[1]) for c in collect(body, tirx.TilePrimitiveCall)
              if str(c.op.name) == "tirx.tile.copy"]
    for owner, group in views.items():
        for d in group:
            v = d.buffer
            span = _span_of(d, body)
            host_cast = any(owner.same_as(p) for p in params) and \
                {buffer_dtype(v), buffer_dtype(owner)} <= _HOST_DTYPES
            if buffer_dtype(v) != buffer_dtype(owner) and not host_cast:
                raise TTUnsupportedError(
                    f"T.view({owner.name}, {_shape(v)}, dtype={buffer_dtype(v)}) reinterprets "
                    f"{owner.name} ({_shape(owner)} {buffer_dtype(owner)}) as "
                    f"{buffer_dtype(v)}: a Tensix tensor or block buffer is stored as 32x32 "
                    "tiles in one data format (the unpacker and packer convert formats by "
                    "value), so its bits cannot be read as another dtype", span=span,
                    hint="convert by value (T.cast, or T.copy into a buffer of the other dtype)")
            if not all(isinstance(s, int) for s in _shape(v) + _shape(owner)):
                raise TTUnsupportedError(
                    f"{_op_name(v, owner)} of {owner.name} {_shape(owner)} to {_shape(v)}: "
                    "views of non-constant shapes are not supported", span=span,
                    hint="give the shapes as constants")
        family = [owner] + [d.buffer for d in group]
        used = [b for b in family if b in rich or b in regions]
        if any(owner.same_as(p) for p in params):
            shapes = {(tuple(_shape(b)), buffer_dtype(b)) for b in used}
            if len(shapes) > 1:
                raise TTUnsupportedError(
                    f"tensor {owner.name} {_shape(owner)} is accessed through {len(shapes)} "
                    f"shapes ({', '.join(f'{list(s)} {t}' for s, t in sorted(shapes))}, with "
                    "T.reshape / T.view): the host lays a tensor out in DRAM as 32x32 tiles of "
                    "one shape, and these shapes tile its elements differently",
                    span=_span_of(group[0], body),
                    hint="access the tensor through one shape (reshape it once and use the "
                         "view everywhere)")
            kept = owner if not used or (tuple(_shape(owner)), buffer_dtype(owner)) in shapes \
                else used[0]
            if not kept.same_as(owner):  # the host reshapes (and reinterprets: T.view dtype=)
                host_view.append({"param": next(i for i, p in enumerate(params)
                                                 if p.same_as(owner)),
                                  "shape": _shape(owner), "dtype": buffer_dtype(owner)})
        else:
            moving = [(d, _tile_keeping(_shape(owner), _shape(d.buffer))) for d in group]
            moving = [(d, why) for d, why in moving if why is not None]
            if moving:
                spread = _spread(family, copies, rich, regions, params, views, list(replace))
                if spread is None:
                    d, why = moving[0]
                    raise TTUnsupportedError(
                        f"{_op_name(d.buffer, owner)} of the block buffer {owner.name} "
                        f"{_shape(owner)} to {_shape(d.buffer)} moves elements across 32x32 "
                        f"tiles: {why}; it runs only when every buffer of the other shape is "
                        "copied whole, from and to tensors copied whole (which then take the "
                        "new shape on the host)", span=_span_of(d, body), hint=_HINT_TILES)
                target, others = spread
                fresh = _fresh(target, owner, family, params)
                for b in family + others:
                    new = fresh if any(b.same_as(f) for f in family) else \
                        _fresh(target, b, [b], params)
                    replace[b] = new
                    if tuple(_shape(b)) != tuple(target):  # copied whole (checked)
                        wholes[b] = new
                    if any(b.same_as(p) for p in params):
                        host_view.append({"param": next(i for i, p in enumerate(params)
                                                         if p.same_as(b)),
                                          "shape": _shape(b), "dtype": buffer_dtype(b)})
                drop.extend(d.buffer for d in group)
                continue
            # the lowest-rank buffer is kept (the backend's block forms are 2-D); the others
            # are only copied or filled, by regions that are boxes of whole rows in it
            kept = min(family, key=lambda b: len(_shape(b)))
            for b in family:
                if tuple(_shape(b)) == tuple(_shape(kept)):
                    continue
                if b in rich:
                    raise TTUnsupportedError(
                        f"{b.name} {_shape(b)}, a view of the block buffer {owner.name} "
                        f"{_shape(owner)} kept as {kept.name} {_shape(kept)}, is accessed by "
                        "element or by a tile op other than T.copy / T.fill; only copies and "
                        "fills of whole rows are re-indexed between the shapes",
                        span=rich[b] or _span_of(group[0], body),
                        hint=f"compute on {kept.name} {_shape(kept)} (the lower-rank shape)")
                for r, fill, span in regions.get(b, []):
                    mapped = _remap_region(r, kept, ana)
                    # a copy's operands agree on their extents; a fill has no other operand
                    if mapped is None or not fill and _extents(mapped) != _extents(r):
                        where = ", ".join(f"{x.min}:{x.min + x.extent}" for x in r.region)
                        raise TTUnsupportedError(
                            f"{b.name} {_shape(b)}, a view of the block buffer {owner.name} "
                            f"{_shape(owner)}, is kept as {kept.name} {_shape(kept)} (the "
                            f"lower rank); its region [{where}] here is no box of whole rows "
                            f"of {kept.name} with the same extents, which the other operand "
                            "of the copy needs", span=span or _span_of(group[0], body),
                            hint=f"copy {kept.name} {_shape(kept)} instead, reshaping the "
                                 "tensor operand to match (T.reshape of a kernel tensor is free)")
                remap[b] = kept
        # a fresh buffer of the kept shape (a view's buffer carries its source's layout when
        # the IR is printed and parsed); a parameter keeps its name
        is_param = any(owner.same_as(p) for p in params)
        fresh = tirx.decl_buffer(_shape(kept), buffer_dtype(kept),
                                 str(owner.name if is_param else kept.name),
                                 **({} if is_param else {"scope": buffer_scope(kept)}))
        for b in family:
            replace[b] = fresh
            if b in remap:
                remap[b] = fresh
        drop.extend(d.buffer for d in group)

    def on_region(r):
        whole = wholes.get(r.source)
        if whole is not None:  # a whole-buffer region of a buffer that took the new shape
            return whole[tuple(slice(0, e) for e in _shape(whole))]
        target = remap.get(r.source)
        return r if target is None else _remap_region(r, target, ana)

    def on_decl(d):
        if any(d.buffer.same_as(b) for b in drop):
            return tirx.Evaluate(tirx.IntImm("int32", 0))
        return d

    def on_alloc(a):
        t = replace.get(a.buffer)
        return a if t is None else tirx.AllocBuffer(t, a.annotations, a.span)

    body = tt_map(body, [(tvm.ir.TensorRegion, on_region), (tirx.DeclBuffer, on_decl),
                         (tirx.AllocBuffer, on_alloc)])
    body = substitute(body, replace)
    params = [replace.get(p, p) for p in params]
    out = tirx.PrimFunc(params, body, func.ret_type, func.attrs, func.span)
    if host_view:
        out = out.with_attr(attrs.HOST_VIEW, host_view)
    return out
