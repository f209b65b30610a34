"""C4 PlaceL1ShardsTT: L1 shards used in place - a CB whose ring is the core's shard.

Requires: BuildTileDFGTT.

Guarantees: in the ``local_shard`` partition, a tensor sharded in L1 that the kernel streams
with exactly one ``tt.read_to_cb`` (or one ``tt.write_from_cb``), outside every loop of the
work unit, whose blocks visit the core's shard page by page in order, needs no copy: the
stream becomes ``tt.shard_to_cb(cb, tensor, ntiles)`` (``tt.cb_to_shard``), the CB's
``tt.tile_dfg`` entry gets ``in_place = param`` and a depth of the whole shard (its
``tt.alloc_cb`` too), and the host configures the CB on the buffer's address
(``set_globally_allocated_address``), so its pages are the shard's.  The reader publishes each
block with reserve / push (the writer retires it with wait / pop) and no byte crosses the NOC.

"In order" holds when the block's origin is ``(by * Mt, bx * Nt)`` tiles, the core runs each
block of its shard once (one work unit per block, ``bz`` absent), and the shard's pages in
row-major order are the blocks' tiles in row-major order, block after block (``bx`` varies
fastest in a work unit's decoding): blocks as wide as the shard (``Nt == Sn``) or one tile row
high (``Mt == 1``).  Other streams of L1 shards stay NOC copies from the core's own L1.
"""

from __future__ import annotations

import tvm
from tvm import tirx
from tvm.sym import Analyzer

from ... import attrs, ops
from ..common import (
    collect, get_attr, int_imm, param_index, require_attr, to_py, tt_calls, tt_map, tt_pass,
)
from .tile_dfg import cb_binds

STREAMS = {"tt.read_to_cb": "tt.shard_to_cb", "tt.write_from_cb": "tt.cb_to_shard"}


def _block_vars(body, launch) -> dict:
    """Block dimension -> the variable GridToCoreGrid bound for it (its binds are the ones
    computed from ``tt.work_id()``, in dimension order)."""
    binds = [b for b in collect(body, tirx.Bind) if tt_calls(b.value, "tt.work_id")]
    return dict(zip(launch["block_dims"], (b.var for b in binds)))


def _in_loop(body, call) -> bool:
    return any(any(c.same_as(call) for c in tt_calls(loop.body)) for loop in collect(body, tirx.For))


def _eligible(call, lay, part, launch, bvars) -> bool:
    if len(call.args) > 6:
        return False  # tiles checked when the reader runs (an offset read from data)
    cb, buf, row0, col0, rows, cols = call.args
    mt, nt = int(rows), int(cols)
    shard = part["shard"]
    sm, sn = lay["shard"]["projected_shard_tiles"]
    gx, gy, gz = launch["grid"]
    if len(lay["shape"]) != 2 or gz != 1 or 0 not in bvars or 1 not in bvars:
        return False
    if sm % mt or sn % nt or not (nt == sn or mt == 1):
        return False
    # the core's work units are exactly its shard's blocks
    count = part["work"][0][3]
    if count != (sm // mt) * (sn // nt) or gy * mt != lay["tiles"][0] or gx * nt != lay["tiles"][1]:
        return False
    if shard["grid"] != lay["shard"]["projected_grid"]:
        return False
    ana = Analyzer()
    return (ana.can_prove_equal(row0, bvars[1] * mt) and ana.can_prove_equal(col0, bvars[0] * nt))


@tt_pass("PlaceL1ShardsTT", requires=("BuildTileDFGTT",))
def PlaceL1ShardsTT(func, mod, ctx):
    """L1-sharded streams that visit the shard in order become in-place CB publications."""
    part = to_py(require_attr(func, attrs.PARTITION, "PlaceL1ShardsTT"))
    if part["mode"] != "local_shard":
        return func
    launch = to_py(require_attr(func, attrs.CORE_LAUNCH, "PlaceL1ShardsTT"))
    layouts = to_py(require_attr(func, attrs.LAYOUT_DESC, "PlaceL1ShardsTT"))
    bvars = _block_vars(func.body, launch)
    streams = [c for c in tt_calls(func.body) if c.op.name in STREAMS]
    chosen = []  # (call, param, cb var, tiles per block, shard pages)
    for call in streams:
        buf = call.args[1]
        param = param_index(func, buf)
        lay = layouts[param]
        if lay["memory"] != "L1" or lay["layout"] != "sharded":
            continue
        if sum(1 for c in streams if c.args[1].same_as(buf)) != 1 or _in_loop(func.body, call) \
                or len(call.args) > 6:  # a block's leading tiles only
            continue
        if _eligible(call, lay, part, launch, bvars):
            sm, sn = lay["shard"]["projected_shard_tiles"]
            chosen.append((call, param, call.args[0], int(call.args[4]) * int(call.args[5]),
                           sm * sn))
    if not chosen:
        return func

    def find(pred):
        return next((c for c in chosen if pred(c)), None)

    def rewrite(c):
        hit = find(lambda e: e[0].same_as(c))
        if hit is None:
            return c
        return ops.call(STREAMS[c.op.name], hit[2], c.args[1], int_imm(hit[3]), span=c.span)

    def redepth(b):
        hit = find(lambda e: e[2].same_as(b.var))
        if hit is None or ops.tt_op_name(b.value) != "tt.alloc_cb":
            return b
        args = list(b.value.args)
        args[3] = int_imm(hit[4] // hit[3])  # the ring holds the whole shard
        return tirx.Bind(b.var, ops.call("tt.alloc_cb", *args, span=b.value.span))

    body = tt_map(func.body, [(tvm.ir.Call, rewrite)], order="post")
    body = tt_map(body, [(tirx.Bind, redepth)], order="post")
    ids = {}
    for b in cb_binds(body):
        hit = find(lambda e: e[2].same_as(b.var))
        if hit is not None:
            ids[int(b.value.args[0])] = (hit[1], hit[4] // hit[3])
    dfg = to_py(get_attr(func, attrs.TILE_DFG, []))
    for e in dfg:
        if int(e["id"]) in ids:
            e["in_place"], e["depth"] = ids[int(e["id"])]
    return func.with_body(body).with_attr(attrs.TILE_DFG, dfg)
