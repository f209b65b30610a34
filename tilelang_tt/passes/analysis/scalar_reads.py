"""Tensors read element by element in branch conditions (an analysis; it never rewrites).

TileLang's block-sparse GEMM skips a K step by a mask tensor: ``if BlockMask[by, bx, k]:``.
A tensor parameter that the kernel only reads as single elements, each read sitting in the
condition of an ``if`` or the bounds of a serial loop (``for k in T.serial(Lens[bx]):``)
outside ``T.Parallel`` with indices computed from block indices, loop variables and constants
(no tensor element among them), is a *scalar tensor*: it is not
tiled; the host gives the device its values as 32-bit words in a small DRAM buffer
(:data:`PAGE_BYTES` a page) and the kernels read the element a condition needs
(``dataflow/scalar_reads.py``).

An element may place a block read anywhere (the start of a ``T.copy`` of a tensor region
into a block buffer, TileLang's grouped GEMM ``B[cur_batch, k * bK, by * bN]``): the reader
reads it right before the read (C2.2, :func:`row_offsets`).  The same element may also place
a block (the start of a tile-primitive region,
``T.copy(K[b, BlockIndices[b, t, 0, i] * 32:..., ...], K_s)``) or sit in the condition of a
mask the reader computes (``tt.tile.index_mask``) inside an arm of an ``if`` (outside
``T.Parallel``) whose condition reads it, or in the body of a serial loop whose bounds read
it: every kernel with work under the ``if`` (in the loop) has its value (C2.2), and
PadTensorsTT proves the block inside the tensor under the ``if``'s guard (or has the reader
check its tiles when it runs).

:func:`scalar_tensors` finds them and refuses, naming the tensor and the line, any other
element read of a tensor that is not copied as blocks: as an index of another access, in a
``T.Parallel`` body or extent, or any other value.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ... import attrs, ops
from ...errors import TTUnsupportedError
from ..common import buffer_shape, collect

# one DRAM page of a scalar tensor: 16 32-bit values (a multiple of the DRAM alignment of
# Wormhole, 32 bytes, and Blackhole, 64)
PAGE_BYTES = 64
WORDS_PER_PAGE = PAGE_BYTES // 4
# the dtypes a scalar tensor may have: the host converts each element to a 32-bit word
DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32")
# the dtypes of a scalar tensor whose elements are staged into [1] blocks as operands of
# T.Parallel expressions (frontend/scalar_operands.py): the host converts each to float32
OPERAND_DTYPES = ("bfloat16", "float16", "float32")


def _loads(node) -> list:
    return collect(node, tvm.ir.TensorLoad)


def _tensor_params(func) -> list:
    return [p for p in func.params if tirx.is_buffer_var(p)]


def _is_param(func, buf) -> bool:
    return any(buf.same_as(p) for p in _tensor_params(func))


def _enclosing_span(body, node):
    found = None
    for stmt in collect(body, tirx.Stmt, lambda st: getattr(st, "span", None) is not None):
        if any(x.same_as(node) for x in collect(stmt, type(node))):
            found = stmt.span
    return found


def element_copy(func, call):
    """The tensor parameter a ``T.copy`` stages one element of into a ``[1]`` block buffer
    (``T.copy(S[by:by + 1], s1)``: every extent of the source region 1, the destination a
    one-element shared / fragment buffer, ``[32]`` once PadShortBlocksTT holds it as a whole
    tile), or None."""
    if not isinstance(call, tirx.TilePrimitiveCall) or call.op.name != "tirx.tile.copy":
        return None
    dst, src = call.args[0], call.args[1]
    if not (isinstance(dst, tvm.ir.TensorRegion) and isinstance(src, tvm.ir.TensorRegion)):
        return None
    if not _is_param(func, src.source) or str(src.source.dtype) not in OPERAND_DTYPES:
        return None
    # the block: [1], or [32] once A0.5.1 holds it as a whole tile
    if str(dst.source.scope()) == "global" or buffer_shape(dst.source) not in ([1], [32]):
        return None
    if not all(isinstance(r.extent, tirx.IntImm) and int(r.extent) == 1 for r in src.region):
        return None
    if any(_loads(r.min) for r in src.region):
        return None
    return src.source


def _tiled_uses(func) -> set:
    """Tensor parameters moved as blocks (tile-primitive regions other than element copies)
    or written element-wise."""
    out = []
    for call in collect(func.body, tirx.TilePrimitiveCall):
        if element_copy(func, call) is not None:
            continue
        for arg in call.args:
            if isinstance(arg, tvm.ir.TensorRegion):
                out.append(arg.source)
    for store in collect(func.body, tirx.BufferStore):
        out.append(store.buffer)
    return out


def scalar_tensors(func, refuse=True) -> dict:
    """``{tensor parameter: [its element loads]}`` for the scalar tensors of ``func`` (see the
    module docstring).  With ``refuse``, an element read of a tensor parameter that is neither
    copied as blocks nor read in a supported way is a ``TTUnsupportedError`` naming it and its
    line (element reads of block-copied tensors are left to the other stages); with
    ``refuse="placing"`` only one that is an index of another access or a loop bound."""
    body = func.body
    tiled = _tiled_uses(func)
    # the loads each condition holds (outside T.Parallel), by identity
    allowed = {}

    def visit(node):
        if isinstance(node, tirx.For) and node.kind == tirx.ForKind.PARALLEL:
            return False  # a T.Parallel body: nothing in it is a condition of ours
        if isinstance(node, tirx.IfThenElse):
            for load in _loads(node.condition):
                allowed[load] = node
        if isinstance(node, tirx.For):  # a serial loop's bounds: read before the loop (C2.2)
            for load in _loads(node.min) + _loads(node.extent):
                allowed[load] = node
        return True

    tvm_walk_pre(body, visit)
    # loads that place other accesses or bound T.Parallel loops (data-dependent indices and
    # extents)
    nested = []
    for node in collect(body, tvm.ir.TensorLoad) + collect(body, tirx.BufferStore):
        for i in node.indices:
            nested += _loads(i)
    for region in collect(body, tvm.ir.TensorRegion):
        for r in region.region:
            nested += _loads(r.min) + _loads(r.extent)
    bounds = []
    for loop in collect(body, tirx.For):
        if not any(loop.same_as(a) for a in allowed.values()):
            bounds += _loads(loop.min) + _loads(loop.extent)
    nested += bounds
    # a row offset or a mask's element that is also (the same load, A0.1's substitution)
    # the bound of a T.Parallel loop is still such a bound
    guarded = _guarded_offsets(body) + [ld for ld in row_offsets(body)
                                        if not any(ld.same_as(b) for b in bounds)]
    found = {}
    for load in _loads(body):
        buf = load.source
        if not _is_param(func, buf) or any(buf.same_as(t) for t in tiled):
            continue
        span = getattr(load, "span", None) or _enclosing_span(body, load)
        why = None
        is_guarded = any(load.same_as(g) for g in guarded)
        placing = any(load.same_as(n) for n in nested) and not is_guarded
        if placing:
            why = ("it is used as an index of another access or as the bound of a T.Parallel "
                   "loop (a block offset read from a tensor is supported inside an `if` whose "
                   "condition, or a serial loop whose bounds, read the same element)")
        elif not is_guarded and not any(load.same_as(a) for a in allowed):
            why = ("it is used outside the condition of an `if` or the bounds of a serial "
                   "loop (as a value, or in a T.Parallel body)")
        elif any(_loads(i) for i in load.indices):
            why = "its indices read tensor elements themselves"
        if why is None and str(buf.dtype) not in DTYPES:
            why = (f"it has dtype {buf.dtype}; a tensor read as scalars in conditions must be "
                   f"one of {', '.join(DTYPES)}")
        if why is None:
            for d in buffer_shape(buf):
                if not isinstance(d, int):
                    why = f"it has a symbolic shape {buffer_shape(buf)}"
        if why is not None:
            if not refuse or (refuse == "placing" and not placing):
                continue
            raise TTUnsupportedError(
                f"element read of tensor {buf.name}[...] is not supported: {why}", span=span,
                hint="branch on a tensor element only in `if` conditions outside T.Parallel, "
                     "indexed by block indices, loop variables and constants (TileLang's "
                     "`if BlockMask[by, bx, k]:`)")
        found.setdefault(buf, []).append(load)
    # tensors whose only uses are element copies into [1] blocks (no element loads: those
    # were refused or taken above; a float tensor is never read in a condition)
    for call in collect(body, tirx.TilePrimitiveCall):
        buf = element_copy(func, call)
        if buf is not None and not any(buf.same_as(t) for t in tiled) and \
                all(isinstance(d, int) for d in buffer_shape(buf)):
            if any(buf.same_as(b) for b in found):
                continue
            if any(ld.source.same_as(buf) for ld in _loads(body)):
                continue  # also read by element elsewhere: the other stages refuse it
            found[buf] = []
    # loads of a tensor moved as blocks are not ours: nested inside a condition that also
    # reads a scalar tensor, they are refused by VerifyTileProgramTT
    return found


def row_offsets(body) -> list:
    """Element loads that place a block at tensor rows off a tile boundary (TileLang's
    variable-length rows: ``T.copy(Q[cu_seqlens[b] + bx * BM : ..., h, :], Q_s)``, a start
    not provably a multiple of 32 for every value of the element) or sit in the row guard of
    such a store (``tt_row_guard``, A0.2): the block moves row by row and the rows outside the
    tensor read zeros and are not written (C1, D3), so no ``if`` needs to bound them; and
    element loads (not indexed by the element's position) in the condition or values of an
    index mask (``tt.tile.index_mask``: the sequence lengths of a varlen mask); and element
    loads in the start of any block *read* (a ``T.copy`` of a tensor region into a block
    buffer: TileLang's grouped GEMM reads ``B[cur_batch, ...]``, the batch chosen by selects
    on elements), whose bounds PadTensorsTT proves or has the reader check per tile.  C2.2
    gives each kernel moving the block, and the reader computing the mask, the element's
    value."""
    from ..frontend.parallel_to_tile import unaligned_rows  # noqa: PLC0415

    out = []
    for call in collect(body, tirx.TilePrimitiveCall):
        if call.op.same_as(ops.op("tt.tile.index_mask")):
            # a mask the reader computes from such elements (TileLang's varlen `bx * BM + i >=
            # q_len`): the reader reads them right before it (C2.2)
            out += [ld for a in call.args[1:] if not isinstance(a, tvm.ir.TensorRegion)
                    for ld in _loads(a) if not any(
                        ops.tt_op_name(c) == "tt.mask.index" for i in ld.indices
                        for c in collect(i, tvm.ir.Call))]
            continue
        if call.op.name != "tirx.tile.copy":
            continue
        guard = (call.config or {}).get(attrs.ROW_GUARD)
        if guard is not None:
            out += _loads(guard)
        dst, src = call.args[0], call.args[1]
        if _block_read(call):
            # a block read at any offset read from elements (TileLang's grouped GEMM:
            # `B[cur_batch, k * bK, by * bN]`, `cur_batch` chosen by selects on elements):
            # the reader reads them right before the read (C2.2); PadTensorsTT proves the
            # block inside the tensor or has the reader check its tiles (zeros outside)
            out += [ld for r in src.region for ld in _loads(r.min)]
            continue
        for arg in (dst, src):
            if isinstance(arg, tvm.ir.TensorRegion) and str(arg.source.scope()) == "global":
                for r in arg.region:
                    if _loads(r.min) and unaligned_rows(r.min):
                        out += _loads(r.min)
    return out


def _block_read(call) -> bool:
    """``call`` is a ``T.copy`` of a tensor region into a block buffer (the reader's)."""
    dst, src = call.args[0], call.args[1]
    return isinstance(src, tvm.ir.TensorRegion) and isinstance(dst, tvm.ir.TensorRegion) and \
        str(src.source.scope()) == "global" and str(dst.source.scope()) != "global"


def _guarded_offsets(body) -> list:
    """Element loads that place a block (the start of a tile-primitive region:
    ``T.copy(K[b, BlockIndices[b, t, 0, i] * 32:..., ...], K_s)``) or sit in the condition of
    a mask the reader computes (``tt.tile.index_mask``), inside the ``then`` or ``else`` arm
    of an ``if`` (outside ``T.Parallel``) whose condition reads an equal element: C2.2 reads
    that element before the ``if`` for every kernel with work under it, so each of them has
    the value.  Whether the offset stays in the tensor is PadTensorsTT's check."""
    uses = []
    for call in collect(body, tirx.TilePrimitiveCall):
        if call.op.same_as(ops.op("tt.tile.index_mask")):
            uses += _loads(call.args[1])
        for arg in call.args:
            if isinstance(arg, tvm.ir.TensorRegion):
                for r in arg.region:
                    uses += _loads(r.min)
    if not uses:
        return []
    out = []

    def visit(node):
        if isinstance(node, tirx.For) and node.kind == tirx.ForKind.PARALLEL:
            return False
        arms = []
        if isinstance(node, tirx.IfThenElse):
            conds = _loads(node.condition)
            arms = [node.then_case] + ([node.else_case] if node.else_case is not None else [])
        elif isinstance(node, tirx.For):  # the loop's bounds are read before it
            conds = _loads(node.min) + _loads(node.extent)
            arms = [node.body] if conds else []
        if arms:
            for arm in arms:
                for ld in _loads(arm):
                    if any(ld.same_as(u) for u in uses) and \
                            any(tvm_ffi.structural_equal(ld, c) for c in conds):
                        out.append(ld)
        return True

    tvm_walk_pre(body, visit)
    return out


def tvm_walk_pre(node, visit):
    """Pre-order walk over statements and expressions; ``visit(node)`` returning False skips
    the node's children (TVM's structural walk visits everything)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, tirx.Stmt) and not visit(n):
            continue
        if isinstance(n, tirx.SeqStmt):
            stack.extend(reversed(list(n.seq)))
        elif isinstance(n, tirx.For):
            stack.append(n.body)
        elif isinstance(n, tirx.IfThenElse):
            if n.else_case is not None:
                stack.append(n.else_case)
            stack.append(n.then_case)
        elif isinstance(n, tirx.AttrStmt):
            stack.append(n.body)
        elif hasattr(n, "body") and isinstance(getattr(n, "body"), tirx.Stmt):
            stack.append(n.body)


def scalar_params(func) -> dict:
    """``{parameter index: tensor}`` of the scalar tensors (no refusals)."""
    found = scalar_tensors(func, refuse=False)
    return {i: p for i, p in enumerate(func.params) if any(p.same_as(b) for b in found)}
