"""A0.2 LowerParallelToTileTT: element-parallel loop nests become tile operations.

Requires: ScalarsToBindTT (``T.Parallel`` nests are ``For`` loops of kind ``parallel``).

Guarantees: every ``T.Parallel`` nest whose body is one elementwise assignment over a
tile-aligned rectangle (``Bind`` statements in the body are inlined) is replaced by tile
primitives on regions, chosen from the value's structure (see :mod:`.eltwise_expr`); a body of
several assignments becomes one nest per assignment, in order, when every buffer it writes is
accessed at one index throughout the body (else a ``TTUnsupportedError``):

* ``dst = a`` (also across dtypes): ``tile.copy`` (``dst = s[0]`` of a one-element block
  buffer is the ``tt.expr.scalar`` broadcast below);
* ``dst = c`` of a constant (``B[i, j] = 0.0``, ``T.float32(1)``): ``tile.fill``;
* ``a + b``, ``a - b``, ``a * b`` of two elements: ``tile.add`` / ``tile.sub`` / ``tile.mul``;
* any other expression of elements and float constants over those operators and the SFPU
  functions (``T.exp``, ``T.log``, ``T.sqrt``, ``T.rsqrt``, ``T.sigmoid``, ``T.tanh``,
  ``T.abs``, ``T.max(a, 0)``, ``-a``, ``1 / a``): ``tt.tile.expr(dst, tree, *operands)`` with
  the expression as a tree (see :mod:`.eltwise_expr`), evaluated in DST as one fused op;
  ``s[0]`` of a one-element block buffer (``T.alloc_fragment((1,), ...)``, a 1-D block reduced
  to one value) in a nest of one or two loops is operand region ``s[0:1]`` read as
  ``tt.expr.scalar`` (every element reads that value);
* ``T.if_then_else(cond, x, y)`` of two float constants where ``cond`` reads no buffer
  element (integer arithmetic of the nest's indices, block indices, loop variables and
  bindings: TileLang's causal mask) other than single integer tensor elements indexed
  without the nest's indices (``bx >= BlockIndices[bz, bx, 0, i] * 32 + j``: C2.2 has the
  reader read them) is ``tt.tile.index_mask(dst, cond, x, y)``, the nest's
  indices in ``cond`` replaced by ``tt.mask.index(d)`` (the reader writes the values); any
  other expression with such a condition gets a new bfloat16 block buffer and
  ``tt.tile.index_mask(mask, cond, 1.0, 0.0)`` before its op, and the tree reads the mask as
  an operand (a 1-D nest's index is ``mask.index(0) + mask.index(1)``: its element's index in
  either vector orientation).  Equal conditions of one statement share one mask; other nodes
  in such a condition, or such a condition in a nest of three loops, are a
  ``TTUnsupportedError`` naming the statement.
* an index value used as data (:func:`.eltwise_expr.index_term`: an integer expression of
  the same kinds, ``T.Cast("float32", bx * 32 + j)``, the index terms of one float sum added
  as integers first) gets a new float32 block buffer and ``tt.tile.index_mask(block, True,
  value, 0.0)`` before its op, and the tree reads the block as an operand; such a value alone,
  or ``T.if_then_else(cond, x, y)`` of a condition of indices and values that are each a
  constant or an index value, into a float destination is ``tt.tile.index_mask(dst, cond, x,
  y)`` itself (the reader converts it to the destination's dtype).  An index value into an
  integer destination is a ``TTUnsupportedError`` naming the statement (the compute kernel has
  no integer arithmetic); other nodes in it are refused as in a condition.

A nest of ``T.serial`` / ``T.vectorized`` loops, alone or inside ``T.Parallel`` loops, that is
an elementwise assignment (``for i in T.serial(M): for j in T.serial(N): B[i, j] = A[i, j] *
2.0``, ``for i in T.Parallel(M): for j in T.vectorized(N): ...``: each iteration writes its own
element, ``v`` or ``offset + v`` per loop, and reads no element another iteration writes)
computes the same in any order, so it is lowered as the ``T.Parallel`` nest over the same
extents (when that nest
lowers; otherwise the serial loop stays, for VerifyTileProgramTT to name).

A ``T.Parallel`` loop whose body is a serial loop folding values into one element of a 1-D
block buffer per iteration (``for i in T.Parallel(M): for j in T.serial(N): s[i] += e``, or
``T.max`` / ``T.min``) is a row reduction: a new ``[M, N]`` fragment of the values ``e``,
computed by a ``T.Parallel`` nest over ``(i, j)``, reduced into ``s`` with ``clear=False``
(:mod:`.parallel_fold`).

Transposes are recognised from the index expressions (never from names): in a nest of two
loops, an access whose indices use the second loop variable in an earlier dimension than the
first (``B[j, i]``, ``X[b, j, h, i]``) is transposed.  A nest whose destination is transposed
is iterated in the destination's order (its loops swapped), so the destination is written
straight; operands transposed relative to that order are read transposed (``tt.expr.load_t``
in a ``tt.tile.expr``: ``B_shared[j, i] = A_shared[i, j]`` is ``tt.tile.expr(B_shared,
load_t(0), A_shared)``).  Any other access that is not ``offset + loop variable`` per
dimension (strided, diagonal) is a ``TTUnsupportedError``.

A store into a tensor at rows that do not provably start at a multiple of 32, of A0.1.0.1's
``T.if_then_else(c, v, Out[..])`` whose ``c`` reads the row variable and not the column one
(TileLang's row guard, ``if bx * BM + i < len: Out[cu[b] + bx * BM + i, d] = ...``), stores
``v``; its copy out carries ``c`` (the row as ``tt.mask.index(0)``) in its config as
``tt_row_guard`` (``attrs.ROW_GUARD``), and the writer stores only the rows where it holds
(C1, D3), so it never writes back rows another block owns.

Operands that live in global memory are staged through new shared buffers (``tile.copy`` in
before, ``tile.copy`` out after; a transposed operand as its own block, the destination's
transposed), so later stages only see tile ops whose compute operands are shared buffers or
fragments.  A global operand of rank > 2 may be indexed by the loops in
any two of its dims (in the other order: read transposed), with loop-free indices elsewhere (``X[s0 + i, h,
j]``, a 2-D slice of one head): its region has extent 1 in the other dims.  Any other parallel body is a ``TTUnsupportedError`` naming the
source line.  Every tile op made carries the line of its statement.
"""

