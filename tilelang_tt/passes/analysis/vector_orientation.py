"""Orientation of 1-D block buffers (used by A2).

A 1-D block buffer holds one value per row or per column of a 2-D block, in tiles: a
*column vector* (``Mt x 1`` tiles, values in column 0) is what a row reduction
(``dim=1``) makes and what ``R[i]`` broadcasts along the rows; a *row vector* (``1 x Nt``
tiles, values in row 0) is what a column reduction (``dim=0``) makes and what ``R[j]``
broadcasts down the columns.  The orientation comes from the reductions that write a vector
and the broadcasts (``tt.expr.col`` / ``tt.expr.row`` leaves of expression trees) that read
it (a 1-D block reduced to one value decides neither: its one value is element (0, 0) of a
one-tile vector of either orientation), and flows through
elementwise ops between vectors (ops whose destination is a vector; an expression computing a
2-D block reads each of its vectors as a broadcast of its own; global tensors excluded: a copy between a 1-D tensor and a
vector of either orientation is possible, C1 transposes the tiles of a column vector); a vector
used both ways is a ``TTLayoutError``.  Vectors nothing decides are row vectors when a copy
moves them to or from a 1-D tensor (a 1-D tensor is a row vector in DRAM, so no transpose is
needed), else column vectors.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ...errors import TTLayoutError
from ..common import buffer_scope, buffer_shape, collect
from ..frontend.eltwise_expr import vector_operands


def _regions(call):
    return [a for a in call.args if isinstance(a, tvm.ir.TensorRegion)]


def vector_orientations(body) -> dict:
    """1-D block buffer -> "col" or "row" (see module docstring)."""
    found = {}  # buffer -> (orientation, what decided it)

    def decide(buf, orient, why):
        for known, (have, reason) in found.items():
            if known.same_as(buf):
                if have != orient:
                    raise TTLayoutError(
                        f"1-D buffer {buf.name} is used as a {have} vector ({reason}) and as a "
                        f"{orient} vector ({why}); use two buffers")
                return False
        found[buf] = (orient, why)
        return True

    calls = collect(body, tirx.TilePrimitiveCall)
    for call in calls:
        name = call.op.name
        if name in ("tirx.tile.sum", "tirx.tile.max", "tirx.tile.min") and len(buffer_shape(call.args[0].source)) == 1 \
                and len(buffer_shape(call.args[1].source)) == 2:
            axis = int(call.args[2][0]) % 2
            decide(call.args[0].source, "col" if axis == 1 else "row",
                   f"T.reduce over dim={axis}")
        if name == "tt.tile.expr":
            for m, orient in vector_operands(call.args[1]):
                if orient != "scalar":  # s[0] of a [1] buffer: element (0, 0) either way
                    decide(call.args[2 + m].source, orient, "a broadcast operand")
    def propagate():
        """Elementwise ops (and copies) between block vectors keep the orientation."""
        changed = True
        while changed:
            changed = False
            for call in calls:
                scalars = {m for m, o in vector_operands(call.args[1]) if o == "scalar"} \
                    if call.op.name == "tt.tile.expr" else set()
                vectors = [r.source for k, r in enumerate(_regions(call))
                           if len(buffer_shape(r.source)) == 1 and k - 1 not in scalars
                           and buffer_scope(r.source) != "global"]
                if len(vectors) < 2 or call.op.name in ("tirx.tile.sum", "tirx.tile.max", "tirx.tile.min"):
                    continue
                if call.op.name == "tt.tile.expr" and len(buffer_shape(call.args[0].source)) != 1:
                    continue  # a block's expression: its vectors are broadcasts, each its own
                known = [found[b][0] for b in found if any(b.same_as(v) for v in vectors)]
                for orient in known[:1]:
                    for v in vectors:
                        changed |= decide(v, orient, "an elementwise op with another vector")

    propagate()
    # what nothing decided: a row vector when copied to or from a tensor (a 1-D block buffer
    # moves only to or from a vector tensor, whose layout is row vectors)
    for call in calls:
        if call.op.name != "tirx.tile.copy":
            continue
        regions = _regions(call)
        if any(buffer_scope(r.source) == "global" for r in regions):  # a vector tensor's
            for r in regions:
                if buffer_scope(r.source) != "global" and len(buffer_shape(r.source)) == 1 and \
                        not any(b.same_as(r.source) for b in found):
                    decide(r.source, "row", "a copy with a 1-D tensor")
    propagate()
    return {b: orient for b, (orient, _) in found.items()}
