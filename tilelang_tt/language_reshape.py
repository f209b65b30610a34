"""``T.reshape`` / ``T.view``: a buffer of another shape (and, for ``view``, dtype) over the same
data, as in TileLang (the new buffer shares ``src.data``; no element moves).

A view whose size in bits differs from its source's raises :class:`TTAssertionError` (an
``AssertionError``, as TileLang raises) at the kernel line.  Whether a view has a Tensix meaning
is decided later, from the IR, by the ``ResolveViewsTT`` pass (tilelang_tt/passes/frontend/
views.py): views of tensor arguments, views of block buffers that keep every 32x32 tile, and
refusals for the rest.
"""

from __future__ import annotations

import tvm
from tvm.sym import Analyzer
from tvm.script.ir_builder import IRBuilder
from tvm.script.ir_builder import tirx as _IB

from . import language_compat
from .dtypes import dtype_name
from .errors import TTAssertionError


def _bits(shape, dtype):
    total = tvm.tirx.const(tvm.DataType(dtype).bits * tvm.DataType(dtype).lanes, "int64")
    for s in shape:
        total = total * s
    return Analyzer().simplify(total)


def _show(expr):
    return int(expr) if isinstance(expr, tvm.tirx.IntImm) else expr


def _as_shape(shape):
    return list(shape) if isinstance(shape, (tuple, list, tvm.ir.Array)) else [shape]


def _make_view(op, src, shape, dtype):
    shape = _as_shape(shape)
    bits, src_bits = _bits(shape, dtype), _bits(list(src.shape), str(src.dtype))
    if not Analyzer().can_prove_equal(bits, src_bits):
        src_shape = [int(s) if isinstance(s, tvm.tirx.IntImm) else s for s in src.shape]
        new_shape = [int(s) if isinstance(s, tvm.tirx.IntImm) else s for s in shape]
        raise language_compat.note_error(TTAssertionError(
            f"T.{op}({src.name}, {new_shape}): T.reshape/view shape check failed: "
            f"{src.name} is {src_shape} {src.dtype} ({_show(src_bits)} bits), the new "
            f"shape {new_shape} {dtype} holds {_show(bits)} bits; the element counts (times the "
            "dtype widths) must agree"))
    if not IRBuilder.is_in_scope():  # outside a kernel: a buffer of the new shape and dtype
        return tvm.tirx.decl_buffer(shape, dtype, name=str(src.name), scope=src.scope())
    if dtype == str(src.dtype):  # TVMScript's own view (prints and parses back the same)
        return src.view(*[int(d) if isinstance(d, tvm.tirx.IntImm) else d for d in shape])
    return _IB.decl_buffer(shape, dtype, data=src.data, scope=src.scope())


def reshape(src, shape):
    """TileLang ``T.reshape(src, shape)``: ``src``'s data seen with shape ``shape``."""
    return _make_view("reshape", src, shape, str(src.dtype))


def view(src, shape=None, dtype=None):
    """TileLang ``T.view(src, shape=None, dtype=None)``: ``src``'s data seen with another
    shape and/or dtype (defaults: ``src``'s)."""
    shape = list(src.shape) if shape is None else shape
    dtype = str(src.dtype) if dtype is None else dtype_name(dtype)
    return _make_view("view", src, shape, dtype)