from __future__ import annotations

import itertools

import tvm
import tvm_ffi
from tvm import tirx
from tvm.sym import Analyzer

from ... import attrs, ops
from ...errors import TTCompileError, TTLayoutError, TTUnsupportedError
from ..common import (
    buffer_dtype, buffer_scope, buffer_shape, collect, const_int, seq, stmts_of, substitute,
    tt_pass, uses_var,
)
from ..common import inline_binds, tt_map, with_tile_span
from .parallel_diagnose import not_elementwise
from .parallel_fold import fold_as_reduction
from .eltwise_expr import (
    SUPPORTED, VectorOperand, apply, as_load, compile_expr, constant_value, group_index_terms,
    index_term, load, unary_form, vector,
)

_BINARY = {tirx.Add: "Add", tirx.Sub: "Sub", tirx.Mul: "Mul"}


def _operator(name):
    import tvm.tirx.operator as tirx_op

    return getattr(tirx_op, name)


def _tile_call(name, *regions):
    return _operator(name)(*regions, workspace={}, config={}, dispatch=None, scope=None)


class _Nest:
    def swapped(self) -> "_Nest":
        """The same nest iterated with its two loops in the other order."""
        other = _Nest.__new__(_Nest)
        other.loop, other.body, other.span = self.loop, self.body, self.span
        other.vars, other.extents = self.vars[::-1], self.extents[::-1]
        return other

    def __init__(self, loop: tirx.For):
        self.loop = loop
        self.vars, self.extents = [], []
        body = loop
        while isinstance(body, tirx.For) and body.kind == tirx.ForKind.PARALLEL:
            self.vars.append(body.loop_var)
            self.extents.append(const_int(body.extent, "T.Parallel extent", body.span))
            if const_int(body.min, "T.Parallel start", body.span) != 0:
                raise TTUnsupportedError("T.Parallel loops must start at 0", span=body.span)
            body = body.body
        self.body = body
        self.span = loop.span


def _split_statements(nest: _Nest) -> list:
    """A nest whose body assigns several elements, one nest per assignment (each keeping the
    bindings before it), in order.  Exact when every buffer the body writes is accessed at one
    index tuple throughout the body: iteration (i, j) then reads only what iteration (i, j)
    wrote, so running each statement over all elements before the next one computes the same
    values; otherwise a ``TTUnsupportedError`` naming the buffer."""
    stmts = stmts_of(nest.body)
    stores = [s for s in stmts if isinstance(s, tirx.BufferStore)]
    if len(stores) < 2:
        return [nest]
    written = {}
    for st in stores:
        written.setdefault(st.buffer.name, (st.buffer, st.indices, st))
    for st in stmts:
        accesses = [(ld.source, ld.indices) for ld in collect(st, tvm.ir.TensorLoad)]
        if isinstance(st, tirx.BufferStore):
            accesses.append((st.buffer, st.indices))
        for buf, indices in accesses:
            seen = written.get(buf.name)
            if seen is not None and seen[0].same_as(buf) and \
                    not tvm_ffi.structural_equal(list(indices), list(seen[1])):
                raise TTUnsupportedError(
                    f"T.Parallel: {buf.name} is written at [{', '.join(map(str, seen[1]))}] and "
                    f"accessed at [{', '.join(map(str, indices))}] in the same body; statements "
                    "of one T.Parallel body may only use the elements they write at the same "
                    "index (split the loop)", span=getattr(st, "span", None) or nest.span)
    parts, binds = [], []
    for st in stmts:
        if isinstance(st, tirx.BufferStore):
            part = _Nest.__new__(_Nest)
            part.loop, part.vars, part.extents = nest.loop, nest.vars, nest.extents
            part.body, part.span = seq(binds + [st]), nest.span
            parts.append(part)
        else:
            binds.append(st)
    return parts


def _free_of(expr, loop_vars) -> bool:
    found = []
    tvm_ffi.structural_walk(expr, (tvm.ir.Var, lambda v: found.append(v)), order="pre")
    return not any(v.same_as(lv) for v in found for lv in loop_vars)


def _transposed(indices, nest: _Nest) -> bool:
    """``buf[indices]`` follows the nest's two loops in the other order (``X[j, i]``, or
    ``X[b, j, h, i]`` of a global tensor, in a nest over ``(i, j)``): each loop variable
    indexes exactly one dimension, the second loop's the earlier one.  Decided from which
    index expressions use which loop variable, never from names."""
    if len(nest.vars) != 2 or len(indices) < 2:
        return False
    dims = []
    for var in nest.vars:
        uses = [d for d, idx in enumerate(indices) if not _free_of(idx, [var])]
        if len(uses) != 1:
            return False
        dims.append(uses[0])
    return dims[0] > dims[1]


