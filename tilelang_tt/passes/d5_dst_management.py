"""D5 InsertDSTManagementTT: the DST register lifecycle, sized to DST's capacity.

Requires: InsertComputeInitTT (works on the compute kernel; others pass through).

Capacity ``D`` = tiles one ``tile_regs_acquire`` gives (8 for 16-bit half-sync, 4 with
``fp32_dest_acc_en``).  Guarantees, for the compute kernel:

* **accumulator that fits** (``Mt*Nt <= D``): ``acc.clear`` becomes ``tile_regs_acquire``,
  each ``mm.mma`` becomes ``matmul_tiles`` loops accumulating in DST, and ``acc.pack`` becomes
  ``commit / wait / cb_reserve_back / pack_tile... / cb_push_back / release``;
* **accumulator that does not fit**: computed in sub-blocks of ``sh x sw`` tiles
  (``sh | Mt``, ``sw | Nt``, ``sh*sw <= D``, largest then widest), as tt-metal's
  ``matmul_multicore_reuse`` does: in every K step each sub-block is acquired, reloaded from a
  spill CB (all but the first step), accumulated over the resident A/B blocks, and packed back
  to the spill CB - or, in the last step, straight into its place in the output block
  (``pack_tile<true>``), which is reserved before and pushed after the sub-blocks.  The
  structure required is ``acc.clear; [K loop containing mm.mma]; acc.pack`` in one statement
  list; anything else is a ``TTUnsupportedError``.  The spill CB (acc dtype, ``Mt*Nt`` pages)
  is added to ``tt.tile_dfg`` and, for fp32, unpacked straight to DST;
* **elementwise ops**: ``fpu.<op>`` processes ``D`` tiles per acquire (``<op>_tiles``);
  ``sfpu.<op>`` copies both operands into DST (``copy_tile``) and combines them with
  ``<op>_binary_tile``, ``D/2`` pairs per acquire; both reserve and push the output block;
* **expression programs**: ``sfpu.expr`` evaluates its postfix program (see
  :mod:`.eltwise_expr`) for ``D // k`` tiles per acquire, where ``k`` is the number of DST
  slots the program needs per tile: operands are copied into slots (``copy_tile``), SFPU
  functions and binary ops work in place (``<fn>_tile``, ``<op>_binary_tile``, scalar
  operands through ``<op>_unary_tile`` with the float's bits), and each tile's result is
  packed from its first slot.  A program that needs more slots than DST has is a
  ``TTResourceError``;
* **unary ops**: ``unary.<fn>`` copies ``D`` tiles per acquire into DST (``copy_tile``),
  applies ``<fn>_tile_init`` / ``<fn>_tile`` to each (nothing more for ``copy``) and packs them
  into the reserved output block;
* **reductions**: ``reduce.<max|sum>`` reduces each row of tiles into one DST tile
  (``reduce_init`` / ``reduce_tile`` / ``reduce_uninit``), ``D`` rows per acquire;
  ``const_tile`` fills ``D`` tiles per acquire (``fill_tile``) and packs them;
* ``pack_reconfig_data_format`` precedes each pack group when the kernel packs more than one
  data format; ``tt.dst_plan`` records capacity and sub-blocking per accumulator.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from .. import attrs, ops
from ..errors import TTResourceError, TTUnsupportedError, TTVerifyError
from ..target import profile_of
from .common import (
    buffer_dtype, collect, int_imm, loop_nest, require_attr, seq, stmt_op_name, stmts_of,
    to_py, tt_calls, tt_pass,
)
from .common import tt_map
from .c1_shared_to_cb import alloc_cb_call
from .d4_compute_init import CBInfo
from .eltwise_expr import float_bits, parse_program

_FPU, _SFPU, _UNARY = ops.FPU_BINARY, ops.SFPU_BINARY, ops.UNARY
_ELTWISE = {*_FPU, *_SFPU, *_UNARY, "tt.sfpu.expr", "tt.reduce.max", "tt.reduce.sum"}


def ev(name, *args):
    return ops.evaluate(name, *args)


def subblock(mt: int, nt: int, cap: int) -> tuple[int, int]:
    best = (1, 1)
    for sh in range(1, mt + 1):
        for sw in range(1, nt + 1):
            if mt % sh or nt % sw or sh * sw > cap:
                continue
            if (sh * sw, sw) > (best[0] * best[1], best[1]):
                best = (sh, sw)
    return best


def largest_divisor(n: int, cap: int) -> int:
    return max(d for d in range(1, min(n, max(cap, 1)) + 1) if n % d == 0)


class _Ctx:
    def __init__(self, func):
        self.func = func
        self.info = CBInfo(func)
        config = to_py(require_attr(func, attrs.COMPUTE_CONFIG, "InsertDSTManagementTT"))
        self.config = config
        profile = profile_of(str(require_attr(func, attrs.TARGET, "InsertDSTManagementTT")))
        self.capacity = profile.dst_capacity(bool(config["fp32_dest_acc_en"]),
                                             bool(config["dst_full_sync_en"]))
        dtypes = {e["dtype"] for e in self.info.entries}
        self.new_cbs = []  # spill CBs: (Bind, dfg entry)
        self.multi_format = len(dtypes) > 1
        self.plan = []

    def note_dtype(self, dtype):
        dtypes = {e["dtype"] for e in self.info.entries} | {dtype}
        self.multi_format = len(dtypes) > 1

    def pack_cfg(self, cb):
        return [ev("tt.pack_reconfig_data_format", cb)] if self.multi_format else []

    def srca_cfg(self, cb):
        return [ev("tt.reconfig_data_format_srca", cb)] if self.multi_format else []

    def srcb_cfg(self, cb):
        return [ev("tt.reconfig_data_format_srcb", cb)] if self.multi_format else []

    def tiles(self, cb) -> int:
        entry = self.info._find(cb)
        return int(entry["rows"]) * int(entry["cols"])

    def new_spill_cb(self, acc, rows, cols, dtype):
        used = {int(e["id"]) for e in self.info.entries}
        free = [i for i in range(24, 32) if i not in used] or \
            [i for i in range(32) if i not in used]
        if not free:
            raise TTUnsupportedError(
                f"no circular buffer left for the partial results of {acc.name} (32 in use)")
        var = tirx.Var(f"{acc.name}_partials_cb", "int32")
        entry = {"name": f"{acc.name}_partials", "rows": rows, "cols": cols,
                 "depth": 1, "dtype": dtype, "page_bytes": 32 * 32 * (4 if dtype == "float32" else 2),
                 "producer": "compute", "consumer": "compute", "role": "spill", "id": free[0]}
        self.info.entries.append(entry)
        self.info.var_ids[var] = free[0]
        bind = tirx.Bind(var, alloc_cb_call(rows, cols, 1, dtype, entry["name"], cb_id=free[0]))
        self.new_cbs.append(bind)
        self.note_dtype(dtype)
        return var, entry


def _matmul_loops(a, b, mt_range, nt_range, kt, nt_total, trans_b, dst_of):
    """matmul_tiles over kk x (rows of mt_range) x (cols of nt_range)."""
    (m0, sh), (n0, sw) = mt_range, nt_range

    def body(kk, h, w):
        ia = (m0 + h) * kt + kk
        col = n0 + w
        ib = col * kt + kk if trans_b else kk * nt_total + col
        return ev("tt.matmul_tiles", a, b, ia, ib, dst_of(h, w))

    return loop_nest([kt, sh, sw], body, ["kk", "h", "w"])


def _lower_accumulator(cx: _Ctx, acc, desc, body):
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
    if any(int(m.args[5]) != kt or not m.args[1].same_as(a) or not m.args[2].same_as(b)
           for m in mmas[1:]):
        raise TTUnsupportedError(f"accumulator {acc.name} is updated by different T.gemm shapes")
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
    x_idx = {index_of(m) for m in mmas}
    if len(x_idx) != 1 or not (i_clear < min(x_idx) < i_pack):
        raise TTUnsupportedError(
            f"the T.gemm updates of {acc.name} must sit in one statement (the K loop) between "
            f"T.clear({acc.name}) and its copy-out")
    i_x = x_idx.pop()
    x = items[i_x]
    if any(stmt_op_name(it) in _ELTWISE for it in items[i_clear:i_pack]):
        raise TTUnsupportedError(f"elementwise ops cannot run while {acc.name} occupies DST")

    if tiles <= cap:
        cx.plan.append({"acc": acc.name, "tiles": tiles, "capacity": cap, "subblock": [mt, nt],
                        "spill_cb": -1})

        def on_mma(m):
            return _matmul_loops(m.args[1], m.args[2], (0, mt), (0, nt), kt, nt, trans_b,
                                 lambda h, w: h * nt + w)

        pack = seq([ev("tt.tile_regs_commit"), ev("tt.tile_regs_wait")] + cx.pack_cfg(out) + [
            ev("tt.cb_reserve_back", out, int_imm(tiles)),
            loop_nest([tiles], lambda t: ev("tt.pack_tile", t, out, t, int_imm(0)), ["t"]),
            ev("tt.cb_push_back", out, int_imm(tiles)),
            ev("tt.tile_regs_release"),
        ])
        new_items = list(items)
        new_items[i_clear] = _replace_call(items[i_clear], clears[0], ev("tt.tile_regs_acquire"))
        new_items[i_x] = _replace_calls(x, mmas, on_mma)
        new_items[i_pack] = _replace_call(items[i_pack], packs[0], pack)
        return home, seq(new_items)

    # sub-blocked with spill / reload
    sh, sw = subblock(mt, nt, cap)
    sub = sh * sw
    acc_dtype = buffer_dtype(acc)
    spill, spill_entry = cx.new_spill_cb(acc, mt, nt, acc_dtype)
    cx.plan.append({"acc": acc.name, "tiles": tiles, "capacity": cap, "subblock": [sh, sw],
                    "spill_cb": spill_entry["id"]})
    if acc_dtype == "float32" and spill_entry["id"] not in cx.config["unpack_to_dest_fp32"]:
        cx.config["unpack_to_dest_fp32"] = sorted(cx.config["unpack_to_dest_fp32"]
                                                   + [spill_entry["id"]])
    if isinstance(x, tirx.For):
        k_var, k_ext = x.loop_var, x.extent
        if not isinstance(k_ext, tvm.tirx.IntImm):
            raise TTUnsupportedError(f"the K loop of {acc.name} must have a constant extent")
        k_ext = int(k_ext)
        inner_loops = [f for f in collect(x.body, tirx.For)
                       if any(c.same_as(m) for m in mmas for c in tt_calls(f))]
        if inner_loops:
            raise TTUnsupportedError(
                f"T.gemm into {acc.name} is nested in more than one loop between T.clear and the "
                "copy-out; only a single K loop is supported")
        first = tirx.EQ(k_var, int_imm(0))
        last = tirx.EQ(k_var, int_imm(k_ext - 1))
    elif stmt_op_name(x) == "tt.mm.mma" or isinstance(x, (tirx.SeqStmt, tirx.AttrStmt)):
        k_ext, first, last = 1, None, None
    else:
        raise TTUnsupportedError(f"unsupported statement around the T.gemm into {acc.name}")

    def when(cond, stmts, static_value):
        """``stmts`` guarded by ``cond``; ``static_value`` when the loop has one step."""
        if k_ext == 1:
            return seq(stmts) if static_value else None
        return tirx.IfThenElse(cond, seq(stmts), None)

    def when_else(cond, then_stmts, else_stmts, static_value):
        if k_ext == 1:
            return seq(then_stmts if static_value else else_stmts)
        return tirx.IfThenElse(cond, seq(then_stmts), seq(else_stmts))

    def on_mma(m):
        def block(i, j):
            reload = cx.srca_cfg(spill) + [
                ev("tt.copy_tile_to_dst_init_short", spill),
                ev("tt.cb_wait_front", spill, int_imm(sub)),
                loop_nest([sub], lambda t: ev("tt.copy_tile", spill, t, t), ["t"]),
                ev("tt.cb_pop_front", spill, int_imm(sub)),
            ] + cx.srca_cfg(b) + [ev("tt.matmul_init", a, b, int_imm(trans_b))]
            spill_pack = cx.pack_cfg(spill) + [
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


def _pack_round(cx: _Ctx, out, base, chunk, slot=lambda d: d):
    """End of a DST round: hand DST to the packer and pack tiles ``base .. base + chunk`` of
    the reserved ``out`` block from their slots."""
    return [ev("tt.tile_regs_commit"), ev("tt.tile_regs_wait")] + cx.pack_cfg(out) + [
        loop_nest([chunk], lambda d: ev("tt.pack_tile", slot(d), out, base + d, int_imm(0)),
                  ["d"]),
        ev("tt.tile_regs_release"),
    ]


def _in_chunks(out, n, chunk, group):
    """The ``n``-tile output block reserved, produced ``chunk`` tiles per DST round, pushed."""
    return seq([
        ev("tt.cb_reserve_back", out, int_imm(n)),
        loop_nest([n // chunk], group, ["chunk"]),
        ev("tt.cb_push_back", out, int_imm(n)),
    ])


def _program_slots(tokens) -> int:
    """DST slots one tile of an expression program needs (its deepest stack of tiles)."""
    depth = deepest = 0
    stack = []
    for kind, _ in tokens:
        if kind in ("load", "bcast", "const"):
            stack.append("const" if kind == "const" else "load")
            depth += kind != "const"
        elif kind == "binary":
            rhs, lhs = stack.pop(), stack.pop()
            depth -= rhs == "load" and lhs == "load"
            stack.append("load")
        deepest = max(deepest, depth)
    return deepest


def _lower_expr(cx: _Ctx, call):
    out, n, program = call.args[0], int(call.args[1]), str(call.args[2].value)
    ins = list(call.args[3:])
    tokens = parse_program(program)
    slots = _program_slots(tokens)
    if slots > cx.capacity:
        raise TTResourceError(
            f"the elementwise expression `{program}` needs {slots} DST tiles at once; DST holds "
            f"{cx.capacity} in this mode (split the expression over two T.Parallel statements)")
    chunk = largest_divisor(n, cx.capacity // slots)

    def each(make):
        return loop_nest([chunk], make, ["d"])

    def group(c):
        base = c * chunk
        body = [ev("tt.tile_regs_acquire")]
        stack = []  # ("slot", index) or ("const", value)
        for kind, v in tokens:
            top = len([s for s in stack if s[0] == "slot"])
            if kind == "load":
                cb = ins[v]
                body += cx.srca_cfg(cb) + [
                    ev("tt.copy_tile_to_dst_init_short", cb),
                    each(lambda d, cb=cb, s=top: ev("tt.copy_tile", cb, base + d, d * slots + s)),
                ]
                stack.append(("slot", top))
            elif kind == "bcast":  # operand k op column vector m, on the matrix engine
                op, k, m = v
                a, r = ins[k], ins[m]
                cols = n // cx.tiles(r)  # tiles per row of the block
                body += cx.srca_cfg(a) + cx.srcb_cfg(r) + [
                    ev(f"tt.{op}_bcast_cols_init_short", a, r),
                    each(lambda d, a=a, r=r, op=op, s=top, cols=cols: ev(
                        f"tt.{op}_tiles_bcast_cols", a, r, base + d,
                        tirx.floordiv(base + d, cols), d * slots + s)),
                ]
                stack.append(("slot", top))
            elif kind == "const":
                stack.append(("const", v))
            elif kind == "unary":
                s = stack[-1][1]
                body += [ev(f"tt.{v}_tile_init"),
                         each(lambda d, s=s, fn=v: ev(f"tt.{fn}_tile", d * slots + s))]
            else:
                rhs, lhs = stack.pop(), stack.pop()
                body += _binary_in_dst(v, lhs, rhs, slots, each)
                stack.append(lhs if lhs[0] == "slot" else rhs)
        return seq(body + _pack_round(cx, out, base, chunk, lambda d: d * slots))

    return _in_chunks(out, n, chunk, group)


def _binary_in_dst(op, lhs, rhs, slots, each):
    """``lhs op rhs`` into the slot of the tile operand; at least one side is a tile."""
    if lhs[0] == "slot" and rhs[0] == "slot":
        return [ev(f"tt.{op}_binary_tile_init"),
                each(lambda d: ev(f"tt.{op}_binary_tile", d * slots + lhs[1], d * slots + rhs[1],
                                  d * slots + lhs[1]))]
    (_, s), (_, c) = (lhs, rhs) if lhs[0] == "slot" else (rhs, lhs)
    pre = []
    if lhs[0] == "slot" or op in ("add", "mul"):
        scalar_op = op
    elif op == "sub":
        scalar_op = "rsub"  # c - x
    else:  # c / x = c * recip(x)
        pre = [ev("tt.recip_tile_init"), each(lambda d: ev("tt.recip_tile", d * slots + s))]
        scalar_op = "mul"
    bits = tirx.IntImm("uint32", float_bits(c))
    return pre + [ev("tt.binop_with_scalar_tile_init"),
                  each(lambda d: ev(f"tt.{scalar_op}_unary_tile", d * slots + s, bits))]


def _lower_reduce(cx: _Ctx, call):
    out, src, scaler, mt, nt = call.args[0], call.args[1], call.args[2], int(call.args[3]), \
        int(call.args[4])
    pool = 1 if call.op.name == "tt.reduce.max" else 0  # PoolType: SUM = 0, MAX = 1
    chunk = largest_divisor(mt, cx.capacity)

    def group(c):
        base = c * chunk
        return seq([ev("tt.tile_regs_acquire")] + cx.srca_cfg(src) + cx.srcb_cfg(scaler) + [
            ev("tt.reduce_init", src, scaler, out, int_imm(pool), int_imm(0)),
            loop_nest([chunk, nt], lambda d, k: ev(
                "tt.reduce_tile", src, scaler, (base + d) * nt + k, int_imm(0), d, int_imm(pool),
                int_imm(0)), ["d", "k"]),
            ev("tt.reduce_uninit"),
        ] + _pack_round(cx, out, base, chunk))

    return _in_chunks(out, mt, chunk, group)


def _lower_const_tile(cx: _Ctx, call):
    cb, value, n = call.args[0], call.args[1], int(call.args[2])
    chunk = largest_divisor(n, cx.capacity)

    def group(c):
        return seq([ev("tt.tile_regs_acquire"), ev("tt.fill_tile_init"),
                    loop_nest([chunk], lambda d: ev("tt.fill_tile", d, value), ["d"])]
                   + _pack_round(cx, cb, c * chunk, chunk))

    return _in_chunks(cb, n, chunk, group)


def _lower_unary(cx: _Ctx, call):
    out, a, n = call.args[0], call.args[1], int(call.args[2])
    fn = _UNARY[call.op.name]
    chunk = largest_divisor(n, cx.capacity)

    def group(c):
        base = c * chunk
        apply = [] if fn == "copy" else [
            ev(f"tt.{fn}_tile_init"),
            loop_nest([chunk], lambda d: ev(f"tt.{fn}_tile", d), ["d"]),
        ]
        return seq([ev("tt.tile_regs_acquire")] + cx.srca_cfg(a) + [
            ev("tt.copy_tile_to_dst_init_short", a),
            loop_nest([chunk], lambda d: ev("tt.copy_tile", a, base + d, d), ["d"]),
        ] + apply + _pack_round(cx, out, base, chunk))

    return _in_chunks(out, n, chunk, group)


def _lower_eltwise(cx: _Ctx, call):
    name = call.op.name
    out, a, b, n = call.args[0], call.args[1], call.args[2], int(call.args[3])
    cap = cx.capacity
    if name in _FPU:
        op = _FPU[name]
        chunk = largest_divisor(n, cap)

        def group(c):
            base = c * chunk
            return seq([
                ev("tt.tile_regs_acquire"),
                loop_nest([chunk], lambda d: ev(f"tt.{op}_tiles", a, b, base + d, base + d, d),
                          ["d"]),
            ] + _pack_round(cx, out, base, chunk))
    else:
        op = _SFPU[name]
        if cap < 2:
            raise TTVerifyError("DST capacity below two tiles")
        chunk = largest_divisor(n, cap // 2)

        def group(c):
            base = c * chunk
            return seq([
                ev("tt.tile_regs_acquire"),
            ] + cx.srca_cfg(a) + [
                ev("tt.copy_tile_to_dst_init_short", a),
                loop_nest([chunk], lambda d: ev("tt.copy_tile", a, base + d, 2 * d), ["d"]),
            ] + cx.srca_cfg(b) + [
                ev("tt.copy_tile_to_dst_init_short", b),
                loop_nest([chunk], lambda d: ev("tt.copy_tile", b, base + d, 2 * d + 1), ["d"]),
                ev(f"tt.{op}_binary_tile_init"),
                loop_nest([chunk], lambda d: ev(f"tt.{op}_binary_tile", 2 * d, 2 * d + 1, 2 * d),
                          ["d"]),
            ] + _pack_round(cx, out, base, chunk, lambda d: 2 * d))
    return _in_chunks(out, n, chunk, group)


@tt_pass("InsertDSTManagementTT", requires=("InsertComputeInitTT",))
def InsertDSTManagementTT(func, mod, ctx):
    """Expand abstract compute ops into DST-managed tile calls (see module docstring)."""
    if str(require_attr(func, attrs.KERNEL_KIND, "InsertDSTManagementTT")) != "compute":
        return func
    cx = _Ctx(func)
    body = func.body
    for alloc in collect(body, tirx.AllocBuffer):
        desc = (alloc.annotations or {}).get(attrs.ACC_DESC)
        if desc is None:
            continue
        home, new_home = _lower_accumulator(cx, alloc.buffer, to_py(desc), body)
        body = tt_map(
            body, [(tirx.SeqStmt, lambda s, h=home, n=new_home: n if s.same_as(h) else s)],
            order="pre")

    def on_eval(e):
        name = stmt_op_name(e)
        if name in _FPU or name in _SFPU:
            return _lower_eltwise(cx, e.value)
        if name in _UNARY:
            return _lower_unary(cx, e.value)
        if name == "tt.sfpu.expr":
            return _lower_expr(cx, e.value)
        if name in ("tt.reduce.max", "tt.reduce.sum"):
            return _lower_reduce(cx, e.value)
        if name == "tt.const_tile":
            return _lower_const_tile(cx, e.value)
        return e

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
