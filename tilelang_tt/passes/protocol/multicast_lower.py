"""The semaphore handshake of a multicast read (part of D3 LowerCBIntrinsics).

``tt.mcast_read_to_cb(cb, tensor, row0, col0, rows, cols, group)`` (PlanMulticastTT) becomes,
with ``ready`` / ``valid`` the group's two semaphores (``get_semaphore``) and the core's
runtime fields ``tt.mcast_arg(group, f)`` (0: sender?, 1-2: the sender's NOC x / y, 3-6: the
receivers' NOC rectangle)::

    cb_reserve_back(cb, n); l1 = get_write_ptr(cb)
    if sender:
        noc_async_read_page ... (the block, as a plain read); noc_async_read_barrier()
        noc_semaphore_wait(ready, receivers); noc_semaphore_set(ready, 0)
        noc_async_write_multicast(l1 -> l1 of the rectangle, bytes, receivers)
        noc_semaphore_set(valid, 1); noc_semaphore_set_multicast(valid -> the rectangle)
        noc_async_write_barrier()
    else:
        noc_semaphore_set(valid, 0); noc_semaphore_inc(sender's ready, 1)
        noc_semaphore_wait(valid, 1)
    cb_push_back(cb, n)

A receiver signals ``ready`` only once its block is reserved, so the multicast lands on pages
it holds; it pushes only after ``valid``, which the sender sets after the data (a NOC delivers
one sender's writes in order).  Every core of a group reserves the same blocks of the CB in the
same order (PlanMulticastTT's conditions), so the sender's write pointer is each receiver's.
"""

from __future__ import annotations

from tvm import tirx

from ... import ops
from ..common import int_imm


def lower_mcast_read(call, plan: dict, lower_read) -> list:
    """The statements of one ``tt.mcast_read_to_cb`` (module docstring); ``lower_read`` lowers
    a list of plain reads (D3's batched reader lowering)."""
    group = int(call.args[6])
    g = plan["groups"][group]
    read = ops.call("tt.read_to_cb", *call.args[:6], span=call.span)
    reserve, ptr, moves, barrier, push = lower_read([read], True)
    l1 = ptr.var
    name = str(call.args[0].name).removesuffix("_cb")
    ready, valid = tirx.Var(f"{name}_ready", "int32"), tirx.Var(f"{name}_valid", "int32")
    n = int_imm(int(g["receivers"]))

    def arg(field):
        return ops.call("tt.mcast_arg", int_imm(group), int_imm(field))

    def ev(op, *args):
        return ops.evaluate(op, *args, span=call.span)

    rect = [arg(3), arg(4), arg(5), arg(6)]
    send = [moves, barrier,
            ev("tt.noc_semaphore_wait", ready, n),
            ev("tt.noc_semaphore_set", ready, int_imm(0)),
            ev("tt.noc_async_write_multicast", l1, *rect, l1, int_imm(int(g["bytes"])), n),
            ev("tt.noc_semaphore_set", valid, int_imm(1)),
            ev("tt.noc_semaphore_set_multicast", valid, *rect, valid, n),
            ev("tt.noc_async_write_barrier")]
    receive = [ev("tt.noc_semaphore_set", valid, int_imm(0)),
               ev("tt.noc_semaphore_inc", arg(1), arg(2), ready, int_imm(1)),
               ev("tt.noc_semaphore_wait", valid, int_imm(1))]
    return [reserve, ptr,
            tirx.Bind(ready, ops.call("tt.get_semaphore", int_imm(int(g["ready_sem"])))),
            tirx.Bind(valid, ops.call("tt.get_semaphore", int_imm(int(g["valid_sem"])))),
            tirx.IfThenElse(tirx.NE(arg(0), int_imm(0)), tirx.SeqStmt(send),
                            tirx.SeqStmt(receive)),
            push]
