"""A0.3.0 DropDeadBlockWritesTT: computations whose results nothing reads are dropped.

Requires: LegalizeTileOpsTT (every block-level operation is a tile primitive whose first
region operand is what it writes).

A kernel may compute a block value that nothing uses (TileLang issue 1690's
``T.reduce_max(tmp, tmp_max, dim=0)`` with ``tmp_max`` never read, a ``T.copy`` into a shared
buffer left over from an edit).  TileLang compiles such kernels; so does a compiler that
removes dead computations.  Liveness is computed backwards from what the kernel does to the
outside world (mark and sweep, so values that only feed each other - a loop-carried
accumulator never copied out - are dead too):

* a tile primitive that writes a tensor (a ``T.copy`` out), or has no region operand, is
  live;
* a block buffer (``shared`` / ``local.fragment``) is live when a live tile primitive reads
  it, or when anything but a tile primitive's region operands refers to it (an element read
  or store: left as it is for later stages);
* a tile primitive writing a live block buffer is live.

Guarantees: an expression statement without calls (``tmp[0]`` alone: a value read and
discarded) is removed first; every tile primitive writing a block buffer that is not live is
removed, with the
allocation of that buffer, and a ``TTDeadCodeWarning`` per buffer names it and the source
lines of the statements dropped; loops and branches left empty are removed.  A kernel left
with nothing to compute compiles to kernels that do nothing (as TileLang's does).  Kernels
without dead writes are returned unchanged.
"""

from __future__ import annotations

import warnings

import tvm
from tvm import tirx

from ...errors import TTDeadCodeWarning, describe_span, source_span
from ..common import buffer_scope, collect, seq, tt_map, tt_pass

_NOOP = tirx.Evaluate(tirx.IntImm("int32", 0))


def _is_block(buf) -> bool:
    return buffer_scope(buf) in ("shared", "local.fragment")


def _regions(call):
    return [a for a in call.args if isinstance(a, tvm.ir.TensorRegion)]


def _written(call):
    """The block buffer ``call`` writes, or None (it writes a tensor, or nothing)."""
    regions = _regions(call)
    if regions and _is_block(regions[0].source):
        return regions[0].source
    return None


def _read(call) -> list:
    """Block buffers ``call`` reads: its other region operands (element loads anywhere in
    its operands count too)."""
    regions = _regions(call)
    bufs = [r.source for r in regions[1:]]
    for a in call.args:
        if not isinstance(a, tvm.ir.TensorRegion):
            bufs += [ld.source for ld in collect(a, tvm.ir.TensorLoad)]
    return [b for b in bufs if _is_block(b)]


def _referenced_outside_tile_ops(body) -> set:
    """Block buffers an element load or store refers to (tile primitives' region operands
    are TensorRegions, not loads)."""
    refs = {ld.source for ld in collect(body, tvm.ir.TensorLoad) if _is_block(ld.source)}
    refs |= {st.buffer for st in collect(body, tirx.BufferStore) if _is_block(st.buffer)}
    return refs


def dead_block_writes(body):
    """(dead tile primitives, dead buffers): the tile primitives writing block buffers no
    live statement reads, and those buffers (module docstring)."""
    calls = collect(body, tirx.TilePrimitiveCall)
    live = set(_referenced_outside_tile_ops(body))
    live_calls = [c for c in calls if _written(c) is None]
    pending = [c for c in calls if _written(c) is not None]
    for c in live_calls:
        live.update(_read(c))
    changed = True
    while changed:
        changed = False
        rest = []
        for c in pending:
            if _written(c) in live:
                live.update(_read(c))
                changed = True
            else:
                rest.append(c)
        pending = rest
    dead_bufs = []
    for c in pending:
        buf = _written(c)
        if not any(buf.same_as(b) for b in dead_bufs):
            dead_bufs.append(buf)
    return pending, dead_bufs


def _empty(s) -> bool:
    return isinstance(s, tirx.Evaluate) and isinstance(s.value, tirx.IntImm)