def _one_value(buf, indices, nest: _Nest) -> bool:
    """``buf[indices]`` is the one element of a one-element 1-D block buffer (``s[0]`` of a
    ``T.alloc_fragment((1,), ...)``, a 1-D block reduced to one value), read by every element
    of the nest: a scalar broadcast."""
    return buffer_scope(buf) != "global" and buffer_shape(buf) == [1] and len(indices) == 1 \
        and _free_of(indices[0], nest.vars)


def _access_region(buf, indices, nest: _Nest, ana: Analyzer, what: str):
    """Region of ``buf`` touched by ``buf[indices]`` over the nest, or a clear error.  A
    transposed access (:func:`_transposed`) is the region of the same access in the swapped
    nest: the buffer's own block, which the expression reads transposed."""
    if _transposed(indices, nest):
        nest = nest.swapped()
    n = len(nest.vars)
    if what == "operand" and _one_value(buf, indices, nest):  # s[0]: broadcast to every element
        return buf[0:1]
    if len(indices) == 1 and n == 2 and what == "operand":
        # a 1-D buffer read as R[i] (a column vector broadcast along the rows) or as R[j]
        # (a row vector broadcast down the columns); a 1-D tensor is staged into a 1-D block
        # buffer of that orientation (C1 transposes a column vector's tiles as it reads them)
        for var, ext in zip(nest.vars, nest.extents):
            base = ana.simplify(indices[0] - var)
            if _free_of(base, nest.vars):
                return buf[base:base + ext]
        raise TTUnsupportedError(
            f"T.Parallel: {buf.name}[{indices[0]}] must read the 1-D buffer with the row or the "
            f"column index plus an offset (`{buf.name}[{nest.vars[0].name}]`)", span=nest.span)
    if len(indices) < n:
        raise TTUnsupportedError(
            f"T.Parallel: {what} {buf.name} has rank {len(indices)} but the nest has {n} loops",
            span=nest.span)
    lead, tail = list(indices[: len(indices) - n]), list(indices[len(indices) - n:])
    if buffer_scope(buf) == "global" and not all(_free_of(idx, nest.vars) for idx in lead):
        return _strided_region(buf, indices, nest, ana, what)
    slices = []
    for idx in lead:
        if not _free_of(idx, nest.vars):
            raise TTUnsupportedError(
                f"T.Parallel: {what} {buf.name}[...] indexes a leading dimension with a parallel "
                "loop variable; only the last dimensions may follow the loop nest",
                span=nest.span)
        slices.append(slice(idx, idx + 1))
    for idx, var, ext in zip(tail, nest.vars, nest.extents):
        base = ana.simplify(idx - var)
        if not _free_of(base, nest.vars):
            raise TTUnsupportedError(
                f"T.Parallel: index `{idx}` of {what} {buf.name} is not `offset + {var.name}`; "
                "strided or diagonal element access is not supported (index the last two "
                "dimensions by `offset + i` and `offset + j`, in either order)",
                span=nest.span)
        slices.append(slice(base, base + ext))
    return buf[tuple(slices)]


def _strided_region(buf, indices, nest: _Nest, ana: Analyzer, what: str):
    """Region of a global tensor of rank > n read or written over the nest's n loops with
    loop-free indices *between* the loops' dims (``X[s0 + i, h, j]``: a 2-D slice of one
    head): every loop variable indexes one dim, in the nest's order, as ``offset + var``; the
    other dims are scalars (extent 1).  A1 tiles the tensor over the two sliced dims."""
    dims = []
    for var in nest.vars:
        uses = [d for d, idx in enumerate(indices) if not _free_of(idx, [var])]
        if len(uses) != 1:
            raise TTUnsupportedError(
                f"T.Parallel: {what} {buf.name}[{', '.join(map(str, indices))}] uses the loop "
                f"variable {var.name} in {len(uses)} indices; each loop variable must index "
                "exactly one dimension", span=nest.span)
        dims.append(uses[0])
    if dims != sorted(dims):
        raise TTUnsupportedError(
            f"T.Parallel: {what} {buf.name}[{', '.join(map(str, indices))}] follows the loop "
            "nest in another order; only the two loops of a 2-D T.Parallel may be swapped (a "
            "transpose)",
            span=nest.span)
    slices = [slice(idx, idx + 1) for idx in indices]
    for d, var, ext in zip(dims, nest.vars, nest.extents):
        base = ana.simplify(indices[d] - var)
        if not _free_of(base, nest.vars):
            raise TTUnsupportedError(
                f"T.Parallel: index `{indices[d]}` of {what} {buf.name} is not `offset + "
                f"{var.name}`; strided or diagonal element access is not supported",
                span=nest.span)
        slices[d] = slice(base, base + ext)
    return buf[tuple(slices)]


_SELECTS = ("tirx.if_then_else", "prim.if_then_else")


def unaligned_rows(start) -> bool:
    """A tensor row start that is not provably a multiple of 32 (a tensor element in it taken
    as any value): its block is gathered / scattered row by row (C1, D3)."""
    from ..dataflow.shared_to_cb import element_free  # noqa: PLC0415 (a later stage's helper)
    return not Analyzer().can_prove(tirx.floormod(element_free(start), 32) == 0)


