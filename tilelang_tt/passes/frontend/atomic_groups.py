"""A0.1.1's grouping of blocks: which blocks of an atomic kernel may update the same elements,
per launch dimension (used by :mod:`.atomics`).

For one atomic target and one launch variable ``v`` of extent ``E`` the target index uses
``v`` in one of three ways (bindings already seen through), read from the IR:

* not at all: every block along ``v`` updates the same elements (group size ``E``);
* only inside ``v // g`` (``g`` an integer constant, ``1 < g < E``; ``dV[.., bx // groups,
  ..]``, also inside a larger expression): the blocks with equal ``v // g`` update the same
  elements, the others may not (group size ``g``);
* otherwise (``v`` itself, ``v % 2``, ...): group size 1, the blocks are left to V0, which
  proves the targets disjoint or reports the race.

The blocks one core must run in order are the closure over all targets, per dimension the
least common multiple ``G`` of the targets' group sizes: ``G == 1`` keeps the launch
dimension, ``G == E`` turns it into a serial loop (TileLang's split-K ``bz``), otherwise the
dimension is split into ``v_o = v // G`` (launched) and ``v_i = v % G`` (a serial loop, block
order), ``v = v_o * G + v_i`` everywhere else in the body.  Refused (``TTUnsupportedError``
naming the atomic): ``E`` not a multiple of ``G`` (or not a constant when ``1 < G``), and a
held target (one read before its group and written after it) whose group size is strictly
between 1 and ``G`` (it would change every few group iterations), or whose serial parts do not
nest with another held target's (the loops that change a held target run outside the loops that
do not).
"""

from __future__ import annotations

import math

import tvm
from tvm import tirx
from tvm.sym import Analyzer

from ...errors import TTUnsupportedError
from ..common import int_or_none, substitute, tt_map, uses_var

WHOLE = 0  # group size "the whole extent" (the target does not use the variable)


def group_size(index: list, var, extent) -> int:
    """How ``index`` (a target's index expressions) uses launch variable ``var``: ``WHOLE``
    (not at all, or only inside ``var // g`` with ``g >= extent``), ``g`` (only inside
    ``var // g``) or 1 (any other use)."""
    if not any(uses_var(i, var) for i in index):
        return WHOLE
    divisors = []
    hole = tirx.Var("_group_hole", var.ty.dtype)

    def on_div(d):
        g = int_or_none(d.b)
        if d.a.same_as(var) and g is not None and g > 1:
            divisors.append(g)
            return hole
        return d

    rest = [tt_map(i, [(tirx.FloorDiv, on_div)]) for i in index]
    if any(uses_var(i, var) for i in rest):
        return 1
    g = math.gcd(*divisors)  # var // 4 is (var // 2) // 2
    e = int_or_none(extent)
    return WHOLE if e is not None and g >= e else g


