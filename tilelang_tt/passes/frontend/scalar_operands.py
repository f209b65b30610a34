"""A0.1.4.2 StageScalarOperandsTT: a tensor element read at one index by every element of a
``T.Parallel`` nest is staged into a one-element block buffer before the nest.

Requires: ScalarsToBindTT (scalar assignments are ``Bind``s).

TileLang's attention-sink kernels read a per-head value in a ``T.Parallel`` body,
``sinks[i] = Sinks[by]`` (``Sinks`` a ``[heads]`` tensor, ``by`` the block's head); per-tensor
scale factors are read the same way (``x[i, j] * Scale[bx]``, ``scale[0]``).  The element is one
value for the whole nest: a scalar operand, broadcast the way ``s[0]`` of a ``[1]`` fragment
is (``tt.expr.scalar``, ``unary_bcast<SCALAR>``).

Guarantees: in every outermost ``T.Parallel`` loop, each element read ``G[i0, ..]`` of a tensor
parameter ``G`` of dtype bfloat16 / float16 / float32 whose indices use no variable the nest
binds (its loop variables, the ``Bind``s of its body: only block indices, constants,
variables of enclosing loops and launch-invariant values) and read no tensor element is
replaced by ``e[0]`` (cast to ``G``'s dtype; a variable bound to such an element outside the
nests, ``sink = Sinks[bx]``, is read as the element, and its binding dropped once nothing
reads it) of a new ``[1]`` float32 fragment ``e``, filled
right before the nest by ``T.copy(G[i0:i0 + 1, ..], e)``; equal reads in one nest share one
fragment.  Such a copy makes ``G`` a scalar tensor (:mod:`..analysis.scalar_reads`: the host
gives its elements as float32 words, untiled) when it is not also moved as blocks: C1 lowers
the copy to ``tt.element_to_cb`` (the reader reads the element's page and puts the word at
element (0, 0) of ``e``'s tile).  Reads of a tensor the kernel writes, of an integer tensor,
or indexed by the nest's variables are left as they are (the later stages take or refuse
them); a read of a tensor the kernel also moves as blocks is a ``TTUnsupportedError`` naming
the tensor and the nest (a tensor is held as tiles or as scalar words, not both).  Decided from the IR of the nest only.
"""

from __future__ import annotations

import itertools

import tvm
import tvm_ffi
from tvm import tirx

from ...errors import TTUnsupportedError
from ..analysis.scalar_reads import OPERAND_DTYPES, element_copy, tvm_walk_pre
from ..common import (buffer_dtype, buffer_scope, collect, seq, substitute, tt_map, tt_pass, uses_var,
                      with_tile_span)

_FRAGMENT_DTYPE = "float32"  # the word the host gives (a float32 word, any float dtype)


def _copy(dst, src, span):
    import tvm.tirx.operator as tirx_op

    return with_tile_span(tirx_op.Copy(dst, src, workspace={}, config={}, dispatch=None,
                                       scope=None), span)


def _outermost_parallel(body) -> list:
    found = []

    def visit(node):
        if isinstance(node, tirx.For) and node.kind == tirx.ForKind.PARALLEL:
            found.append(node.loop_var)
            return False
        return True

    tvm_walk_pre(body, visit)
    return found


def _written(func) -> list:
    out = [st.buffer for st in collect(func.body, tirx.BufferStore)]
    for call in collect(func.body, tirx.TilePrimitiveCall):
        if call.args and isinstance(call.args[0], tvm.ir.TensorRegion):
            out.append(call.args[0].source)  # a tile primitive's destination
    return out


@tt_pass("StageScalarOperandsTT", requires=("ScalarsToBindTT",))
def StageScalarOperandsTT(func, mod, ctx):
    """Tensor elements read at one index by a whole ``T.Parallel`` nest -> ``[1]`` fragments
    staged by a copy before the nest (see module docstring)."""
    return stage_scalar_operands(func)


