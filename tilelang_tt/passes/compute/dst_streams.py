"""DST lowering of the block-streaming compute ops (part of D5, see
:mod:`.d5_dst_management`): matrix-engine elementwise ops, expressions (``tt.eltwise``: copies,
SFPU functions, fused trees), reductions and constant tiles.  Each reserves its output block,
fills it in DST rounds of as many tiles as DST holds, and pushes it.
"""

from __future__ import annotations

import math

from tvm import tirx

from ... import ops
from ...errors import TTResourceError
from ..common import int_imm, loop_nest, seq, simplify
from .dst_context import DstContext, ev, in_chunks, largest_divisor, pack_round
from ..frontend.eltwise_expr import float_bits, postfix, program_slots

ARITH, FUNCTIONS = ops.ARITH, ops.FUNCTIONS


def _lower_expr(cx: DstContext, call):
    a = ops.named(call)
    out, n, tree, ins = a.out, int(a.ntiles), a.expr, list(a.ins)
    tokens = postfix(tree)
    slots = program_slots(tokens)
    if slots > cx.capacity:
        raise TTResourceError(
            f"the elementwise expression `{tree}` needs {slots} DST tiles at once; DST holds "
            f"{cx.capacity} in this mode (split the expression over two T.Parallel statements)",
            span=call.span)
    chunk = largest_divisor(n, cx.capacity // slots)
    out_entry = cx.info._find(out)
    out_rows, out_cols = int(out_entry["rows"]), int(out_entry["cols"])

    def transposed_tile(t):
        """The tile of a transposed operand (``out_cols x out_rows`` tiles) that output tile
        ``t`` (row ``t // out_cols``, column ``t % out_cols``) reads: its (column, row)."""
        return simplify(tirx.floormod(t, out_cols) * out_rows + tirx.floordiv(t, out_cols))

    def each(make):
        return loop_nest([chunk], lambda d: make(_Slot(d, slots)), ["d"])

    def group(c):
        base = c * chunk
        body = [ev("tt.tile_regs_acquire")]
        stack = []  # ("slot", index) or ("const", value)
        for kind, v in tokens:
            top = len([s for s in stack if s[0] == "slot"])
            if kind == "load":
                cb = ins[v]
                body += cx.srca_cfg(cb) + [
                    ev("tt.copy_init", cb),
                    each(lambda d, cb=cb, s=top: ev("tt.copy_tile", cb, base + d.tile, d.at(s))),
                ]
                stack.append(("slot", top))
            elif kind == "load_t":  # operand v holds the output block transposed
                cb = ins[v]
                body += cx.srca_cfg(cb) + [
                    ev("tt.transpose_init", cb),
                    each(lambda d, cb=cb, s=top: ev("tt.transpose_tile", cb,
                                                    transposed_tile(base + d.tile), d.at(s))),
                ]
                stack.append(("slot", top))
            elif kind == "load_bcast":  # a vector broadcast into a slot of its own (SrcB)
                m, orient = v
                r = ins[m]
                cols = n // cx.tiles(r) if orient == "col" else cx.tiles(r)
                tile_of = (lambda t, cols=cols: tirx.floordiv(t, cols)) if orient == "col" else \
                    (lambda t: int_imm(0)) if orient == "scalar" else \
                    (lambda t, cols=cols: tirx.floormod(t, cols))
                bcast = int_imm({"col": 1, "row": 2, "scalar": 3}[orient])
                body += cx.srcb_cfg(r) + [
                    ev("tt.unary_bcast_init", r, bcast),
                    each(lambda d, r=r, s=top, tile_of=tile_of, bcast=bcast: ev(
                        "tt.unary_bcast", r, tile_of(base + d.tile), d.at(s), bcast)),
                ]
                stack.append(("slot", top))
            elif kind == "bcast":  # operand k op column vector m, on the matrix engine
                op, k, m, orient = v
                a, r = ins[k], ins[m]
                if orient == "col":  # one vector tile per row of tiles
                    cols = n // cx.tiles(r)
                    tile_of = lambda t, cols=cols: tirx.floordiv(t, cols)  # noqa: E731
                else:  # one vector tile per column of tiles
                    cols = cx.tiles(r)
                    tile_of = lambda t, cols=cols: tirx.floormod(t, cols)  # noqa: E731
                body += cx.srca_cfg(a) + cx.srcb_cfg(r) + [
                    ev(ARITH[op].bcast_init[orient], a, r),
                    each(lambda d, a=a, r=r, op=op, s=top, orient=orient, tile_of=tile_of: ev(
                        ARITH[op].bcast_tiles[orient], a, r, base + d.tile,
                        tile_of(base + d.tile), d.at(s))),
                ]
                stack.append(("slot", top))
            elif kind == "const":
                stack.append(("const", v))
            elif kind == "unary":
                s = stack[-1][1]
                body += [ev(FUNCTIONS[v].init),
                         each(lambda d, s=s, fn=v: ev(FUNCTIONS[fn].apply, d.at(s),
                                                      *FUNCTIONS[fn].args))]
            elif kind == "where":
                args = [stack.pop() for _ in range(3)][::-1]  # condition, true, false
                base_slot = len([s for s in stack if s[0] == "slot"])
                free = base_slot + sum(a[0] == "slot" for a in args)
                at = []
                for a in args:  # constants are filled into slots of their own
                    if a[0] == "slot":
                        at.append(a[1])
                        continue
                    bits = tirx.IntImm("uint32", float_bits(a[1]))
                    body += [ev("tt.fill_tile_init"),
                             each(lambda d, s=free, bits=bits: ev("tt.fill_tile_bitcast",
                                                                  d.at(s), bits))]
                    at.append(free)
                    free += 1
                fp32 = int_imm(int(bool(cx.config["fp32_dest_acc_en"])))
                body += [ev("tt.where_tile_init"),
                         each(lambda d, at=at, o=base_slot: ev(
                             "tt.where_tile", *[d.at(x) for x in at], d.at(o), fp32))]
                stack.append(("slot", base_slot))
            else:
                rhs, lhs = stack.pop(), stack.pop()
                body += _binary_in_dst(v, lhs, rhs, slots, each)
                stack.append(lhs if lhs[0] == "slot" else rhs)
        return seq(body + pack_round(cx, out, base, chunk,
                                     lambda d: _Slot(d, slots).at(0)))

    return in_chunks(out, n, chunk, group)


class _Slot:
    """DST slots of tile ``d`` of a round: ``slots`` consecutive ones per tile."""

    def __init__(self, d, slots):
        self.tile, self.slots = d, slots

    def at(self, s):
        return simplify(self.tile * self.slots + s) if not isinstance(self.tile, int) else \
            int_imm(self.tile * self.slots + s)


def _binary_in_dst(op, lhs, rhs, slots, each):
    """``lhs op rhs`` into the slot of the tile operand; at least one side is a tile."""
    if op == "pow" and lhs[0] == "const":  # c ** y: rpow_tile takes the base's float32 bits
        bits = tirx.IntImm("uint32", float_bits(lhs[1]))
        return [ev("tt.rpow_tile_init"), each(lambda d: ev("tt.rpow_tile", d.at(rhs[1]), bits))]
    if op in ("pow", "fmod", "atan2") and rhs[0] == "slot":  # two tiles (A0 keeps x a tile)
        name = {"pow": "tt.power_binary_tile", "fmod": "tt.fmod_binary_tile",
                "atan2": "tt.atan2_binary_tile"}[op]
        return [ev(name + "_init"),
                each(lambda d: ev(name, d.at(lhs[1]), d.at(rhs[1]), d.at(lhs[1])))]
    if op == "pow":  # x ** c: power_tile takes the exponent's float32 bits
        bits = tirx.IntImm("uint32", float_bits(rhs[1]))
        return [ev("tt.power_tile_init"), each(lambda d: ev("tt.power_tile", d.at(lhs[1]), bits))]
    if op == "fmod":  # fmod(x, c): fmod_tile_init takes c and 1 / c
        c = rhs[1]
        init = ev("tt.fmod_tile_init", tirx.IntImm("uint32", float_bits(c)),
                  tirx.IntImm("uint32", float_bits(1.0 / c if c != 0.0 else float("inf"))))
        return [init, each(lambda d: ev("tt.fmod_tile", d.at(lhs[1])))]
    if lhs[0] == "slot" and rhs[0] == "slot":
        return [ev(ARITH[op].sfpu_init),
                each(lambda d: ev(ARITH[op].sfpu_tile, d.at(lhs[1]), d.at(rhs[1]),
                                  d.at(lhs[1])))]
    (_, s), (_, c) = (lhs, rhs) if lhs[0] == "slot" else (rhs, lhs)
    pre = []
    if lhs[0] == "slot" and op == "div":  # x / c: the SDK's div_unary_tile multiplies by its
        c, scalar_op = 1.0 / c, "div"     # argument (ckernel_sfpu_binop_with_unary.h), so pass 1/c
    elif lhs[0] == "slot" or op in ("add", "mul", "max", "min"):
        scalar_op = op
    elif op == "sub":
        scalar_op = "rsub"  # c - x
    else:  # c / x = c * recip(x)
        pre = [ev(FUNCTIONS["recip"].init), each(lambda d: ev(FUNCTIONS["recip"].apply, d.at(s)))]
        scalar_op = "mul"
    bits = tirx.IntImm("uint32", float_bits(c))
    return pre + [ev(ARITH[scalar_op].scalar_init),
                  each(lambda d: ev(ARITH[scalar_op].scalar_tile, d.at(s), bits))]


def _lower_reduce(cx: DstContext, call):
    a = ops.named(call)
    out, src, scaler = a.out, a.src, a.scaler
    mt, nt, over_rows = int(a.mt), int(a.nt), int(a.over_rows)
    pool = ops.spec(call.op.name).props["pool"]  # PoolType: SUM = 0, MAX = 1
    # REDUCE_ROW (dim 0 of the op): each row of tiles into one tile of a column vector;
    # REDUCE_COL (dim 1): each column of tiles into one tile of a row vector
    lines, length = (nt, mt) if over_rows else (mt, nt)
    chunk = largest_divisor(lines, cx.capacity)

    def tile(line, k):
        return k * nt + line if over_rows else line * nt + k

    def group(c):
        base = c * chunk
        return seq([ev("tt.tile_regs_acquire")] + cx.srca_cfg(src) + cx.srcb_cfg(scaler) + [
            ev("tt.reduce_init", src, scaler, out, int_imm(pool), int_imm(over_rows)),
            loop_nest([chunk, length], lambda d, k: ev(
                "tt.reduce_tile", src, scaler, tile(base + d, k), int_imm(0), d, int_imm(pool),
                int_imm(over_rows)), ["d", "k"]),
            ev("tt.reduce_uninit"),
        ] + pack_round(cx, out, base, chunk))

    return in_chunks(out, lines, chunk, group)


def _lower_sfpu_reduce(cx: DstContext, call):
    """``reduce.sfpu_<max|min>``: the vector engine's exact reduction (``sfpu_reduce``) of
    tiles copied into DST (a float32 CB no matrix-engine op reads is unpacked straight to the
    32-bit DST, so nothing passes through a TF32 source register).  By rows (REDUCE_ROW):
    each row of tiles into column 0 of its first slot - ``rows`` rows of tiles per DST round
    when the ``Nt`` tiles of a row fit DST, else the row in parts: the first DST-full, the
    others of up to ``capacity - 1`` tiles, each reduced in slots ``1 ..`` and folded into
    slot 0 by ``binary_max_tile`` / ``binary_min_tile`` (SFPSWAP, exact).  By columns (REDUCE_COL,
    one tile per call): each tile of a column of tiles reduced into its row 0 and folded the
    same way.  Slot 0 (row ``d``: slot ``d * Nt``) is packed to the output tile."""
    a = ops.named(call)
    out, src = a.out, a.src
    mt, nt, over_rows = int(a.mt), int(a.nt), int(a.over_rows)
    pool = ops.spec(call.op.name).props["pool"]  # PoolType: MAX = 2, MIN = 3
    fold_init, fold = (("tt.binary_max_tile_init", "tt.binary_max_tile") if pool == 2 else
                       ("tt.binary_min_tile_init", "tt.binary_min_tile"))
    cap = cx.capacity

    def reduce_into(slot, tiles, ntiles, rt, dim):
        """Copy ``tiles(d)`` (d < ntiles) into slots ``slot + d``, reduce them."""
        return [ev("tt.copy_init", src),
                loop_nest([ntiles], lambda d: ev("tt.copy_tile", src, tiles(d), slot + d), ["d"]),
                ev("tt.sfpu_reduce_init", int_imm(pool)),
                ev("tt.sfpu_reduce", slot, int_imm(ntiles // rt), int_imm(rt), int_imm(pool),
                   int_imm(dim))]

    def fold_slot1():
        return [ev(fold_init), ev(fold, int_imm(0), int_imm(1), int_imm(0))]

    def folded(first, rest, parts, last=None):
        """``first`` into slot 0, then ``parts`` further parts each into slot 1 and up (and
        ``last``), folded into slot 0."""
        calls = [ev("tt.tile_regs_acquire")] + cx.srca_cfg(src) + first
        if parts:
            calls.append(loop_nest([parts], lambda p: seq(rest(p) + fold_slot1()), ["p"]))
        if last:
            calls += last + fold_slot1()
        return calls

    if not over_rows:
        if nt <= cap:
            rows = largest_divisor(mt, cap // nt)

            def group(c):
                base = c * rows
                return seq([ev("tt.tile_regs_acquire")] + cx.srca_cfg(src) + reduce_into(
                    0, lambda d: base * nt + d, rows * nt, rows, 0)
                    + pack_round(cx, out, base, rows, slot=lambda d: d * nt))
            return in_chunks(out, mt, rows, group)
        k = cap - 1  # the first part fills DST, the others slots 1 .. cap - 1
        full, rem = divmod(nt - cap, k)

        def row_group(r):
            at = cap + full * k
            return seq(folded(reduce_into(0, lambda d: r * nt + d, cap, 1, 0),
                              lambda p: reduce_into(1, lambda d: r * nt + cap + p * k + d, k, 1,
                                                    0),
                              full,
                              reduce_into(1, lambda d: r * nt + at + d, rem, 1, 0) if rem else None)
                       + pack_round(cx, out, r, 1))
        return in_chunks(out, mt, 1, row_group)

    def col_group(col):
        return seq(folded(reduce_into(0, lambda d: col, 1, 1, 1),
                          lambda p: reduce_into(1, lambda d: (p + 1) * nt + col, 1, 1, 1), mt - 1)
                   + pack_round(cx, out, col, 1))
    return in_chunks(out, nt, 1, col_group)


def _lower_cumsum(cx: DstContext, call):
    """``scan.cumsum``: each column of tiles top to bottom, ``chunk`` tiles per DST round (the
    largest divisor of ``Mt`` DST holds); every tile is copied in, then ``cumsum_tile`` runs
    on the round's tiles in order - ``first`` only for the column's top tile, so the SFPU
    carries the column totals from tile to tile and round to round (between two calls of one
    column only copies, packs and ``cumsum_tile_init``, no other SFPU op) - and each is packed
    to its place in the reserved block (``pack_tile<true>`` when the block has more than one
    column of tiles)."""
    a = ops.named(call)
    out, src, mt, nt = a.out, a.src, int(a.mt), int(a.nt)
    chunk = largest_divisor(mt, cx.capacity)
    rounds = mt // chunk
    anywhere = int_imm(1 if nt > 1 else 0)

    def group(col, r, first):
        def tile(d):
            return (r * chunk + d) * nt + col

        calls = [ev("tt.tile_regs_acquire")] + cx.srca_cfg(src) + [
            ev("tt.copy_init", src),
            loop_nest([chunk], lambda d: ev("tt.copy_tile", src, tile(d), d), ["d"]),
            ev("tt.cumsum_tile_init"),
        ]
        if first:
            calls.append(ev("tt.cumsum_tile", int_imm(0), int_imm(1)))
        if chunk > (1 if first else 0):
            lo = 1 if first else 0
            calls.append(loop_nest([chunk - lo], lambda d: ev("tt.cumsum_tile", d + lo,
                                                              int_imm(0)), ["d"]))
        calls += [ev("tt.tile_regs_commit"), ev("tt.tile_regs_wait")] + cx.pack_cfg(out) + [
            loop_nest([chunk], lambda d: ev("tt.pack_tile", d, out, tile(d), anywhere), ["d"]),
            ev("tt.tile_regs_release"),
        ]
        return seq(calls)

    def column(col):
        body = [group(col, 0, True)]
        if rounds > 1:
            body.append(loop_nest([rounds - 1], lambda r: group(col, r + 1, False), ["r"]))
        return seq(body)

    return seq([
        ev("tt.cb_reserve_back", out, int_imm(mt * nt)),
        loop_nest([nt], column, ["col"]),
        ev("tt.cb_push_back", out, int_imm(mt * nt)),
    ])


def _lower_flip_rows(cx: DstContext, call):
    """``scan.flip_rows``: the block upside down, a tile per DST round: the tile copied into
    slot 0, slot 1 zeroed (``fill_tile``), ``reshuffle_rows_tile(0, addr)`` adding row ``r`` of
    slot 0 into row ``idx[r] = 31 - r`` of slot 1 (``addr``: the order CB's tile address less
    the 16 bytes the LLK skips), slot 1 packed to tile ``(Mt - 1 - r, c)`` of the output."""
    a = ops.named(call)
    out, src, order, mt, nt = a.out, a.src, a.order, int(a.mt), int(a.nt)
    addr = tirx.Var(f"{str(order.name).removesuffix('_cb')}_addr", "uint32")
    anywhere = int_imm(1 if mt > 1 else 0)

    def tile(r, c):
        return seq([ev("tt.tile_regs_acquire")] + cx.srca_cfg(src) + [
            ev("tt.copy_init", src),
            ev("tt.copy_tile", src, r * nt + c, int_imm(0)),
            ev("tt.fill_tile_init"),
            ev("tt.fill_tile", int_imm(1), tirx.FloatImm("float32", 0.0)),
            ev("tt.reshuffle_rows_tile_init"),
            ev("tt.reshuffle_rows_tile", int_imm(0), addr),
            ev("tt.tile_regs_commit"), ev("tt.tile_regs_wait")] + cx.pack_cfg(out) + [
            ev("tt.pack_tile", int_imm(1), out, simplify((mt - 1 - r) * nt + c), anywhere),
            ev("tt.tile_regs_release"),
        ])

    return seq([
        tirx.Bind(addr, ops.call("tt.get_tile_address", order, int_imm(0))
                  - tirx.IntImm("uint32", 16)),
        ev("tt.cb_reserve_back", out, int_imm(mt * nt)),
        loop_nest([mt, nt], tile, ["r", "c"]),
        ev("tt.cb_push_back", out, int_imm(mt * nt)),
    ])


def _lower_const_tile(cx: DstContext, call):
    cb, value, n = call.args[0], call.args[1], int(call.args[2])
    chunk = largest_divisor(n, cx.capacity)

    def group(c):
        v = float(value.value)
        if math.isfinite(v):
            fill = lambda d: ev("tt.fill_tile", d, value)  # noqa: E731
        else:  # kernels are built with finite math: no infinity literals, the float's bits
            fill = lambda d: ev("tt.fill_tile_bitcast", d,  # noqa: E731
                                tirx.IntImm("uint32", float_bits(v)))
        return seq([ev("tt.tile_regs_acquire"), ev("tt.fill_tile_init"),
                    loop_nest([chunk], fill, ["d"])]
                   + pack_round(cx, cb, c * chunk, chunk))

    return in_chunks(cb, n, chunk, group)


def _lower_eltwise(cx: DstContext, call):
    args = ops.named(call)
    out, a, b, n = args.out, args.a, args.b, int(args.ntiles)
    tiles_op = ARITH[ops.spec(call.op.name).props["arith"]].fpu_tiles
    chunk = largest_divisor(n, cx.capacity)

    def group(c):
        base = c * chunk
        return seq([
            ev("tt.tile_regs_acquire"),
            loop_nest([chunk], lambda d: ev(tiles_op, a, b, base + d, base + d, d), ["d"]),
        ] + pack_round(cx, out, base, chunk))
    return in_chunks(out, n, chunk, group)


def lower_block_op(cx: DstContext, call):
    """The DST-managed statements of a block-streaming compute op, or None for other calls."""
    name = call.op.name
    if "arith" in ops.spec(name).props:  # the matrix engine's elementwise ops
        return _lower_eltwise(cx, call)
    if name == "tt.eltwise":
        return _lower_expr(cx, call)
    if name in ("tt.reduce.max", "tt.reduce.sum"):
        return _lower_reduce(cx, call)
    if ops.spec(name).props.get("sfpu_reduce"):
        return _lower_sfpu_reduce(cx, call)
    if name == "tt.const_tile":
        return _lower_const_tile(cx, call)
    if name == "tt.scan.cumsum":
        return _lower_cumsum(cx, call)
    if name == "tt.scan.flip_rows":
        return _lower_flip_rows(cx, call)
    return None