def _row_guard(nest: _Nest, binds: dict):
    """``(nest, cond, tensor)`` when the nest's store is TileLang's row-guarded store into a
    tensor at rows that start off a tile boundary: ``Out[s + i, .., j] = T.if_then_else(c, v,
    Out[s + i, .., j])`` (A0.1.0.1's form of ``if c: Out[..] = v``), ``c`` reading the row
    variable ``i`` and no other nest variable, ``s`` (the kernel's bindings inlined) not
    provably a multiple of 32.  The nest returned stores ``v`` alone; ``cond`` is ``c`` with
    ``i`` as ``tt.mask.index(0)``: the writer stores only the rows where it holds (so it never
    reads back nor overwrites rows another block owns).  None otherwise (the aligned form keeps
    its read-select-write)."""
    stmts = stmts_of(nest.body)
    store = stmts[-1]
    if not isinstance(store, tirx.BufferStore) or buffer_scope(store.buffer) != "global" or \
            len(nest.vars) != 2:
        return None
    value = store.value
    if not (isinstance(value, tvm.ir.Call) and isinstance(value.op, tvm.ir.Op)
            and value.op.name in _SELECTS):
        return None
    cond, new, old = value.args
    if not (isinstance(old, tvm.ir.TensorLoad) and old.source.same_as(store.buffer)
            and tvm_ffi.structural_equal(list(old.indices), list(store.indices))):
        return None
    row, col = nest.vars
    if uses_var(cond, col) or not uses_var(cond, row):
        return None
    rows = [k for k, ix in enumerate(store.indices) if uses_var(ix, row)]
    cols = [k for k, ix in enumerate(store.indices) if uses_var(ix, col)]
    if len(rows) != 1 or len(cols) != 1 or cols[0] < rows[0]:
        return None
    mapping = {}
    for s in stmts[:-1]:
        if isinstance(s, tirx.Bind):
            mapping[s.var] = substitute(s.value, mapping)
    start = inline_binds(substitute(substitute(store.indices[rows[0]], mapping), {row: tirx.IntImm(str(row.ty), 0)}), binds)
    if not unaligned_rows(start):
        return None
    body = seq(stmts[:-1] + [tirx.BufferStore(store.buffer, new, store.indices,
                                              span=store.span)])
    guarded = _Nest.__new__(_Nest)
    guarded.loop, guarded.body, guarded.span = nest.loop, body, nest.span
    guarded.vars, guarded.extents = list(nest.vars), list(nest.extents)
    at = substitute(substitute(cond, mapping), {row: ops.call("tt.mask.index", tirx.IntImm(
        "int32", 0))})
    return guarded, at, store.buffer


def _lower_nest(nest: _Nest, fresh, binds=None):
    """The tile ops of one nest; ``fresh(stem)`` names new buffers uniquely per kernel;
    ``binds`` the kernel's integer bindings (var -> value), for :func:`_row_guard`."""
    guarded = _row_guard(nest, binds or {})
    if guarded is None:
        return _lower_nest_ops(nest, fresh)
    nest, cond, tensor = guarded
    out = _lower_nest_ops(nest, fresh)

    def mark(call):
        if call.op.name == "tirx.tile.copy" and call.args[0].source.same_as(tensor):
            config = dict(call.config or {})
            config[attrs.ROW_GUARD] = cond
            return with_tile_span(call.replace(config=config), call.span)
        return call

    return tt_map(out, [(tirx.TilePrimitiveCall, mark)], order="post")


