"""A0.3.1 PadTensorsTT: tensors whose tiled dims are not tile multiples are padded with zeros.

Requires: LegalizeTileOpsTT (every access to a global tensor is a ``tile.copy`` region:
A0.2 staged the element accesses of ``T.Parallel`` bodies, A0.3 the global -> global copies).

TileLang's kernels take any sizes: the grid is ``T.ceildiv(M, block_M)`` blocks and the last
block reaches past the tensor.  TileLang's ``LegalizeSafeMemoryAccess`` (on by default, every
backend) makes an out-of-bounds read of a global tensor return 0 (the buffer's safe value) and
skips an out-of-bounds store; its ``T.copy`` lowering does the same per element.  A Tensix
tensor is a grid of whole 32x32 tiles, so this pass gives the device a tensor padded with
zeros up to what the kernel's accesses cover, and the host pads inputs and crops outputs
(``main.cpp``): the padded elements read 0 (or the tensor's ``T.annotate_safe_value``, the
value the host fills the padding with), as in TileLang, and what the kernel stores there is
dropped, as in TileLang.  The zeros take part in whatever the kernel computes from them
(GEMM K sums, reductions, ``T.max``) exactly as TileLang's zeros do.

Guarantees: every tensor parameter whose shape differs from its *device shape* is replaced
by a buffer of the device shape (every access follows; indices unchanged), and the function
attribute ``tt.padded`` lists ``{"param": i, "logical": shape, "padded": device shape,
"fill": the padding's value}`` for each (``fill`` 0.0 unless ``T.annotate_safe_value`` names
the tensor: ``tt.safe_values``).  The device shape of a dim is the larger of its size and the end of the furthest
region of any ``tile.copy`` of the tensor (region start bounded over the launch extents and
loop ranges, integer bindings inlined), rounded up to a multiple of 32 for the dims its
tiles span (A1's tiled plane; the last dim of a tensor stored as row vectors).  A tensor
whose shape already equals its device shape is unchanged, so is a kernel with none, and so
is a tensor read only as scalars in branch conditions and serial loops' bounds
(``analysis/scalar_reads.py``); an element read of a tensor that is not copied as blocks
anywhere else (an index of another access, a ``T.Parallel`` extent) is refused there, naming
the tensor and line.

A region whose start reads tensor elements (``K[i_s:i_s + BS]``, ``i_s = BlockIndices[...] *
BS``), or the variable of a loop whose bounds do (``for k in T.serial(Lens[bx]): ...
A[k * 32, 0]``: ``common.data_loops``), is proven inside the tensor (or its tile padding) with
each element a free integer, the enclosing ``if`` arms' conditions and such loops' ranges as
constraints (block indices and other loops in their ranges; TVM's analyzer with its Z3
fallback).  A block read it cannot prove is TileLang's out-of-bounds read (the safe value, 0):
``tt.checked_reads`` = ``[{"param": i, "dim": d, "start": bool, "end": bool}]`` lists its
tensor dim and the sides not proven, the tensor is not
padded for it, and the reader checks each of its tiles when it runs (C1, D3: zeros outside).

Refused (``TTUnsupportedError`` naming the tensor and line): a store at such an offset that is
not proven (blocks may race; the hint names the guard to add); a checked read of a tensor with
a non-zero ``T.annotate_safe_value``; a padded tensor whose region ends
cannot be bounded (a region without a bound leaves its dim as it is: later stages check it); a region that can start before a tensor's start (TileLang reads the safe
value there too, but padding adds elements only past the end), unless its rows start off a tile
boundary: such a block moves row by row and its rows outside the tensor read the safe value
(C1, D3); a padded tensor whose safe
value is not a constant.  Decided from the regions' index arithmetic only.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx
from tvm.sym import Analyzer, ProofStrength

from ... import attrs
from ...errors import TTUnsupportedError
from ..common import (
    TILE, buffer_dtype, buffer_shape, collect, data_loops, get_attr, inline_binds,
    launch_attrs, negate_condition, reads_data, substitute, to_py, tt_pass,
)
from ..analysis.scalar_reads import scalar_params, scalar_tensors
from .parallel_to_tile import unaligned_rows
from ..layout.infer_layout import is_vector_tensor, tiled_plane


_INF = 1 << 62  # const_int_bound's infinities are beyond this
_INT32 = 1 << 31  # a bound past int32 indices is no bound the analysis found


def _round_up(n: int) -> int:
    return (n + TILE - 1) // TILE * TILE


def _analyzer(body) -> tuple[Analyzer, dict]:
    """An analyzer knowing the block indices' and loop variables' ranges, and the kernel's
    integer bindings.  A loop whose extent depends on a block index (a causal attention's
    ``T.ceildiv((bx + 1) * block_M, block_N)``, or a start: ``T.Pipelined(start, n)``) ranges
    over every value it takes for some block."""
    ana = Analyzer()
    binds = {b.var: b.value for b in collect(body, tirx.Bind)
             if str(b.var.ty).startswith(("int", "uint", "bool"))}
    for a in launch_attrs(body):
        ana.bind(a.node.var, tvm.ir.Range.from_min_extent(tirx.IntImm("int32", 0), a.value))
    dloops = data_loops(body, binds)
    for lp in collect(body, tirx.For):  # outer loops first
        if any(lp.same_as(d) for d in dloops):
            continue  # bounds read tensor elements: constrained where a proof needs them
        lo_expr = ana.simplify(inline_binds(lp.min, binds))
        hi_expr = ana.simplify(inline_binds(lp.min + lp.extent - 1, binds))
        lo = ana.const_int_bound(lo_expr).min_value
        hi = ana.const_int_bound(hi_expr).max_value
        if -_INT32 < lo <= hi < _INT32:  # every value the variable takes, in one range
            dtype = str(lp.loop_var.ty.dtype)
            ana.bind(lp.loop_var, tvm.ir.Range.from_min_extent(
                tirx.IntImm(dtype, int(lo)), tirx.IntImm(dtype, int(hi - lo + 1))))
        else:
            ana.bind(lp.loop_var, tvm.ir.Range.from_min_extent(lo_expr, lp.extent))
    return ana, binds


def _bound(ana, expr, depth=0):
    """(min, max) of ``expr`` over the analyzer's ranges, each arm of a ``Select(c, a, b)`` in
    it bounded under its condition (``c`` for ``a``, ``not c`` for ``b``): an index chosen by
    a condition (``T.if_then_else(by < n, by, by - n)``) is bounded by what each arm can be
    where it is chosen."""
    sel = collect(expr, tirx.Select)
    if not sel or depth > 6:
        b = ana.const_int_bound(ana.simplify(expr))
        return b.min_value, b.max_value
    s = sel[0]
    out = []
    for cond, arm in ((s.condition, s.true_value), (negate_condition(s.condition), s.false_value)):
        with ana.constraint_scope(cond):
            arm_expr = tvm_ffi.structural_map(
                expr, [(tirx.Select, lambda x, s=s, arm=arm: arm if x.same_as(s) else x)],
                order="post")
            out.append(_bound(ana, arm_expr, depth + 1))
    return min(lo for lo, _ in out), max(hi for _, hi in out)


def covered_extents(func, buf, ana, binds) -> tuple[list[int], list]:
    """Per dim of tensor ``buf``: the end of the furthest region some ``tile.copy`` (or other
    tile primitive) of it touches, at least the dim's size; and the (call, dim, end) of the
    regions whose end has no bound (those dims keep their size).  A region whose start has a
    negative lower bound is refused."""
    shape = buffer_shape(buf)
    ends, unbounded = list(shape), []
    dloops = data_loops(func.body, binds)
    for call in collect(func.body, tirx.TilePrimitiveCall):
        for arg in call.args:
            if not (isinstance(arg, tvm.ir.TensorRegion) and arg.source.same_as(buf)):
                continue
            for d, rng in enumerate(arg.region):
                if reads_data(rng.min, binds, dloops):
                    if call.op.name == "tirx.tile.copy" and \
                            unaligned_rows(inline_binds(rng.min, binds)):
                        continue  # rows gathered one by one: those outside read zeros (C1)
                    end = _element_offset_end(func, call, buf, d, rng, ana, binds)
                    ends[d] = max(ends[d], end)
                    continue
                start = ana.simplify(inline_binds(rng.min, binds))
                if -_INF < _bound(ana, start)[0] < 0 and not _gathered_rows(func, call, buf, d,
                                                                     start):
                    raise TTUnsupportedError(
                        f"tensor {buf.name} (shape {shape}) is accessed from `{start}` in its "
                        f"dim {d}, which can be negative; TileLang reads its safe value before "
                        "a tensor's start, but a tensor is padded only past its end here",
                        span=call.span,
                        hint="shift the indices so that blocks start at 0 or later")
                end = ana.simplify(inline_binds(rng.min + rng.extent, binds))
                if ana.can_prove(end <= shape[d]):
                    continue  # inside the tensor (a loop bound that depends on a block index)
                bound = _bound(ana, end)[1]
                if bound >= _INT32:
                    unbounded.append((call, d, end))
                else:
                    ends[d] = max(ends[d], int(bound))
    return ends, unbounded


def _gathered_rows(func, call, buf, d, start) -> bool:
    """``call`` copies rows of ``buf`` starting at ``start`` in dim ``d``, the row dim of its
    tiled plane, off a tile boundary: the block moves row by row (C1, D3), and its rows before
    the tensor's start read the safe value and are not written, as in TileLang."""
    if call.op.name != "tirx.tile.copy" or not unaligned_rows(start):
        return False
    return d == tiled_plane(func, buf)[0][0]


