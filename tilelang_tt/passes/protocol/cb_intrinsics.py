"""D3 LowerCBIntrinsics: the circular-buffer and NOC protocol of each kernel.

Requires: ConfigureTensorAccessorTT.

Guarantees:

* reader: each run of consecutive ``tt.read_to_cb`` becomes ``cb_reserve_back`` for every CB,
  ``l1 = get_write_ptr(cb)``, one ``noc_async_read_page(tile, accessor, l1 + offset)`` per
  tile (row-major within the block), a single ``noc_async_read_barrier`` and
  ``cb_push_back`` for every CB; a read with a ``valid`` condition (an offset read from tensor
  elements that may leave the tensor, A0.3.1) reads a tile only where the condition holds at
  its row and column in the block (operands compared as signed integers) and stores zeros
  over its page (``tt.l1_store_u32``, one word at a time) elsewhere;
* writer: each run of consecutive ``tt.write_from_cb`` becomes ``cb_wait_front``,
  ``l1 = get_read_ptr(cb)``, ``noc_async_write_page`` per tile, one
  ``noc_async_write_barrier`` and ``cb_pop_front``;
* ``tt.shard_to_cb(cb, tensor, n)`` (reader) becomes ``cb_reserve_back`` + ``cb_push_back``
  and ``tt.cb_to_shard`` (writer) ``cb_wait_front`` + ``cb_pop_front``: the CB's ring is the
  core's L1 shard (PlaceL1ShardsTT), nothing is copied;
* ``tt.row_order_to_cb(cb)`` (reader) becomes ``cb_reserve_back``, eight ``tt.l1_store_u32``
  of the bytes 31 .. 0 at ``get_write_ptr``, ``cb_push_back``;
* ``tt.mask_to_cb(cb, rows, cols, cond, x, y)`` (reader) becomes ``cb_reserve_back``,
  ``l1 = get_write_ptr(cb)``, a loop over the block's tiles, then ``cb_push_back`` (no NOC
  transfer).  Each tile is stored in 32-bit words (``tt.l1_store_u32``: two 16-bit elements,
  or one float32) whose elements are ``x`` where ``cond`` holds at the element's row and
  column in the block and ``y`` elsewhere: element by element over its four 16x16 faces
  (row-major within the tile and inside each face), or - when ``cond`` is and / or / not of
  orderings of affine functions of the row and column, and the tile's corners show it uniform
  on the tile when the kernel runs - one word everywhere.  The operands of the condition's
  comparisons, ``min`` and ``max`` are compared as signed integers (``tt.as_signed``).  An
  ``x`` or ``y`` that is an index value (an integer expression) is converted per element by
  the core's integer arithmetic (``tt.int_to_float_bits`` and its bfloat16 / float16 forms:
  rounded to nearest even), never filled per tile; a ``cond`` that is the constant true stores
  ``x`` alone;
* reader: ``tt.mcast_read_to_cb`` (PlanMulticastTT) is part of the batch: its page reads only
  on the group's sender; receivers signal the sender before the reads, senders multicast
  after the read barrier, receivers then wait for the data (``multicast_lower.py``); one
  ``noc_async_write_barrier`` completes the previous batch's multicasts before this batch's
  (rings of two blocks or more; else this batch's before the pushes), and one ends each work
  unit;
* reader: ``tt.im2col_to_cb(cb, img, ...)`` (``T.im2col``) becomes ``cb_reserve_back``,
  ``l1 = get_write_ptr(cb)``, a loop over the block's tiles and their 32 rows: a row whose
  pixel is inside the image gets its two 16-element face rows by ``tt.noc_async_read_part``
  (``noc_async_read`` of the DRAM tile's face rows holding the pixel's 32 channels), any
  other row zeros (``tt.l1_store_u32``); one ``noc_async_read_barrier``, ``cb_push_back``
  (:func:`lower_im2col`);
* reader / writer: ``tt.read_rows_to_cb`` / ``tt.write_rows_from_cb`` (a block at tensor rows
  off a tile boundary) become ``cb_reserve_back`` / ``cb_wait_front``, a loop over the block's
  rows moving each row's two face rows per tile column (``tt.noc_async_read_part`` /
  ``tt.noc_async_write_part``; zeros for a row outside the tensor, no write for one outside it
  or failing the row guard), one barrier, ``cb_push_back`` / ``cb_pop_front``
  (:func:`lower_rows`);
* reader: ``tt.scalar_to_cb(cb, T, page)`` (LowerScalarReadsTT) becomes ``cb_reserve_back``,
  ``noc_async_read_page`` of the scalar tensor's page into the CB's page, the read barrier
  and ``cb_push_back``; the reader's own ``v = tt.scalar_value(cb, word)`` right after it is
  the word loaded from that page (``tt.l1_load_u32``) before the push;
* writer: ``v = tt.scalar_value(cb, word)`` and the ``tt.scalar_take(cb_w)`` after it become
  ``cb_wait_front(cb_w)``, ``v`` = the word of the page at ``get_read_ptr(cb_w)``,
  ``cb_pop_front(cb_w)``;
* compute: ``tt.consume.begin`` becomes ``cb_wait_front`` and ``tt.consume.end``
  ``cb_pop_front`` (the pushes of compute-produced CBs come with packing, in
  InsertDSTManagementTT); ``v = tt.scalar_value(cb, word)`` becomes
  ``read_tile_value(cb, 0, word)``.

Page ids are ``row * tiles_per_row + col`` in the tensor's tile grid.  Counts always match:
every reserve has its push and every wait its pop with the same number of tiles.
"""

from __future__ import annotations

import numpy as np
import tvm
import tvm_ffi
from tvm import tirx
from tvm.sym import Analyzer, detect_linear_equation

from ... import attrs, ops
from ...errors import TTUnsupportedError, TTVerifyError
from ..frontend.eltwise_expr import float_bits
from ..common import (
    collect, int_imm, layout_of, loop_nest, require_attr, seq, split_persistent, stmt_op_name,
    substitute, tt_pass, with_persistent,
)
from ..common import get_attr, to_py, tt_map
from .multicast_lower import mcast_handshake


def _accessors(body) -> dict:
    out = {}
    for b in collect(body, tirx.Bind):
        if ops.tt_op_name(b.value) == "tt.tensor_accessor":
            out[b.value.args[0]] = b.var
    return out