def _lower_nest_ops(nest: _Nest, fresh):
    """The tile ops of one nest (:func:`_lower_nest`)."""
    ana = Analyzer()
    stmts = stmts_of(nest.body)
    mapping = {}
    for s in stmts[:-1]:
        if not isinstance(s, tirx.Bind):
            raise TTUnsupportedError(
                "T.Parallel body must be elementwise assignments (optionally after `x = ...` "
                f"bindings); found `{s}`", span=getattr(s, "span", None) or nest.span)
        mapping[s.var] = substitute(s.value, mapping)
    store = stmts[-1]
    if isinstance(store, tirx.IfThenElse):
        stored = sorted({str(st.buffer.name) for st in collect(store, tirx.BufferStore)})
        raise TTUnsupportedError(
            f"T.Parallel body: the branch `if {store.condition}:` (storing to "
            f"{', '.join(stored) or 'nothing'}) is not true for every element of every "
            "block, and elementwise bodies cannot branch; a bounds guard is dropped when it "
            "always holds or fails only where its element stores land past the end of "
            "their tensors (those tensors are padded and the padding cropped), and this one "
            "can fail inside a tensor or guards a store to a block buffer",
            span=getattr(store, "span", None) or nest.span,
            hint="guard only the stores to tensors, with their bounds (`if y < M and x < N:`), "
                 "or select values with T.if_then_else(cond, x, y)")
    if not isinstance(store, tirx.BufferStore):
        raise TTUnsupportedError(
            "T.Parallel body must end with an assignment `dst[...] = ...`; found "
            f"{not_elementwise(store)}", span=getattr(store, "span", None) or nest.span)
    span = store.span or nest.span
    store = substitute(store, mapping)
    dst_buf = store.buffer
    value = store.value
    if _transposed(list(store.indices), nest):
        # `B[j, i] = f(A[i, j])`: iterate over the destination's own layout, so that the
        # destination is written straight and the operands are read transposed
        nest = nest.swapped()

    def is_transposed(ld):
        return len(ld.indices) >= 2 and _transposed(list(ld.indices), nest)

    transposes = any(is_transposed(ld) for ld in collect(value, tvm.ir.TensorLoad))

    dtype = buffer_dtype(dst_buf)
    if isinstance(value, tirx.Cast) and isinstance(value.value, tvm.ir.TensorLoad):
        value = value.value  # `dst = a` across dtypes: a copy converts (the pack rounds)
    elif isinstance(value, tirx.Cast) and str(value.ty) == dtype:
        # bfloat16 math spelled in float32 and rounded back: the engines compute wider and
        # round once when packing, so this is the same function of the bfloat16 operands
        value = value.value

    def is_vector(load):
        """"col" for R[i] (indexed by the row), "row" for R[j], "scalar" for the one element
        of a ``[1]`` block buffer (``s[0]``), None for a block element."""
        if _one_value(load.source, list(load.indices), nest):
            return "scalar"
        if len(load.indices) != 1 or len(nest.vars) != 2:
            return None
        return "col" if not _free_of(load.indices[0], [nest.vars[0]]) else "row"

    unary = unary_form(value, dtype)
    binary = [as_load(x, dtype) for x in (value.a, value.b)] if type(value) in _BINARY else None
    if unary is not None and is_vector(unary[1]) or binary and any(
            x is not None and is_vector(x) for x in binary) or transposes:
        unary = binary = None  # broadcasts and transposed reads are expression programs
    tree, masks, values = None, [], []
    selected = _reader_values(value, dtype, nest)
    if selected is not None:  # dst = x or y by a condition of indices: the reader writes it
        cond, x, y = selected
        _check_index_condition(cond, nest, dst_buf, span)
        for v in (x, y):
            if not isinstance(v, float):
                _check_index_value(v, nest, dst_buf, span)
        allocs, epilogue = [], []
        dst = _access_region(dst_buf, list(store.indices), nest, ana, "destination")
        if buffer_scope(dst_buf) == "global":  # through a staged block, as any destination
            block = tirx.decl_buffer(list(nest.extents), buffer_dtype(dst_buf),
                                     f"{dst_buf.name}_tile", scope="shared")
            allocs.append(tirx.AllocBuffer(block))
            full = block[tuple(slice(0, e) for e in nest.extents)]
            epilogue.append(_tile_call("Copy", dst, full))
            dst = full
        return seq(allocs + [_index_mask_call(dst, cond, nest, x, y)] + epilogue)
    filled = constant_value(value)
    if filled is not None:  # dst = constant: a fill of the nest's region
        allocs, epilogue = [], []
        dst = _access_region(dst_buf, list(store.indices), nest, ana, "destination")
        if buffer_scope(dst_buf) == "global":  # through a staged block, as any destination
            block = tirx.decl_buffer(list(nest.extents), dtype, fresh(f"{dst_buf.name}_tile"),
                                     scope="shared")
            allocs.append(tirx.AllocBuffer(block))
            full = block[tuple(slice(0, e) for e in nest.extents)]
            epilogue.append(_tile_call("Copy", dst, full))
            dst = full
        return seq(allocs + [_tile_call("Fill", dst, tirx.const(filled, dtype))] + epilogue)
    if isinstance(value, tvm.ir.TensorLoad) and not transposes and \
            is_vector(value) != "scalar":  # `dst = s[0]` broadcasts: an expression program
        kind, loads = "Copy", [value]
    elif unary is not None:
        kind, loads = "Unary", [unary[1]]
    elif binary is not None and all(x is not None for x in binary):
        kind, loads = _BINARY[type(value)], binary
    else:
        compiled = compile_expr(value, dtype, is_vector, is_transposed,
                                lambda cond: _index_mask(cond, nest, dst_buf, masks, fresh, span),
                                lambda term: _index_value(term, nest, dst_buf, values, fresh,
                                                          span))
        if compiled is None:
            raise TTUnsupportedError(
                f"T.Parallel body `{dst_buf.name}[...] = {value}` is not supported yet; "
                f"supported: {SUPPORTED}", span=span)
        (tree, operands), kind = compiled, "Expr"
        loads = [x.load if isinstance(x, VectorOperand) else x for x in operands]

    if kind in _BINARY.values() and any(buffer_dtype(ld.source) != dtype for ld in loads):
        # the engines' binary ops take one dtype; a program converts as it copies into DST
        (tree, operands), kind = compile_expr(value, dtype, is_vector, is_transposed), "Expr"
        loads = list(operands)

    dst_region = _access_region(dst_buf, list(store.indices), nest, ana, "destination")
    src_regions = [_access_region(ld.source, list(ld.indices), nest, ana, "operand") for ld in loads]

    shape = [e for e in nest.extents]
    prologue, epilogue, allocs = [], [], []
    staged = {}

    def stage(region, is_dst, transposed=False):
        buf = region.source
        if buffer_scope(buf) != "global":
            return region
        if len(shape) < 2 and len(buffer_shape(buf)) > 1:
            raise TTLayoutError(
                f"T.Parallel over global {buf.name} must be at least 2-D (rows x cols of tiles)",
                span=span)
        key = (buf, str(region), is_dst)
        if key in staged:
            return staged[key]
        # a 1-D tensor's region is staged as a 1-D block buffer (a row vector)
        # a transposed operand is staged as its own block (the destination's transposed)
        block = (shape[::-1] if transposed else shape) if len(buffer_shape(buf)) > 1 else \
            [region.region[0].extent]
        stage_buf = tirx.decl_buffer(block, buffer_dtype(buf), f"{buf.name}_tile", scope="shared")
        allocs.append(tirx.AllocBuffer(stage_buf))
        full = stage_buf[tuple(slice(0, e) for e in block)]
        if is_dst:
            epilogue.append(_tile_call("Copy", region, full))
        else:
            prologue.append(_tile_call("Copy", full, region))
        staged[key] = full
        return full

    if kind == "Copy":
        src = src_regions[0]
        if buffer_scope(src.source) == "global" and buffer_scope(dst_buf) == "global":
            # global -> global moves through one staged block (reader -> CB -> writer)
            staged_src = stage(src, False)
            return seq(allocs + prologue + [_tile_call("Copy", dst_region, staged_src)])
        # any other element copy is a tile copy: no staging needed
        return _tile_call("Copy", dst_region, src)
    srcs = [stage(r, False, is_transposed(ld)) for r, ld in zip(src_regions, loads)]
    if kind == "Expr":
        srcs = _materialise_vectors(operands, srcs, fresh, allocs, prologue)
        for cond, mask_load in masks:
            mask = mask_load.source
            allocs.append(tirx.AllocBuffer(mask))
            prologue.append(_index_mask_call(mask[tuple(slice(0, e) for e in shape)], cond,
                                             nest, 1.0, 0.0))
        for term, value_load in values:
            block = value_load.source
            allocs.append(tirx.AllocBuffer(block))
            prologue.append(_index_mask_call(block[tuple(slice(0, e) for e in shape)],
                                             tirx.const(True, "bool"), nest, term, 0.0))
    dst = stage(dst_region, True)
    if kind == "Unary":
        op = tirx.TilePrimitiveCall(dst, apply(unary[0], load(0)), srcs[0],
                                    op=ops.op("tt.tile.expr"))
    elif kind == "Expr":
        op = tirx.TilePrimitiveCall(dst, tree, *srcs, op=ops.op("tt.tile.expr"))
    else:
        op = _tile_call(kind, dst, *srcs)
    return seq(allocs + prologue + [op] + epilogue)


