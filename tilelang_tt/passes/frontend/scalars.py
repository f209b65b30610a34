"""A0.1 ScalarsToBindTT: scalar assignments become bindings.

Requires: frontend TIR.

TVMScript parses a Python-level assignment in a kernel (``y = by * 32 + i``,
``start_y = by * block_M``) as a one-element local buffer plus one store.  Guarantees: every
such buffer stored exactly once (and not read by its own store) is a ``Bind`` of a scalar
variable instead, so index arithmetic stays plain expressions later passes can see through;
a scalar assigned several times in straight-line code (``s = T.alloc_var(...)``, ``s = 2.0``,
``s += 1.0``) becomes one ``Bind`` per assignment; a scalar assigned inside a loop or a
branch is a TTUnsupportedError naming it; other local buffers are left for
VerifyTileProgramTT to reject.  A floating-point binding
whose value reads no buffer and no variable (``inv_D = T.float32(1.0) / T.Cast("float32",
D)``, a constant written in TIR) is substituted into its uses and dropped, so expressions
that use it see a constant (elementwise expressions fold it); so is an integer binding whose
value reads elements of tensor parameters the kernel never writes (``i_s =
BlockIndices[b, t, h, i] * BS``): its uses read the element.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ...errors import TTUnsupportedError
from ..common import buffer_scope, collect, seq, substitute, tt_map, tt_pass, uses_var


def _is_scalar_local(buf) -> bool:
    return buffer_scope(buf) == "local" and [int(d) for d in buf.ty.shape] == [1]


def _loads_of(node, buf) -> int:
    return len(collect(node, tvm.ir.TensorLoad, lambda ld: ld.source.same_as(buf)))


def _replace_loads(node, buf, var):
    return tt_map(node, [(tvm.ir.TensorLoad,
                          lambda ld: var if ld.source.same_as(buf) else ld)], order="post")


def straight_line_scalars(body):
    """A scalar assigned several times in one statement sequence and nowhere else (``s =
    T.alloc_var(T.float32)``, ``s = 2.0``, ``s += 1.0``; no assignment inside a loop or a
    branch) becomes one ``Bind`` per assignment, each read seeing the latest; a scalar read
    before its first assignment or outside that sequence is left for later stages to reject.
    """
    stores = {}
    for st in collect(body, tirx.BufferStore):
        if _is_scalar_local(st.buffer):
            stores.setdefault(st.buffer, []).append(st)
    several = {b: len(sts) for b, sts in stores.items()
               if len(sts) > 1 or _loads_of(sts[0].value, b)}
    total = {b: _loads_of(body, b) for b in several}
    done = set()

    def rewrite(s):
        children, changed = list(s.seq), False
        for buf, n_stores in several.items():
            at = [k for k, c in enumerate(children)
                  if isinstance(c, tirx.BufferStore) and c.buffer.same_as(buf)]
            if buf in done or len(at) != n_stores or \
                    any(_loads_of(c, buf) for c in children[:at[0]]) or \
                    sum(_loads_of(c, buf) for c in children) != total[buf]:
                continue
            current, out = None, []
            for k, c in enumerate(children):
                if k in at:
                    value = c.value if current is None else _replace_loads(c.value, buf, current)
                    current = tirx.Var(buf.name, str(buf.ty.dtype))
                    out.append(tirx.Bind(current, value, c.span))
                else:
                    out.append(c if current is None else _replace_loads(c, buf, current))
            children, changed = out, True
            done.add(buf)
        return tirx.SeqStmt(children) if changed else s

    if not several:
        return body
    body = tt_map(body, [(tirx.SeqStmt, rewrite)], order="post")
    if not done:
        return body
    body = tt_map(body, [(tirx.AllocBuffer, lambda a: tirx.Evaluate(tirx.IntImm("int32", 0))
                          if a.buffer in done else a)], order="post")
    return tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")


def _reads_in_scope(body, store) -> bool:
    """Every read of ``store``'s buffer comes after it in the statement sequence holding it
    (where a ``Bind`` in its place is in scope), none when nothing holds it in a sequence
    (the body of a loop or a branch arm)."""
    total = _loads_of(body, store.buffer)
    for s in collect(body, tirx.SeqStmt):
        for k, c in enumerate(s.seq):
            if c.same_as(store):
                return sum(_loads_of(x, store.buffer) for x in s.seq[k + 1:]) == total
    return total == 0


def scalars_to_binds(body):
    """``y = expr`` parses as a 1-element local buffer plus one store: make it ``Bind(y, expr)``.

    Only buffers stored exactly once (and not read by their own store), and read only where
    the binding is in scope, are rewritten; any other use of local buffers is left for later
    stages to reject (a store in a loop read after it: ``refuse_carried_scalars``).
    """
    stores = {}
    for st in collect(body, tirx.BufferStore):
        if _is_scalar_local(st.buffer):
            stores.setdefault(st.buffer, []).append(st)
    single = {}
    for buf, sts in stores.items():
        reads_self = any(ld.source.same_as(buf) for ld in collect(sts[0].value, tvm.ir.TensorLoad))
        if len(sts) == 1 and not reads_self and _reads_in_scope(body, sts[0]):
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


def _inline_binds(body, dtypes, wanted):
    """``body`` with the ``Bind``s of a variable whose dtype starts with one of ``dtypes`` and
    whose value (earlier such bindings substituted) satisfies ``wanted`` substituted into
    their uses and dropped."""
    values = {}
    for b in collect(body, tirx.Bind):  # program order: a value may use an earlier binding
        if str(b.var.ty).startswith(dtypes):
            value = substitute(b.value, values)
            if wanted(value):
                values[b.var] = value
    if not values:
        return body
    body = tt_map(body, [(tirx.Bind, lambda b: tirx.Evaluate(tirx.IntImm("int32", 0))
                          if b.var in values else b)], order="post")
    body = substitute(body, values)
    return tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")


def inline_float_constants(body):
    """Substitute floating-point ``Bind``s of constant expressions into their uses."""
    return _inline_binds(body, ("float", "bfloat"), _reads_nothing)


def inline_index_binds(body, block_vars):
    """Substitute integer ``Bind``s of index expressions that use a block index and read no
    buffer (``idx_i = bx * block_M + i``) into their uses, and drop them (A0.0 sees the
    tensor index ``bx * block_M + i`` where the kernel wrote ``idx_i``)."""
    return _inline_binds(body, ("int", "uint"), lambda value: (
        not collect(value, tvm.ir.TensorLoad) and any(uses_var(value, g) for g in block_vars)))


def inline_element_binds(func, body):
    """Substitute integer ``Bind``s whose value reads elements of tensor parameters the kernel
    never writes (``i_s = BlockIndices[b, t, h, i] * BS``) into their uses, and drop them: the
    condition, the block offsets and the masks that use the name then read the element itself
    (``analysis/scalar_reads.py`` decides which such reads are supported).  The tensor is
    read-only, so the element has the same value at every use."""
    params = [p for p in func.params if tirx.is_buffer_var(p)]
    written = [st.buffer for st in collect(body, tirx.BufferStore)]
    for call in collect(body, tirx.TilePrimitiveCall):
        if call.args and isinstance(call.args[0], tvm.ir.TensorRegion):
            written.append(call.args[0].source)

    def read_only_param(buf):
        return any(buf.same_as(p) for p in params) and not any(buf.same_as(w) for w in written)

    def wanted(value):
        loads = collect(value, tvm.ir.TensorLoad)
        return bool(loads) and all(read_only_param(ld.source) for ld in loads)

    return _inline_binds(body, ("int", "uint"), wanted)


def refuse_carried_scalars(body) -> None:
    """A scalar still assigned after the rewrites is assigned inside a loop or a branch."""
    stores = [st for st in collect(body, tirx.BufferStore) if _is_scalar_local(st.buffer)]
    if stores:  # name the last assignment: the one in the loop when there is one
        st = stores[-1]
        raise TTUnsupportedError(
            f"scalar {st.buffer.name} is assigned inside a loop or a branch (or read before "
            "its first assignment): a scalar value carried across loop iterations is not "
            "supported by the Tenstorrent backend", span=st.span,
            hint="compute it from loop variables, or keep per-row values in a 1-D fragment "
                 "updated with T.Parallel")


@tt_pass("ScalarsToBindTT")
def ScalarsToBindTT(func, mod, ctx):
    """Scalar assignments -> ``Bind`` (see module docstring)."""
    body = scalars_to_binds(straight_line_scalars(func.body))
    refuse_carried_scalars(body)
    return func.with_body(inline_element_binds(func, inline_float_constants(body)))