def _guard_conditions(body, call) -> list:
    """The conditions of the ``if`` arms ``call`` is in (an ``else`` arm's negated)."""
    out = []
    for node in collect(body, tirx.IfThenElse):
        if any(c.same_as(call) for c in collect(node.then_case, tirx.TilePrimitiveCall)):
            out.append(node.condition)
        elif node.else_case is not None and any(
                c.same_as(call) for c in collect(node.else_case, tirx.TilePrimitiveCall)):
            out.append(tirx.Not(node.condition))
    return out


def _is_block_read(call, buf) -> bool:
    """``call`` is a ``T.copy`` of a region of tensor ``buf`` into a block buffer."""
    if call.op.name != "tirx.tile.copy":
        return False
    dst, src = call.args[0], call.args[1]
    return isinstance(src, tvm.ir.TensorRegion) and src.source.same_as(buf) and \
        isinstance(dst, tvm.ir.TensorRegion) and str(dst.source.scope()) != "global"


def _element_offset_proof(func, call, buf, d, rng, ana, binds):
    """(after_start, end): whether a region of ``buf`` whose start in dim ``d`` reads tensor
    elements (``K[b, BlockIndices[b, t, 0, i] * 32:..., ...]``) is proven to start at 0 or
    later, and the end it is proven to stay inside (the dim's size, or its padding up to a tile
    multiple), or None.  Each element is a free integer, the guards of the enclosing ``if``
    arms the constraints (block indices and loops in their ranges; TVM's analyzer with its Z3
    fallback)."""
    shape = buffer_shape(buf)
    elements = []

    def as_var(ld):
        for seen, v in elements:
            if tvm_ffi.structural_equal(seen, ld):
                return v
        v = tirx.Var(f"{ld.source.name}_elem", str(ld.dtype))
        elements.append((ld, v))
        return v

    def free(e):
        return tvm_ffi.structural_map(inline_binds(e, binds), [(tvm.ir.TensorLoad, as_var)],
                                      order="post")

    start, end = free(rng.min), free(rng.min + rng.extent)
    conds = [free(c) for c in _guard_conditions(func.body, call)]
    for lp in data_loops(func.body, binds):  # a loop whose bounds read elements: its range
        if any(c.same_as(call) for c in collect(lp.body, tirx.TilePrimitiveCall)):
            v = lp.loop_var
            conds += [free(lp.min) <= v, v < free(lp.min + lp.extent)]
    guard = tirx.const(True, "bool")
    for c in conds:
        guard = tirx.And(guard, c)
    strong = ProofStrength.SYMBOLIC_BOUND
    with ana.constraint_scope(guard):
        after_start = ana.can_prove(start >= 0, strong)
        inside = ana.can_prove(end <= shape[d], strong)
        in_padding = inside or ana.can_prove(end <= _round_up(shape[d]), strong)
    return after_start, (shape[d] if inside else _round_up(shape[d]) if in_padding else None)


