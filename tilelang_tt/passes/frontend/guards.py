"""A0.1.0 DropTrueGuardsTT: bounds guards that hold for every block and iteration go.

Requires: ScalarsToBindTT (scalar assignments are ``Bind``s, seen through here).

TileLang kernels guard element accesses with the tensor bounds (``if row < M and col < N:``,
``if bx * block + i < N:``) so that a partial last block stays inside the tensor.  When the
blocks tile the tensors, as Tensix blocks of whole 32x32 tiles need, such a condition holds
for every block index in its ``T.Kernel`` extent and every loop variable in its range.

Guarantees: every ``if`` without ``else`` whose condition, with the integer bindings it uses
inlined, is provably true for all block indices in ``[0, extent)`` and all loop variables in
their ranges is replaced by its body; any other branch is left as it is (a guard that can be
false inside a ``T.Parallel`` body is then refused by LowerParallelToTileTT, naming it).
Decided from the condition's arithmetic over the launch and loop ranges only.
"""

from __future__ import annotations

import tvm
from tvm import tirx
from tvm.sym import Analyzer

from ..common import collect, inline_binds, launch_attrs, tt_map, tt_pass


def drop_true_guards(body):
    """``body`` with its always-true guards replaced by their bodies (module docstring)."""
    if not collect(body, tirx.IfThenElse, lambda s: s.else_case is None):
        return body
    ana = Analyzer()
    for a in launch_attrs(body):
        ana.bind(a.node.var, tvm.ir.Range.from_min_extent(tirx.IntImm("int32", 0), a.value))
    for lp in collect(body, tirx.For):  # loop variables are defined once: bind them all
        ana.bind(lp.loop_var, tvm.ir.Range.from_min_extent(lp.min, lp.extent))
    binds = {b.var: b.value for b in collect(body, tirx.Bind)
             if str(b.var.ty).startswith(("int", "uint", "bool"))}

    def drop(stmt):
        if stmt.else_case is None and ana.can_prove(inline_binds(stmt.condition, binds)):
            return stmt.then_case
        return stmt

    return tt_map(body, [(tirx.IfThenElse, drop)])


@tt_pass("DropTrueGuardsTT", requires=("ScalarsToBindTT",))
def DropTrueGuardsTT(func, mod, ctx):
    """Always-true bounds guards -> their bodies (see module docstring)."""
    return func.with_body(drop_true_guards(func.body))
