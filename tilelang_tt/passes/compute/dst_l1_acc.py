"""DST lowering of a spilled GEMM accumulator with packer L1 accumulation (part of D5).

Used by :mod:`.dst_accumulator` for a float32 accumulator computed in sub-blocks over a K
loop of ``n >= 2`` steps, unless the compile option ``tt.packer_l1_acc`` is False.  Instead
of packing every sub-block to the partials CB and copying it back into DST in the next K
step, the packer adds each K step's sub-block sum to the partials in L1
(``pack_reconfig_l1_acc``, set after the packer's data format at the start of the step), as
tt-metal's matmuls do with PACKER_L1_ACC:

* step 0: reserve the whole partials block (``Mt x Nt`` pages, the CB's whole ring), pack
  every sub-block into its place (``pack_tile<true>``) overwriting, push the block;
* steps 1 .. n-2: wait for the block and pop it, reserve it again - the ring has exactly one
  block, so the write pointer is back on the same pages and their values are still there -
  and pack every sub-block with L1 accumulation on, push;
* step n-1: wait for the block, copy each sub-block's partials into DST (``copy_tile``: the
  float32 partials CB is unpacked straight to DST, exactly) before its matmuls, pack the
  result into the output block, pop the partials after the last sub-block.

The partials stay float32 and every addition is a float32 addition (in DST or by the
packer), so the accumulation keeps float32 semantics; only the order of the additions
differs from accumulating in DST (one sum per K block, added to the partials).  L1
accumulation is switched off again before every other pack.
"""

from __future__ import annotations

from tvm import tirx

from ..common import int_imm, loop_nest, seq
from .dst_context import ev


def l1_acc_on_mma(cx, mma, *, spill, out, mt, nt, sh, sw, k_var, k_ext, matmul_loops):
    """The statements replacing one ``tt.mm.mma`` in K step ``k_var`` of ``k_ext``."""
    a, b, trans_b = mma.args[1], mma.args[2], int(mma.args[6])
    tiles = mt * nt
    first = tirx.EQ(k_var, int_imm(0))
    last = tirx.EQ(k_var, int_imm(k_ext - 1))

    def when(cond, stmts):
        return tirx.IfThenElse(cond, seq(stmts), None)

    def place(i, j, h, w):
        return (i * sh + h) * nt + j * sw + w

    def block(i, j):
        reload = cx.srca_cfg(spill) + [
            ev("tt.copy_init", spill),
            loop_nest([sh, sw], lambda h, w: ev("tt.copy_tile", spill, place(i, j, h, w),
                                                 h * sw + w), ["h", "w"]),
        ] + cx.srca_cfg(b) + [ev("tt.matmul_init", a, b, int_imm(trans_b))]
        to_partials = loop_nest(
            [sh, sw], lambda h, w: ev("tt.pack_tile", h * sw + w, spill, place(i, j, h, w),
                                      int_imm(1)), ["h", "w"])
        to_out = loop_nest(
            [sh, sw], lambda h, w: ev("tt.pack_tile", h * sw + w, out, place(i, j, h, w),
                                      int_imm(1)), ["h", "w"])
        return seq([
            ev("tt.tile_regs_acquire"),
            when(last, reload),
            matmul_loops(a, b, (i * sh, sh), (j * sw, sw), trans_b),
            ev("tt.tile_regs_commit"),
            ev("tt.tile_regs_wait"),
            tirx.IfThenElse(last, to_out, to_partials),
            ev("tt.tile_regs_release"),
        ])

    n_tiles = int_imm(tiles)
    return seq([
        tirx.IfThenElse(last, seq([ev("tt.cb_wait_front", spill, n_tiles)] + cx.pack_cfg(out)
                                  + [ev("tt.cb_reserve_back", out, n_tiles)]), seq([
            when(tirx.Not(first), [ev("tt.cb_wait_front", spill, n_tiles),
                                   ev("tt.cb_pop_front", spill, n_tiles)]),
        ] + cx.pack_cfg(spill) + [
            ev("tt.cb_reserve_back", spill, n_tiles),
            tirx.IfThenElse(first, ev("tt.pack_reconfig_l1_acc", int_imm(0)),
                            ev("tt.pack_reconfig_l1_acc", int_imm(1))),
        ])),
        loop_nest([mt // sh, nt // sw], block, ["sb_m", "sb_n"]),
        tirx.IfThenElse(last, seq([
            ev("tt.cb_pop_front", spill, n_tiles),
            ev("tt.cb_push_back", out, n_tiles),
        ]), seq([
            ev("tt.pack_reconfig_l1_acc", int_imm(0)),
            ev("tt.cb_push_back", spill, n_tiles),
        ])),
    ])
