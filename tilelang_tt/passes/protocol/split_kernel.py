"""D1 SplitDeviceKernel: one kernel becomes three - reader, compute, writer.

Requires: BuildTileDFGTT.

Guarantees: the module holds ``<name>_reader``, ``<name>_compute`` and ``<name>_writer``
(``tt.kernel_kind`` = reader / compute / writer, ``tt.kernel_source`` = the original name) and
no longer the original function.  Each keeps only its own work:

* reader: ``tt.read_to_cb``, ``tt.mask_to_cb``, ``tt.im2col_to_cb`` (the registry's ``kernel``);
* compute: ``tt.mm.mma``, ``tt.acc.*``, ``tt.fpu.*``, ``tt.eltwise``,
  ``tt.reduce.*``, ``tt.const_tile``, the
  accumulator allocations and the ``tt.consume.begin/end`` marks;
* writer: ``tt.write_from_cb``;
* a scalar program (``AttrStmt(tt.scalar_program)``, A0.00.1): the reader, whole;

plus the control flow around that work (loops and conditions that became empty are dropped),
the ``tt.alloc_cb`` bindings of the CBs it touches and the scalar bindings its work depends
on; a mutable scalar (A0.1) stays in every kernel that reads it (its declaration and all its
assignments), and goes from one that only assigns it.  The persistent-body marker stays in
all three.  All function attributes are inherited.
Each kernel has variables of its own (TVM's ConvertSSA renames the copies' parameters, loop
variables, bindings and buffers), so the module is well-formed.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ... import attrs, ops
from ..common import (
    check_stage, collect, get_attr, record_stage, seq, tt_module_pass,
)
from ..common import tt_map

KINDS = ("reader", "compute", "writer")


_NOOP = tirx.Evaluate(tirx.IntImm("int32", 0))


def op_owner(name: str) -> str | None:
    """The kernel that executes op ``name`` (the registry's ``kernel``), None for ops any
    kernel may hold."""
    kernel = ops.spec(name).kernel
    return kernel if kernel in KINDS else None


def _var_uses(body) -> dict:
    counts = {}

    def visit(v):
        counts[v] = counts.get(v, 0) + 1

    tvm_ffi.structural_walk(body, (tvm.ir.Var, visit), order="pre")
    return counts


def _drop_unused_binds(body):
    """Remove Binds whose variable is never read (iterated: dropping one may free others)."""
    while True:
        uses = _var_uses(body)
        dead = [b for b in collect(body, tirx.Bind) if uses.get(b.var, 0) <= 1]
        if not dead:
            return body

        def drop(b, dead=dead):
            return _NOOP if any(b.same_as(d) for d in dead) else b

        body = tt_map(body, [(tirx.Bind, drop)], order="post")
        body = tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")


def _drop_unread_state(body):
    """Remove the mutable scalars (A0.1: ``v = tt.state_var(...)``) this kernel never reads
    but to assign them (their declaration and every ``tt.state_set`` of them; iterated:
    dropping one may leave another unread), so no kernel holds a variable set but unused."""
    while True:
        decls = [b for b in collect(body, tirx.Bind) if ops.tt_op_name(b.value) == "tt.state_var"]
        uses = _var_uses(body)
        own = {}  # a scalar's occurrences in its own assignments (`v = v + 1` reads it too)
        for c in collect(body, tvm.ir.Call):
            if ops.tt_op_name(c) == "tt.state_set":
                own[c.args[0]] = own.get(c.args[0], 0) + _var_uses(c).get(c.args[0], 0)
        dead = [b.var for b in decls if uses.get(b.var, 0) <= 1 + own.get(b.var, 0)]
        if not dead:
            return body

        def drop_bind(b, dead=dead):
            return _NOOP if any(b.var.same_as(d) for d in dead) else b

        def drop_set(ev, dead=dead):
            if ops.tt_op_name(ev.value) == "tt.state_set" and \
                    any(ev.value.args[0].same_as(d) for d in dead):
                return _NOOP
            return ev

        body = tt_map(body, [(tirx.Bind, drop_bind), (tirx.Evaluate, drop_set)], order="post")
        body = tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")


def extract(body, kind: str):
    """The part of ``body`` that kernel ``kind`` executes: the other kernels' ops and the
    accumulators (outside compute) dropped, then TVM's RemoveNoOp drops the loops, branches
    and attributes left empty, and the bindings nothing reads any more go."""

    def on_evaluate(ev):
        name = ops.tt_op_name(ev.value)
        owner = op_owner(name) if name else None
        if owner is None or owner == kind:
            return ev
        return _NOOP

    def on_alloc(a):
        if attrs.ACC_DESC in (a.annotations or {}) and kind != "compute":
            return _NOOP
        return a

    def on_attr(a):  # a scalar program (A0.00.1) is the reader's alone
        if str(a.attr_key) == attrs.SCALAR_PROGRAM and kind != "reader":
            return _NOOP
        return a

    out = tt_map(body, [(tirx.Evaluate, on_evaluate), (tirx.AllocBuffer, on_alloc),
                        (tirx.AttrStmt, on_attr)], order="post")
    while True:  # a branch left empty reads a scalar no more (`if (x > 1) {}`): again
        dropped = _drop_empty(_remove_no_op(_drop_unread_state(out)))
        if tvm_ffi.structural_equal(dropped, out):
            break
        out = dropped
    out = _drop_unused_binds(tt_map(out, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post"))
    # a loop left holding only bindings nothing reads (a branch value) is empty now
    return tt_map(_drop_empty(out), [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")


def _remove_no_op(body):
    return tirx.transform.RemoveNoOp()(tvm.IRModule({"k": tirx.PrimFunc([], body)}))["k"].body


def _is_no_op(stmt) -> bool:
    if isinstance(stmt, tirx.SeqStmt):
        return all(_is_no_op(s) for s in stmt.seq)
    return isinstance(stmt, tirx.Evaluate) and not isinstance(stmt.value, tvm.ir.Call)


def _drop_empty(body):
    """Statements left with nothing to do once the unread bindings went: a value evaluated
    for nothing (RemoveNoOp keeps an emptied branch's condition when it calls an op, as
    ``tt.as_signed`` of a branch value does), a branch or loop of such (the persistent body's
    marker stays)."""
    def on_eval(s):
        return _NOOP if _is_no_op(s) else s

    def on_if(s):
        return _NOOP if _is_no_op(s.then_case) and (s.else_case is None
                                                     or _is_no_op(s.else_case)) else s

    def on_for(s):
        return _NOOP if _is_no_op(s.body) else s

    return tt_map(body, [(tirx.Evaluate, on_eval), (tirx.IfThenElse, on_if),
                         (tirx.For, on_for)], order="post")


@tt_module_pass("SplitDeviceKernel")
def SplitDeviceKernel(mod, ctx):
    """Replace every unsplit PrimFunc by its reader, compute and writer kernels."""
    out = {}
    for gv, func in mod.functions.items():
        if not isinstance(func, tirx.PrimFunc) or get_attr(func, attrs.KERNEL_KIND) is not None:
            out[gv.name_hint] = func
            continue
        check_stage(func, "SplitDeviceKernel", ("BuildTileDFGTT",))
        parent = record_stage(func, "SplitDeviceKernel")
        for kind in KINDS:
            name = f"{gv.name_hint}_{kind}"
            out[name] = (parent.with_body(extract(parent.body, kind))
                         .with_attr(attrs.KERNEL_KIND, kind)
                         .with_attr(attrs.KERNEL_SOURCE, gv.name_hint)
                         .with_attr("global_symbol", name))
    # the kernels are copies of one body: TVM's ConvertSSA gives each its own variables
    return tirx.transform.ConvertSSA()(tvm.IRModule(out))
