"""E1 LowerPersistentLoopTT: each kernel loops over its core's work units, in the IR.

Requires: ConfigureTensorAccessorTT, LowerCBIntrinsics, InsertComputeInitTT,
InsertDSTManagementTT (the kernels' work is final).

Guarantees: ``tt.runtime_args`` is the ordered list of 4-byte runtime arguments of the
kernel - the address of every accessor's tensor (at its ``addr_slot``), then ``start_id``
and ``count`` of the core's range of work units - and ``tt.persistent`` names the slots of
``start_id`` / ``count``.  The ``tt.persistent_body`` marker is gone: the kernel body is

    work_count = tt.get_arg_val(count_slot)
    start_id = tt.get_arg_val(start_slot)          (when the body uses the work unit)
    for work_offset in range(work_count):
        work_id = start_id + work_offset
        <the per-work-unit body, tt.work_id() read as work_id>

so every kernel is a plain loop nest codegen prints as it is.  Shapes and tile counts are
compile-time constants of the generated code, not runtime args.  More arguments than a
core accepts is a ``TTResourceError``.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ... import attrs, ops
from ...errors import TTResourceError
from ...target import profile_of
from ..common import (
    int_imm, require_attr, seq, split_persistent, to_py, tt_calls, tt_map, tt_pass,
)


@tt_pass("LowerPersistentLoopTT",
         requires=("ConfigureTensorAccessorTT", "LowerCBIntrinsics", "InsertComputeInitTT",
                   "InsertDSTManagementTT"))
def LowerPersistentLoopTT(func, mod, ctx):
    """Runtime-argument layout and the persistent loop (see module docstring)."""
    accessors = to_py(require_attr(func, attrs.ACCESSORS, "LowerPersistentLoopTT"))
    profile = profile_of(str(require_attr(func, attrs.TARGET, "LowerPersistentLoopTT")))
    args = [None] * len(accessors)
    for acc in accessors:
        args[acc["addr_slot"]] = {"kind": "buffer_addr", "param": acc["param"]}
    start_slot = len(args)
    args += [{"kind": "start_id"}, {"kind": "count"}]
    if len(args) > profile.max_runtime_args:
        raise TTResourceError(
            f"kernel {func.attrs['global_symbol']} needs {len(args)} runtime args; a core "
            f"accepts {profile.max_runtime_args}")

    prologue, persistent = split_persistent(func.body)
    start, count = tirx.Var("start_id", "int32"), tirx.Var("work_count", "int32")
    offset, work = tirx.Var("work_offset", "int32"), tirx.Var("work_id", "int32")
    uses_work = bool(tt_calls(persistent.body, "tt.work_id"))
    body = tt_map(persistent.body, [(tvm.ir.Call, lambda c: work if ops.tt_op_name(c) ==
                                     "tt.work_id" else c)], order="post")
    if uses_work:
        body = seq([tirx.Bind(work, start + offset), body])
    loop = tirx.For(offset, int_imm(0), count, tirx.ForKind.SERIAL, body)
    binds = [tirx.Bind(count, ops.call("tt.get_arg_val", int_imm(start_slot + 1)))]
    if uses_work:
        binds.append(tirx.Bind(start, ops.call("tt.get_arg_val", int_imm(start_slot))))
    return (func.with_body(seq(list(prologue) + binds + [loop]))
            .with_attr(attrs.RUNTIME_ARGS, args)
            .with_attr(attrs.PERSISTENT, {"start_slot": start_slot, "count_slot": start_slot + 1}))
