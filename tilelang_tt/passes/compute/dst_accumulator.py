"""DST lowering of GEMM accumulators (part of D5, see :mod:`.d5_dst_management`).

An accumulator that fits DST lives there from ``acc.clear`` to ``acc.pack``; one that does
not is computed in sub-blocks with a spill CB, as tt-metal's ``matmul_multicore_reuse`` does:
a float32 one over a K loop with the packer accumulating the partials in L1
(:mod:`.dst_l1_acc`), any other one reloading the partials into DST every K step.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ...errors import TTUnsupportedError
from ..common import (
    buffer_dtype,
    collect,
    int_imm,
    loop_nest,
    seq,
    stmt_op_name,
    tt_calls,
    tt_map,
)
from .dst_context import ELTWISE, DstContext, ev
from .dst_l1_acc import l1_acc_on_mma


def subblock(mt: int, nt: int, cap: int) -> tuple[int, int]:
    best = (1, 1)
    for sh in range(1, mt + 1):
        for sw in range(1, nt + 1):
            if mt % sh or nt % sw or sh * sw > cap:
                continue
            if (sh * sw, sw) > (best[0] * best[1], best[1]):
                best = (sh, sw)
    return best


def _matmul_loops(a, b, mt_range, nt_range, kt, nt_total, trans_b, dst_of):
    """matmul_tiles over kk x (rows of mt_range) x (cols of nt_range)."""
    (m0, sh), (n0, sw) = mt_range, nt_range

    def body(kk, h, w):
        ia = (m0 + h) * kt + kk
        col = n0 + w
        ib = col * kt + kk if trans_b else kk * nt_total + col
        return ev("tt.matmul_tiles", a, b, ia, ib, dst_of(h, w))

    return loop_nest([kt, sh, sw], body, ["kk", "h", "w"])


def lower_accumulator(cx: DstContext, acc, desc, body):
    mt, nt = int(desc["rows"]), int(desc["cols"])
    tiles = mt * nt
    cap = cx.capacity
    clears = tt_calls(body, "tt.acc.clear")
    mmas = [c for c in tt_calls(body, "tt.mm.mma") if c.args[0].same_as(acc)]
    packs = [c for c in tt_calls(body, "tt.acc.pack") if c.args[0].same_as(acc)]
    clears = [c for c in clears if c.args[0].same_as(acc)]
    if not mmas:
        raise TTUnsupportedError(f"accumulator {acc.name} is never the target of a T.gemm")
    if len(clears) != 1 or len(packs) != 1:
        raise TTUnsupportedError(
            f"accumulator {acc.name} must be cleared once (T.clear) before its T.gemm loop and "
            f"copied out once after it; found {len(clears)} clear(s) and {len(packs)} copy-out(s)")
    mma = mmas[0]
    a, b, kt, trans_b = mma.args[1], mma.args[2], int(mma.args[5]), int(mma.args[6])
    # several T.gemm of other operands into one accumulator (DeepSeek MLA's nope and rope
    # parts, a GEMM split along K by A0.1.0.0): each is its own matmul loop while the
    # accumulator stays in DST; the spilled forms below are written for one operand pair
    uniform = not any(int(m.args[5]) != kt or not m.args[1].same_as(a)
                      or not m.args[2].same_as(b) or int(m.args[6]) != trans_b
                      for m in mmas[1:])
    out = packs[0].args[1]

    # locate: one statement list holding [clear, ..., X (all mma), ..., pack]
    home = None
    for s in collect(body, tirx.SeqStmt):
        items = list(s.seq)
        has = [any(any(c.same_as(t) for c in tt_calls(it)) for it in items)
               for t in (clears[0], packs[0])]
        if all(has):
            home = s
    if home is None:
        raise TTUnsupportedError(
            f"T.clear({acc.name}) and the copy out of {acc.name} must be in the same block of "
            "statements around the T.gemm loop")
    items = list(home.seq)

    def index_of(call):
        return next(i for i, it in enumerate(items) if any(c.same_as(call) for c in tt_calls(it)))

    i_clear, i_pack = index_of(clears[0]), index_of(packs[0])
    x_idx = sorted({index_of(m) for m in mmas})
    if not (i_clear < x_idx[0] and x_idx[-1] < i_pack):
        raise TTUnsupportedError(
            f"the T.gemm updates of {acc.name} must sit between T.clear({acc.name}) and its "
            "copy-out")
    # other compute ops between the clear and the copy-out (say, scaling an operand inside
    # the K loop) need DST too: then the accumulator cannot stay in DST for the whole loop,
    # and takes the spill path, which releases DST between K steps
    # and so do another accumulator's GEMMs there (two accumulators cannot both hold DST)
    shares_dst = any(c.op.name in ELTWISE
                     or c.op.name in ("tt.mm.mma", "tt.acc.clear") and not c.args[0].same_as(acc)
                     for it in items[i_clear:i_pack + 1] for c in tt_calls(it))
    resident = tiles <= cap and not shares_dst
    if not resident and not uniform:
        raise TTUnsupportedError(
            f"accumulator {acc.name} is updated by T.gemm of different operands or shapes and "
            f"does not stay in DST ({tiles} tiles, DST holds {cap}"
            + (", other compute ops run between its clear and its copy-out" if shares_dst
               else "") + "): only an accumulator that stays in DST takes several operand "
            "pairs", hint="make the accumulator's block smaller, or accumulate each product "
            "into its own fragment and add them")
    if not resident and len(x_idx) != 1:
        raise TTUnsupportedError(
            f"the T.gemm updates of {acc.name} must sit in one statement (the K loop) between "
            f"T.clear({acc.name}) and its copy-out")
    i_x = x_idx[0]
    x = items[i_x]

    if resident:
        cx.plan.append({"acc": acc.name, "tiles": tiles, "capacity": cap, "subblock": [mt, nt],
                        "spill_cb": -1})

        def on_mma(m):
            return _matmul_loops(m.args[1], m.args[2], (0, mt), (0, nt), int(m.args[5]), nt,
                                 int(m.args[6]), lambda h, w: h * nt + w)

        pack = seq([ev("tt.tile_regs_commit"), ev("tt.tile_regs_wait")] + cx.pack_cfg(out) + [
            ev("tt.cb_reserve_back", out, int_imm(tiles)),
            loop_nest([tiles], lambda t: ev("tt.pack_tile", t, out, t, int_imm(0)), ["t"]),
            ev("tt.cb_push_back", out, int_imm(tiles)),
            ev("tt.tile_regs_release"),
        ])
        new_items = list(items)
        new_items[i_clear] = _replace_call(items[i_clear], clears[0], ev("tt.tile_regs_acquire"))
        for i in x_idx:
            new_items[i] = _replace_calls(items[i], mmas, on_mma)
        new_items[i_pack] = _replace_call(items[i_pack], packs[0], pack)
        return home, seq(new_items)

    # sub-blocked with spill / reload
    sh, sw = subblock(mt, nt, cap)
    sub = sh * sw
    acc_dtype = buffer_dtype(acc)
    if isinstance(x, tirx.For):
        k_var, k_ext = x.loop_var, x.extent
        inner_loops = [f for f in collect(x.body, tirx.For)
                       if any(c.same_as(m) for m in mmas for c in tt_calls(f))]
        if inner_loops:
            raise TTUnsupportedError(
                f"T.gemm into {acc.name} is nested in more than one loop between T.clear and the "
                "copy-out; only a single K loop is supported")
        if not isinstance(k_ext, tvm.tirx.IntImm):
            # a run-time extent (mutable scalars, A0.1: `end_iter - start_iter`, maybe 0):
            # the first and the last step are not known at compile time, as in a branch
            return _lower_conditional(cx, acc, mt, nt, kt, trans_b, a, b, out, items, home,
                                      i_clear, i_x, i_pack, clears, packs, x, mmas)
        k_ext = int(k_ext)
        first = tirx.EQ(k_var, int_imm(0))
        last = tirx.EQ(k_var, int_imm(k_ext - 1))
        if any(any(c.same_as(m) for m in mmas for c in tt_calls(b))
               for b in collect(x.body, tirx.IfThenElse)):
            return _lower_conditional(cx, acc, mt, nt, kt, trans_b, a, b, out, items, home,
                                      i_clear, i_x, i_pack, clears, packs, x, mmas)
    elif stmt_op_name(x) == "tt.mm.mma" or isinstance(x, (tirx.SeqStmt, tirx.AttrStmt)):
        k_ext, first, last = 1, None, None
    else:
        raise TTUnsupportedError(f"unsupported statement around the T.gemm into {acc.name}")

    # one K step (a K loop of one iteration: the whole K in one block) needs no partials
    spill = None
    if k_ext > 1:
        spill, spill_entry = cx.new_spill_cb(acc, mt, nt, acc_dtype)
        if acc_dtype == "float32" and spill_entry["id"] not in cx.config["unpack_to_dest_fp32"]:
            cx.config["unpack_to_dest_fp32"] = sorted(cx.config["unpack_to_dest_fp32"]
                                                       + [spill_entry["id"]])
    cx.plan.append({"acc": acc.name, "tiles": tiles, "capacity": cap, "subblock": [sh, sw],
                    "spill_cb": spill_entry["id"] if spill is not None else -1})

    def when(cond, stmts, static_value):
        """``stmts`` guarded by ``cond``; ``static_value`` when the loop has one step."""
        if k_ext == 1:
            return seq(stmts) if static_value else None
        return tirx.IfThenElse(cond, seq(stmts), None)

    def when_else(cond, then_stmts, else_stmts, static_value):
        if k_ext == 1:
            return seq(then_stmts if static_value else else_stmts)
        return tirx.IfThenElse(cond, seq(then_stmts), seq(else_stmts))

    if acc_dtype == "float32" and k_ext > 1 and cx.packer_l1_acc:
        cx.plan[-1]["l1_acc"] = True

        def on_mma(m):
            return l1_acc_on_mma(
                cx, m, spill=spill, out=out, mt=mt, nt=nt, sh=sh, sw=sw, k_var=k_var,
                k_ext=k_ext, matmul_loops=lambda a_, b_, rows, cols, tb: _matmul_loops(
                    a_, b_, rows, cols, kt, nt, tb, lambda h, w: h * sw + w))

        return _replace(items, home, i_clear, i_x, i_pack, clears, packs, x, mmas, on_mma)

    def on_mma(m):
        def block(i, j):
            reload = [] if spill is None else cx.srca_cfg(spill) + [
                ev("tt.copy_init", spill),
                ev("tt.cb_wait_front", spill, int_imm(sub)),
                loop_nest([sub], lambda t: ev("tt.copy_tile", spill, t, t), ["t"]),
                ev("tt.cb_pop_front", spill, int_imm(sub)),
            ] + cx.srca_cfg(b) + [ev("tt.matmul_init", a, b, int_imm(trans_b))]
            spill_pack = [] if spill is None else cx.pack_cfg(spill) + [
                ev("tt.cb_reserve_back", spill, int_imm(sub)),
                loop_nest([sub], lambda t: ev("tt.pack_tile", t, spill, t, int_imm(0)), ["t"]),
                ev("tt.cb_push_back", spill, int_imm(sub)),
            ]
            out_pack = cx.pack_cfg(out) + [loop_nest(
                [sh, sw],
                lambda h, w: ev("tt.pack_tile", h * sw + w, out,
                                (i * sh + h) * nt + j * sw + w, int_imm(1)),
                ["h", "w"])]
            not_first = tirx.Not(first) if first is not None else None
            not_last = tirx.Not(last) if last is not None else None
            return seq([
                ev("tt.tile_regs_acquire"),
                when(not_first, reload, False),
                _matmul_loops(a, b, (i * sh, sh), (j * sw, sw), kt, nt, trans_b,
                              lambda h, w: h * sw + w),
                ev("tt.tile_regs_commit"),
                ev("tt.tile_regs_wait"),
                when_else(not_last, spill_pack, out_pack, False),
                ev("tt.tile_regs_release"),
            ])

        blocks = loop_nest([mt // sh, nt // sw], block, ["sb_m", "sb_n"])
        return seq([
            when(last, [ev("tt.cb_reserve_back", out, int_imm(tiles))], True),
            blocks,
            when(last, [ev("tt.cb_push_back", out, int_imm(tiles))], True),
        ])

    return _replace(items, home, i_clear, i_x, i_pack, clears, packs, x, mmas, on_mma)


def _lower_conditional(cx, acc, mt, nt, kt, trans_b, a, b, out, items, home, i_clear, i_x,
                       i_pack, clears, packs, x, mmas):
    """A spilled accumulator whose K steps sit in a branch (``if BlockMask[by, bx, k]:``, or
    any condition): which step is the first or the last taken is known only when the kernel
    runs, so every step is alike.  The clear packs a block of zero partials (each sub-block
    packed from a freshly acquired, zeroed DST); every taken step reloads each sub-block's
    partials into DST, accumulates its matmuls and packs them back; the copy-out after the
    loop reloads each sub-block once more and packs it into its place in the output block.
    The partials keep the accumulator's dtype (float32 partials are unpacked straight to DST,
    exactly), so no step rounds what a single DST accumulation would not."""
    sh, sw = subblock(mt, nt, cx.capacity)
    sub = sh * sw
    tiles = mt * nt
    spill, spill_entry = cx.new_spill_cb(acc, mt, nt, buffer_dtype(acc))
    if buffer_dtype(acc) == "float32" and spill_entry["id"] not in cx.config["unpack_to_dest_fp32"]:
        cx.config["unpack_to_dest_fp32"] = sorted(cx.config["unpack_to_dest_fp32"]
                                                   + [spill_entry["id"]])
    cx.plan.append({"acc": acc.name, "tiles": tiles, "capacity": cx.capacity,
                    "subblock": [sh, sw], "spill_cb": spill_entry["id"], "conditional": True})
    n_sub = int_imm(sub)
    restore = cx.srca_cfg(b) + [ev("tt.matmul_init", a, b, int_imm(trans_b))]

    def reload():
        return cx.srca_cfg(spill) + [
            ev("tt.copy_init", spill),
            ev("tt.cb_wait_front", spill, n_sub),
            loop_nest([sub], lambda t: ev("tt.copy_tile", spill, t, t), ["t"]),
            ev("tt.cb_pop_front", spill, n_sub),
        ]

    def to_spill():
        return cx.pack_cfg(spill) + [
            ev("tt.cb_reserve_back", spill, n_sub),
            loop_nest([sub], lambda t: ev("tt.pack_tile", t, spill, t, int_imm(0)), ["t"]),
            ev("tt.cb_push_back", spill, n_sub),
        ]

    def rounds(body):
        return loop_nest([mt // sh, nt // sw], body, ["sb_m", "sb_n"])

    zeros = rounds(lambda i, j: seq([ev("tt.tile_regs_acquire"), ev("tt.tile_regs_commit"),
                                     ev("tt.tile_regs_wait")] + to_spill()
                                    + [ev("tt.tile_regs_release")]))

    def on_mma(m):
        return rounds(lambda i, j: seq(
            [ev("tt.tile_regs_acquire")] + reload() + restore + [
                _matmul_loops(a, b, (i * sh, sh), (j * sw, sw), kt, nt, trans_b,
                              lambda h, w: h * sw + w),
                ev("tt.tile_regs_commit"), ev("tt.tile_regs_wait")] + to_spill()
            + [ev("tt.tile_regs_release")]))

    copy_out = seq([ev("tt.cb_reserve_back", out, int_imm(tiles)), rounds(
        lambda i, j: seq([ev("tt.tile_regs_acquire")] + reload() + [
            ev("tt.tile_regs_commit"), ev("tt.tile_regs_wait")] + cx.pack_cfg(out) + [
            loop_nest([sh, sw], lambda h, w: ev("tt.pack_tile", h * sw + w, out,
                                                (i * sh + h) * nt + j * sw + w, int_imm(1)),
                      ["h", "w"]),
            ev("tt.tile_regs_release")])),
        ev("tt.cb_push_back", out, int_imm(tiles))] + restore)
    new_items = list(items)
    new_items[i_clear] = _replace_call(items[i_clear], clears[0], zeros)
    new_items[i_x] = _replace_calls(x, mmas, on_mma)
    new_items[i_pack] = _replace_call(items[i_pack], packs[0], copy_out)
    return home, seq(new_items)


def _replace(items, home, i_clear, i_x, i_pack, clears, packs, x, mmas, on_mma):
    """``home`` with the clear and the copy-out dropped and each mma lowered by ``on_mma``."""
    new_items = list(items)
    new_items[i_clear] = _replace_call(items[i_clear], clears[0], None)
    new_items[i_x] = _replace_calls(x, mmas, on_mma)
    new_items[i_pack] = _replace_call(items[i_pack], packs[0], None)
    return home, seq(new_items)


def _replace_call(stmt, call, replacement):
    return _replace_calls(stmt, [call], lambda _: replacement)


def _replace_calls(stmt, calls, make):
    def on_eval(e):
        if any(e.value.same_as(c) for c in calls):
            out = make(e.value)
            return out if out is not None else tirx.Evaluate(int_imm(0))
        return e

    return tt_map(stmt, [(tirx.Evaluate, on_eval)], order="post")