def _element_offset_end(func, call, buf, d, rng, ana, binds) -> int:
    """The end a region of ``buf`` reaches in dim ``d`` when its start reads tensor elements:
    proven inside the tensor (or its tile padding) under the guards (:func:`_element_offset_proof`),
    or, for a block read, checked when the reader runs (:func:`checked_reads`: the dim's size);
    a store that is not proven is refused."""
    shape = buffer_shape(buf)
    after_start, end = _element_offset_proof(func, call, buf, d, rng, ana, binds)
    if after_start and end is not None:
        return end
    if _is_block_read(call, buf):
        return shape[d]  # checked per tile when the reader runs: nothing past the tensor
    elems = collect(inline_binds(rng.min, binds), tvm.ir.TensorLoad)
    what = f"an offset read from the tensor element `{elems[0]}`" if elems else \
        "an offset from the variable of a loop whose bounds read tensor elements"
    where = "before the tensor's start" if not after_start else "past the tensor's end"
    raise TTUnsupportedError(
        f"tensor {buf.name} (shape {shape}) is stored to from "
        f"`{inline_binds(rng.min, binds)}` in its dim {d}, {what}; nothing bounds it, so the "
        f"block can reach {where} (the enclosing `if` conditions, loop and block index ranges "
        "are all the compiler knows about the element; a block read there reads zeros, a "
        "store is refused)",
        span=call.span,
        hint=f"guard the access with an `if` that bounds the offset to the tensor, e.g. `if "
             f"0 <= offset and offset + extent <= {shape[d]}:` (TileLang's `if i_s <= i_t and "
             "i_s >= 0:`)")


