"""TileLang's ``T.any_of`` / ``T.all_of`` as frontend TIR.

TileLang's ``T.any_of(x)`` is true when some element of ``x`` is nonzero (C++ truth,
``x[i] != 0``), ``T.all_of(x)`` when every one is; ``x`` is a buffer or a buffer region
(``BlockMask[by, bx, k, :]``), of any dtype.  Here the call is expanded at parse time into
the OR (AND) of its elements' truths: ``T.any_of(M[by, bx, k, 0:2])`` is
``M[by, bx, k, 0] != 0 or M[by, bx, k, 1] != 0`` (a ``bool`` element is its own truth).  The
result is an ordinary condition of element reads, so it compiles exactly as the same condition
written by hand would: in an ``if`` outside ``T.Parallel`` the tensor is a scalar tensor
(docs/SUPPORT.md "Branches on tensor elements").

The extents must be constants (the number of elements is unrolled; at most ``MAX_ELEMENTS``
of them); a symbolic extent is a TTUnsupportedError naming the buffer and the extent.  TileLang
accepts a region whose dims of extent other than 1 are only the last; this accepts any
region of constant extents (the elements in row-major order).  A single element
(``T.any_of(M[i, j])``) is a TTArgumentError (a ValueError), as in TileLang.
"""

from __future__ import annotations

import itertools

from tvm import tirx
from tvm.ir import TensorLoad, TensorRegion
from tvm.tirx import is_buffer_var

from . import language_compat
from .errors import TTArgumentError, TTUnsupportedError

MAX_ELEMENTS = 64


def _region(x, op: str):
    """(buffer, [(min, extent)]) of ``op``'s operand."""
    if is_buffer_var(x):
        return x, [(tirx.IntImm("int32", 0), s) for s in x.ty.shape]
    if isinstance(x, TensorRegion):
        return x.source, [(r.min, r.extent) for r in x.region]
    if isinstance(x, TensorLoad):
        raise language_compat.note_error(TTArgumentError(
            f"T.{op}({x.source.name}[...]): the operand is a single element; T.{op} takes a "
            f"buffer or a region (write {x.source.name}[..., a:b], or test the element itself)"))
    raise language_compat.note_error(TTArgumentError(
        f"T.{op}: invalid operand {x!r}; pass a buffer or a region (M[i, j, :])"))


def _truth(load):
    dt = str(load.ty.dtype)
    if dt == "bool":
        return load
    return tirx.NE(load, tirx.const(0, dt))


def _elements(x, op: str) -> list:
    buf, dims = _region(x, op)
    extents = []
    for d, (_lo, ext) in enumerate(dims):
        if not isinstance(ext, (int, tirx.IntImm)):
            raise language_compat.note_error(TTUnsupportedError(
                f"T.{op}({buf.name}[...]): the extent {ext} of dim {d} is not a constant; "
                f"T.{op} is unrolled into one test per element, so its region needs constant "
                "extents (slice a constant number of elements, or test the elements in a "
                "loop of your own)"))
        extents.append(int(ext))
    count = 1
    for e in extents:
        count *= e
    if count > MAX_ELEMENTS:
        raise language_compat.note_error(TTUnsupportedError(
            f"T.{op}({buf.name}[...]): {count} elements; T.{op} is unrolled into one test per "
            f"element, at most {MAX_ELEMENTS}"))
    return [buf[tuple(lo + o for (lo, _e), o in zip(dims, offs))]
            for offs in itertools.product(*(range(e) for e in extents))]


def _fold(x, op: str, combine, empty: bool):
    terms = [_truth(load) for load in _elements(x, op)]
    if not terms:
        return tirx.const(empty, "bool")
    out = terms[0]
    for t in terms[1:]:
        out = combine(out, t)
    return out


def any_of(buffer):
    """``T.any_of(x)``: some element of the buffer or region ``x`` is nonzero."""
    return _fold(buffer, "any_of", tirx.Or, False)


def all_of(buffer):
    """``T.all_of(x)``: every element of the buffer or region ``x`` is nonzero."""
    return _fold(buffer, "all_of", tirx.And, True)
