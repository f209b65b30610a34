"""What to tell the user about a ``T.Parallel`` body that is not elementwise assignments.

A0.2 (LowerParallelToTileTT) lowers ``T.Parallel`` bodies made of bindings and element
assignments.  When the body holds another statement, :func:`not_elementwise` says what it is
in the user's terms (a serial loop, an ``if``) instead of printing the IR, and, for a serial
loop that folds elements into one destination element (``s[i] += acc[i, j]``,
``m[i] = T.max(m[i], x[i, j])``), names the tile reduction that computes it.  Decisions use
the IR's structure only (which loop variable an index uses, the combining operation).
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ..common import stmts_of, substitute, uses_var
from .parallel_fold import fold_of

_REDUCE_CALLS = {"Sum": "T.reduce_sum", "Max": "T.reduce_max", "Min": "T.reduce_min"}


def _folded(store: tirx.BufferStore, var):
    """(reduction call, the operand folded in) when ``store`` is ``d[I] = d[I] op e`` with
    ``I`` free of ``var`` and ``e`` using it (:func:`parallel_fold.fold_of`); else None."""
    if any(uses_var(ix, var) for ix in store.indices):
        return None
    found = fold_of(store, var)
    return None if found is None else (_REDUCE_CALLS[found[0]], found[1])


def _loop_text(loop: tirx.For) -> str:
    return f"`for {loop.loop_var.name} in T.serial({loop.extent})`"


def not_elementwise(stmt) -> str:
    """A sentence naming ``stmt`` (found where a T.Parallel body needs an assignment) and
    what to write instead."""
    if isinstance(stmt, tirx.For):
        var = stmt.loop_var
        inner = stmts_of(stmt.body)
        last = inner[-1] if inner else None
        mapping = {}
        for b in inner[:-1]:
            if isinstance(b, tirx.Bind):
                mapping[b.var] = substitute(b.value, mapping)
        if isinstance(last, tirx.BufferStore):
            last = substitute(last, mapping)
        folded = _folded(last, var) if isinstance(last, tirx.BufferStore) else None
        if folded is not None:
            name, operand = folded
            dst = last.buffer.name
            src = ""
            if isinstance(operand, tvm.ir.TensorLoad):
                dims = [k for k, ix in enumerate(operand.indices) if uses_var(ix, var)]
                if len(dims) == 1:
                    src = (f": {name}({operand.source.name}, {dst}, dim={dims[0]}, "
                           "clear=False)")
            return (f"a loop {_loop_text(stmt)} that folds elements into {dst}[...] (a "
                    f"reduction over {var.name}); T.Parallel bodies are elementwise, so write "
                    f"it as a tile reduction{src}" + ("" if src else
                    f" (compute the folded values into a block with T.Parallel over both "
                    f"loops, then {name}(block, {dst}, dim=..., clear=False))"))
        return (f"a loop {_loop_text(stmt)}; T.Parallel bodies are elementwise: make it a "
                "loop of the T.Parallel nest, or move it outside")
    if isinstance(stmt, tirx.IfThenElse):
        return (f"a conditional statement `if {stmt.condition}:`; T.Parallel bodies are "
                "unconditional assignments: select the value instead, "
                "`dst[...] = T.if_then_else(cond, value, dst[...])`")
    return f"`{stmt}`"