# integer and boolean nodes a mask condition may be built from (the reader evaluates it)
_MASK_NODES = (tvm.ir.Var, tirx.IntImm, tirx.Add, tirx.Sub, tirx.Mul, tirx.FloorDiv,
               tirx.FloorMod, tirx.Min, tirx.Max, tirx.EQ, tirx.NE, tirx.LT, tirx.LE, tirx.GT,
               tirx.GE, tirx.And, tirx.Or, tirx.Not, tirx.Select)


def _reader_values(value, dtype, nest):
    """(cond, x, y) when the reader can write ``value`` itself, else None: ``T.if_then_else(cond,
    x, y)`` (or a Select) of a condition that reads no buffer element and two values that are
    each a float constant (a Python float) or an index value (its integer expression,
    :func:`.eltwise_expr.index_term`: the reader converts it, so only into a bfloat16, float16
    or float32 destination), or an index value alone (``(True, v, 0.0)``).  The condition may
    read single integer tensor elements (:func:`_reads_only_elements`)."""
    while isinstance(value, tirx.Cast) and index_term(value) is None:
        value = value.value
    value = group_index_terms(value)

    def side(v):
        c = constant_value(v)
        if c is not None:
            return c
        term = index_term(v)
        return term if term is not None and dtype in ("bfloat16", "float16", "float32") else None

    if isinstance(value, tirx.Select):
        args = [value.condition, value.true_value, value.false_value]
    elif isinstance(value, tvm.ir.Call) and isinstance(value.op, tvm.ir.Op) and \
            value.op.name in ("tirx.if_then_else", "prim.if_then_else") and len(value.args) == 3:
        args = list(value.args)
    else:
        alone = side(value) if index_term(value) is not None else None
        return None if alone is None else (tirx.const(True, "bool"), alone, 0.0)
    x, y = (side(a) for a in args[1:])
    if x is None or y is None or not _reads_only_elements(args[0], nest):
        return None
    return args[0], x, y


def _reads_only_elements(cond, nest) -> bool:
    """Whether the buffer elements ``cond`` reads are all single integer elements of tensors
    (``BlockIndices[bz, bx, 0, i]``, indices read no element and none of the nest's
    variables): values the reader can read itself (C2.2), so it can compute the mask.
    Whether the tensor may be read so is decided by ``analysis/scalar_reads.py``."""
    for ld in collect(cond, tvm.ir.TensorLoad):
        if buffer_scope(ld.source) != "global" or \
                not str(ld.dtype).startswith(("int", "uint", "bool")) or \
                any(collect(i, tvm.ir.TensorLoad) for i in ld.indices) or \
                any(uses_var(i, v) for i in ld.indices for v in nest.vars):
            return False
    return True


def _index_mask_call(region, cond, nest, x, y):
    """``tt.tile.index_mask(region, cond, x, y)``, the nest's indices in ``cond`` (and in ``x``
    / ``y`` when they are index values) read as the element's position in the block.  A 1-D
    nest's element ``k`` is at row ``k`` of a column vector's tiles (column 0) or column ``k`` of
    a row vector's (row 0), an orientation A2 decides later: row + column is ``k`` in either."""
    def index(d):
        return ops.call("tt.mask.index", tirx.IntImm("int32", d))

    if len(nest.vars) == 1:
        at = {nest.vars[0]: index(0) + index(1)}
    else:
        at = {v: index(d) for d, v in enumerate(nest.vars)}

    def value(v):
        return tirx.FloatImm("float32", v) if isinstance(v, float) else substitute(v, at)

    return tirx.TilePrimitiveCall(region, substitute(cond, at), value(x), value(y),
                                  op=ops.op("tt.tile.index_mask"))


