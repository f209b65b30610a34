"""Tensors the host hands the device in another format than the caller's (``tt.host_format``).

A0.1.5 IntegerInputsToFloatTT.  Tensix tiles hold bfloat16, float16 and float32 data.  A
``uint8`` / ``int8`` / ``bool`` tensor argument (TileLang's attention masks:
``mask: T.Tensor([batch, seqlen_kv, groups], "uint8")``) whose values the kernel only reads -
copied into block buffers of its dtype, those only copied on, and the elements of all of them
only compared (with each other or with integer constants) or converted to a float dtype (a
``bool`` element also as a condition) - is given to the device as bfloat16, which holds every
such value exactly (integers up to 256 in magnitude): the parameter and those block buffers
become bfloat16, a comparison ``m[j] != 0`` compares bfloat16 values with the constant as a
bfloat16 constant, ``T.cast(m[j], "float32")`` converts the bfloat16 value, a ``bool``
condition ``m[j]`` becomes ``m[j] != 0``; the host converts the caller's values
(``tt.host_format`` ``convert``).  Decided from the IR: the tensor's dtype and every access to
it and to the buffers holding its copies.  Left as they are (A1 then names the dtype): a tensor
the kernel writes, one with another use (a reduction, arithmetic on its elements, a copy from
another tensor into its block buffers), ``int32`` and wider (not exact in bfloat16), and a
tensor read only as scalars in ``if`` conditions (``analysis/scalar_reads.py``: the host gives
it as 32-bit words, C2.2).

A0.1.6 PermuteVectorTensorsTT.  A block buffer of rank 1 moves to and from global memory as a
row vector: a 1-D tensor's elements, or the last dim of a tensor of rank >= 3 (A1 ``vector``).
A tensor argument of rank >= 3 every access of which is a ``T.copy`` between it and a 1-D block
buffer along the same dim ``d`` that is not its last (``mask[bid, k * bn:(k + 1) * bn, head]``
into ``mask_local[bn]``), and otherwise only element accesses, gets its dims permuted so that
``d`` is last (``[batch, groups, seqlen_kv]``): the parameter's shape and every region and index
of it are permuted, and the host transposes the caller's array (``tt.host_format`` ``axes``; an
output back).  A rank-2 tensor stays a tiled matrix (its 1-D copies are refused in C1).

Requires: ScalarsToBindTT.  Guarantees: the parameters named in ``tt.host_format`` have the
device's shape and dtype; no element of a converted buffer is read with its integer dtype.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ... import attrs
from ..analysis.scalar_reads import scalar_params
from ..common import (buffer_dtype, buffer_scope, buffer_shape, collect, get_attr, substitute,
                      to_py, tt_map, tt_pass)

_EXACT_IN_BF16 = {"uint8", "int8", "bool"}
_COMPARE = (tirx.EQ, tirx.NE, tirx.LT, tirx.LE, tirx.GT, tirx.GE)
_COPY = "tirx.tile.copy"


def _tile_calls(body):
    return collect(body, tirx.TilePrimitiveCall)


def _regions(call):
    return [a for a in call.args if isinstance(a, tvm.ir.TensorRegion)]


def _host_format(func) -> dict:
    return {int(e["param"]): dict(e) for e in to_py(get_attr(func, attrs.HOST_FORMAT, [])) or []}


def _with_host_format(func, entries: dict):
    return func.with_attr(attrs.HOST_FORMAT, [entries[k] for k in sorted(entries)])


def _entry(func, entries, index):
    p = func.params[index]
    return entries.setdefault(index, {"param": index, "shape": list(buffer_shape(p)),
                                      "dtype": buffer_dtype(p),
                                      "axes": list(range(len(buffer_shape(p)))),
                                      "convert": False})


# ---- A0.1.5 ----------------------------------------------------------------------------------
def _family(body, param):
    """The parameter and the block buffers that hold its copies (transitively), or None when
    one of them is written otherwise (the parameter at all) or used by a tile op other than a
    copy from a family member into a family member or into a float buffer."""
    family = [param]
    calls = _tile_calls(body)
    grew = True
    while grew:
        grew = False
        for c in calls:
            if str(c.op.name) != _COPY:
                continue
            dst, src = _regions(c)[:2]
            if any(src.source.same_as(b) for b in family) and \
                    not any(dst.source.same_as(b) for b in family) and \
                    buffer_dtype(dst.source) == buffer_dtype(param) and \
                    buffer_scope(dst.source) != "global":
                family.append(dst.source)
                grew = True
    inside = lambda b: any(b.same_as(f) for f in family)  # noqa: E731
    for c in calls:
        regs = _regions(c)
        if not any(inside(r.source) for r in regs):
            continue
        if str(c.op.name) != _COPY or len(regs) < 2:
            return None  # a reduction, fill, gemm... of the integer data
        dst, src = regs[:2]
        if inside(dst.source) and not inside(src.source):
            return None  # written from elsewhere
        if inside(dst.source) and dst.source.same_as(param):
            return None
    if collect(body, tirx.BufferStore, lambda s: inside(s.buffer)):
        return None
    return family


def _convert_loads(body, family, new):
    """Element reads of ``family`` buffers rewritten to bfloat16 reads where only their value
    matters; returns the body (reads left elsewhere are found by the caller)."""
    def is_member_load(e):
        return isinstance(e, tvm.ir.TensorLoad) and any(e.source.same_as(b) for b in family)

    def as_new(e):
        """A family load (possibly cast to an integer dtype) as a bfloat16 load, else None."""
        if isinstance(e, tirx.Cast) and is_member_load(e.value) and \
                _widens(buffer_dtype(e.value.source), str(e.ty.dtype)):
            e = e.value  # (int32)m[j]: the same value
        if is_member_load(e):
            nb = new[next(b for b in family if e.source.same_as(b))]
            return nb[tuple(e.indices)]
        return None

    def const(e):
        if isinstance(e, tirx.IntImm) and abs(int(e.value)) <= 256:  # exact in bfloat16
            return tirx.FloatImm("bfloat16", float(int(e.value)))
        return None

    def on_compare(cmp):
        a, b = as_new(cmp.a), as_new(cmp.b)
        if a is None and b is None:
            return cmp
        a = a if a is not None else const(cmp.a)
        b = b if b is not None else const(cmp.b)
        if a is None or b is None:
            return cmp  # compared with something else: left for the caller to refuse
        return type(cmp)(a, b)

    def on_cast(c):
        if not _is_float(c.ty.dtype):
            return c
        v = as_new(c.value)
        if v is None:
            return c
        return v if str(c.ty.dtype) == "bfloat16" else tirx.Cast(str(c.ty.dtype), v)

    def truth(e):
        v = as_new(e) if str(getattr(getattr(e, "ty", None), "dtype", "")) == "bool" else None
        return e if v is None else tirx.NE(v, tirx.FloatImm("bfloat16", 0.0))

    def on_call(call):
        if isinstance(call.op, tvm.ir.Op) and call.op.name in ("tirx.if_then_else",
                                                               "prim.if_then_else"):
            args = list(call.args)
            new_cond = truth(args[0])
            if not new_cond.same_as(args[0]):
                return tirx.if_then_else(new_cond, args[1], args[2])
        return call

    def on_select(s):
        c = truth(s.condition)
        return s if c.same_as(s.condition) else tirx.Select(c, s.true_value, s.false_value)

    def on_logic(e):
        if isinstance(e, (tirx.BitwiseAnd, tirx.BitwiseOr)) and str(e.ty.dtype) != "bool":
            return e  # integer bits, not a condition
        ops_ = [truth(x) for x in ((e.a, e.b) if hasattr(e, "b") else (e.a,))]
        if all(x.same_as(y) for x, y in zip(ops_, (e.a, getattr(e, "b", None)))):
            return e
        return type(e)(*ops_)

    def on_if(s):
        c = truth(s.condition)
        return s if c.same_as(s.condition) else tirx.IfThenElse(c, s.then_case, s.else_case,
                                                                 s.span)

    return tt_map(body, [(_COMPARE, on_compare), (tirx.Cast, on_cast), (tvm.ir.Call, on_call),
                         (tirx.Select, on_select),
                         ((tirx.And, tirx.Or, tirx.Not, tirx.BitwiseAnd, tirx.BitwiseOr), on_logic),
                         (tirx.IfThenElse, on_if)])


def _widens(src: str, dst: str) -> bool:
    """A cast from ``src`` to the integer dtype ``dst`` keeps every value."""
    signed = ("int16", "int32", "int64")
    return dst == src or dst in signed or (src in ("uint8", "bool") and dst.startswith("uint"))


def _is_float(dtype) -> bool:
    return str(dtype) in ("float32", "float16", "bfloat16", "float64")


def _conversion(body, p):
    """(family, new buffers, body with the family's element reads converted) when tensor
    parameter ``p`` is one A0.1.5 hands the device as bfloat16, else None."""
    if not tirx.is_buffer_var(p) or buffer_dtype(p) not in _EXACT_IN_BF16:
        return None
    family = _family(body, p)
    if family is None:
        return None
    new = {b: tirx.decl_buffer(buffer_shape(b), "bfloat16", str(b.name),
                               **({} if b.same_as(p) else {"scope": buffer_scope(b)}))
           for b in family}
    rewritten = _convert_loads(body, family, new)
    if collect(rewritten, tvm.ir.TensorLoad, lambda x: any(x.source.same_as(b)
                                                            for b in family)):
        return None  # an element used other than as a value to compare or convert: left
    return family, new, rewritten


def convertible(func) -> bool:
    """Some tensor parameter of ``func`` is one A0.1.5 converts."""
    scalars = scalar_params(func)
    return any(_conversion(func.body, p) is not None
               for i, p in enumerate(func.params) if i not in scalars)


@tt_pass("IntegerInputsToFloatTT", requires=("ScalarsToBindTT",))
def IntegerInputsToFloatTT(func, mod, ctx):
    params = list(func.params)
    body = func.body
    entries = _host_format(func)
    changed = False
    scalars = scalar_params(func)  # read only as scalars in `if` conditions: 32-bit words (C2.2)
    for index, p in enumerate(params):
        found = None if index in scalars else _conversion(body, p)
        if found is None:
            continue
        _, new, rewritten = found

        def on_alloc(a, new=new):
            nb = next((v for k, v in new.items() if a.buffer.same_as(k)), None)
            return a if nb is None else tirx.AllocBuffer(nb, a.annotations, a.span)

        body = substitute(tt_map(rewritten, [(tirx.AllocBuffer, on_alloc)]), new)
        _entry(func, entries, index)["convert"] = True
        params[index] = new[p]
        changed = True
    if not changed:
        return func
    out = tirx.PrimFunc(params, body, func.ret_type, func.attrs, func.span)
    return _with_host_format(out, entries)


# ---- A0.1.6 ----------------------------------------------------------------------------------
def _vector_dim(body, param):
    """The one dim along which every copy of ``param`` moves a 1-D block buffer, when it is
    not the last and there is no other tile access, else None."""
    dims = set()
    for c in _tile_calls(body):
        regs = _regions(c)
        mine = [r for r in regs if r.source.same_as(param)]
        if not mine:
            continue
        if str(c.op.name) != _COPY or len(regs) != 2 or len(mine) != 1:
            return None
        other = regs[0] if regs[1].source.same_as(param) else regs[1]
        if len(buffer_shape(other.source)) != 1 or buffer_scope(other.source) == "global":
            return None
        spans = [k for k, r in enumerate(mine[0].region)
                 if not (isinstance(r.extent, tirx.IntImm) and int(r.extent) == 1)]
        if len(spans) != 1:
            return None
        dims.add(spans[0])
    if len(dims) != 1:
        return None
    (d,) = dims
    return None if d == len(buffer_shape(param)) - 1 else d


def _permutation(body, p):
    """The dim A0.1.6 moves last in tensor parameter ``p``, else None."""
    if not tirx.is_buffer_var(p):
        return None
    shape = buffer_shape(p)
    if len(shape) < 3 or not all(isinstance(s, int) for s in shape):
        return None  # rank 2 stays a tiled matrix (a vector into one of its rows: refused in C1)
    return _vector_dim(body, p)


def permutable(func) -> bool:
    """Some tensor parameter of ``func`` is one A0.1.6 permutes."""
    return any(_permutation(func.body, p) is not None for p in func.params)


@tt_pass("PermuteVectorTensorsTT", requires=("ScalarsToBindTT",))
def PermuteVectorTensorsTT(func, mod, ctx):
    params = list(func.params)
    body = func.body
    entries = _host_format(func)
    changed = False
    for index, p in enumerate(params):
        d = _permutation(body, p)
        if d is None:
            continue
        shape = buffer_shape(p)
        axes = [k for k in range(len(shape)) if k != d] + [d]
        new_shape = [shape[k] for k in axes]
        nb = tirx.decl_buffer(new_shape, buffer_dtype(p), str(p.name))

        def on_region(r, p=p, nb=nb, axes=axes):
            if not r.source.same_as(p):
                return r
            return nb[tuple(slice(r.region[k].min, r.region[k].min + r.region[k].extent)
                            for k in axes)]

        def on_load(x, p=p, nb=nb, axes=axes):
            return x if not x.source.same_as(p) else nb[tuple(x.indices[k] for k in axes)]

        def on_store(s, p=p, nb=nb, axes=axes):
            if not s.buffer.same_as(p):
                return s
            return tirx.BufferStore(nb, s.value, [s.indices[k] for k in axes], s.span)

        body = tt_map(body, [(tvm.ir.TensorRegion, on_region), (tvm.ir.TensorLoad, on_load),
                             (tirx.BufferStore, on_store)])
        e = _entry(func, entries, index)
        e["axes"] = [e["axes"][k] for k in axes]
        params[index] = nb
        changed = True
    if not changed:
        return func
    out = tirx.PrimFunc(params, body, func.ret_type, func.attrs, func.span)
    return _with_host_format(out, entries)