class _Streams:
    def __init__(self, func):
        self.func = func
        self.mcast = to_py(get_attr(func, attrs.MCAST_PLAN, {})) or {}
        self.depth = {b.var: int(b.value.args[3]) for b in collect(func.body, tirx.Bind)
                      if ops.tt_op_name(b.value) == "tt.alloc_cb"}
        self.acc = _accessors(func.body)
        self.ana = Analyzer()

    def lower_run(self, calls, read: bool):
        """One batched transfer for consecutive read_to_cb / write_from_cb calls (reads:
        mcast_read_to_cb too - a sender's reads are guarded, the handshakes follow the read
        barrier, one write barrier completes the multicasts before the pushes)."""
        head, ptrs, moves, tail = [], [], [], []
        signals, sends, waits = [], [], []
        for call in calls:
            mcast = ops.tt_op_name(call) == "tt.mcast_read_to_cb"
            cb, buf, row0, col0, rows, cols = call.args[:6]
            rows, cols = int(rows), int(cols)
            # a write of a block's leading tiles waits for and pops the whole block
            n = int_imm(int(call.args[6]) if not read and len(call.args) > 6 else rows * cols)
            if buf not in self.acc:
                raise TTVerifyError(f"no tensor accessor bound for {buf.name}")
            accessor = self.acc[buf]
            layout = layout_of(self.func, buf)
            page = int(layout["page_bytes"])
            row_tiles = int(layout["tiles"][1])
            l1 = tirx.Var(f"{str(cb.name).removesuffix('_cb')}_l1", "int32")
            head.append(ops.evaluate("tt.cb_reserve_back" if read else "tt.cb_wait_front", cb, n))
            ptrs.append(tirx.Bind(l1, ops.call("tt.get_write_ptr" if read else "tt.get_read_ptr",
                                               cb)))

            valid = call.args[6] if read and not mcast and len(call.args) > 6 else None

            def body(r, c, row0=row0, col0=col0, accessor=accessor, l1=l1, cols=cols,
                     page=page, row_tiles=row_tiles, valid=valid):
                tile = self.ana.simplify((row0 + r) * row_tiles + col0 + c)
                addr = self.ana.simplify(l1 + (r * cols + c) * page)
                op = "tt.noc_async_read_page" if read else "tt.noc_async_write_page"
                move = ops.evaluate(op, tile, accessor, addr)
                if valid is None:
                    return move
                # a tile outside the tensor (an offset read from data): zeros, no NOC read
                zeros = loop_nest([page // 4], lambda w: ops.evaluate(
                    "tt.l1_store_u32", addr + w * 4, tirx.IntImm("uint32", 0)), ["w"])
                cond = self.ana.simplify(_signed(_at(valid, r, c)))
                return tirx.IfThenElse(cond, move, zeros)

            move = loop_nest([rows, cols], body, ["r", "c"])
            if mcast:
                guard, binds, signal, send, wait = mcast_handshake(call, self.mcast, l1)
                move = tirx.IfThenElse(guard, move, None)
                ptrs += binds
                signals.append(signal)
                sends.append(send)
                waits.append(wait)
            moves.append(move)
            tail.append(ops.evaluate("tt.cb_push_back" if read else "tt.cb_pop_front", cb, n))
        barrier = ops.evaluate("tt.noc_async_read_barrier" if read else "tt.noc_async_write_barrier")
        if sends:
            # the multicasts of the previous batch still read their blocks: completed before
            # this batch's multicasts when every ring holds two blocks or more (this batch's
            # blocks are others; the kernel completes the last ones at the end of each work
            # unit), else before the pushes
            wbar = ops.evaluate("tt.noc_async_write_barrier")
            mcast_cbs = [c.args[0] for c in calls if ops.tt_op_name(c) == "tt.mcast_read_to_cb"]
            if all(self.depth.get(cb, 1) >= 2 for cb in mcast_cbs):
                sends.insert(0, wbar)
            else:
                waits.append(wbar)
        return head + ptrs + signals + moves + [barrier] + sends + waits + tail


_COMPARISONS = (tirx.EQ, tirx.NE, tirx.LT, tirx.LE, tirx.GT, tirx.GE)


def _element_bits(value: float, dtype: str) -> int:
    """The bits of ``value`` as one element of ``dtype`` (bfloat16, float16: float32 rounded
    to nearest even)."""
    bits = float_bits(value)
    if dtype == "float32":
        return bits
    if dtype == "float16":
        return int(np.array(np.float32(value)).astype(np.float16).view(np.uint16))
    if value != value:
        return 0x7FC0
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def _at(cond, row, col):
    """``cond`` at the element (row, col) of the block (``tt.mask.index`` replaced)."""
    def at(c):
        if ops.tt_op_name(c) == "tt.mask.index":
            return row if int(c.args[0]) == 0 else col
        return c

    return tvm_ffi.structural_map(cond, [(tvm.ir.Call, at)], order="post")


def _signed(cond):
    """``cond`` with the operands of its comparisons compared as signed values (``by * 32 + i
    < M - 64`` is negative past the end; TIR's int32 ``min`` / ``max`` the code generator
    prints as signed comparisons itself) and its divisions signed (:func:`_signed_divisions`)."""
    def signed(e):
        return type(e)(ops.call("tt.as_signed", e.a), ops.call("tt.as_signed", e.b))

    return tvm_ffi.structural_map(_signed_divisions(cond), [(t, signed) for t in _COMPARISONS],
                                  order="post")


def _signed_divisions(e):
    """``e`` with its ``//`` and ``%`` of dividends that may be negative (they read a tensor
    element or a difference: ``(cu[b + 1] - cu[b]) // 2``) as signed floor division and modulo
    (``tt.floordiv_signed`` / ``tt.floormod_signed``): kernels compute in uint32_t."""
    ana = Analyzer()

    def maybe_negative(a) -> bool:
        return bool(collect(a, tvm.ir.TensorLoad)) or bool(collect(a, tirx.Sub)) or \
            bool(collect(a, tvm.ir.Call))

    def div(d):
        if not maybe_negative(d.a) or ana.can_prove(d.a >= 0):
            return d
        return ops.call("tt.floordiv_signed" if isinstance(d, tirx.FloorDiv)
                        else "tt.floormod_signed", d.a, d.b)

    return tvm_ffi.structural_map(e, [(tirx.FloorDiv, div), (tirx.FloorMod, div)],
                                  order="post")