def checked_reads(func) -> list:
    """``[{"param": i, "dim": d, "start": bool, "end": bool}]``: the tensor dims some block
    read starts in at an offset read from tensor elements (or a loop variable of
    ``common.data_loops``) that the guards do not bound to the tensor, and which side is not
    bounded (``start``: it may begin before the tensor; ``end``: reach past it).  Its tiles
    are checked on those sides when the reader runs: outside the tensor they read zeros,
    TileLang's safe value."""
    ana, binds = _analyzer(func.body)
    out = []
    for call in collect(func.body, tirx.TilePrimitiveCall):
        if call.op.name != "tirx.tile.copy":
            continue
        src = call.args[1]
        if not isinstance(src, tvm.ir.TensorRegion) or not _is_block_read(call, src.source):
            continue
        buf = src.source
        index = next((i for i, p in enumerate(func.params) if p.same_as(buf)), None)
        if index is None or not all(isinstance(x, int) for x in buffer_shape(buf)):
            continue
        dloops = data_loops(func.body, binds)
        for d, rng in enumerate(src.region):
            if not reads_data(rng.min, binds, dloops):
                continue
            if unaligned_rows(inline_binds(rng.min, binds)):
                continue  # rows gathered one by one check their own bounds (D3)
            after_start, end = _element_offset_proof(func, call, buf, d, rng, ana, binds)
            if after_start and end is not None:
                continue
            entry = next((e for e in out if e["param"] == index and e["dim"] == d), None)
            if entry is None:
                entry = {"param": index, "dim": d, "start": False, "end": False}
                out.append(entry)
            entry["start"] = entry["start"] or not after_start
            entry["end"] = entry["end"] or end is None
    return out