def _prune(body):
    """Loops and branches whose bodies became no-ops are removed; statement lists lose their
    no-ops."""

    def on_seq(s):
        return seq(s.seq)

    def on_for(f):
        return _NOOP if _empty(f.body) else f

    def on_if(s):
        if _empty(s.then_case) and (s.else_case is None or _empty(s.else_case)):
            return _NOOP
        return s

    return tt_map(body, [(tirx.SeqStmt, on_seq), (tirx.For, on_for),
                         (tirx.IfThenElse, on_if)], order="post")


def _warn(kernel, body, dead_calls, dead_bufs):
    """One ``TTDeadCodeWarning`` per dead buffer, at the source line of the first statement
    dropped for it (so Python's warning filters see the user's file and line).  A buffer
    whose dropped lines are all another's (a temporary an earlier stage made for that op,
    ``clear=False``'s partial reduction) is reported with it: a buffer never read at all
    before one read by dropped statements, then program order.  A buffer read only by its own
    updates is never read."""
    # what each buffer's value feeds: reads by statements writing another buffer (an update
    # reading the buffer it writes, a carried ``acc = acc + x``, feeds nothing new)
    readers = [b for c in collect(body, tirx.TilePrimitiveCall) for b in _read(c)
               if _written(c) is None or not _written(c).same_as(b)]
    found = []  # (buffer, spans, lines, never read)
    for buf in dead_bufs:
        spans = [source_span(c.span) for c in dead_calls if _written(c).same_as(buf)]
        lines = []
        for span in spans:
            where = describe_span(span) or "(no source line)"
            if where not in lines:
                lines.append(where)
        found.append((buf, spans, lines, not any(buf.same_as(r) for r in readers)))

    def covered(k):
        _, _, lines, sink = found[k]
        for n, (_, _, other, other_sink) in enumerate(found):
            if n == k or not set(lines) <= set(other):
                continue
            if set(lines) < set(other) or (other_sink, -n) > (sink, -k):
                return True
        return False

    for k, (buf, spans, lines, sink) in enumerate(found):
        if covered(k):
            continue
        what = "is written but never read" if sink else \
            "is read only by statements dropped as dead"
        message = (f"{kernel}: block buffer {buf.name} {what}; dropped "
                   + ("its write" if len(lines) == 1 else f"its {len(lines)} writes")
                   + ": " + "; ".join(lines))
        first = next((sp for sp in spans if sp is not None), None)
        try:
            filename, lineno = str(first.source_name.name), int(first.line)
        except Exception:  # no source line: the pass's own location
            warnings.warn(message, TTDeadCodeWarning, stacklevel=3)
            continue
        warnings.warn_explicit(message, TTDeadCodeWarning, filename, lineno)


def _drop_discarded_values(body):
    """Expression statements without calls (``tmp[0]`` alone on a line: a value computed and
    discarded) are no-ops."""

    def on_eval(s):
        if isinstance(s.value, tirx.IntImm) or collect(s.value, tvm.ir.Call):
            return s
        return _NOOP

    return tt_map(body, [(tirx.Evaluate, on_eval)])


def drop_dead_block_writes(body, kernel: str = "kernel"):
    """``body`` without its dead block writes (module docstring)."""
    pruned = _drop_discarded_values(body)
    if not pruned.same_as(body):
        body = _prune(pruned)
    dead_calls, dead_bufs = dead_block_writes(body)
    if not dead_calls:
        return body
    _warn(kernel, body, dead_calls, dead_bufs)
    body = tt_map(body, [
        (tirx.TilePrimitiveCall, lambda c: _NOOP if any(c.same_as(d) for d in dead_calls)
         else c),
        (tirx.AllocBuffer, lambda a: _NOOP if any(a.buffer.same_as(b) for b in dead_bufs)
         else a),
    ])
    return _prune(body)


@tt_pass("DropDeadBlockWritesTT", requires=("LegalizeTileOpsTT",))
def DropDeadBlockWritesTT(func, mod, ctx):
    """Tile primitives whose results nothing reads are dropped (module docstring)."""
    name = str(func.attrs["global_symbol"]) if func.attrs is not None and \
        "global_symbol" in func.attrs else "kernel"
    return func.with_body(drop_dead_block_writes(func.body, name))
