"""A1 InferTTLayout: a layout descriptor for every global buffer.

Requires: frontend TIR after LowerParallelToTileTT.

Guarantees: ``tt.layout_desc`` lists, for every buffer parameter in order,
``{name, memory, layout, dtype, tile, shape, tiles, page_bytes}``.  Defaults: DRAM, interleaved,
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
(one row of tiles, values in row 0 of each; the runtime pads it).
"""

from __future__ import annotations

from tvm import tirx

from ... import attrs
from ...errors import TTLayoutError, TTUnsupportedError
from ...target import profile_of
from .sharding import shard_bytes, shard_geometry
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


def _check_tileable(buf, what, span=None, vector_ok=False):
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
    rows, cols = shape[-2], shape[-1]
    if rows % TILE or cols % TILE:
        raise TTLayoutError(
            f"{what} {buf.name} has shape {shape}: its last two dims must be multiples of 32 "
            f"(tile size); {rows}x{cols} is not", span=span,
            hint="pad the tensor (or choose block sizes) to multiples of 32")
    return shape


@tt_pass("InferTTLayout")
def InferTTLayout(func, mod, ctx):
    """Attach ``tt.layout_desc`` to every buffer parameter (see module docstring)."""
    requested = to_py(get_attr(func, attrs.LAYOUT_REQUEST, {})) or {}
    profile = profile_of(str(get_attr(func, attrs.TARGET, "wormhole_b0")))
    layouts = []
    for buf in func.params:
        if not tirx.is_buffer_var(buf):
            raise TTUnsupportedError(
                f"scalar kernel parameter `{buf.name}` is not supported yet",
                hint="make it a Python value the kernel closes over (a compile-time constant)")
        dtype = _check_dtype(buf)
        shape = _check_tileable(buf, "tensor", vector_ok=True)
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
        batch = 1
        for d in shape[:-2]:
            batch *= d
        entry = {
            "name": str(buf.name),
            "memory": memory,
            "layout": layout,
            "dtype": dtype,
            "tile": [TILE, TILE],
            "shape": list(shape),
            # tile grid of the tensor seen as (batch * rows, cols): the page order; a 1-D
            # tensor is one row of tiles whose row 0 holds the values (a row vector)
            "tiles": ([batch * shape[-2] // TILE, shape[-1] // TILE] if len(shape) > 1
                      else [1, shape[0] // TILE]),
            "page_bytes": tile_bytes(dtype),
            "shard": {},
        }
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