def device_shape(func, buf, ana, binds) -> list[int]:
    """The shape the device stores ``buf`` in (module docstring)."""
    shape = buffer_shape(buf)
    if len(shape) == 0 or not all(isinstance(d, int) for d in shape):
        return shape  # scalars and symbolic shapes: A1 refuses them
    ends, unbounded = covered_extents(func, buf, ana, binds)
    if len(shape) == 1:
        tiled = [0]
    elif is_vector_tensor(func, buf, aligned=False):
        tiled = [len(shape) - 1]
    else:
        tiled = tiled_plane(func, buf)[0]
    padded = [_round_up(e) if d in tiled else e for d, e in enumerate(ends)]
    if padded != shape and unbounded:
        call, d, end = unbounded[0]
        raise TTUnsupportedError(
            f"tensor {buf.name} (shape {shape}) is accessed at `{end}` in its dim {d}, which "
            "has no bound the compiler can find; a tensor whose dims are not multiples of 32, "
            "or that blocks reach past, is padded up to what its accesses cover",
            span=call.span,
            hint="index tensors with block indices and loop variables of constant extents")
    return padded


def padding_needed(func) -> dict:
    """param index -> device shape, for the tensor parameters whose device shape differs from
    their shape (empty after this pass)."""
    ana, binds = _analyzer(func.body)
    out = {}
    scalars = scalar_params(func)  # not tiled: nothing to pad
    for i, p in enumerate(func.params):
        if tirx.is_buffer_var(p) and str(p.scope()) == "global" and i not in scalars:
            padded = device_shape(func, p, ana, binds)
            if padded != buffer_shape(p):
                out[i] = padded
    return out


def pad_to_device_shapes(func):
    """``func`` with every tensor parameter whose device shape differs from its shape replaced
    by a buffer of the device shape, ``tt.padded`` recording each (an entry already there keeps
    its ``logical`` shape and gets the new ``padded`` one).  Also used by A0.5.1, whose padded
    block buffers can make tensor regions reach further."""
    safe = to_py(get_attr(func, attrs.SAFE_VALUES, {})) or {}
    record = [dict(r) for r in (to_py(get_attr(func, attrs.PADDED, [])) or [])]
    mapping = {}
    for i, padded in padding_needed(func).items():
        p = func.params[i]
        shape = buffer_shape(p)
        value = safe.get(str(p.name), 0.0)
        if not isinstance(value, float):
            raise TTUnsupportedError(
                f"tensor {p.name} has shape {shape} and is stored padded to {padded} (its dims "
                "are not multiples of 32, or the grid's blocks reach past them); the host fills "
                "the padding with its safe value, which must be a constant, but "
                f"T.annotate_safe_value gives `{value}`",
                hint="give T.annotate_safe_value a number")
        mapping[p] = tirx.decl_buffer(padded, buffer_dtype(p), str(p.name))
        known = next((r for r in record if r["param"] == i), None)
        if known is not None:
            known["padded"] = list(padded)
        else:
            record.append({"param": i, "logical": list(shape), "padded": list(padded),
                           "fill": float(value)})
    if not mapping:
        return func
    params = [mapping.get(p, p) for p in func.params]
    body = substitute(func.body, mapping)  # a tensor parameter is a variable of its buffer type
    out = tirx.PrimFunc(params, body, func.ret_type, func.attrs, func.span)
    return out.with_attr(attrs.PADDED, sorted(record, key=lambda r: r["param"]))


@tt_pass("PadTensorsTT", requires=("LegalizeTileOpsTT",))
def PadTensorsTT(func, mod, ctx):
    """Tensors padded to the device shape their tiles and accesses need (module docstring)."""
    scalar_tensors(func, refuse="placing")  # tensor elements as indices or loop bounds: refused
    checked = checked_reads(func)
    if checked:
        safe = to_py(get_attr(func, attrs.SAFE_VALUES, {})) or {}
        for c in checked:
            p = func.params[c["param"]]
            if safe.get(str(p.name), 0.0) != 0.0:
                raise TTUnsupportedError(
                    f"tensor {p.name} is read in blocks at offsets read from tensor elements "
                    "that can reach outside it; those tiles read zeros, but "
                    f"T.annotate_safe_value gives it {safe[str(p.name)]}",
                    hint="bound the offsets with an `if` around the copy, or drop the safe "
                         "value")
        func = func.with_attr(attrs.CHECKED_READS, checked)
    return pad_to_device_shapes(func)