def _uniform(cond, r0, c0):
    """(all, none): conditions under which ``cond`` holds at every / at no element of the
    32x32 tile whose first element is (r0, c0) of the block, or None when ``cond`` is not
    ``and`` / ``or`` / ``not`` of comparisons whose sides differ by an affine function of the
    element's row and column.  An affine function over the tile takes its extremes at the
    tile's corners, so an ordering holds everywhere (nowhere) iff it holds (fails) at all four;
    a comparison that does not depend on the element is uniform, an (in)equality that does
    is never assumed uniform."""
    row, col = tirx.Var("row", "int32"), tirx.Var("col", "int32")
    corners = [(r0 + dr, c0 + dc) for dr in (0, 31) for dc in (0, 31)]

    def both(items, op):
        out = items[0]
        for x in items[1:]:
            out = op(out, x)
        return out

    def visit(e):
        if isinstance(e, (tirx.And, tirx.Or)):
            a, b = visit(e.a), visit(e.b)
            if a is None or b is None:
                return None
            if isinstance(e, tirx.And):
                return tirx.And(a[0], b[0]), tirx.Or(a[1], b[1])
            return tirx.Or(a[0], b[0]), tirx.And(a[1], b[1])
        if isinstance(e, tirx.Not):
            a = visit(e.a)
            return None if a is None else (a[1], a[0])
        if not isinstance(e, _COMPARISONS):
            return None
        coeffs = detect_linear_equation(e.a - e.b, [row, col])
        if len(coeffs) != 3:
            return None
        if all(isinstance(k, tirx.IntImm) and int(k) == 0 for k in coeffs[:2]):
            here = substitute(e, {row: r0, col: c0})
            return here, tirx.Not(here)
        if isinstance(e, (tirx.EQ, tirx.NE)):
            return None
        at = [substitute(e, {row: r, col: c}) for r, c in corners]
        return both(at, tirx.And), both([tirx.Not(x) for x in at], tirx.And)

    return visit(_at(cond, row, col))


def _value_bits(value, dtype: str, row, col):
    """The bits of one element of ``dtype`` holding ``value`` at the element (row, col): a float
    constant's bits (:func:`_element_bits`), or an index value (an integer expression of the
    element's position) converted by the RISC-V core's integer arithmetic
    (``tt.int_to_float_bits``: float32 to nearest even, exact below 2^24; bfloat16 and float16:
    that float32 rounded to nearest even, as :func:`_element_bits` rounds constants)."""
    if isinstance(value, tirx.FloatImm):
        return tirx.IntImm("uint32", _element_bits(float(value.value), dtype))
    convert = {"float32": "tt.int_to_float_bits", "bfloat16": "tt.int_to_bfloat16_bits",
               "float16": "tt.int_to_float16_bits"}[dtype]
    return tirx.Cast("uint32", ops.call(convert, ops.call(
        "tt.as_signed", _signed_divisions(_at(value, row, col)))))


