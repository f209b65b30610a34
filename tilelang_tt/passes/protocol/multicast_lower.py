"""The semaphore handshake of a multicast read (part of D3 LowerCBIntrinsics).

``tt.mcast_read_to_cb(cb, tensor, row0, col0, rows, cols, group)`` (PlanMulticastTT) is lowered
in D3's batch of consecutive reads.  With ``ready`` / ``valid`` the group's two semaphores
(``get_semaphore``) and the core's runtime fields ``tt.mcast_arg(group, f)`` (0: sender?,
1-2: the sender's NOC x / y, 3-6: the receivers' NOC rectangle), a batch reads::

    cb_reserve_back(cb, n) ...; l1 = get_write_ptr(cb) ...
    if not sender: noc_semaphore_set(valid, 0); noc_semaphore_inc(sender's ready, 1)   (each)
    if sender: noc_async_read_page ... (the block)          (plain reads: unguarded)
    noc_async_read_barrier()
    if sender:                                                                          (each)
        noc_semaphore_wait(ready, receivers); noc_semaphore_set(ready, 0)
        noc_async_write_multicast(l1 -> l1 of the rectangle, bytes, receivers)
        noc_semaphore_set(valid, 1); noc_semaphore_set_multicast(valid -> the rectangle)
    if not sender: noc_semaphore_wait(valid, 1)                                         (each)
    noc_async_write_barrier()
    cb_push_back(cb, n) ...

A receiver signals ``ready`` only once its block is reserved, so the multicast lands on pages
it holds; it pushes only after ``valid``, which the sender sets after the data (a NOC delivers
one sender's writes in order).  Every core of a group reserves the same blocks of the CB in the
same order (PlanMulticastTT's conditions), so the sender's write pointer is each receiver's.
A core signals every group it receives from as soon as its blocks are reserved, before its
own reads, and waits for data only after it sent what it sends: no wait of the batch precedes
a signal or a multicast another core waits for, so no two groups wait for each other, and the
handshakes of A's and B's groups overlap with each other and with the DRAM reads.
"""

from __future__ import annotations

from tvm import tirx

from ... import ops
from ..common import int_imm


def mcast_handshake(call, plan: dict, l1):
    """The parts of one ``tt.mcast_read_to_cb`` whose block lies at ``l1`` (module docstring):
    (the sender condition, the semaphore bindings, the receiver's signal, the sender's
    multicast, the receiver's wait)."""
    group = int(call.args[6])
    g = plan["groups"][group]
    name = str(call.args[0].name).removesuffix("_cb")
    ready, valid = tirx.Var(f"{name}_ready", "int32"), tirx.Var(f"{name}_valid", "int32")
    n = int_imm(int(g["receivers"]))

    def arg(field):
        return ops.call("tt.mcast_arg", int_imm(group), int_imm(field))

    def ev(op, *args):
        return ops.evaluate(op, *args, span=call.span)

    is_sender = tirx.Var(f"{name}_sender", "int32")  # one variable: F follows its branches
    sender = tirx.NE(is_sender, int_imm(0))
    rect = [arg(3), arg(4), arg(5), arg(6)]
    binds = [tirx.Bind(is_sender, arg(0)),
             tirx.Bind(ready, ops.call("tt.get_semaphore", int_imm(int(g["ready_sem"])))),
             tirx.Bind(valid, ops.call("tt.get_semaphore", int_imm(int(g["valid_sem"]))))]
    signal = tirx.IfThenElse(tirx.Not(sender), tirx.SeqStmt([
        ev("tt.noc_semaphore_set", valid, int_imm(0)),
        ev("tt.noc_semaphore_inc", arg(1), arg(2), ready, int_imm(1))]), None)
    send = tirx.IfThenElse(sender, tirx.SeqStmt([
        ev("tt.noc_semaphore_wait", ready, n),
        ev("tt.noc_semaphore_set", ready, int_imm(0)),
        ev("tt.noc_async_write_multicast", l1, *rect, l1, int_imm(int(g["bytes"])), n),
        ev("tt.noc_semaphore_set", valid, int_imm(1)),
        ev("tt.noc_semaphore_set_multicast", valid, *rect, valid, n)]), None)
    wait = tirx.IfThenElse(tirx.Not(sender), ev("tt.noc_semaphore_wait", valid, int_imm(1)),
                           None)
    return sender, binds, signal, send, wait