def _index_value(term, nest, dst_buf, values, fresh, span):
    """The element load of a float32 block of the index value ``term`` (an integer expression
    of element and block indices, loop variables and bindings), which the reader computes
    (``tt.tile.index_mask(block, True, term, 0.0)``).  Equal values of one body share one
    block; ``values`` collects (term, load)."""
    return _reader_block(term, values, "float32", "index", nest, dst_buf, fresh,
                         lambda: _check_index_value(term, nest, dst_buf, span))


def _reader_block(key, seen, dtype, suffix, nest, dst_buf, fresh, check):
    """The element load of a new block the reader computes from ``key`` (a mask condition or an
    index value), or of the block an equal key of the same body already has; ``seen`` collects
    (key, load); ``check`` runs before a new block is made."""
    for other, load in seen:
        if tvm_ffi.structural_equal(other, key):
            return load
    check()
    block = tirx.decl_buffer(list(nest.extents), dtype, fresh(f"{dst_buf.name}_{suffix}"),
                             scope="shared")
    load = block[tuple(nest.vars)]
    seen.append((key, load))
    return load


def _check_index_value(term, nest, dst_buf, span):
    """An index value used as data: integer arithmetic as a mask condition is, into a float
    destination (the compute kernel computes in float32 only)."""
    dtype = buffer_dtype(dst_buf)
    if not dtype.startswith(("float", "bfloat")):
        raise TTUnsupportedError(
            f"T.Parallel body `{dst_buf.name}[...] = ...`: the index value `{term}` is stored "
            f"into {dst_buf.name} of dtype {dtype}; the compute kernel has no integer "
            "arithmetic, so index values go into float buffers only (store into a float32 "
            "buffer, exact up to 2^24)", span=span)
    _check_index_condition(term, nest, dst_buf, span, what="index value")


def _index_mask(cond, nest, dst_buf, masks, fresh, span):
    """The element load of the mask block computing ``cond`` when ``cond`` reads no buffer
    element (a condition of element indices, block indices, loop variables and bindings: a
    causal mask; single integer tensor elements: ``_reads_only_elements``), else None.  Equal
    conditions of one body share one mask; ``masks`` collects (condition, load)."""
    if not _reads_only_elements(cond, nest):
        return None
    return _reader_block(cond, masks, "bfloat16", "mask", nest, dst_buf, fresh,
                         lambda: _check_index_condition(cond, nest, dst_buf, span))


def _check_index_condition(cond, nest, dst_buf, span, what="condition"):
    """A condition (or an index value) computed from indices must be integer arithmetic in a
    1-D or 2-D nest."""
    bad = []

    sources = [ld.source for ld in collect(cond, tvm.ir.TensorLoad)]

    def integer(e):
        return str(e.ty).startswith(("int", "uint", "bool"))

    def visit(e):
        if any(e.same_as(src) for src in sources):
            return  # the tensor of an element read (its load is checked)
        if isinstance(e, tirx.Cast) and integer(e) and integer(e.value):
            return  # between integer types
        if isinstance(e, tvm.ir.TensorLoad):
            if any(uses_var(e, v) for v in nest.vars):
                bad.append(e)  # an element per mask element: not a value the reader has
        elif isinstance(e, tvm.ir.Expr) and not isinstance(e, _MASK_NODES):
            bad.append(e)
        elif isinstance(e, (tvm.ir.Var, tirx.IntImm)) and \
                not str(e.ty).startswith(("int", "uint", "bool")):
            bad.append(e)

    tvm_ffi.structural_walk(cond, (tvm.ir.Expr, visit), order="pre")
    if bad:
        raise TTUnsupportedError(
            f"T.Parallel body `{dst_buf.name}[...] = ...`: the {what} `{cond}` is computed "
            f"from indices, but `{bad[0]}` is not integer arithmetic (+, -, *, //, %, min, max, "
            "comparisons, and / or / not of block indices, loop variables and the T.Parallel "
            "indices)", span=span)
    if len(nest.vars) not in (1, 2):
        raise TTUnsupportedError(
            f"T.Parallel body `{dst_buf.name}[...] = ...`: a {what} computed from indices "
            f"(`{cond}`) needs a 1-D or 2-D T.Parallel nest over a block", span=span)
    # `//` and `%` by positive divisors (every variable an index: the nest's within its
    # extents, the others >= 0)
    ana = Analyzer()
    seen = []
    for v in collect(cond, tvm.ir.Var):
        if any(v.same_as(u) for u in seen) or any(v.same_as(src) for src in sources):
            continue
        seen.append(v)
        extent = next((e for lv, e in zip(nest.vars, nest.extents) if lv.same_as(v)), 2 ** 30)
        ana.bind(v, tvm.ir.Range.from_min_extent(0, extent))
    for d in collect(cond, (tirx.FloorDiv, tirx.FloorMod)):
        # a dividend that may be negative is divided signed by the reader (D3); the divisor
        # must be positive
        if not ana.can_prove(d.b > 0):
            raise TTUnsupportedError(
                f"T.Parallel body `{dst_buf.name}[...] = ...`: in the {what} `{cond}`, "
                f"`{d}` divides by a value that may not be positive; `//` and `%` of a mask "
                "condition need a positive divisor", span=span)