def lower_mask(call, dtype: str):
    """A block of ``x`` / ``y`` tiles by the mask condition, written by the reader's RISC-V
    core into the CB's L1 in the tiles' face layout (32x32 tile = four 16x16 faces: top-left,
    top-right, bottom-left, bottom-right; row-major inside a face).  ``x`` and ``y`` are float
    constants or index values (:func:`_value_bits`); a condition that is the constant true
    writes ``x`` alone.  A tile the condition is uniform on (:func:`_uniform`, decided per tile
    when the kernel runs), when both values are constants, is filled with one word; the others
    are computed element by element."""
    cb, rows, cols, cond, x, y = call.args
    rows, cols = int(rows), int(cols)
    n = int_imm(rows * cols)
    if dtype not in ("bfloat16", "float16", "float32"):
        raise TTVerifyError(f"index mask CB {cb.name} has dtype {dtype}")
    constants = all(isinstance(v, tirx.FloatImm) for v in (x, y))
    always = isinstance(cond, tirx.IntImm) and int(cond.value) == 1
    size = 4 if dtype == "float32" else 2
    per_word = 4 // size
    l1 = tirx.Var(f"{str(cb.name).removesuffix('_cb')}_l1", "int32")

    def word_of(bits):
        return tirx.IntImm("uint32", bits | (bits << 16) if per_word == 2 else bits)

    def tile(tr, tc):
        base = l1 + (tr * cols + tc) * 1024 * size

        def store(fr, fc, r, w):
            row = tr * 32 + fr * 16 + r
            word = []
            for e in range(per_word):
                col = tc * 32 + fc * 16 + w * per_word + e
                xb, yb = (_value_bits(v, dtype, row, col) for v in (x, y))
                if e:
                    xb, yb = (b * tirx.IntImm("uint32", 1 << 16) if not
                              isinstance(b, tirx.IntImm) else tirx.IntImm("uint32", int(b) << 16)
                              for b in (xb, yb))
                word.append(xb if always else tirx.Select(_signed(_at(cond, row, col)), xb, yb))
            value = word[0] if per_word == 1 else word[0] + word[1]
            elem = (fr * 2 + fc) * 256 + r * 16 + w * per_word
            return ops.evaluate("tt.l1_store_u32", base + elem * size, value, span=call.span)

        def fill(bits):
            return loop_nest([1024 * size // 4], lambda w: ops.evaluate(
                "tt.l1_store_u32", base + w * 4, word_of(bits), span=call.span), ["w"])

        elements = loop_nest([2, 2, 16, 16 // per_word], store, ["fr", "fc", "r", "w"])
        uniform = _uniform(cond, tr * 32, tc * 32) if constants else None
        if uniform is None:
            return elements
        x_bits, y_bits = (_element_bits(float(v.value), dtype) for v in (x, y))
        every, none = (_signed(u) for u in uniform)
        return tirx.IfThenElse(every, fill(x_bits),
                               tirx.IfThenElse(none, fill(y_bits), elements))

    fill = loop_nest([rows, cols], tile, ["tr", "tc"])
    return [ops.evaluate("tt.cb_reserve_back", cb, n, span=call.span),
            tirx.Bind(l1, ops.call("tt.get_write_ptr", cb)), fill,
            ops.evaluate("tt.cb_push_back", cb, n, span=call.span)]


def lower_row_order(call):
    """``row_order_to_cb(cb)``: one page of cb whose first 32 bytes are 31, 30, ..., 0 (row
    ``r`` of a tile goes to row ``31 - r``: reshuffle_rows_tile's reversal), stored by the
    reader's RISC-V core as eight little-endian words."""
    cb = call.args[0]
    l1 = tirx.Var(f"{str(cb.name).removesuffix('_cb')}_l1", "int32")
    words = [sum((31 - (4 * k + j)) << (8 * j) for j in range(4)) for k in range(8)]
    return ([ops.evaluate("tt.cb_reserve_back", cb, int_imm(1), span=call.span),
             tirx.Bind(l1, ops.call("tt.get_write_ptr", cb))]
            + [ops.evaluate("tt.l1_store_u32", l1 + 4 * k, tirx.IntImm("uint32", w),
                            span=call.span) for k, w in enumerate(words)]
            + [ops.evaluate("tt.cb_push_back", cb, int_imm(1), span=call.span)])


def _lower_scalar_reads(body, accessors):
    """Reader: ``tt.scalar_to_cb(cb, T, page)`` -> reserve one page, read DRAM page ``page`` of
    ``T`` into it, barrier, push; a ``v = tt.scalar_value(cb, word)`` right after it (the
    reader branches on the value too) becomes a load of the word from the page, before the
    push."""

    def lower(ev, bind):
        cb, buf, page = ev.value.args
        if buf not in accessors:
            raise TTVerifyError(f"no tensor accessor bound for {buf.name}")
        span = ev.value.span
        l1 = tirx.Var(f"{str(cb.name).removesuffix('_cb')}_l1", "int32")
        out = [ops.evaluate("tt.cb_reserve_back", cb, int_imm(1), span=span),
               tirx.Bind(l1, ops.call("tt.get_write_ptr", cb)),
               ops.evaluate("tt.noc_async_read_page", page, accessors[buf], l1, span=span),
               ops.evaluate("tt.noc_async_read_barrier", span=span)]
        if bind is not None:
            word = bind.value.args[1]
            out.append(tirx.Bind(bind.var, ops.call("tt.l1_load_u32", l1 + word * 4)))
        return out + [ops.evaluate("tt.cb_push_back", cb, int_imm(1), span=span)]

    def on_seq(s):
        items, out, i = list(s.seq), [], 0
        while i < len(items):
            it = items[i]
            if stmt_op_name(it) != "tt.scalar_to_cb":
                out.append(it)
                i += 1
                continue
            nxt = items[i + 1] if i + 1 < len(items) else None
            bind = None
            if isinstance(nxt, tirx.Bind) and ops.tt_op_name(nxt.value) in (
                    "tt.scalar_value", "tt.scalar_word") \
                    and nxt.value.args[0].same_as(it.value.args[0]):
                bind = nxt
            out += lower(it, bind)
            i += 2 if bind is not None else 1
        return seq(out)

    body = tt_map(body, [(tirx.SeqStmt, on_seq)], order="post")
    return tt_map(body, [(tirx.Evaluate, lambda ev: seq(lower(ev, None))
                          if stmt_op_name(ev) == "tt.scalar_to_cb" else ev)], order="post")


def _lower_element_reads(body, accessors):
    """Reader: ``tt.element_to_cb(cb, T, page, word)`` -> reserve one tile, read DRAM page
    ``page`` of ``T`` into it, barrier, copy word ``word`` of the page to element (0, 0) (the
    tile's first word: a float32 tile's element (0, 0) in its face layout), push."""

    def lower(ev):
        if stmt_op_name(ev) != "tt.element_to_cb":
            return ev
        cb, buf, page, word = ev.value.args
        if buf not in accessors:
            raise TTVerifyError(f"no tensor accessor bound for {buf.name}")
        span = ev.value.span
        l1 = tirx.Var(f"{str(cb.name).removesuffix('_cb')}_l1", "int32")
        return seq([
            ops.evaluate("tt.cb_reserve_back", cb, int_imm(1), span=span),
            tirx.Bind(l1, ops.call("tt.get_write_ptr", cb)),
            ops.evaluate("tt.noc_async_read_page", page, accessors[buf], l1, span=span),
            ops.evaluate("tt.noc_async_read_barrier", span=span),
            ops.evaluate("tt.l1_store_u32", l1, ops.call("tt.l1_load_u32", l1 + word * 4),
                         span=span),
            ops.evaluate("tt.cb_push_back", cb, int_imm(1), span=span)])

    return tt_map(body, [(tirx.Evaluate, lower)], order="post")


def lower_im2col(call, accessor, layout, dtype: str):
    """``tt.im2col_to_cb`` -> reserve the block, its tiles' rows read or zeroed, one read
    barrier, push.  Tile ``(mt, kt)`` row ``r`` is im2col row ``m = (nhw_step * rows + mt) *
    32 + r`` (output pixel ``n, oh, ow``) and columns ``k0 .. k0 + 31``, ``k0 = (c_step * cols
    + kt) * 32`` (tap ``kh, kw`` and channels ``c0 .. c0 + 31``): the image pixel ``(n, oh * S
    + kh * D - P, ow * S + kw * D - P)``'s channels ``c0 ..`` are row ``w % 32`` of one DRAM
    tile of the image, whose two 16-element face rows (faces 0 / 1 or 2 / 3) are read into
    the destination row's two face rows; a pixel outside the image, a row past ``N * OH *
    OW`` or a column past ``kernel * kernel * C`` is zeroed by the RISC-V core.

    A 16-bit face row is 32 bytes and Blackhole reads DRAM in 64-byte aligned pieces, so a
    16-bit image is read in face row pairs (tile rows ``2k``, ``2k + 1``: 64 bytes at a
    64-byte offset) into the destination's row pair (the CB is 64-byte aligned on Blackhole,
    its pages 2048 bytes): the even rows' pairs first, one barrier, the RISC-V core moves a
    pixel's odd row down into its even row; then each odd row in turn keeps its even
    neighbour's words, reads its pair, waits, moves an even source row up and restores the
    neighbour (a barrier per odd row).  The same code runs on Wormhole and Blackhole."""
    (cb, _img, nhw_step, c_step, rows, cols, n, h, w, c, kernel, stride, dilation,
     pad) = call.args
    rows, cols, n, h, w, c = (int(x) for x in (rows, cols, n, h, w, c))
    kernel, stride, dilation, pad = (int(x) for x in (kernel, stride, dilation, pad))
    span = call.span
    size = 4 if dtype == "float32" else 2
    page = int(layout["page_bytes"])
    hp, wp = (int(x) for x in layout["shape"][1:3])  # the device's (padded) image
    wt, ct = wp // 32, c // 32
    oh = (h + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1
    ow = (w + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1
    l1 = tirx.Var(f"{str(cb.name).removesuffix('_cb')}_l1", "int32")
    ana = Analyzer()
    barrier = ops.evaluate("tt.noc_async_read_barrier", span=span)

    def signed(e):
        return ops.call("tt.as_signed", e)

    def tile(mt, kt):
        k0 = tirx.Var("k0", "int32")
        c0, kw, kh = k0 % c, k0 // c % kernel, k0 // (c * kernel)
        base = ana.simplify(l1 + (mt * cols + kt) * page)

        def pixel(r):  # row r's binds, whether its pixel is read, its column ww
            m, hh, ww = (tirx.Var(x, "int32") for x in ("m", "hh", "ww"))
            inside = tirx.all(k0 < kernel * kernel * c, m < n * oh * ow,
                              signed(hh) >= 0, signed(hh) < h, signed(ww) >= 0,
                              signed(ww) < w)
            # ww may be negative where the row is zeroed; the C++ divides unsigned integers,
            # so its divisions see it through tt.as_signed, which TVM's simplifier (D5.1)
            # cannot split into a floordiv of a negative part (as it would `(x - 1) // 32`)
            wv = signed(ww)
            src_page = ((m // (oh * ow) * hp + hh) * wt + wv // 32) * ct + c0 // 32
            binds = [tirx.Bind(m, ana.simplify((nhw_step * rows + mt) * 32 + r)),
                     tirx.Bind(hh, m // ow % oh * stride + kh * dilation - pad),
                     tirx.Bind(ww, m % ow * stride + kw * dilation - pad)]
            return binds, inside, wv, src_page

        def zeros(dst):
            return loop_nest([2, 4 * size], lambda f, q: ops.evaluate(
                "tt.l1_store_u32", dst + f * 256 * size + q * 4, tirx.IntImm("uint32", 0),
                span=span), ["f", "q"])

        def row(r):
            binds, inside, wv, src_page = pixel(r)
            dst = base + ((r // 16) * 512 + (r % 16) * 16) * size
            offset = ((wv % 32 // 16) * 512 + (wv % 16) * 16) * size
            reads = seq([ops.evaluate("tt.noc_async_read_part", src_page, accessor,
                                      offset + f * 256 * size, dst + f * 256 * size,
                                      int_imm(16 * size), span=span) for f in (0, 1)])
            return seq(binds + [tirx.IfThenElse(inside, reads, zeros(dst))])

        def copy(dst, frm):  # one 16-bit row (both faces) from L1 row frm to dst
            return loop_nest([2, 8], lambda f, q: ops.evaluate(
                "tt.l1_store_u32", dst + f * 512 + q * 4,
                ops.call("tt.l1_load_u32", frm + f * 512 + q * 4), span=span), ["f", "q"])

        def pair(p, odd):  # 16-bit: tile row 2p + odd read as a 64-byte face row pair
            binds, inside, wv, src_page = pixel(2 * p + odd)
            slot = base + ((p // 8) * 512 + (p % 8) * 32) * 2  # rows 2p, 2p + 1 (64-aligned)
            offset = ((wv % 32 // 16) * 512 + (wv % 16 // 2) * 32) * 2
            reads = seq([ops.evaluate("tt.noc_async_read_part", src_page, accessor,
                                      offset + f * 512, slot + f * 512, int_imm(64),
                                      span=span) for f in (0, 1)])
            if not odd:  # the pixel's row lands in row 2p or 2p + 1 (even_fix moves it)
                return seq(binds + [tirx.IfThenElse(inside, reads, zeros(slot))])
            keep = [tirx.Var(f"keep{f}_{q}", "int32") for f in (0, 1) for q in range(8)]
            fix = tirx.IfThenElse(wv % 2 == 0, copy(slot + 32, slot), None)
            return seq(binds + [
                tirx.Bind(keep[f * 8 + q], ops.call("tt.l1_load_u32", slot + f * 512 + q * 4))
                for f in (0, 1) for q in range(8)] + [
                tirx.IfThenElse(inside, seq([reads, barrier, fix]), zeros(slot + 32))] + [
                ops.evaluate("tt.l1_store_u32", slot + f * 512 + q * 4, keep[f * 8 + q],
                             span=span) for f in (0, 1) for q in range(8)])

        def even_fix(p):  # after the even rows' reads: an odd source row moved to row 2p
            binds, inside, wv, _ = pixel(2 * p)
            slot = base + ((p // 8) * 512 + (p % 8) * 32) * 2
            return seq(binds + [tirx.IfThenElse(tirx.And(inside, wv % 2 == 1),
                                                copy(slot, slot + 32), None)])

        if size == 2:
            return seq([tirx.Bind(k0, ana.simplify((c_step * cols + kt) * 32)),
                        loop_nest([16], lambda p: pair(p, 0), ["p"]), barrier,
                        loop_nest([16], even_fix, ["p"]),
                        loop_nest([16], lambda p: pair(p, 1), ["p"])])
        return seq([tirx.Bind(k0, ana.simplify((c_step * cols + kt) * 32)),
                    loop_nest([32], row, ["r"])])

    n_tiles = int_imm(rows * cols)
    return [ops.evaluate("tt.cb_reserve_back", cb, n_tiles, span=span),
            tirx.Bind(l1, ops.call("tt.get_write_ptr", cb)),
            loop_nest([rows, cols], tile, ["mt", "kt"]),
            ops.evaluate("tt.noc_async_read_barrier", span=span),
            ops.evaluate("tt.cb_push_back", cb, n_tiles, span=span)]


def lower_rows(call, accessor, layout, dtype: str, read: bool, safe: float = 0.0):
    """``tt.read_rows_to_cb`` / ``tt.write_rows_from_cb`` -> reserve (wait for) the block, its
    rows moved one by one, one barrier, push (pop).  Block row ``i`` of tile row ``r`` (block
    row ``b = r * 32 + i``) is tensor row ``s = row + b``: row ``s % 32`` of DRAM tile row
    ``lead * row_dim / 32 + s / 32``, whose two 16-element face rows (faces 0 / 1 for tile rows
    0-15, 2 / 3 for 16-31: byte offset ``((s % 32) / 16 * 512 + s % 16 * 16) * size`` in the
    page, and ``256 * size`` further) move to or from the block tile's face rows of ``i``, one
    NOC transfer each (``tt.noc_async_read_part`` / ``tt.noc_async_write_part``: offsets of 32
    or 64 bytes, so NOC DRAM transfers stay 32-byte aligned; a 16-bit read goes through
    ``_pair_gather``: 64-byte reads, Blackhole's DRAM read alignment).  A row outside ``0 ..
    row_dim - 1`` reads ``safe`` (the tensor's safe value, 0 unless ``T.annotate_safe_value``
    gives another: the RISC-V core stores its bits) and is not written; a written row also needs
    ``guard`` (TileLang's row guard, at the block row)."""
    cb, _buf, lead, row, col0, rows, cols, row_dim = call.args[:8]
    guard = call.args[8] if not read else None
    rows, cols, row_dim = int(rows), int(cols), int(row_dim)
    span = call.span
    size = 4 if dtype == "float32" else 2
    page = int(layout["page_bytes"])
    per_row = int(layout["tiles"][1])
    l1 = tirx.Var(f"{str(cb.name).removesuffix('_cb')}_l1", "int32")
    src = tirx.Var("src_row", "int32")
    ana = Analyzer()
    if read and size == 2 and row_dim % 32 == 0:
        bits = _element_bits(safe, dtype)
        return _pair_gather(cb, l1, lead, row, col0, rows, cols, row_dim, page, per_row,
                            accessor, bits | (bits << 16), span)

    def line(r, i):
        block_row = r * 32 + i
        inside = tirx.And(ops.call("tt.as_signed", src) >= 0,
                          ops.call("tt.as_signed", src) < row_dim)
        if guard is not None and not (isinstance(guard, tirx.IntImm) and int(guard.value)):
            inside = tirx.And(_signed(_at(guard, block_row, int_imm(0))), inside)

        def tile(c):
            local = ana.simplify(l1 + (r * cols + c) * page + ((i // 16) * 512 + i % 16 * 16)
                                 * size)
            dram = (lead * (row_dim // 32) + src // 32) * per_row + col0 + c
            offset = ((src % 32 // 16) * 512 + src % 16 * 16) * size
            op = "tt.noc_async_read_part" if read else "tt.noc_async_write_part"
            moves = seq([ops.evaluate(op, dram, accessor, offset + f * 256 * size,
                                      local + f * 256 * size, int_imm(16 * size), span=span)
                         for f in (0, 1)])
            if not read:
                return moves
            bits = _element_bits(safe, dtype)
            word = bits | (bits << 16) if size == 2 else bits
            zeros = loop_nest([2, 4 * size], lambda f, q: ops.evaluate(
                "tt.l1_store_u32", local + f * 256 * size + q * 4, tirx.IntImm("uint32", word),
                span=span), ["f", "q"])
            return tirx.IfThenElse(inside, moves, zeros)

        body = loop_nest([cols], tile, ["c"])
        if not read:
            body = tirx.IfThenElse(inside, body, None)
        # signed and opaque to D5.1's simplifier: a row before the tensor's start (a static
        # start of `by * 64 - 10`) must not have its tile row split into `(i - 10) / 32`,
        # which kernels compute in uint32_t
        return seq([tirx.Bind(src, ops.call("tt.as_signed", ana.simplify(row + block_row))),
                    body])

    n = int_imm(rows * cols)
    return [ops.evaluate("tt.cb_reserve_back" if read else "tt.cb_wait_front", cb, n, span=span),
            tirx.Bind(l1, ops.call("tt.get_write_ptr" if read else "tt.get_read_ptr", cb)),
            loop_nest([rows, 32], line, ["r", "i"]),
            ops.evaluate("tt.noc_async_read_barrier" if read else "tt.noc_async_write_barrier",
                         span=span),
            ops.evaluate("tt.cb_push_back" if read else "tt.cb_pop_front", cb, n, span=span)]


def _pair_gather(cb, l1, lead, row, col0, rows, cols, row_dim, page, per_row, accessor, word,
                 span):
    """A 16-bit row gather (``lower_rows``' read) in 64-byte NOC reads: Blackhole reads DRAM
    in 64-byte aligned pieces (Wormhole in 32), and a 32-byte face row of an odd tile row lies
    at a 32-byte offset, so every read moves a face row pair (tile rows ``2k``, ``2k + 1``)
    into a 64-byte aligned pair of the block tile.  The block's start row ``row`` decides:
    even, block row ``b``'s pair is tensor row ``row + b``'s pair, read once at the even row
    (both rows of a pair are inside the tensor or neither: ``row_dim`` is a multiple of 32);
    odd, the pairs of rows ``row + 1, row + 3, ..`` land one row early (block row ``b`` holds
    row ``row + b + 1``), one barrier, the RISC-V core moves the rows down one, then reads row
    ``row``'s pair into block rows 0 / 1 keeping row 1's words (a barrier per tile column) and
    copies it into row 0.  Rows outside the tensor get ``word`` after the reads."""
    n = rows * 32
    ana = Analyzer()
    first = tirx.Var("first_row", "int32")

    def slot(j, c):  # L1 address of block row j's face-0 row in tile column c
        return ana.simplify(l1 + (j // 32 * cols + c) * page + (j % 32 // 16 * 512 + j % 16 * 16)
                            * 2)

    def inside(v):
        return tirx.And(ops.call("tt.as_signed", v) >= 0, ops.call("tt.as_signed", v) < row_dim)

    def pair_reads(s, dst, c):  # s's face row pair (both faces) to the aligned L1 pair at dst
        page_id = (lead * (row_dim // 32) + s // 32) * per_row + col0 + c
        off = (s % 32 // 16 * 512 + s % 16 // 2 * 32) * 2
        return seq([ops.evaluate("tt.noc_async_read_part", page_id, accessor, off + f * 512,
                                 dst + f * 512, int_imm(64), span=span) for f in (0, 1)])

    def rows_loop(body):  # body(src, b, i, c) per block row b = 32 r + i (tensor row src)
        src = tirx.Var("src_row", "int32")

        def line(r, i):
            b = r * 32 + i
            return seq([tirx.Bind(src, ops.call("tt.as_signed", ana.simplify(first + b))),
                        loop_nest([cols], lambda c: body(src, b, i, c), ["c"])])
        return loop_nest([rows, 32], line, ["r", "i"])

    def copy(dst, frm):
        return loop_nest([2, 8], lambda f, q: ops.evaluate(
            "tt.l1_store_u32", dst + f * 512 + q * 4,
            ops.call("tt.l1_load_u32", frm + f * 512 + q * 4), span=span), ["f", "q"])

    barrier = ops.evaluate("tt.noc_async_read_barrier", span=span)
    even = seq([rows_loop(lambda src, b, i, c: tirx.IfThenElse(
        tirx.And(inside(src), i % 2 == 0), pair_reads(src, slot(b, c), c), None)), barrier])
    shift = loop_nest([n - 1, cols], lambda jj, c: copy(slot(n - 1 - jj, c), slot(n - 2 - jj, c)),
                      ["j", "c"])

    def head(c):  # row `first`'s pair to block rows 0 / 1, row 1's words kept
        keep = [tirx.Var(f"keep{f}_{q}", "int32") for f in (0, 1) for q in range(8)]
        one = slot(1, c)
        return seq([tirx.Bind(keep[f * 8 + q], ops.call("tt.l1_load_u32", one + f * 512 + q * 4))
                    for f in (0, 1) for q in range(8)]
                   + [pair_reads(first, slot(0, c), c), barrier, copy(slot(0, c), one)]
                   + [ops.evaluate("tt.l1_store_u32", one + f * 512 + q * 4, keep[f * 8 + q],
                                   span=span) for f in (0, 1) for q in range(8)])

    odd = seq([rows_loop(lambda src, b, i, c: tirx.IfThenElse(
                   tirx.And(inside(src), i % 2 == 1), pair_reads(src, slot(b - 1, c), c), None)),
               barrier, shift,
               tirx.IfThenElse(inside(first), loop_nest([cols], head, ["c"]), None)])
    zeros = rows_loop(lambda src, b, i, c: tirx.IfThenElse(
        tirx.Not(inside(src)), loop_nest([2, 8], lambda f, q: ops.evaluate(
            "tt.l1_store_u32", slot(b, c) + f * 512 + q * 4, tirx.IntImm("uint32", word),
            span=span), ["f", "q"]), None))
    n_tiles = int_imm(rows * cols)
    return [ops.evaluate("tt.cb_reserve_back", cb, n_tiles, span=span),
            tirx.Bind(l1, ops.call("tt.get_write_ptr", cb)),
            tirx.Bind(first, ops.call("tt.as_signed", ana.simplify(row))),
            tirx.IfThenElse(first % 2 == 0, even, odd),
            zeros,
            ops.evaluate("tt.cb_push_back", cb, n_tiles, span=span)]


def _safe_value(safe: dict, buf, span) -> float:
    """The value a row-gathered read of tensor ``buf`` stores for rows outside it."""
    value = safe.get(str(buf.name), 0.0)
    if not isinstance(value, (int, float)):
        raise TTUnsupportedError(
            f"tensor {buf.name} is read row by row and its rows outside the tensor read its "
            f"safe value, which must be a constant, but T.annotate_safe_value gives `{value}`",
            span=span, hint="give T.annotate_safe_value a number")
    return float(value)


def _lower_rows(func, body, accessors):
    """Reader and writer: every ``tt.read_rows_to_cb`` / ``tt.write_rows_from_cb`` lowered by
    :func:`lower_rows`."""
    cb_dtypes = {b.var: str(b.value.args[4].value) for b in collect(body, tirx.Bind)
                 if ops.tt_op_name(b.value) == "tt.alloc_cb"}
    safe = to_py(get_attr(func, attrs.SAFE_VALUES, {})) or {}  # constants (A0.3.1 checked)

    def lower(ev):
        name = stmt_op_name(ev)
        if name not in ("tt.read_rows_to_cb", "tt.write_rows_from_cb"):
            return ev
        cb, buf = ev.value.args[0], ev.value.args[1]
        if buf not in accessors:
            raise TTVerifyError(f"no tensor accessor bound for {buf.name}")
        return seq(lower_rows(ev.value, accessors[buf], layout_of(func, buf), cb_dtypes[cb],
                              name == "tt.read_rows_to_cb", _safe_value(safe, buf, ev.span)))

    return tt_map(body, [(tirx.Evaluate, lower)], order="post")


def _lower_im2col(func, body, accessors):
    """Reader: every ``tt.im2col_to_cb`` lowered by :func:`lower_im2col`."""
    cb_dtypes = {b.var: str(b.value.args[4].value) for b in collect(body, tirx.Bind)
                 if ops.tt_op_name(b.value) == "tt.alloc_cb"}

    def lower(ev):
        if stmt_op_name(ev) != "tt.im2col_to_cb":
            return ev
        cb, buf = ev.value.args[0], ev.value.args[1]
        if buf not in accessors:
            raise TTVerifyError(f"no tensor accessor bound for {buf.name}")
        return seq(lower_im2col(ev.value, accessors[buf], layout_of(func, buf), cb_dtypes[cb]))

    return tt_map(body, [(tirx.Evaluate, lower)], order="post")


def _lower_scalar_takes(body):
    """Writer: ``v = tt.scalar_value(cb, word)`` followed by ``tt.scalar_take(cb_w)`` ->
    wait for the page the reader pushed into ``cb_w``, ``v`` = its word (``tt.l1_load_u32``),
    pop; a ``tt.scalar_take`` alone (the writer does not branch on it) waits and pops."""

    def take(ev, bind):
        cb = ev.value.args[0]
        span = ev.value.span
        out = [ops.evaluate("tt.cb_wait_front", cb, int_imm(1), span=span)]
        if bind is not None:
            l1 = tirx.Var(f"{str(cb.name).removesuffix('_cb')}_l1", "int32")
            out += [tirx.Bind(l1, ops.call("tt.get_read_ptr", cb)),
                    tirx.Bind(bind.var, ops.call("tt.l1_load_u32",
                                                 l1 + bind.value.args[1] * 4))]
        return out + [ops.evaluate("tt.cb_pop_front", cb, int_imm(1), span=span)]

    def on_seq(s):
        items, out, i = list(s.seq), [], 0
        while i < len(items):
            it, nxt = items[i], items[i + 1] if i + 1 < len(items) else None
            if isinstance(it, tirx.Bind) and ops.tt_op_name(it.value) in (
                    "tt.scalar_value", "tt.scalar_word") and stmt_op_name(nxt) == "tt.scalar_take":
                out += take(nxt, it)
                i += 2
            elif stmt_op_name(it) == "tt.scalar_take":
                out += take(it, None)
                i += 1
            else:
                out.append(it)
                i += 1
        return seq(out)

    body = tt_map(body, [(tirx.SeqStmt, on_seq)], order="post")
    # a take alone in its scope (a branch arm or loop body of one statement)
    return tt_map(body, [(tirx.Evaluate, lambda ev: seq(take(ev, None))
                          if stmt_op_name(ev) == "tt.scalar_take" else ev)], order="post")


def _lower_scalar_values(body):
    """Compute: ``v = tt.scalar_value(cb, word)`` -> ``read_tile_value(cb, 0, word)`` (the
    consume window around it waits for the page and pops it)."""

    def on_bind(b):
        if ops.tt_op_name(b.value) != "tt.scalar_value":
            return b
        cb, word = b.value.args
        return tirx.Bind(b.var, ops.call("tt.read_tile_value", cb, int_imm(0), word,
                                         span=b.value.span), b.span)

    return tt_map(body, [(tirx.Bind, on_bind)], order="post")


def _lower_runs(body, lower_run):
    """Replace maximal runs of read_to_cb (or write_from_cb) statements in every SeqStmt."""

    def group(items):
        out, run, run_op = [], [], None
        for s in items:
            name = stmt_op_name(s)
            name = "tt.read_to_cb" if name == "tt.mcast_read_to_cb" else name
            if name in ("tt.read_to_cb", "tt.write_from_cb") and (run_op in (None, name)):
                run.append(s.value)
                run_op = name
                continue
            if run:
                out.extend(lower_run(run, run_op == "tt.read_to_cb"))
                run, run_op = [], None
            if name in ("tt.read_to_cb", "tt.write_from_cb"):
                run, run_op = [s.value], name
            else:
                out.append(s)
        if run:
            out.extend(lower_run(run, run_op == "tt.read_to_cb"))
        return out

    def on_seq(s):
        return seq(group(list(s.seq)))

    def on_eval(ev):  # a stream op that is alone in its scope
        if stmt_op_name(ev) in ("tt.read_to_cb", "tt.mcast_read_to_cb", "tt.write_from_cb"):
            return seq(lower_run([ev.value], stmt_op_name(ev) != "tt.write_from_cb"))
        return ev

    body = tt_map(body, [(tirx.SeqStmt, on_seq)], order="post")
    # statements that were not inside a SeqStmt (a loop body of one op)
    return tt_map(body, [(tirx.Evaluate, on_eval)], order="post")


def _rmw_semaphore(func, mod) -> int:
    """The RMW semaphore's id: after the multicast semaphores of the kernel's reader."""
    source = get_attr(func, attrs.KERNEL_SOURCE)
    for _, f in mod.functions.items():
        if isinstance(f, tirx.PrimFunc) and str(get_attr(f, attrs.KERNEL_KIND, "")) == "reader" \
                and str(get_attr(f, attrs.KERNEL_SOURCE, "")) == str(source):
            return int((to_py(get_attr(f, attrs.MCAST_PLAN, {})) or {}).get("semaphores", 0))
    return 0


def _lower_rmw(func, mod, body):
    """``tt.rmw_acquire`` (reader): wait until the core's RMW semaphore is 0 (no write-back
    pending), set it to 1; ``tt.rmw_release`` (writer, after the write-back's barrier): set it
    to 0.  The reader's next read of an atomic's block thus follows the previous write-back."""
    if not any(stmt_op_name(e) in ("tt.rmw_acquire", "tt.rmw_release")
               for e in collect(body, tirx.Evaluate)):
        return func, body
    sem_id = _rmw_semaphore(func, mod)
    sem = tirx.Var("rmw_sem", "int32")

    def on_eval(ev):
        name = stmt_op_name(ev)
        span = ev.value.span
        if name == "tt.rmw_acquire":
            return seq([ops.evaluate("tt.noc_semaphore_wait", sem, int_imm(0), span=span),
                        ops.evaluate("tt.noc_semaphore_set", sem, int_imm(1), span=span)])
        if name == "tt.rmw_release":
            return ops.evaluate("tt.noc_semaphore_set", sem, int_imm(0), span=span)
        return ev

    body = tt_map(body, [(tirx.Evaluate, on_eval)], order="post")
    prologue, persistent = split_persistent(body)
    bind = tirx.Bind(sem, ops.call("tt.get_semaphore", int_imm(sem_id)))
    body = with_persistent([bind] + list(prologue), persistent)
    return func.with_attr(attrs.RMW_SEMAPHORE, sem_id), body


@tt_pass("LowerCBIntrinsics", requires=("ConfigureTensorAccessorTT",), scalar_programs=True)
def LowerCBIntrinsics(func, mod, ctx):
    """Abstract streams and consume markers -> reserve/push/wait/pop and NOC transfers;
    an atomic's RMW ordering -> the core's RMW semaphore (``_lower_rmw``)."""
    kind = str(require_attr(func, attrs.KERNEL_KIND, "LowerCBIntrinsics"))
    body = func.body
    if kind in ("reader", "writer"):
        func, body = _lower_rmw(func, mod, body)
        body = _lower_runs(body, _Streams(func).lower_run)
        body = _lower_rows(func, body, _accessors(body))
        if kind == "reader":
            body = _lower_im2col(func, body, _accessors(body))
            body = _lower_scalar_reads(body, _accessors(body))
            body = _lower_element_reads(body, _accessors(body))
        else:
            body = _lower_scalar_takes(body)
        if get_attr(func, attrs.MCAST_PLAN) is not None:  # the work unit's last multicasts
            prologue, persistent = split_persistent(body)
            body = with_persistent(prologue, persistent, seq([
                persistent.body, ops.evaluate("tt.noc_async_write_barrier")]))
        in_place = {"tt.shard_to_cb": ("tt.cb_reserve_back", "tt.cb_push_back"),
                    "tt.cb_to_shard": ("tt.cb_wait_front", "tt.cb_pop_front")}

        def on_shard(ev):
            name = stmt_op_name(ev)
            if name not in in_place:
                return ev
            cb, _, n = ev.value.args
            first, second = in_place[name]
            return seq([ops.evaluate(first, cb, n, span=ev.value.span),
                        ops.evaluate(second, cb, n, span=ev.value.span)])
        body = tt_map(body, [(tirx.Evaluate, on_shard)], order="post")
        cb_dtypes = {b.var: str(b.value.args[4].value) for b in collect(body, tirx.Bind)
                     if ops.tt_op_name(b.value) == "tt.alloc_cb"}

        def on_mask(ev):
            if stmt_op_name(ev) == "tt.row_order_to_cb":
                return seq(lower_row_order(ev.value))
            if stmt_op_name(ev) != "tt.mask_to_cb":
                return ev
            return seq(lower_mask(ev.value, cb_dtypes[ev.value.args[0]]))
        body = tt_map(body, [(tirx.Evaluate, on_mask)], order="post")
    else:
        protocol = {"tt.consume.begin": "tt.cb_wait_front", "tt.consume.end": "tt.cb_pop_front"}

        def on_eval(ev):
            name = stmt_op_name(ev)
            if name not in protocol:
                return ev
            return ops.evaluate(protocol[name], *ev.value.args, span=ev.value.span)

        body = tt_map(body, [(tirx.Evaluate, on_eval)], order="post")
        body = _lower_scalar_values(body)
    body = tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")
    return func.with_body(body)

