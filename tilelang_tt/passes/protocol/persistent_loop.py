"""E1 LowerPersistentLoopTT: each kernel loops over its core's work units, in the IR.

Requires: ConfigureTensorAccessorTT, LowerCBIntrinsics, InsertComputeInitTT,
InsertDSTManagementTT (the kernels' work is final).

Guarantees: ``tt.runtime_args`` is the ordered list of 4-byte runtime arguments of the
kernel - the address of every accessor's tensor (at its ``addr_slot``), then ``start_id``
and ``count`` of the core's range of work units, then (reader) the fields of every multicast
group of ``tt.mcast_plan`` (``{"kind": "mcast", "group": g, "field": name}``, fields in
``attrs.MCAST_FIELDS`` order), each ``tt.mcast_arg(g, f)`` read as ``tt.get_arg_val`` of its
slot - and ``tt.persistent`` names the slots of ``start_id`` / ``count``.  The ``tt.persistent_body`` marker is gone: the kernel body is

    work_count = tt.get_arg_val(count_slot)
    start_id = tt.get_arg_val(start_slot)          (when the body uses the work unit)
    for work_offset in range(work_count):
        work_id = start_id + work_offset
        <the per-work-unit body, tt.work_id() read as work_id>

so every kernel is a plain loop nest codegen prints as it is.  Scalar bindings that nothing
reads any more (StmtSimplify substitutes a bound value into its uses, e.g. a loop bound
``T.ceildiv((bx + 1) * block_M, block_N)`` bound to a name) are dropped: the SDK builds
kernels with ``-Werror`` and an unused variable would stop the build.  Shapes and tile counts are
compile-time constants of the generated code, not runtime args.  More arguments than a
core accepts is a ``TTResourceError``.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ... import attrs, ops
from ...errors import TTResourceError
from ...target import profile_of
from ..common import (
    collect, get_attr, int_imm, require_attr, seq, split_persistent, to_py, tt_calls, tt_map, tt_pass,
)


@tt_pass("LowerPersistentLoopTT",
         requires=("ConfigureTensorAccessorTT", "LowerCBIntrinsics", "InsertComputeInitTT",
                   "InsertDSTManagementTT"), scalar_programs=True)
def LowerPersistentLoopTT(func, mod, ctx):
    """Runtime-argument layout and the persistent loop (see module docstring)."""
    accessors = to_py(require_attr(func, attrs.ACCESSORS, "LowerPersistentLoopTT"))
    profile = profile_of(str(require_attr(func, attrs.TARGET, "LowerPersistentLoopTT")))
    args = [None] * len(accessors)
    for acc in accessors:
        args[acc["addr_slot"]] = {"kind": "buffer_addr", "param": acc["param"]}
    start_slot = len(args)
    args += [{"kind": "start_id"}, {"kind": "count"}]
    mcast_base = len(args)
    groups = (to_py(get_attr(func, attrs.MCAST_PLAN, {})) or {}).get("groups", [])
    for g in range(len(groups)):
        args += [{"kind": "mcast", "group": g, "field": f} for f in attrs.MCAST_FIELDS]
    if len(args) > profile.max_runtime_args:
        raise TTResourceError(
            f"kernel {func.attrs['global_symbol']} needs {len(args)} runtime args; a core "
            f"accepts {profile.max_runtime_args}")

    prologue, persistent = split_persistent(func.body)
    start, count = tirx.Var("start_id", "int32"), tirx.Var("work_count", "int32")
    offset, work = tirx.Var("work_offset", "int32"), tirx.Var("work_id", "int32")
    uses_work = bool(tt_calls(persistent.body, "tt.work_id"))
    def on_call(c):
        name = ops.tt_op_name(c)
        if name == "tt.work_id":
            return work
        if name == "tt.mcast_arg":
            slot = mcast_base + int(c.args[0]) * len(attrs.MCAST_FIELDS) + int(c.args[1])
            return ops.call("tt.get_arg_val", int_imm(slot))
        return c

    body = tt_map(persistent.body, [(tvm.ir.Call, on_call)], order="post")
    if uses_work:
        body = seq([tirx.Bind(work, start + offset), body])
    loop = tirx.For(offset, int_imm(0), count, tirx.ForKind.SERIAL, body)
    binds = [tirx.Bind(count, ops.call("tt.get_arg_val", int_imm(start_slot + 1)))]
    if uses_work:
        binds.append(tirx.Bind(start, ops.call("tt.get_arg_val", int_imm(start_slot))))
    body = _drop_unread_scalars(seq(list(prologue) + binds + [loop]))
    return (func.with_body(body)
            .with_attr(attrs.RUNTIME_ARGS, args)
            .with_attr(attrs.PERSISTENT, {"start_slot": start_slot, "count_slot": start_slot + 1}))


def _drop_unread_scalars(body):
    """``body`` without the Binds of call-free scalar values whose variable nothing reads."""
    while True:
        reads = {}

        def count(v):
            reads[v] = reads.get(v, 0) + 1

        tvm_ffi.structural_walk(body, (tvm.ir.Var, count), order="pre")
        dead = [b for b in collect(body, tirx.Bind)
                if reads.get(b.var, 0) <= 1 and not collect(b.value, tvm.ir.Call)]
        if not dead:
            return body
        body = tt_map(body, [(tirx.Bind, lambda b: tirx.Evaluate(int_imm(0))
                              if any(b.same_as(d) for d in dead) else b)], order="post")
        body = tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")
