"""D5 InsertDSTManagementTT: the DST register lifecycle, sized to DST's capacity.

Requires: InsertComputeInitTT (works on the compute kernel; others pass through).

Capacity ``D`` = tiles one ``tile_regs_acquire`` gives (8 for 16-bit half-sync, 4 with
``fp32_dest_acc_en``).  Guarantees, for the compute kernel:

* **accumulator that fits** (``Mt*Nt <= D``, and no other compute op between its clear and
  its copy-out): ``acc.clear`` becomes ``tile_regs_acquire``,
  each ``mm.mma`` becomes ``matmul_tiles`` loops accumulating in DST, and ``acc.pack`` becomes
  ``commit / wait / cb_reserve_back / pack_tile... / cb_push_back / release``;
* **accumulator that does not fit** (or shares the K loop with other compute ops): computed in sub-blocks of ``sh x sw`` tiles
  (``sh | Mt``, ``sw | Nt``, ``sh*sw <= D``, largest then widest), as tt-metal's
  ``matmul_multicore_reuse`` does: in every K step each sub-block is acquired, reloaded from a
  spill CB (all but the first step), accumulated over the resident A/B blocks, and packed back
  to the spill CB - or, in the last step, straight into its place in the output block
  (``pack_tile<true>``), which is reserved before and pushed after the sub-blocks.  A float32
  accumulator's partials are instead accumulated in L1 by the packer and reloaded only in the
  last step (:mod:`.dst_l1_acc`; compile option ``tt.packer_l1_acc``).  A K loop of one
  step needs no spill CB.  The
  structure required is ``acc.clear; [K loop containing mm.mma]; acc.pack`` in one statement
  list; anything else is a ``TTUnsupportedError``.  The spill CB (acc dtype, ``Mt*Nt`` pages)
  is added to ``tt.tile_dfg`` and, for fp32, unpacked straight to DST;
* **matrix-engine elementwise ops**: ``fpu.<op>`` processes ``D`` tiles per acquire
  (``<op>_tiles``) and reserves and pushes the output block;
* **expressions**: ``eltwise`` evaluates its tree (see :mod:`.eltwise_expr`) in post-order for
  ``D // k`` tiles per acquire, where ``k`` is the number of DST slots the tree needs per
  tile: operands are copied into slots (``copy_tile``; an operand read transposed,
  ``load_t``, by ``transpose_init`` / ``transpose_tile`` of tile ``(c, r)`` of its block for
  output tile ``(r, c)``), SFPU functions and binary ops work in
  place (``<fn>_tile``, ``<op>_binary_tile``, scalar operands through ``<op>_unary_tile``
  with the float's bits), broadcasts write a slot from the matrix engine
  (``<op>_tiles_bcast_<dim>``), and each tile's result is packed from its first slot (a copy
  is ``copy_tile`` and the pack; one function of one operand copies ``D`` tiles, applies
  ``<fn>_tile_init`` / ``<fn>_tile`` to each and packs them).  A tree that needs more slots
  than DST has is a ``TTResourceError``;
* **reductions**: ``reduce.<max|sum>`` reduces each row of tiles into one DST tile
  (``reduce_init`` / ``reduce_tile`` / ``reduce_uninit``), ``D`` rows per acquire;
  ``const_tile`` fills ``D`` tiles per acquire (``fill_tile``) and packs them;
* **scans**: ``scan.cumsum`` walks each column of tiles top to bottom, ``cumsum_tile`` carrying
  the column totals (``first`` for the top tile), as many tiles per acquire as DST holds;
  ``scan.flip_rows`` turns a block upside down a tile per acquire (``reshuffle_rows_tile``
  into a zeroed slot, packed to the mirrored tile);
* ``pack_reconfig_data_format`` precedes each pack group when the kernel packs more than one
  data format; ``tt.dst_plan`` records capacity and sub-blocking per accumulator.
"""

from __future__ import annotations

from tvm import tirx

from ... import attrs
from ..common import (
    collect,
    int_imm,
    require_attr,
    seq,
    stmt_op_name,
    stmts_of,
    to_py,
    tt_map,
    tt_pass,
)
from .dst_accumulator import lower_accumulator
from .dst_context import DstContext
from .dst_streams import lower_block_op


@tt_pass("InsertDSTManagementTT", requires=("InsertComputeInitTT",), scalar_programs=True)
def InsertDSTManagementTT(func, mod, ctx):
    """Expand abstract compute ops into DST-managed tile calls (see module docstring)."""
    if str(require_attr(func, attrs.KERNEL_KIND, "InsertDSTManagementTT")) != "compute":
        return func
    cx = DstContext(func)
    body = func.body
    for alloc in collect(body, tirx.AllocBuffer):
        desc = (alloc.annotations or {}).get(attrs.ACC_DESC)
        if desc is None:
            continue
        home, new_home = lower_accumulator(cx, alloc.buffer, to_py(desc), body)
        body = tt_map(
            body, [(tirx.SeqStmt, lambda s, h=home, n=new_home: n if s.same_as(h) else s)],
            order="pre")

    def on_eval(e):
        lowered = lower_block_op(cx, e.value) if stmt_op_name(e) else None
        return e if lowered is None else lowered

    body = tt_map(body, [(tirx.Evaluate, on_eval)], order="post")
    # fragments have no storage of their own any more: DST and CBs hold them
    body = tt_map(
        body, [(tirx.AllocBuffer, lambda a: tirx.Evaluate(int_imm(0))
                if attrs.ACC_DESC in (a.annotations or {}) else a)], order="post")
    if cx.new_cbs:
        items = stmts_of(body)
        body = seq(cx.new_cbs + items)
    body = tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")
    dfg = [dict(e) for e in cx.info.entries]
    return (func.with_body(body).with_attr(attrs.TILE_DFG, dfg)
            .with_attr(attrs.COMPUTE_CONFIG, cx.config).with_attr(attrs.DST_PLAN, cx.plan))
