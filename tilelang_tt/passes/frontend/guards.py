"""A0.1.0 DropTrueGuardsTT: bounds guards that hold for every block and iteration, or that
fail only past a tensor's end, go.

Requires: ScalarsToBindTT (scalar assignments are ``Bind``s, seen through here).

TileLang kernels guard element accesses with the tensor bounds (``if row < M and col < N:``,
``if bx * block + i < N:``) so that a partial last block stays inside the tensor.  When the
blocks tile the tensors, as Tensix blocks of whole 32x32 tiles need, such a condition holds
for every block index in its ``T.Kernel`` extent and every loop variable in its range.  When
they do not, A0.3.1 (PadTensorsTT) stores the tensors padded with zeros up to what the blocks
cover, and the host crops what the kernel stores in the padding.

Guarantees: every ``if`` without ``else`` is replaced by its body when its condition, with
the integer bindings it uses inlined, is provably true

* for all block indices in ``[0, extent)`` and all loop variables in their ranges, or
* at every element the body stores, when that element is inside its tensor: the body's only
  effects are element stores to tensor parameters (``C[...] = ...``, atomics included; no
  store to a block buffer, no tile op, no allocation), every index of every tensor element it
  reads or writes is provably >= 0, and under the constraint ``index < dim`` of each store the
  condition holds.  Such a guard is false only where the store lands past the end of its
  tensor, in the padding A0.3.1 adds and the host crops; the reads there see the padding's
  zeros, as TileLang's out-of-bounds reads return 0 (``LegalizeSafeMemoryAccess``), and
  TileLang skips those stores.

Any other branch is left as it is (a guard that can be false inside a ``T.Parallel`` body is
then refused by LowerParallelToTileTT, naming it).  Decided from the conditions' and indices'
arithmetic over the launch and loop ranges only.
"""

from __future__ import annotations

import tvm
from tvm import tirx
from tvm.sym import Analyzer

from ... import attrs
from ..common import buffer_shape, collect, inline_binds, launch_attrs, tt_map, tt_pass

# statements a cropped-store body may hold besides the stores (loops, bindings, nesting,
# atomic markers, nested guards)
_PLAIN = (tirx.For, tirx.Bind, tirx.SeqStmt, tirx.IfThenElse, tirx.AttrStmt, tirx.BufferStore)


def _global(buf) -> bool:
    return str(buf.scope()) == "global"


def _stores_only_tensors(body) -> list | None:
    """The element stores of ``body`` when they are its only effects, all into tensor
    parameters; else None."""
    stores = collect(body, tirx.BufferStore)
    if not stores or any(not _global(s.buffer) for s in stores):
        return None
    if collect(body, tirx.TilePrimitiveCall) or collect(body, tirx.AllocBuffer):
        return None
    if collect(body, tirx.Stmt, lambda s: not isinstance(s, _PLAIN) or (
            isinstance(s, tirx.AttrStmt) and str(s.attr_key) != attrs.ATOMIC)):
        return None
    return stores


def _false_only_past_the_end(stmt, ana, binds) -> bool:
    """The guard ``stmt`` fails only at stores past the end of their tensors (module
    docstring, second case)."""
    stores = _stores_only_tensors(stmt.then_case)
    if stores is None:
        return False
    cond = inline_binds(stmt.condition, binds)
    loads = collect(stmt.then_case, tvm.ir.TensorLoad, lambda ld: _global(ld.source))
    for idx in [i for s in stores for i in s.indices] + [i for ld in loads for i in ld.indices]:
        if not ana.can_prove(inline_binds(idx, binds) >= 0):
            return False
    for s in stores:
        inside = None
        for idx, dim in zip(s.indices, buffer_shape(s.buffer)):
            if not isinstance(dim, int):
                return False
            c = inline_binds(idx, binds) < dim
            inside = c if inside is None else tirx.And(inside, c)
        if inside is None:
            return False
        with ana.constraint_scope(inside):
            if not ana.can_prove(cond):
                return False
    return True


def drop_true_guards(body):
    """``body`` with its always-true guards, and its guards that fail only past a tensor's
    end, replaced by their bodies (module docstring)."""
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
        if stmt.else_case is None and (ana.can_prove(inline_binds(stmt.condition, binds))
                                       or _false_only_past_the_end(stmt, ana, binds)):
            return stmt.then_case
        return stmt

    return tt_map(body, [(tirx.IfThenElse, drop)])


@tt_pass("DropTrueGuardsTT", requires=("ScalarsToBindTT",))
def DropTrueGuardsTT(func, mod, ctx):
    """Always-true bounds guards, and guards false only past a tensor's end, -> their bodies
    (see module docstring)."""
    return func.with_body(drop_true_guards(func.body))
