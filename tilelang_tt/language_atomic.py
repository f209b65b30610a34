"""TileLang's atomics (``T.atomic_add`` / ``atomic_max`` / ``atomic_min``, ``atomic_load`` /
``atomic_store``) as frontend TIR.

Tensix has no DRAM read-modify-write the compute engines can use, so an atomic is written as
the update it makes - ``dst = dst + value`` (``max`` / ``min``) - marked with an ``AttrStmt``
``tt.atomic`` (``attrs.ATOMIC``) whose node is the kind (``"add"``, ``"max"``, ``"min"``):

- element form ``T.atomic_add(B[i, j], v)`` (in a ``T.Parallel`` body): one marked store;
- tile form ``T.atomic_add(C[by * bm, bx * bn], C_local)`` (a buffer, region or element
  destination and a buffer or region value): a ``T.Parallel`` nest over the value's extents
  whose body is one marked store.

The pass ``frontend/atomics.py`` (A0.1.1) gives the marked stores their meaning (the blocks
that update one target are serialised on one core, the target read once and written once).
``memory_order`` is accepted (a core's updates are ordered; see that pass; an order TileLang
rejects is a TTArgumentError, a ValueError as in TileLang), ``use_tma`` ignored (a CUDA data
path); a previous value (``return_prev=True``) and the packed forms are refused.
``atomic_load(x)`` is a plain read and ``atomic_store(x, v)`` a plain store: blocks that race
on them are rejected by the dependency check (V0) like any plain access.
"""

from __future__ import annotations

import tvm
from tvm import tirx
from tvm.ir import TensorLoad, TensorRegion
from tvm.script import tirx as _T
from tvm.script.ir_builder import tirx as _IB
from tvm.tirx import is_buffer_var

from . import attrs, language_compat
from .errors import TTArgumentError, TTUnsupportedError

MEMORY_ORDERS = ("relaxed", "consume", "acquire", "release", "acq_rel", "seq_cst")
# as in TileLang (and C++): a load cannot release, a store cannot acquire
LOAD_ORDERS = ("relaxed", "consume", "acquire", "seq_cst")
STORE_ORDERS = ("relaxed", "release", "seq_cst")
KINDS = ("add", "max", "min")


def _refuse(message: str):
    return language_compat.note_error(TTUnsupportedError(message))


def _check_order(op: str, memory_order, allowed=MEMORY_ORDERS) -> None:
    if memory_order is not None and str(memory_order) not in allowed:
        raise language_compat.note_error(TTArgumentError(
            f"T.{op} does not support memory_order={memory_order!r}: expected one of "
            f"{', '.join(allowed)}"))


def combine(kind: str, old, value):
    """The value an atomic of ``kind`` leaves in an element holding ``old``."""
    if isinstance(value, (int, float)):
        value = tirx.const(value, str(old.ty.dtype))
    if value.ty.dtype != old.ty.dtype:
        value = tirx.Cast(str(old.ty.dtype), value)
    if kind == "add":
        return old + value
    return _T.max(old, value) if kind == "max" else _T.min(old, value)


def _is_tile(x) -> bool:
    return is_buffer_var(x) or isinstance(x, TensorRegion)


def _base_and_extents(x):
    """(source buffer, base indices, extents) of a buffer, region or element operand."""
    if is_buffer_var(x):
        return x, [tirx.IntImm("int32", 0)] * len(x.ty.shape), list(x.ty.shape)
    if isinstance(x, TensorRegion):
        return x.source, [r.min for r in x.region], [r.extent for r in x.region]
    return x.source, list(x.indices), [tirx.IntImm("int32", 1)] * len(x.indices)


def _marked_store(kind: str, buf, indices, value) -> None:
    old = buf[tuple(indices)]
    with _IB.attr(kind, attrs.ATOMIC, tirx.IntImm("int32", 0)):
        _IB.buffer_store(buf, combine(kind, old, value), list(indices))


