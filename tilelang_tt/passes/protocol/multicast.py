"""D2.1 PlanMulticastTT: a block several cores read at the same step is read once and multicast.

Requires: ConfigureTensorAccessorTT.

Guarantees: in the reader kernel, every ``tt.read_to_cb`` whose block the cores of a core row
(or column) read at the same step of the persistent loop (``analysis/block_sharing.py``: the
block's DRAM index depends on one grid axis only, and B2's mapping puts the blocks sharing it
on neighbouring cores in lockstep - a GEMM whose grid is the core grid: A's block on every core
of a row, B's on every core of a column) is ``tt.mcast_read_to_cb(..., group)``; the function
attribute ``tt.mcast_plan`` lists, per such read, its CB, tensor, axis, two semaphores
(``ready``, ``valid``), the receivers per group, the block's bytes and every core's role:
the first core of each group is its sender, the others its receivers (logical coordinates; the
host turns them into NOC coordinates and runtime args, and creates the semaphores).  Reads that
do not qualify, kernels other than the reader, and compiles with
``pass_configs={"tt.multicast": False}`` are unchanged (every core reads its own blocks).
D3 lowers ``tt.mcast_read_to_cb`` to the semaphore handshake (``multicast_lower.py``).

A shared read is multicast only when it pays in the timing model (:func:`multicast_pays`, the
target's :class:`~tilelang_tt.target.DeviceProfile` NOC / DRAM figures):
* its CB holds at least two blocks.  With one (depth 1, e.g. flash attention's K / V at
  ``num_stages=1``) the reader reserves the next block only after the compute kernel popped
  the last, so every read lies on the step's critical path and the multicast leg would be
  added to every step;
* the DRAM time the machine saves per handshake - the receivers' copies of the block no
  longer read, over the device's DRAM bandwidth (banks x per-bank bytes per cycle) - exceeds
  the multicast leg the receivers then wait for after the sender's own read (NOC latency +
  multicast latency + per destination latency + the block's transfer at the multicast's port
  occupancy).  A GEMM's A block shared by 7 receivers in each of 8 core rows pays; one 8 KB
  block shared by the two cores of each of 2 heads does not.
"""

from __future__ import annotations

from tvm import tirx

from ... import attrs, ops
from ..analysis.block_sharing import Groups, read_groups, read_sites
from ...target import profile_of
from ..common import (
    get_attr, int_imm, layout_of, param_index, require_attr, split_persistent, to_py, tt_map,
    tt_pass, with_persistent,
)


def multicast_cost(profile, block_bytes: int, receivers: int, groups: int) -> tuple:
    """(DRAM cycles saved, handshake cycles) of multicasting one read's block per step.

    Saved: ``groups * receivers`` copies of the block no longer read from DRAM, at the
    device's DRAM bandwidth (``dram_banks * dram_bank_bytes_per_cycle``).  Handshake: what a
    receiver waits for after the sender's read - the multicast's fixed and per-destination
    latency and the block's transfer at the multicast's port occupancy (the emulator's
    ``Kind::Mcast``, runtime/mock/src/timing.cpp)."""
    p = profile
    saved = groups * receivers * block_bytes / (p.dram_banks * p.dram_bank_bytes_per_cycle)
    handshake = (p.noc_latency + p.mcast_latency + p.mcast_per_dest * receivers
                 + block_bytes / p.noc_bytes_per_cycle * (1 + receivers / p.mcast_occupancy_dests))
    return saved, handshake


def multicast_pays(profile, block_bytes: int, receivers: int, groups: int,
                   depth: int = 2) -> bool:
    """Whether multicasting pays in the timing model (module docstring): the CB holds at
    least two blocks (``depth``) and the DRAM cycles saved exceed the handshake's."""
    if depth < 2:
        return False
    saved, handshake = multicast_cost(profile, block_bytes, receivers, groups)
    return saved > handshake


def _core_rows(groups: Groups, receivers_first: int) -> list:
    """Per core: [x, y, sender?, sender x, y, receivers' rectangle x0, y0, x1, y1]."""
    rows = []
    for g in groups.groups:
        (sx, sy), (lx, ly) = g[0], g[-1]
        fx, fy = g[receivers_first]
        for x, y in g:
            rows.append([x, y, int((x, y) == (sx, sy)), sx, sy, fx, fy, lx, ly])
    return rows


@tt_pass("PlanMulticastTT", requires=("ConfigureTensorAccessorTT",))
def PlanMulticastTT(func, mod, ctx):
    """Plan multicast reuse of shared blocks in the reader (see module docstring)."""
    kind = str(require_attr(func, attrs.KERNEL_KIND, "PlanMulticastTT"))
    options = to_py(get_attr(func, attrs.COMPILE_OPTIONS, {})) or {}
    if kind != "reader" or not options.get(attrs.PC_MULTICAST, True):
        return func
    work = [[int(v) for v in w] for w in to_py(require_attr(func, attrs.PARTITION,
                                                            "PlanMulticastTT"))["work"]]
    prologue, persistent = split_persistent(func.body)
    sites, binds = read_sites(persistent.body)
    profile = profile_of(str(get_attr(func, attrs.TARGET, "wormhole_b0")))
    plan, rewrite = [], {}
    for site in sites:
        if len(site.call.args) > 6:
            continue  # tiles checked per core when the reader runs (an offset read from data)
        groups = read_groups(site, binds, work, func.body)
        if not isinstance(groups, Groups):
            continue
        cb, buf, _, _, rows, cols = site.call.args
        alloc = next(b.value for b in prologue if isinstance(b, tirx.Bind) and b.var.same_as(cb))
        cb_id, depth = int(alloc.args[0]), int(alloc.args[3])  # tt.alloc_cb(id, r, c, depth, ..)
        block_bytes = int(rows) * int(cols) * int(layout_of(func, buf)["page_bytes"])
        if not multicast_pays(profile, block_bytes, len(groups.groups[0]) - 1,
                              len(groups.groups), depth):
            continue
        index = len(plan)
        plan.append({
            "cb": cb_id, "param": param_index(func, buf), "axis": groups.axis,
            "ready_sem": 2 * index, "valid_sem": 2 * index + 1,
            "receivers": len(groups.groups[0]) - 1,
            "bytes": block_bytes,
            "cores": _core_rows(groups, 1),
        })
        rewrite[site.call] = index
    if not plan:
        return func

    def on_eval(ev):
        for call, index in rewrite.items():
            if ev.value.same_as(call):
                return tirx.Evaluate(ops.call("tt.mcast_read_to_cb", *call.args, int_imm(index),
                                              span=call.span))
        return ev

    body = tt_map(persistent.body, [(tirx.Evaluate, on_eval)], order="post")
    return (func.with_body(with_persistent(prologue, persistent, body))
            .with_attr(attrs.MCAST_PLAN, {"semaphores": 2 * len(plan), "groups": plan}))
