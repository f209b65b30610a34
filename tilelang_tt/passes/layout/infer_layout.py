"""A1 InferTTLayout: a layout descriptor for every global buffer.

Requires: frontend TIR after LowerParallelToTileTT.

Guarantees: ``tt.layout_desc`` lists, for every buffer parameter in order,
``{name, memory, layout, dtype, tile, shape, logical_shape, pad_value, axes, tiles,
page_bytes}`` (``shape`` the device shape, ``logical_shape`` the host's: they differ for the
tensors A0.3.1 padded, whose padding holds ``pad_value``).  ``axes`` is the
order of the tensor's axes in its device pages: the last two are the tiled plane, the others
are batched in order (``tiles = [batch * rows / 32, cols / 32]``).  The plane is the last two
dims unless every copy of the tensor (``tile.copy`` regions after A0) slices it as a 2-D
block over the same two other dims, every other index a scalar (TileLang's BSHD
``Q[bz, bx * block_M:(bx + 1) * block_M, by, :]`` tiles the ``(seq, dim)`` plane, axes
``[0, 2, 1, 3]``); the host then permutes the tensor's elements into that order (and back).
Copies that slice one tensor over different planes are a ``TTLayoutError`` naming both
lines; so is a sharding request for a tensor whose plane is not its last two dims.  Defaults: DRAM, interleaved,
32x32 tiles, one tile per page; user requests made with ``annotate_tt_layout`` are merged in
and validated.  A sharded tensor's entry carries ``shard`` (:mod:`.sharding`: ``kind``,
``projected_grid`` ``[Gy, Gx]``, ``projected_shard_tiles`` ``[Sm, Sn]``, the N-D request),
every other entry ``shard = {}``.  Rejects (``TTLayoutError``/``TTUnsupportedError``): scalar
parameters, dtypes other than bfloat16/float32, tensors of rank < 2, last two dims not
multiples of 32, L1 interleaved placement, shards that are not tile-aligned, do not split the
tensor evenly or need more cores (L1) or banks (DRAM) than the device has, an L1 shard larger
than a core's usable L1 (naming the bytes needed and available), halo requests ("halo
unsupported"); shared/fragment allocations whose last two dims are not multiples of 32.  A 1-D allocation whose length is a multiple of 32 is a vector (see
:mod:`.vector_orientation`); a 1-D tensor parameter of such a length is a row vector in DRAM
(one row of tiles, values in row 0 of each; the runtime pads it).  So is every index of the
leading dims of a tensor of rank >= 3 whose copies all slice its last dim alone (``is_vector_tensor``:
TileLang's ``lse[bz, by, bx * bm:(bx + 1) * bm]``): ``vector = True``, ``tiles =
[prod(shape[:-1]), shape[-1] / 32]``.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ... import attrs
from ...errors import TTLayoutError, TTUnsupportedError, describe_span
from ...target import profile_of
from .sharding import shard_bytes, shard_geometry
from ..analysis.scalar_reads import PAGE_BYTES as SCALAR_PAGE_BYTES
from ..analysis.scalar_reads import DTYPES as SCALAR_DTYPES
from ..analysis.scalar_reads import WORDS_PER_PAGE, scalar_params
from ..common import (
    DTYPE_BYTES, TILE, buffer_dtype, buffer_scope, buffer_shape, collect, get_attr, tile_bytes,
    to_py, tt_pass,
)

SUPPORTED_DTYPES = tuple(DTYPE_BYTES)
_USER_KEYS = {"memory", "layout", "dtype", "shard_grid", "shard_shape", "nd_shard", "halo"}


def _check_dtype(buf, span=None):
    dtype = buffer_dtype(buf)
    if dtype not in SUPPORTED_DTYPES:
        hint = "use " + ", ".join(SUPPORTED_DTYPES[:-1]) + " or " + SUPPORTED_DTYPES[-1]
        raise TTUnsupportedError(
            f"buffer {buf.name} has dtype {dtype}; Tenstorrent tiles support "
            f"{', '.join(SUPPORTED_DTYPES)} here", span=span, hint=hint)
    return dtype


def _check_tileable(buf, what, span=None, vector_ok=False, plane=None):
    shape = buffer_shape(buf)
    if vector_ok and len(shape) == 1 and isinstance(shape[0], int) and shape[0] % TILE == 0:
        return shape  # a column vector: one tile per 32 rows, values in column 0
    if len(shape) < 2:
        raise TTLayoutError(
            f"{what} {buf.name} has shape {shape}; Tenstorrent tensors are tiled in 32x32 "
            "tiles over their last two dimensions, so they need rank >= 2", span=span,
            hint="reshape 1-D data to (rows, cols) with both a multiple of 32")
    for dim in shape:
        if not isinstance(dim, int):
            raise TTUnsupportedError(
                f"{what} {buf.name} has a symbolic shape {shape}; shapes must be constants",
                span=span)
    if plane is not None and list(plane) != [len(shape) - 2, len(shape) - 1]:
        rows, cols = shape[plane[0]], shape[plane[1]]
        if rows % TILE or cols % TILE:
            raise TTLayoutError(
                f"{what} {buf.name} has shape {shape} and is copied as 2-D blocks over its dims "
                f"{plane[0]} and {plane[1]} ({rows}x{cols}), which must be multiples of 32 "
                "(tile size)", span=span,
                hint="pad the tensor (or choose block sizes) to multiples of 32")
        return shape
    rows, cols = shape[-2], shape[-1]
    if rows % TILE or cols % TILE:
        raise TTLayoutError(
            f"{what} {buf.name} has shape {shape}: its last two dims must be multiples of 32 "
            f"(tile size); {rows}x{cols} is not", span=span,
            hint="choose block sizes that are multiples of 32 (the tensors need not be: "
                 "they are padded to whole tiles)" if what != "tensor" else
                 "pad the tensor to multiples of 32")
    return shape


def _sliced_axes(region) -> list | None:
    """The axes a copy region spans with more than one element (None if an extent is not a
    constant)."""
    axes = []
    for i, r in enumerate(region.region):
        if not isinstance(r.extent, tirx.IntImm):
            return None
        if int(r.extent) != 1:
            axes.append(i)
    return axes


def is_vector_tensor(func, buf, aligned: bool = True) -> bool:
    """A tensor parameter stored as row vectors: rank 1, or rank >= 3 with every tile
    primitive region of it spanning its last dim alone (``lse[bz, by, bx * bm:(bx + 1) * bm]``
    copied to or from a 1-D fragment), the last dim a multiple of 32.  Each index of the
    leading dims is then one row of tiles whose row 0 holds the values.  ``aligned=False``
    skips the multiple-of-32 test (A0.3.1 asks before padding the last dim)."""
    shape = buffer_shape(buf)
    if len(shape) == 1:
        return True
    # rank 2 stays a tiled matrix: a vector copied into one of its rows (`T.copy(R, C[r, 0])`)
    # is refused in C1 as before (TTUnsupportedError: broadcast it into a 2-D buffer)
    if len(shape) < 3 or not isinstance(shape[-1], int) or (aligned and shape[-1] % TILE):
        return False
    regions = [arg for call in collect(func.body, tirx.TilePrimitiveCall) for arg in call.args
               if isinstance(arg, tvm.ir.TensorRegion) and arg.source.same_as(buf)]
    return bool(regions) and all(_sliced_axes(r) == [len(shape) - 1] for r in regions)


def tiled_plane(func, buf) -> tuple[list, object]:
    """The two axes of tensor parameter ``buf`` that its pages tile, and the span of a copy
    that chose them (None for the default, its last two dims).  Decided from the regions of
    the tile primitives that move the tensor: when every one that slices a 2-D block slices
    the same two axes, those; copies slicing different planes are a ``TTLayoutError``."""
    shape = buffer_shape(buf)
    default = [len(shape) - 2, len(shape) - 1]
    if len(shape) < 3:
        return default, None
    seen = {}  # plane -> span of its first copy
    for call in collect(func.body, tirx.TilePrimitiveCall):
        for arg in call.args:
            if not (isinstance(arg, tvm.ir.TensorRegion) and arg.source.same_as(buf)):
                continue
            axes = _sliced_axes(arg)
            if axes is not None and len(axes) == 2:
                seen.setdefault(tuple(axes), call.span)
    if len(seen) > 1:
        (p0, s0), (p1, s1) = list(seen.items())[:2]
        raise TTLayoutError(
            f"tensor {buf.name} (shape {shape}) is copied as 2-D blocks over its dims {list(p0)} "
            f"here and over its dims {list(p1)} at {describe_span(s1) or 'another copy'}; a "
            "tensor is stored in 32x32 tiles of one plane of two dims, so every copy of it must "
            "slice the same two dims", span=s0,
            hint="slice every block of a tensor over the same two dims (e.g. keep "
                 "[batch, heads, seq, dim] (BHSD) and slice [seq, dim] everywhere)")
    if not seen:
        return default, None
    ((plane, span),) = seen.items()
    return list(plane), (None if list(plane) == default else span)


def _refuse_blocks_of_scalars(func, buf):
    """An integer or bool tensor moved as blocks (a T.copy, an element read in T.Parallel):
    no tiles of it here; name the first such use."""
    span = next((call.span for call in collect(func.body, tirx.TilePrimitiveCall)
                 if any(isinstance(a, tvm.ir.TensorRegion) and a.source.same_as(buf)
                        for a in call.args)), None)
    raise TTUnsupportedError(
        f"tensor {buf.name} ({buffer_dtype(buf)}) is read as blocks of elements (a T.copy, or "
        "an element read in a T.Parallel body); a tensor of this dtype is read only as scalars "
        "in `if` conditions outside T.Parallel (docs/SUPPORT.md \"Branches on tensor "
        "elements\")", span=span,
        hint="branch on its elements outside T.Parallel (`if Mask[by, bx, k]:`), or make it "
             "bfloat16 / float16 / float32")


def scalars_layout(buf, user: dict) -> dict:
    """The layout of a tensor read only as scalars in conditions (analysis/scalar_reads.py):
    its elements as 32-bit words, row-major, ``WORDS_PER_PAGE`` to a DRAM page (``scalars``;
    ``tiles`` = ``[1, pages]``, ``dtype`` the tensor's own: the host converts)."""
    if user and (str(user.get("memory", "DRAM")) != "DRAM"
                 or str(user.get("layout", "interleaved")) != "interleaved"):
        raise TTLayoutError(
            f"{buf.name}: a tensor read only as scalars in conditions stays DRAM interleaved "
            "(its elements as 32-bit words); drop its layout request")
    shape = [int(d) for d in buffer_shape(buf)]
    count = 1
    for d in shape:
        count *= d
    pages = max(1, -(-count // WORDS_PER_PAGE))
    return {"name": str(buf.name), "memory": "DRAM", "layout": "interleaved",
            "dtype": buffer_dtype(buf), "tile": [TILE, TILE], "shape": shape,
            "logical_shape": shape, "pad_value": 0.0, "axes": list(range(len(shape))),
            "tiles": [1, pages], "vector": False, "page_bytes": SCALAR_PAGE_BYTES, "shard": {},
            "scalars": True}


@tt_pass("InferTTLayout", scalar_programs=True)
def InferTTLayout(func, mod, ctx):
    """Attach ``tt.layout_desc`` to every buffer parameter (see module docstring)."""
    requested = to_py(get_attr(func, attrs.LAYOUT_REQUEST, {})) or {}
    padded = {int(e["param"]): e for e in to_py(get_attr(func, attrs.PADDED, [])) or []}
    host_view = {int(e["param"]): e for e in to_py(get_attr(func, attrs.HOST_VIEW, [])) or []}
    host_format = {int(e["param"]): e
                   for e in to_py(get_attr(func, attrs.HOST_FORMAT, [])) or []}
    profile = profile_of(str(get_attr(func, attrs.TARGET, "wormhole_b0")))
    layouts = []
    scalars = scalar_params(func)
    for index, buf in enumerate(func.params):
        if not tirx.is_buffer_var(buf):
            raise TTUnsupportedError(
                f"scalar kernel parameter `{buf.name}` is not supported yet",
                hint="make it a Python value the kernel closes over (a compile-time constant)")
        # a scalar program's tensors (A0.00.1 ScalarProgramTT) are all read and stored by element
        if index in scalars or get_attr(func, attrs.SCALAR_PROGRAM) is not None:
            layouts.append(scalars_layout(buf, requested.get(str(buf.name), {})))
            continue
        if buffer_dtype(buf) in SCALAR_DTYPES:
            _refuse_blocks_of_scalars(func, buf)
        dtype = _check_dtype(buf)
        vector = is_vector_tensor(func, buf)
        if vector and len(buffer_shape(buf)) > 1:
            plane, plane_span = [len(buffer_shape(buf)) - 2, len(buffer_shape(buf)) - 1], None
            shape = buffer_shape(buf)
            for dim in shape:
                if not isinstance(dim, int):
                    raise TTUnsupportedError(f"tensor {buf.name} has a symbolic shape {shape}; "
                                             "shapes must be constants")
        else:
            plane, plane_span = tiled_plane(func, buf)
            shape = _check_tileable(buf, "tensor", plane_span, vector_ok=True, plane=plane)
        user = requested.get(str(buf.name), {})  # requests name parameters
        unknown = set(user) - _USER_KEYS - set(attrs.SCHEMAS[attrs.LAYOUT_DESC])
        if unknown:
            raise TTLayoutError(f"layout request for {buf.name} has unknown keys {sorted(unknown)}")
        memory = str(user.get("memory", "DRAM"))
        layout = str(user.get("layout", "interleaved"))
        if memory not in ("DRAM", "L1"):
            raise TTLayoutError(f"{buf.name}: memory must be DRAM or L1, got {memory!r}")
        if layout not in ("interleaved", "sharded"):
            raise TTLayoutError(f"{buf.name}: layout must be interleaved or sharded, got {layout!r}")
        if user.get("halo"):
            raise TTLayoutError(
                f"{buf.name}: halo unsupported: tiled Tenstorrent layouts hold disjoint shards",
                hint="read the neighbouring rows from the neighbouring shard explicitly")
        if memory == "L1" and layout == "interleaved":
            raise TTUnsupportedError(
                f"{buf.name}: L1 interleaved placement is not supported yet; use DRAM "
                "interleaved or an L1 sharded layout")
        if layout == "interleaved" and ({"shard_grid", "shard_shape", "nd_shard"} & set(user)):
            raise TTLayoutError(f"{buf.name}: shard parameters given for an interleaved layout; "
                                "add \"layout\": \"sharded\"")
        if "dtype" in user and str(user["dtype"]) != dtype:
            raise TTLayoutError(
                f"{buf.name}: layout dtype {user['dtype']} differs from the buffer's {dtype}")
        if vector and len(shape) > 1 and layout == "sharded":
            raise TTLayoutError(
                f"{buf.name}: a sharded layout for a tensor copied as 1-D vectors of its last "
                "dim (stored as one row of tiles per index of its leading dims)",
                hint=f"keep {buf.name} DRAM interleaved")
        if plane_span is not None and layout == "sharded":
            raise TTLayoutError(
                f"{buf.name}: a sharded layout for a tensor copied as 2-D blocks over its dims "
                f"{plane} (not its last two): shards are laid out over the last two dims",
                span=plane_span,
                hint=f"keep {buf.name} DRAM interleaved, or order its dims so that the blocks "
                     "slice the last two (e.g. [batch, heads, seq, dim], BHSD)")
        axes = ([a for a in range(len(shape)) if a not in plane] + plane if len(shape) > 1
                else [0])
        batch = 1
        for a in axes[:-2]:
            batch *= shape[a]
        lead = 1
        for d in shape[:-1]:
            lead *= d
        entry = {
            "name": str(buf.name),
            "memory": memory,
            "layout": layout,
            "dtype": dtype,
            "tile": [TILE, TILE],
            "shape": list(shape),
            "logical_shape": list(padded[index]["logical"]) if index in padded else list(shape),
            "pad_value": float(padded[index]["fill"]) if index in padded else 0.0,
            "axes": axes,
            # tile grid of the tensor seen as (batch * rows, cols) over its plane: the page
            # order; a 1-D tensor is one row of tiles whose row 0 holds the values (a row vector)
            # (a vector tensor: one row of tiles per index of its leading dims)
            "tiles": ([lead, shape[-1] // TILE] if vector else
                      [batch * shape[axes[-2]] // TILE, shape[axes[-1]] // TILE]),
            "vector": vector,
            "page_bytes": tile_bytes(dtype),
            "shard": {},
        }
        if index in host_view:  # T.reshape / T.view of the tensor: the caller's shape, dtype
            entry["host_shape"] = list(host_view[index]["shape"])
            entry["host_dtype"] = str(host_view[index]["dtype"])
        if index in host_format:  # A0.1.5 / A0.1.6: the host converts or transposes
            fmt = host_format[index]
            if index in host_view:
                raise TTUnsupportedError(
                    f"tensor {buf.name}: viewed with T.reshape / T.view and also handed to the "
                    "device converted or transposed by the host; use one of the two")
            entry["host_shape"] = list(fmt["shape"])
            entry["host_dtype"] = str(fmt["dtype"])
            entry["host_axes"] = [int(a) for a in fmt["axes"]]
            entry["host_convert"] = bool(fmt["convert"])
        if layout == "sharded":
            entry["shard"] = shard_geometry(str(buf.name), memory, list(shape), user, profile)
            need = shard_bytes(entry)
            if memory == "L1" and need > profile.l1_usable_bytes:
                raise TTLayoutError(
                    f"{buf.name}: an L1 shard of {entry['shard']['projected_shard_tiles'][0]}x"
                    f"{entry['shard']['projected_shard_tiles'][1]} tiles needs {need} bytes but a "
                    f"{profile.name} core has {profile.l1_usable_bytes} bytes of L1 available",
                    hint="use more, smaller shards or keep the tensor in DRAM")
        layouts.append(entry)

    for alloc in collect(func.body, tirx.AllocBuffer):
        scope = buffer_scope(alloc.buffer)
        if scope in ("shared", "local.fragment"):
            _check_dtype(alloc.buffer, alloc.span)
            _check_tileable(alloc.buffer, "shared buffer" if scope == "shared" else "fragment",
                            alloc.span, vector_ok=True)
    return func.with_attr(attrs.LAYOUT_DESC, layouts)
