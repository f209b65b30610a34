"""A0.000.1 CheckAssumptionsTT: ``T.assume`` statements are checked where they are decidable
and then dropped.

Requires: frontend TIR (symbolic sizes already specialised to the call's values: the kernel is
compiled per value of its sizes, runtime/dynamic.py).

``T.assume(cond)`` tells TileLang's compiler a fact it may use (``N % 4 == 0``); TileLang checks
an assumption the host can evaluate (one of sizes and scalar parameters) when the kernel is
called and raises ``RuntimeError("Assume: ...")`` when it is false.  Here sizes are constants
by the time a kernel is compiled, so such an assumption is a constant.

Guarantees: every ``Evaluate(T.assume(cond))`` (``tt.assume(cond, text)``, ``text`` the
condition as written) is removed; before that, an assumption whose condition TVM's Analyzer
proves false raises :class:`TTAssumeError` (``Assume: text``, a
``RuntimeError`` too) naming the line.  An assumption the Analyzer cannot decide (it reads
block indices, loop variables or tensor elements) is a hint the device kernels do not need:
dropped unchecked, as TileLang's device code does not check it either.
"""

from __future__ import annotations

import tvm
from tvm import tirx
from tvm.sym import Analyzer

from ...errors import TTAssumeError
from ... import ops
from ..common import tt_map, tt_pass

_NOOP = tirx.Evaluate(tirx.IntImm("int32", 0))


def _is_assume(stmt) -> bool:
    return ops.tt_op_name(stmt.value) == "tt.assume" or (
        isinstance(stmt.value, tvm.ir.Call) and isinstance(stmt.value.op, tvm.ir.Op)
        and stmt.value.op.name == "tirx.assume")  # TVM's own T.assume (tvm.tirx.assume)


@tt_pass("CheckAssumptionsTT", scalar_programs=True)
def CheckAssumptionsTT(func, mod, ctx):
    """``T.assume`` checked when constant, then removed (see module docstring)."""
    ana = Analyzer()

    def visit(stmt):
        if not _is_assume(stmt):
            return stmt
        cond = stmt.value.args[0]
        if ana.can_prove(tirx.Not(cond)):
            text = stmt.value.args[1].value if len(stmt.value.args) > 1 else cond
            raise TTAssumeError(f"Assume: {text}", span=stmt.span,
                                hint="call the kernel with sizes that satisfy its T.assume")
        return _NOOP

    return func.with_body(tt_map(func.body, [(tirx.Evaluate, visit)], order="post"))