def stage_scalar_operands(func):
    """``func`` with the element reads the module docstring describes staged (``func`` itself
    when there are none)."""
    params = [p for p in func.params if tirx.is_buffer_var(p)]
    written = _written(func)
    # tensors moved as blocks (T.copy regions, GEMM operands) by the kernel as written
    blocked = [a.source for c in collect(func.body, tirx.TilePrimitiveCall) for a in c.args
               if isinstance(a, tvm.ir.TensorRegion) and element_copy(func, c) is None]
    outer = _outermost_parallel(func.body)
    if not outer:
        return func
    counter = itertools.count()
    names = {str(b.name) for b in collect(func.body, tirx.AllocBuffer) for b in [b.buffer]}

    def fresh(stem):
        while True:
            name = f"{stem}_{next(counter)}"
            if name not in names:
                names.add(name)
                return name

    def candidate(load, bound) -> bool:
        buf = load.source
        if not any(buf.same_as(p) for p in params) or buffer_scope(buf) != "global":
            return False
        if buffer_dtype(buf) not in OPERAND_DTYPES or any(buf.same_as(w) for w in written):
            return False
        for idx in load.indices:
            if collect(idx, tvm.ir.TensorLoad) or any(uses_var(idx, v) for v in bound):
                return False
        return True

    # `sink = Sinks[bx]` outside the nests: the nests read the element itself
    element_binds = {b.var: b.value for b in collect(func.body, tirx.Bind)
                     if isinstance(b.value, tvm.ir.TensorLoad) and candidate(b.value, [])}

    def rewrite(loop):
        if not any(loop.loop_var.same_as(v) for v in outer):
            return loop
        bound = [f.loop_var for f in collect(loop, tirx.For)]
        bound += [b.var for b in collect(loop, tirx.Bind)]
        # (a binding inside the nest keeps its variable: its definition is not a use)
        outside = {v: e for v, e in element_binds.items() if not any(v.same_as(b) for b in bound)}
        if outside:
            loop = substitute(loop, outside)
        loads = [ld for ld in collect(loop.body, tvm.ir.TensorLoad) if candidate(ld, bound)]
        if not loads:
            return loop
        for ld in loads:
            if any(ld.source.same_as(b) for b in blocked):
                raise TTUnsupportedError(
                    f"tensor {ld.source.name} is read as one element in a T.Parallel body "
                    f"(`{ld.source.name}[{', '.join(map(str, ld.indices))}]`, a scalar operand) "
                    "and also copied as blocks; a tensor is held either as tiles or as scalar "
                    "words, not both", span=loop.span,
                    hint=f"read the element from the block buffer {ld.source.name} is copied "
                         "into, or pass the scalars as a tensor of their own")
        staged = []  # (load, fragment)
        before = []
        for ld in loads:
            if any(tvm_ffi.structural_equal(ld, other) for other, _ in staged):
                continue
            frag = tirx.decl_buffer([1], _FRAGMENT_DTYPE, fresh(f"{ld.source.name}_elem"),
                                    scope="local.fragment")
            src = ld.source[tuple(slice(i, i + 1) for i in ld.indices)]
            before += [tirx.AllocBuffer(frag, span=loop.span),
                       _copy(frag[0:1], src, loop.span)]
            staged.append((ld, frag))

        def replace(e):
            for ld, frag in staged:
                if tvm_ffi.structural_equal(e, ld):
                    value = frag[0]
                    dtype = buffer_dtype(ld.source)
                    return value if dtype == _FRAGMENT_DTYPE else tirx.Cast(dtype, value)
            return e

        body = tvm_ffi.structural_map(loop.body, [(tvm.ir.TensorLoad, replace)], order="post")
        new_loop = tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind, body,
                            loop.thread_binding, loop.annotations, loop.step, span=loop.span)
        return seq(before + [new_loop])

    body = tt_map(func.body, [(tirx.For, rewrite)], order="post")
    # the element bindings no statement reads any more
    for v in element_binds:
        without = tt_map(body, [(tirx.Bind, lambda b, v=v: tirx.Evaluate(tirx.IntImm("int32", 0))
                                 if b.var.same_as(v) else b)], order="post")
        if not uses_var(without, v):
            body = without
    if body.same_as(func.body):
        return func
    body = tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")
    return func.with_body(body)
