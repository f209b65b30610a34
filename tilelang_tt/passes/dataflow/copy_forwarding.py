"""C2.1 ForwardBlockCopiesTT: block-to-block copies forwarded away (an optimisation).

Requires: LowerTTTileIntrinsics.

TileLang stages results through a fragment and a shared buffer (``C_local[...] = ...;
T.copy(C_local, C_shared)``).  On Tensix both are circular buffers, and the copy would cost a
round trip through DST.  When the copy is the only reader of its source, the source has one
compute producer in the same statement list before the copy, the destination has no other
producer (or, a loop's carry, the producer does not read it and nothing reads it between the
producer and the copy) and both hold the same tiles, the producer writes the destination directly: the
copy and the source's circular buffer disappear.  Every compute producer ends in a pack that
converts to the destination's data format, so the dtypes may differ when the source is the
wider one (float32): rounding once to the destination's dtype is what the copy made too.

The other direction: when the copy is the only producer of its destination, the
destination's only reader is one compute op later in the same statement list (not the
writer), the source has one producer (not a loop's carry) and both hold the same tiles in the
same dtype, that reader reads the source instead: the copy and the destination's circular
buffer disappear.  A0.4 copies a block the writer also copies out into a buffer of its own;
when C1 turned that copy out into a compute op (a column vector transposed into a row
vector), the copy is no longer needed.

Guarantees: every forwardable copy (``tt.eltwise`` of ``tt.expr.load(0)``) and its source's
(or, forwarded to its reader, its destination's) ``tt.alloc_cb`` are gone; the program
computes the same values.
"""

from __future__ import annotations

from tvm import tirx

from ... import ops
from ..common import collect, int_imm, seq, tt_calls, tt_pass
from ..common import tt_map
from ..frontend.eltwise_expr import is_copy

_NOOP = tirx.Evaluate(int_imm(0))


def _cb_binds(body) -> dict:
    return {b.var: b for b in collect(body, tirx.Bind) if ops.tt_op_name(b.value) == "tt.alloc_cb"}


def _uses(body):
    """CB var -> (producer calls, consumer calls)."""
    uses = {}

    def note(cb, call, write):
        entry = uses.setdefault(cb, ([], []))
        entry[0 if write else 1].append(call)

    for call in tt_calls(body):
        for i in ops.cb_reads(call):
            note(call.args[i], call, False)
        for i in ops.cb_writes(call):
            note(call.args[i], call, True)
    return uses


def _between(body, first, second):
    """The statements strictly between ``first`` and ``second`` when both are statements of
    one statement list, ``first`` before ``second``; else None."""
    def index(s, call):
        return next((i for i, st in enumerate(s.seq)
                     if isinstance(st, tirx.Evaluate) and st.value.same_as(call)), None)

    for s in collect(body, tirx.SeqStmt):
        a, b = index(s, first), index(s, second)
        if a is not None and b is not None:
            return list(s.seq[a + 1:b]) if a < b else None
    return None


def _moves_safely(producer, dst, between, dst_cons) -> bool:
    """A destination that has other producers (a loop's carry) can take ``producer``'s
    block when the producer does not read it and nothing reads it between the producer and
    the copy (its block in force there is still the earlier one)."""
    if any(producer.args[i].same_as(dst) for i in ops.cb_reads(producer)):
        return False
    return not any(c.same_as(d) for st in between for c in tt_calls(st) for d in dst_cons)


def _tiles(bind):
    """(rows, cols) of a ``tt.alloc_cb`` bind."""
    args = bind.value.args
    return int(args[1]), int(args[2])


def _dtype(bind) -> str:
    return str(bind.value.args[4].value)


def forward_copies(body):
    """Remove every forwardable copy (``tt.eltwise`` of ``tt.expr.load(0)``, see module
    docstring)."""
    while True:
        binds, uses = _cb_binds(body), _uses(body)
        copies = [c for c in tt_calls(body, "tt.eltwise") if is_copy(ops.named(c).expr)]
        for copy in copies:
            dst, (src,) = ops.named(copy).out, ops.named(copy).ins
            src_prod, src_cons = uses.get(src, ([], []))
            dst_prod, dst_cons = uses.get(dst, ([], []))
            if _forwards_to_reader(body, copy, src, dst, binds, uses):
                body = _rewrite_reader(body, copy, src, dst, dst_cons[0], binds[dst])
                break
            if (len(src_prod) != 1 or len(src_cons) != 1
                    or _tiles(binds[src]) != _tiles(binds[dst])
                    or _dtype(binds[src]) not in (_dtype(binds[dst]), "float32")):
                continue
            producer = src_prod[0]
            between = _between(body, producer, copy)
            if producer.op.name in ("tt.read_to_cb", "tt.read_rows_to_cb") or between is None:
                continue
            if len(dst_prod) != 1 and not _moves_safely(producer, dst, between, dst_cons):
                continue
            args = list(producer.args)
            for i in ops.cb_writes(producer):
                if args[i].same_as(src):
                    args[i] = dst
            retargeted = ops.call(producer.op.name, *args, span=producer.span)
            body = _rewrite(body, producer, retargeted, copy, binds[src])
            break
        else:
            return body


def _forwards_to_reader(body, copy, src, dst, binds, uses) -> bool:
    """The copy's one reader can read its source instead (module docstring)."""
    src_prod, src_cons = uses.get(src, ([], []))
    dst_prod, dst_cons = uses.get(dst, ([], []))
    if len(dst_prod) != 1 or len(dst_cons) != 1 or len(src_prod) != 1 or \
            _tiles(binds[src]) != _tiles(binds[dst]) or _dtype(binds[src]) != _dtype(binds[dst]):
        return False
    if any(ops.spec(c.op.name).kernel != "compute" for c in src_cons):
        return False  # the source keeps one consumer kernel
    reader = dst_cons[0]
    if ops.spec(reader.op.name).kernel != "compute" or \
            any(reader.args[i].same_as(src) for i in ops.cb_reads(reader)):
        return False
    return _between(body, copy, reader) is not None


def _rewrite_reader(body, copy, src, dst, reader, dst_bind):
    args = [src if a.same_as(dst) else a for a in reader.args]
    return _rewrite(body, reader, ops.call(reader.op.name, *args, span=reader.span), copy,
                    dst_bind)


def _rewrite(body, producer, retargeted, copy, src_bind):
    """``producer``'s statement replaced by ``retargeted``; ``copy`` and ``src_bind`` dropped."""
    def on_eval(e):
        if e.value.same_as(producer):
            return tirx.Evaluate(retargeted, e.span)
        if e.value.same_as(copy):
            return _NOOP
        return e

    def on_bind(b):
        return _NOOP if b.same_as(src_bind) else b

    body = tt_map(body, [(tirx.Evaluate, on_eval), (tirx.Bind, on_bind)], order="post")
    return tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")


@tt_pass("ForwardBlockCopiesTT", requires=("LowerTTTileIntrinsics",))
def ForwardBlockCopiesTT(func, mod, ctx):
    """Forward block-to-block copies (module docstring)."""
    return func.with_body(forward_copies(func.body))
