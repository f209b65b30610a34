"""New versions of block buffers for in-place updates (used by A0 on its output).

A circular buffer cannot be read and refilled by one operation, and a GEMM accumulator lives
in DST, where elementwise operations cannot reach it.  TileLang writes both as in-place
updates (``C_local[i, j] = T.max(C_local[i, j], 0)`` after a ``T.gemm`` loop), so every such
update gets a fresh buffer (single assignment, in program order):

* an elementwise tile op (``tile.add/sub/mul``, ``tt.tile.unary``, ``tt.tile.expr``) that
  reads a GEMM accumulator reads a new fragment instead, filled by ``tile.copy(new <-
  accumulator)`` (which C1 makes the accumulator's pack) placed right after the statement
  that last updates the accumulator;
* one that writes a buffer it also reads, or writes an accumulator, writes a new fragment;
* every later tile op refers to the newest version.

A version made inside a loop is only valid inside that loop.  A later use outside it, or a
loop body that reads the buffer before redefining it (a loop-carried update), is a
``TTUnsupportedError`` naming the buffer.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ..errors import TTUnsupportedError
from .common import (
    buffer_dtype, buffer_shape, collect, gemm_accumulators, replace_tile_call, seq, tt_map,
)

ELEMENTWISE = ("tirx.tile.add", "tirx.tile.sub", "tirx.tile.mul", "tt.tile.unary",
               "tt.tile.expr")


def _full(buf):
    return buf[tuple(slice(0, d) for d in buffer_shape(buf))]


def _on(region, buf):
    """``region``'s ranges on another buffer."""
    return buf[tuple(slice(r.min, r.min + r.extent) for r in region.region)]


def _copy(dst, src):
    import tvm.tirx.operator as tirx_op

    return tirx_op.Copy(dst, src, workspace={}, config={}, dispatch=None, scope=None)


def version_block_updates(body, fresh):
    """Rewrite in-place updates and elementwise reads of accumulators (module docstring);
    ``fresh(stem)`` names new buffers."""
    accumulators = gemm_accumulators(body)
    calls = collect(body, tirx.TilePrimitiveCall)  # program order
    loops = collect(body, tirx.For)
    within = {id(loop): collect(loop.body, tirx.TilePrimitiveCall) for loop in loops}

    def loops_of(call):
        return [lp for lp in loops if any(c.same_as(call) for c in within[id(lp)])]

    def is_acc(buf):
        return any(buf.same_as(a) for a in accumulators)

    versions = {}  # original buffer -> (newest version, loop it was made in or None)
    replacements = []  # (call, statements replacing it)
    packs = []  # (accumulator, first reader, copy that packs it)

    def current(buf, call, where):
        entry = next((v for b, v in versions.items() if b.same_as(buf)), None)
        if entry is None:
            return buf
        version, loop = entry
        if loop is not None and not any(lp.same_as(loop) for lp in where):
            raise TTUnsupportedError(
                f"{buf.name} is updated in place inside a loop and used after it; give the "
                "updated values their own buffer", span=call.span or loop.span)
        return version

    def new_version(buf, where, call):
        loop = where[-1] if where else None
        if loop is not None:  # the loop body must define buf before this update reads it
            body_calls = within[id(loop)]
            index = next(i for i, c in enumerate(body_calls) if c.same_as(call))
            if not any(isinstance(c.args[0], tvm.ir.TensorRegion)
                       and c.args[0].source.same_as(buf) for c in body_calls[:index]):
                raise TTUnsupportedError(
                    f"{buf.name} is updated in place in a loop that carries its value from one "
                    "iteration to the next; this is not supported yet",
                    span=call.span or loop.span)
        made = tirx.decl_buffer(buffer_shape(buf), buffer_dtype(buf), fresh(buf.name),
                                scope="local.fragment")
        versions[buf] = (made, loop)
        return made

    for call in calls:
        where = loops_of(call)
        args, changed = [], False
        for a in call.args:
            version = current(a.source, call, where) if isinstance(a, tvm.ir.TensorRegion) else None
            renamed = version is not None and not version.same_as(a.source)
            args.append(_on(a, version) if renamed else a)
            changed = changed or renamed
        pre = []
        if call.op.name in ELEMENTWISE:
            reads = [a.source for a in args[1:] if isinstance(a, tvm.ir.TensorRegion)]
            accs_read = []
            for b in reads:
                if is_acc(b) and not any(b.same_as(x) for x in accs_read):
                    accs_read.append(b)
            for acc in accs_read:
                packed = new_version(acc, where, call)
                pre.append(tirx.AllocBuffer(packed))
                packs.append((acc, call, _copy(_full(packed), _full(acc))))
                args = [args[0]] + [_on(a, packed) if isinstance(a, tvm.ir.TensorRegion)
                                    and a.source.same_as(acc) else a for a in args[1:]]
            dst = args[0].source
            original = call.args[0].source
            if is_acc(dst) or any(dst.same_as(b) for b in reads):
                made = new_version(original, where, call)
                pre.append(tirx.AllocBuffer(made))
                args[0] = _on(args[0], made)
        if pre or changed:
            replacements.append((call, pre + [replace_tile_call(call, args=args)]))

    if not replacements:
        return body

    def rewrite(call):
        for old, new in replacements:
            if old.same_as(call):
                return seq(new)
        return call

    # an accumulator is packed right after its last update, before anything else the reading
    # statement needs (staged operands, derived vectors) can claim DST
    def place_packs(s: tirx.SeqStmt):
        items = list(s.seq)
        for acc, reader, pack in packs:
            holds = [any(c.same_as(reader) for c in collect(it, tirx.TilePrimitiveCall))
                     for it in items]
            if not any(holds):
                continue
            at = holds.index(True)
            updates = [i for i, it in enumerate(items[:at])
                       if any(c.op.name == "tirx.tile.gemm" and c.args[0].source.same_as(acc)
                              for c in collect(it, tirx.TilePrimitiveCall))]
            items.insert(updates[-1] + 1 if updates else at, pack)
        return seq(items) if len(items) != len(s.seq) else s

    body = tt_map(body, [(tirx.SeqStmt, place_packs)], order="post")
    return tt_map(body, [(tirx.TilePrimitiveCall, rewrite)], order="post")
