"""Which cores read the same block at the same step: the facts behind multicast reuse.

An analysis (it never rewrites).  For each ``tt.read_to_cb`` of a reader kernel, the block's
tile coordinates are written as functions of the work unit (``tt.work_id()``, through the
kernel's bindings: ``by = work_id / gx % gy``) and of the loops around the read.  Substituting
each core's work units (B1's ``work`` ranges: ``start + offset``) gives, per core, the block it
reads at every step as a function of the loop variables and the offset in its range; cores
whose functions are structurally equal read the same block at the same step of the persistent
loop - A's block of a GEMM depends on ``by`` and ``k`` only, so every core of a core row whose
work units share ``by`` reads it.  The decision is the IR's structure, never names.

A read qualifies (:func:`read_groups` returns groups, else the reason it does not) when every
core runs the same steps around it - no enclosing branch, no loop bound that depends on the
work unit, cores of a group with the same number of work units - and its CB is filled by that
read alone (so the CB's ring is at the same place on every core of a group).  A group must be
a run of neighbouring cores in one core row (``axis`` ``x``) or one core column (``y``); all
groups of a read have one axis and one size, at least two cores.
"""

from __future__ import annotations

from dataclasses import dataclass

import tvm
import tvm_ffi
from tvm import tirx
from tvm.sym import Analyzer

from ... import ops
from ..common import collect, int_imm, substitute, tt_calls, uses_var


@dataclass
class ReadSite:
    """A read_to_cb with what encloses it: the loops and whether a branch does."""

    call: object  # the tt.read_to_cb call
    loops: list  # enclosing For nodes inside the persistent body, outermost first
    branched: bool  # an IfThenElse encloses it


@dataclass
class Groups:
    """Cores grouped by the block they read: each group's cores in order along ``axis``."""

    axis: str  # "x" | "y"
    groups: list  # [[(x, y), ...], ...]; the first core of each group is its sender


def read_sites(persistent_body) -> tuple[list, dict]:
    """The read_to_cb sites of a persistent body and its scalar bindings (var -> value)."""
    sites, binds = [], {}

    def visit(s, loops, branched):
        if isinstance(s, tirx.SeqStmt):
            for x in s.seq:
                visit(x, loops, branched)
        elif isinstance(s, tirx.For):
            visit(s.body, loops + [s], branched)
        elif isinstance(s, tirx.IfThenElse):
            visit(s.then_case, loops, True)
            if s.else_case is not None:
                visit(s.else_case, loops, True)
        elif isinstance(s, tirx.AttrStmt):
            visit(s.body, loops, branched)
        elif isinstance(s, tirx.Bind):
            binds[s.var] = s.value
        elif isinstance(s, tirx.Evaluate) and ops.tt_op_name(s.value) == "tt.read_to_cb":
            sites.append(ReadSite(s.value, loops, branched))

    visit(persistent_body, [], False)
    return sites, binds


def _expand(expr, binds, work):
    """``expr`` with bound scalars substituted (transitively) and tt.work_id() as ``work``."""
    for _ in range(16):
        used = [v for v in collect(expr, tvm.ir.Var) if v in binds]
        if not used:
            break
        expr = substitute(expr, {v: binds[v] for v in used})

    def on_call(c):
        return work if ops.tt_op_name(c) == "tt.work_id" else c

    return tvm_ffi.structural_map(expr, [(tvm.ir.Call, on_call)], order="post")


def read_groups(site: ReadSite, binds: dict, work: list, body) -> Groups | str:
    """The groups of cores reading the same block of ``site`` at the same step (module
    docstring), or a string saying why the read does not qualify."""
    cb, _, row0, col0 = site.call.args[:4]
    if site.branched:
        return "the read is inside a branch"
    writers = [c for c in tt_calls(body) if ops.tt_op_name(c) in (
        "tt.read_to_cb", "tt.mask_to_cb", "tt.shard_to_cb") and c.args[0].same_as(cb)]
    if len(writers) != 1:
        return f"{cb.name} is filled by {len(writers)} reader ops"
    w = tirx.Var("work_id", "int32")
    for loop in site.loops:
        for bound in (loop.min, loop.extent):
            if uses_var(_expand(bound, binds, w), w):
                return f"the bounds of the loop over {loop.loop_var.name} depend on the work unit"
    coords = [_expand(e, binds, w) for e in (row0, col0)]
    if not any(uses_var(e, w) for e in coords):
        return "every core reads the same blocks (not tied to a grid axis)"
    off = tirx.Var("work_offset", "int32")
    keys = []  # (key exprs, count, (x, y))
    for x, y, start, count in work:
        ana = Analyzer()
        if count > 1:
            ana.bind(off, tvm.ir.Range.from_min_extent(0, count))
        at = int_imm(start) if count == 1 else int_imm(start) + off
        key = [ana.simplify(substitute(e, {w: at})) for e in coords]
        keys.append((key, count, (int(x), int(y))))
    groups = []  # [[key, count, cores]]
    for key, count, core in keys:
        for g in groups:
            if g[1] == count and all(tvm_ffi.structural_equal(a, b) for a, b in zip(g[0], key)):
                g[2].append(core)
                break
        else:
            groups.append([key, count, [core]])
    cores = [g[2] for g in groups]
    if all(len(c) == 1 for c in cores):
        return "no two cores read the same block"
    return _line_groups(cores)


def _line_groups(cores: list) -> Groups | str:
    sizes = {len(c) for c in cores}
    if len(sizes) != 1:
        return f"groups of cores reading one block differ in size ({sorted(sizes)})"
    for axis, along, across in (("x", 0, 1), ("y", 1, 0)):
        ok = True
        for g in cores:
            g.sort(key=lambda c: (c[across], c[along]))
            if len({c[across] for c in g}) != 1 or [c[along] for c in g] != list(
                    range(g[0][along], g[0][along] + len(g))):
                ok = False
                break
        if ok:
            return Groups(axis, cores)
    return "the cores reading one block are not neighbours in one core row or column"
