"""A0.1 ScalarsToBindTT: scalar assignments become bindings.

Requires: frontend TIR.

TVMScript parses a Python-level assignment in a kernel (``y = by * 32 + i``,
``start_y = by * block_M``) as a one-element local buffer plus one store.  Guarantees: every
such buffer stored exactly once (and not read by its own store) is a ``Bind`` of a scalar
variable instead, so index arithmetic stays plain expressions later passes can see through;
other local buffers are left for VerifyTileProgramTT to reject.  A floating-point binding
whose value reads no buffer and no variable (``inv_D = T.float32(1.0) / T.Cast("float32",
D)``, a constant written in TIR) is substituted into its uses and dropped, so expressions
that use it see a constant (elementwise expressions fold it).
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ..common import buffer_scope, collect, seq, substitute, tt_map, tt_pass


def _is_scalar_local(buf) -> bool:
    return buffer_scope(buf) == "local" and [int(d) for d in buf.ty.shape] == [1]


def scalars_to_binds(body):
    """``y = expr`` parses as a 1-element local buffer plus one store: make it ``Bind(y, expr)``.

    Only buffers stored exactly once (and not read by their own store) are rewritten; any
    other use of local buffers is left for later stages to reject.
    """
    stores = {}
    for st in collect(body, tirx.BufferStore):
        if _is_scalar_local(st.buffer):
            stores.setdefault(st.buffer, []).append(st)
    single = {}
    for buf, sts in stores.items():
        reads_self = any(ld.source.same_as(buf) for ld in collect(sts[0].value, tvm.ir.TensorLoad))
        if len(sts) == 1 and not reads_self:
            single[buf] = tirx.Var(buf.name, str(buf.ty.dtype))
    if not single:
        return body

    def rewrite(node):
        if isinstance(node, tirx.AllocBuffer) and node.buffer in single:
            return tirx.Evaluate(tirx.IntImm("int32", 0))
        if isinstance(node, tirx.BufferStore) and node.buffer in single:
            return tirx.Bind(single[node.buffer], node.value, node.span)
        if isinstance(node, tvm.ir.TensorLoad) and node.source in single:
            return single[node.source]
        return node

    body = tt_map(
        body, [((tirx.AllocBuffer, tirx.BufferStore, tvm.ir.TensorLoad), rewrite)], order="post")
    return tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")


def _reads_nothing(expr) -> bool:
    return not collect(expr, tvm.ir.TensorLoad) and not collect(expr, tvm.ir.Var)


def inline_float_constants(body):
    """Substitute floating-point ``Bind``s of constant expressions into their uses."""
    values = {}
    for b in collect(body, tirx.Bind):  # program order: a value may use an earlier binding
        if str(b.var.ty).startswith(("float", "bfloat")):
            value = substitute(b.value, values)
            if _reads_nothing(value):
                values[b.var] = value
    if not values:
        return body
    body = tt_map(body, [(tirx.Bind, lambda b: tirx.Evaluate(tirx.IntImm("int32", 0))
                          if b.var in values else b)], order="post")
    body = substitute(body, values)
    return tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")


@tt_pass("ScalarsToBindTT")
def ScalarsToBindTT(func, mod, ctx):
    """Scalar assignments -> ``Bind`` (see module docstring)."""
    return func.with_body(inline_float_constants(scalars_to_binds(func.body)))