class Dim:
    """One launch dimension after grouping: ``group`` is ``G`` (``WHOLE`` for the extent), the
    launched variable ``outer`` (None when the whole dimension is serial) and the serial loop
    variable ``inner`` (None when the dimension stays launched as it was)."""

    def __init__(self, launch, group):
        self.launch, self.var, self.extent = launch, launch.node.var, launch.value
        self.group = group
        self.outer = self.inner = None
        e = int_or_none(self.extent)
        if group == 1 or (e == 1):
            self.outer = self.var  # kept as it is
        elif group == WHOLE or group == e:
            self.group = WHOLE
            self.inner = self.var  # the whole dimension is one core's serial loop
        else:
            self.outer = tirx.Var(self.var.name + "_o", self.var.ty.dtype)
            self.inner = tirx.Var(self.var.name + "_i", self.var.ty.dtype)

    @property
    def split(self) -> bool:
        return self.outer is not None and self.inner is not None

    def inner_extent(self):
        return self.extent if self.group == WHOLE else tirx.IntImm(self.var.ty.dtype, self.group)

    def outer_extent(self):
        return tirx.IntImm(self.extent.ty.dtype, int(self.extent) // self.group)

    def value(self):
        """The original variable in terms of the new ones."""
        g = tirx.IntImm(self.var.ty.dtype, self.group)
        return self.outer * g + self.inner


def group_dims(targets, launches, describe) -> list[Dim]:
    """Per launch dimension the :class:`Dim` (module docstring); ``targets`` have ``.index``
    (list of index expressions) and ``.moving``; sets ``t.depends`` (the serial loop
    variables a held target changes with) on each."""
    dims = []
    sizes = {}
    for a in launches:
        v = a.node.var
        e = int_or_none(a.value)
        per = [group_size(t.index, v, a.value) for t in targets]
        sizes[v] = per
        if any(g == WHOLE for g in per):
            group = WHOLE
        else:
            group = math.lcm(*per) if per else WHOLE
        if group not in (1, WHOLE) and (e is None or group > e or e % group):
            t = next(t for t, g in zip(targets, per) if g not in (1, WHOLE))
            raise TTUnsupportedError(
                f"{describe(t)}: the blocks along {v.name} with equal {v.name} // {group} "
                f"update the same elements, but the launch extent {a.value} is not a multiple "
                f"of {group}; make the grid dimension a multiple of the group",
                span=t.atom.body.span or t.atom.span)
        dims.append(Dim(a, group))
    for t in targets:
        t.depends = []
        for d, a in zip(dims, launches):
            g = sizes[d.var][targets.index(t)]
            if d.inner is None or g == WHOLE or (d.split and g == d.group):
                continue
            if g != 1 and not t.moving:
                raise TTUnsupportedError(
                    f"{describe(t)}: its target changes with {d.var.name} // {g} while the "
                    f"blocks updating one element of another target are grouped by "
                    f"{d.var.name} // {d.group}; use the same grouping for the atomics of one "
                    "kernel", span=t.atom.body.span or t.atom.span)
            t.depends.append(d.inner)
    return dims


def serial_order(dims, targets, describe) -> list[Dim]:
    """The serial loops outermost first: the ones more held targets change with outside, so
    every held target's loops are a prefix (its block is read before, and written after, the
    loops it does not change with)."""
    serial = [d for d in dims if d.inner is not None]
    held = [t for t in targets if not t.moving]

    def count(d):
        return sum(any(v.same_as(d.inner) for v in t.depends) for t in held)

    order = sorted(serial, key=lambda d: -count(d))  # stable: launch order among equals
    for t in held:
        n = len(t.depends)
        prefix = order[:n]
        if not all(any(v.same_as(d.inner) for v in t.depends) for d in prefix):
            raise TTUnsupportedError(
                f"{describe(t)}: the blocks of one group change this target along "
                f"{', '.join(v.name for v in t.depends)} and another atomic's target along "
                "other block indices, so neither can be held for its group; make the "
                "atomics' targets use the block indices alike", span=t.atom.body.span or t.atom.span)
        t.level = n
    return order


def simplify_index(index, dims):
    """Target index expressions with every split variable replaced by ``v_o * G + v_i`` and
    simplified knowing ``0 <= v_i < G`` (``(v_o * G + v_i) // G`` is ``v_o``) and every other
    launch variable's range (``bx // 4`` of a 4-block dimension is 0)."""
    ana = Analyzer()
    mapping = {}
    for d in dims:
        if d.split:
            ana.bind(d.inner, tvm.ir.Range(0, d.group))
            ana.bind(d.outer, tvm.ir.Range(0, int(d.extent) // d.group))
            mapping[d.var] = d.value()
        elif int_or_none(d.extent) is not None:  # v // g with g >= the extent is 0
            ana.bind(d.var, tvm.ir.Range(0, int(d.extent)))
    return [ana.simplify(substitute(i, mapping)) for i in index]