def _atomic(kind: str, op: str, dst, value, memory_order, return_prev) -> None:
    if return_prev:
        raise _refuse(f"T.{op}(return_prev=True): an atomic's previous value has no Tensix "
                      "meaning here (a block's updates are applied to a copy of the target in "
                      "L1 and written once); reduce into a fragment instead")
    _check_order(op, memory_order)
    if not (is_buffer_var(dst) or isinstance(dst, (TensorLoad, TensorRegion))):
        raise _refuse(f"T.{op}: the destination must be a tensor element, region or buffer "
                      f"(got {dst!r})")
    if not _is_tile(value):
        if isinstance(dst, TensorLoad):
            _marked_store(kind, dst.source, dst.indices, value)
            return
        # a region and a scalar: every element of the region takes the value
        dbuf, dbase, dext = _base_and_extents(dst)
        dims = [k for k, e in enumerate(dext) if not (isinstance(e, tirx.IntImm) and int(e) == 1)]
        if not dims:  # a one-element region
            _marked_store(kind, dbuf, dbase, value)
            return
        from . import language

        frame = language.Parallel(*[dext[k] for k in dims])
        with frame:
            d_idx = list(dbase)
            for k, v in zip(dims, list(frame.vars)):
                d_idx[k] = dbase[k] + v
            _marked_store(kind, dbuf, d_idx, value)
        return
    # tile form: a T.Parallel nest over the value's extents (the destination's dims aligned
    # to the right, missing ones of extent 1)
    vbuf, vbase, vext = _base_and_extents(value)
    dbuf, dbase, dext = _base_and_extents(dst)
    if not isinstance(dst, TensorLoad):
        d_inner = [e for e in dext if not (isinstance(e, tirx.IntImm) and int(e) == 1)]
        v_inner = [e for e in vext if not (isinstance(e, tirx.IntImm) and int(e) == 1)]
        if len(d_inner) != len(v_inner) or any(
                isinstance(a, tirx.IntImm) and isinstance(b, tirx.IntImm) and int(a) != int(b)
                for a, b in zip(d_inner, v_inner)):
            raise _refuse(f"T.{op}: the destination {dbuf.name} region has extents "
                          f"{[str(e) for e in dext]}, the value {vbuf.name} "
                          f"{[str(e) for e in vext]}; they must match")
    loop_dims = [k for k, e in enumerate(vext) if not (isinstance(e, tirx.IntImm) and int(e) == 1)]
    if len(loop_dims) > len(dbase):
        raise _refuse(f"T.{op}: the value {vbuf.name} has more non-unit dims than the "
                      f"destination {dbuf.name} has dims")
    if not loop_dims:  # one element each
        _marked_store(kind, dbuf, dbase, vbuf[tuple(vbase)])
        return
    from . import language

    frame = language.Parallel(*[vext[k] for k in loop_dims])
    with frame:
        loop_vars = list(frame.vars)
        v_idx = list(vbase)
        for k, v in zip(loop_dims, loop_vars):
            v_idx[k] = vbase[k] + v
        d_idx = list(dbase)
        # the value's loop dims land on the destination's trailing dims of extent > 1
        d_dims = [k for k, e in enumerate(dext) if not (isinstance(e, tirx.IntImm) and int(e) == 1)]
        if len(d_dims) != len(loop_vars):
            d_dims = list(range(len(dbase) - len(loop_vars), len(dbase)))
        for k, v in zip(d_dims, loop_vars):
            d_idx[k] = dbase[k] + v
        _marked_store(kind, dbuf, d_idx, vbuf[tuple(v_idx)])


def atomic_add(dst, value, memory_order=None, return_prev=False, use_tma=False,
               annotations=None):
    """``dst += value`` for every block, in some order (TileLang's ``T.atomic_add``;
    ``use_tma`` chooses a CUDA data path and is ignored)."""
    _atomic("add", "atomic_add", dst, value, memory_order, return_prev)


def atomic_max(dst, value, memory_order=None, return_prev=False, annotations=None):
    """``dst = max(dst, value)`` for every block, in some order."""
    _atomic("max", "atomic_max", dst, value, memory_order, return_prev)


def atomic_min(dst, value, memory_order=None, return_prev=False, annotations=None):
    """``dst = min(dst, value)`` for every block, in some order."""
    _atomic("min", "atomic_min", dst, value, memory_order, return_prev)


def atomic_load(src, memory_order="seq_cst"):
    """A plain read of a tensor element (blocks writing it concurrently are rejected by V0)."""
    _check_order("atomic_load", memory_order, LOAD_ORDERS)
    if not isinstance(src, TensorLoad):
        raise _refuse("T.atomic_load: the source must be a tensor element (X[i, j])")
    return src


def atomic_store(dst, value, memory_order="seq_cst"):
    """A plain store of a tensor element (blocks racing on it are rejected by V0)."""
    _check_order("atomic_store", memory_order, STORE_ORDERS)
    if not isinstance(dst, TensorLoad):
        raise _refuse("T.atomic_store: the destination must be a tensor element (X[i, j])")
    dtype = str(dst.ty.dtype)
    if isinstance(value, (int, float)):
        value = tirx.const(value, dtype)
    elif str(value.ty.dtype) != dtype:
        value = tirx.Cast(dtype, value)
    _IB.buffer_store(dst.source, value, list(dst.indices))