def _materialise_vectors(operands, srcs, fresh, allocs, prologue):
    """Source regions of an expression's operands once its vector operands are ready:
    expressions of a vector alone are computed first into new 1-D fragments, kept in float32
    so that the expression rounds once, at its pack, as it would without them.  (A vector used
    as a whole block stays a vector: D5 broadcasts it into a DST slot with ``unary_bcast``.)"""
    srcs = list(srcs)
    for k, x in enumerate(operands):
        if not isinstance(x, VectorOperand) or x.tree is None:
            continue
        vec = srcs[k].source
        derived = tirx.decl_buffer(buffer_shape(vec), "float32", fresh(vec.name),
                                   scope="local.fragment")
        allocs.append(tirx.AllocBuffer(derived))
        region = derived[0:buffer_shape(vec)[0]]
        prologue.append(tirx.TilePrimitiveCall(region, x.tree, srcs[k],
                                               op=ops.op("tt.tile.expr")))
        srcs[k] = region
    return srcs


def _spanned(stmt, span):
    """Tile ops made for a source statement carry its line."""
    if span is None:
        return stmt
    return tt_map(stmt, [(tirx.TilePrimitiveCall,
                          lambda c: c if c.span is not None else with_tile_span(c, span))])


def _independent_serial_nest(loop: tirx.For):
    """The loops of a serial nest that is an elementwise assignment (each iteration writes
    its own element and reads nothing another iteration writes), or None.

    The nest's loops are unannotated ``T.serial`` / ``T.vectorized`` loops (and ``T.Parallel``
    loops, at least one loop not) from 0 with constant extents, perfectly nested around one
    ``BufferStore``; every loop variable is the variable part of
    exactly one index of the store (``v`` or ``offset + v``, the offset free of the nest's
    variables), so iterations write distinct elements; the stored buffer is read in the value
    only at the stored index.  Such a nest computes the same values in any order: it is the
    ``T.Parallel`` nest over the same extents."""
    loops, body = [], loop
    while isinstance(body, tirx.For):
        if body.kind not in _ELEMENTWISE_KINDS or \
                (body.kind != tirx.ForKind.PARALLEL and len(body.annotations)) or \
                not isinstance(body.min, tirx.IntImm) or int(body.min.value) != 0 or \
                not isinstance(body.extent, tirx.IntImm) or \
                (body.step is not None and not (isinstance(body.step, tirx.IntImm)
                                                and int(body.step.value) == 1)):
            return None
        loops.append(body)
        body = body.body
    if not isinstance(body, tirx.BufferStore) or \
            all(lp.kind == tirx.ForKind.PARALLEL for lp in loops):
        return None
    nest_vars = [lp.loop_var for lp in loops]

    for var in nest_vars:
        holders = [ix for ix in body.indices if uses_var(ix, var)]
        if len(holders) != 1:
            return None
        ix = holders[0]
        if ix.same_as(var):
            continue
        if not isinstance(ix, tirx.Add):
            return None
        rest = ix.b if ix.a.same_as(var) else ix.a if ix.b.same_as(var) else None
        if rest is None or any(uses_var(rest, v) for v in nest_vars):
            return None
    for ld in collect(body.value, tvm.ir.TensorLoad):
        if ld.source.same_as(body.buffer) and \
                not tvm_ffi.structural_equal(list(ld.indices), list(body.indices)):
            return None
    return loops


_ELEMENTWISE_KINDS = (tirx.ForKind.SERIAL, tirx.ForKind.VECTORIZED, tirx.ForKind.PARALLEL)


def _serial_as_parallel(loop):
    """A nest :func:`_independent_serial_nest` accepts, as the ``T.Parallel`` nest."""
    if loop.kind not in _ELEMENTWISE_KINDS:
        return loop
    loops = _independent_serial_nest(loop)
    if loops is None:
        return loop
    stmt = loops[-1].body
    for lp in reversed(loops):
        stmt = tirx.For(lp.loop_var, lp.min, lp.extent, tirx.ForKind.PARALLEL, stmt,
                        span=lp.span)
    counter = itertools.count()
    try:  # a nest the tile lowering refuses stays the user's serial loop (V0 names it)
        _lower_nest(_Nest(stmt), lambda stem: f"{stem}_{next(counter)}")
    except TTCompileError:
        return loop
    return stmt


@tt_pass("LowerParallelToTileTT", requires=("ScalarsToBindTT",))
def LowerParallelToTileTT(func, mod, ctx):
    """T.Parallel elementwise nests -> tile primitives (see module docstring)."""
    counter = itertools.count()
    binds = {b.var: b.value for b in collect(func.body, tirx.Bind)
             if str(b.var.ty).startswith(("int", "uint"))}

    def fresh(stem):
        return f"{stem}_{next(counter)}"

    def rewrite(loop):
        if loop.kind != tirx.ForKind.PARALLEL:
            return loop
        try:
            folded = fold_as_reduction(loop, fresh)
            if folded is not None:  # a serial fold in T.Parallel: terms nest + reduction
                return seq([rewrite(s) if isinstance(s, tirx.For) else s for s in folded])
            nest = _Nest(loop)
            out = []
            for part in _split_statements(nest):
                last = stmts_of(part.body)[-1]
                out.append(_spanned(_lower_nest(part, fresh, binds),
                                    getattr(last, "span", None) or loop.span))
            return seq(out)
        except TTCompileError:
            raise
        except Exception as err:  # an analysis failure must still name the loop
            raise TTUnsupportedError(f"cannot lower T.Parallel loop: {err}", span=loop.span) from None

    body = tt_map(func.body, [(tirx.For, _serial_as_parallel)], order="pre")
    body = tt_map(body, [(tirx.For, rewrite)], order="pre")
    return func.with_body(tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post"))
