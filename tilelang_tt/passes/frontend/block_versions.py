"""A0.4 VersionBlockBuffersTT: block buffers in single-assignment form.

Requires: LegalizeTileOpsTT (every block-level operation is a tile primitive).

A circular buffer holds one definition of a block at a time: it cannot be read and refilled
by one operation, one kernel produces it and one kernel consumes it, and a GEMM accumulator
lives in DST, where elementwise operations cannot reach it.  TileLang writes all of these as
updates of one buffer (``A_s[i, j] = A_s[i, j] + B_s[i, j]``, ``B_s = A_s * 2`` after
``T.copy(B, B_s)``, ``C_local[i, j] = T.max(C_local[i, j], 0)`` after a ``T.gemm`` loop), so:

* **versions** - every definition of a block buffer after its first (in program order) writes
  a new buffer of the same name, shape and dtype, and later tile ops read the newest version;
  a copy of a buffer onto itself (``s = s * 1.0``) is dropped;
* **accumulator reads** - an elementwise tile op (``tile.add/sub/mul``, ``tt.tile.expr``)
  or a scan (``tt.tile.cumsum``, which also writes a new version when its destination is the
  accumulator) or a reduction (``tile.sum/max``: ``T.reduce_max(acc_s, m, dim=1)`` right after
  ``T.gemm(Q_s, K_s, acc_s)``) that reads a GEMM accumulator reads a new fragment instead, filled by
  ``tile.copy(new <- accumulator)`` (which C1 makes the accumulator's pack) right after the
  statement that last updates the accumulator (once per value of the accumulator: later
  readers in the same scope, a copy out included, read the same fragment; a copy of an
  accumulator that other ops also read packs it too); one that writes an accumulator writes a
  new version;
* **one consumer kernel** - a version the writer copies out and that something else also
  reads (another copy out, or a compute op) is first copied (by the compute kernel) into a
  buffer of its own for each copy out;
* **dead definitions** - a definition no one reads is dropped, as long as the buffer is read
  somewhere (DropDeadBlockWritesTT, A0.3.0, already dropped the writes of buffers nothing
  reads; what is left of them, a buffer only an element access names, is left for
  BuildTileDFGTT).

* **loop-carried values** - a buffer a loop body reads before redefining it carries its
  value from one iteration to the next: it gets a carry buffer (same name), filled by a copy
  of the value in force before the loop, read by the body until it redefines the buffer,
  refilled by a copy of the newest version as the body's last statement, and read after the
  loop (BuildTileDFGTT gives the carrying loop's body a consume window of its own);
* **accumulators updated elementwise** - an accumulator an elementwise op (or a copy)
  writes before a ``T.gemm`` into it, in program order or in a loop both are in, is an
  ordinary fragment: each ``T.gemm`` into it accumulates into a fresh accumulator, then
  ``C = C + fresh`` (``C = fresh`` with ``clear_accum`` or after a ``T.clear``); so is an
  accumulator a ``T.gemm`` updates inside a loop whose bounds are not constants.

* **carried values updated under a branch** - a carried value whose updates are in the
  ``then`` arm of an ``if`` (no ``else``) directly in the carrying loop's body, every read and
  update of it in the body inside that arm, has its carry refilled as the arm's last
  statement(s) (not at the end of the iteration): an iteration that skips the branch leaves
  the carry as it was (TileLang's block-sparse attention under ``if block_mask[k] != 0:``).

Any other version made inside a loop or a branch is only valid there: a later use outside
it, or a carried value last updated in a branch of the loop body otherwise, is a
``TTUnsupportedError`` naming the buffer and the source lines.

Guarantees: no tile op reads and writes one block buffer, every block buffer has one
definition (in program order) and one consumer kernel when the writer copies it out.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ...errors import TTCompileError, TTUnsupportedError, describe_span, source_span
from ..common import (
    buffer_dtype, buffer_scope, buffer_shape, collect, gemm_accumulators, replace_tile_call, seq,
    tt_map, tt_pass, with_tile_span,
)

ELEMENTWISE = ("tirx.tile.add", "tirx.tile.sub", "tirx.tile.mul", "tt.tile.expr",
               "tt.tile.index_mask")
# compute ops that read their block operands from CBs: an accumulator operand is packed first
_READS_PACKED = ELEMENTWISE + ("tirx.tile.sum", "tirx.tile.max", "tirx.tile.min",
                                "tt.tile.cumsum")
_NOOP = tirx.Evaluate(tirx.IntImm("int32", 0))


def _full(buf):
    return buf[tuple(slice(0, d) for d in buffer_shape(buf))]


def _on(region, buf):
    """``region``'s ranges on another buffer."""
    return buf[tuple(slice(r.min, r.min + r.extent) for r in region.region)]


def _copy(dst, src, span=None):
    import tvm.tirx.operator as tirx_op

    return with_tile_span(tirx_op.Copy(dst, src, workspace={}, config={}, dispatch=None,
                                       scope=None), span)


def _regions(call):
    return [a for a in call.args if isinstance(a, tvm.ir.TensorRegion)]


def _is_block(buf) -> bool:
    return buffer_scope(buf) in ("shared", "local.fragment")


def _find(table, buf):
    return next((v for k, v in table.items() if k.same_as(buf)), None)


def _line(span) -> str:
    return describe_span(span) or "(no source line)"


def _reads_writes(call):
    """(block buffers ``call`` reads, block buffer it writes or None).  A ``T.gemm`` with
    ``clear_accum`` (beta 0) does not read its accumulator."""
    regions = _regions(call)
    if call.op.name == "tirx.tile.gemm" and float(call.args[7].value) == 0.0:
        regions = regions[:3]  # C, A, B: the fourth region is the accumulator read
    reads = [r.source for r in regions[1:] if _is_block(r.source)]
    dst = regions[0].source if regions and _is_block(regions[0].source) else None
    return reads, dst


def _carried(loop_body, is_acc_chain):
    """User buffers a loop body reads before (re)defining them and defines: their value goes
    from one iteration to the next.  ``is_acc_chain(buf, calls)`` says whether ``buf`` is a
    GEMM accumulator whose only updates in the body are ``T.gemm`` (DST carries those)."""
    defined, read_first, written = [], [], []
    calls = collect(loop_body, tirx.TilePrimitiveCall)
    for call in calls:
        reads, dst = _reads_writes(call)
        for b in reads:
            if not any(b.same_as(d) for d in defined) and not any(b.same_as(r)
                                                                 for r in read_first):
                read_first.append(b)
        if dst is not None:
            defined.append(dst)
            if not any(dst.same_as(w) for w in written):
                written.append(dst)
    return [b for b in written if any(b.same_as(r) for r in read_first)
            and not is_acc_chain(b, calls)]


def _demoted(body, accs):
    """GEMM accumulators that elementwise ops also update before a ``T.gemm`` into them (in
    program order, or in a loop both are in): their value is not DST's alone, so every
    ``T.gemm`` into one accumulates into a fresh accumulator that is then added to it."""
    order = []  # (call, enclosing loops)

    def visit(s, loops):
        if isinstance(s, tirx.SeqStmt):
            for x in s.seq:
                visit(x, loops)
        elif isinstance(s, (tirx.For, tirx.While)):
            visit(s.body, loops + [s])
        elif isinstance(s, tirx.IfThenElse):
            visit(s.then_case, loops)
            if s.else_case is not None:
                visit(s.else_case, loops)
        elif isinstance(s, tirx.AttrStmt):
            visit(s.body, loops)
        elif isinstance(s, tirx.TilePrimitiveCall):
            order.append((s, loops))
        else:
            for c in collect(s, tirx.TilePrimitiveCall):
                order.append((c, loops))

    visit(body, [])
    out = []
    for acc in accs:
        if any(acc.same_as(o) for o in out):
            continue
        gemms = [(i, loops) for i, (c, loops) in enumerate(order)
                 if c.op.name == "tirx.tile.gemm" and _reads_writes(c)[1] is not None
                 and _reads_writes(c)[1].same_as(acc)]
        writes = [(i, loops) for i, (c, loops) in enumerate(order)
                  if c.op.name in ELEMENTWISE + ("tirx.tile.copy",)
                  and _reads_writes(c)[1] is not None and _reads_writes(c)[1].same_as(acc)]
        if any(w < g or any(l.same_as(m) for l in wl for m in gl)
               for w, wl in writes for g, gl in gemms):
            out.append(acc)
        elif any(isinstance(lp, tirx.For) and
                 not (isinstance(lp.min, tirx.IntImm) and isinstance(lp.extent, tirx.IntImm))
                 for _, gl in gemms for lp in gl):
            # a K loop whose bounds are known only at run time (TileLang's causal backward
            # `T.Pipelined(by * bm // bn, seq // bn)`): DST keeps K steps only over a loop of
            # constant trip count, so the steps are added up in the fragment
            out.append(acc)
    return out


class _Def:
    """The version of a user buffer in force: its buffer, the scope (loop or branch) it was
    made in (None: the kernel body) and the statement that made it."""

    def __init__(self, buf, scope, call):
        self.buf, self.scope, self.call = buf, scope, call


class _Versioner:
    def __init__(self, body):
        accs = gemm_accumulators(body)
        self.demoted = _demoted(body, accs)
        self.accs = [a for a in accs if not any(a.same_as(d) for d in self.demoted)]
        self.carried = []  # (loop, user buffer): updates carried from iteration to iteration
        self.current = {}  # user buffer -> _Def
        self.scopes = []  # enclosing loops and branches: (node, arm)
        self.loop_reads = {}  # id(loop) -> user buffers read there from an outer version
        self.packs = []  # (accumulator, reading call, copy that packs it)
        self.packed = []  # (accumulator, its packed fragment, scope_key()) of its current value
        self.all_calls = collect(body, tirx.TilePrimitiveCall)
        self.versions = []  # (version, user buffer)

    # ---- helpers --------------------------------------------------------------------------
    def scope_key(self) -> list:
        """The enclosing loops and branch arms."""
        return list(self.scopes)

    def readers_of(self, acc) -> int:
        """How many tile ops other than ``T.gemm`` read ``acc`` (anywhere in the kernel)."""
        return sum(1 for c in self.all_calls if c.op.name != "tirx.tile.gemm" and any(
            r.same_as(acc) for r in _reads_writes(c)[0]))

    def same_scope(self, key) -> bool:
        return len(key) == len(self.scopes) and all(
            n.same_as(m) and a == b for (n, a), (m, b) in zip(key, self.scopes))

    def is_acc(self, buf) -> bool:
        return any(buf.same_as(a) for a in self.accs)

    def in_scope(self, scope) -> bool:
        return scope is None or any(s[0].same_as(scope[0]) and s[1] == scope[1]
                                    for s in self.scopes)

    def depth_of(self, scope) -> int:
        if scope is None:
            return 0
        return next(i + 1 for i, s in enumerate(self.scopes)
                    if s[0].same_as(scope[0]) and s[1] == scope[1])

    def read(self, buf, call):
        """The version of ``buf`` a read by ``call`` sees."""
        d = _find(self.current, buf)
        if d is None:
            return buf
        if not self.in_scope(d.scope):
            where = "a loop" if isinstance(d.scope[0], (tirx.For, tirx.While)) else \
                "a branch of an if"
            raise TTUnsupportedError(
                f"{buf.name} is written inside {where} at {_line(d.call.span)} and read after it "
                f"at {_line(call.span)}; a block buffer written there holds a value only there",
                hint="give the value read after the loop or branch a buffer of its own, written "
                "outside it")
        depth = self.depth_of(d.scope)
        for node, arm in self.scopes[depth:]:
            if isinstance(node, (tirx.For, tirx.While)):
                self.loop_reads.setdefault(id(node), []).append(buf)
        return d.buf

    def define(self, buf, call):
        """The buffer a definition of ``buf`` by ``call`` writes."""
        d = _find(self.current, buf)
        scope = self.scopes[-1] if self.scopes else None
        if d is None and not self.is_acc(buf):
            self.current[buf] = _Def(buf, scope, call)
            return buf
        base = 0 if d is None else self.depth_of(d.scope) if self.in_scope(d.scope) else 0
        for node, arm in self.scopes[base:]:
            if isinstance(node, (tirx.For, tirx.While)) and any(
                    b.same_as(buf) for b in self.loop_reads.get(id(node), [])) and not any(
                    l.same_as(node) and b.same_as(buf) for l, b in self.carried):
                raise TTUnsupportedError(
                    f"{buf.name} is updated in place in a loop that carries its value from one "
                    f"iteration to the next (at {_line(call.span)}); this is not supported yet",
                    span=call.span or node.span)
        made = tirx.decl_buffer(buffer_shape(buf), buffer_dtype(buf), buf.name,
                                scope="local.fragment" if self.is_acc(buf) else buffer_scope(buf))
        self.current[buf] = _Def(made, scope, call)
        self.versions.append((made, buf))
        return made

    # ---- statements -----------------------------------------------------------------------
    def stmt(self, s):
        if isinstance(s, tirx.SeqStmt):
            return seq([self.stmt(x) for x in s.seq])
        if isinstance(s, (tirx.For, tirx.While)):  # a `while` over mutable scalars (A0.1)
            return self.loop(s)
        if isinstance(s, tirx.IfThenElse):
            before = dict(self.current)
            self.scopes.append((s, 0))
            then = self.stmt(s.then_case)
            then = self.refill_in_branch(s, then, before)
            self.scopes.pop()
            other = None
            if s.else_case is not None:
                self.scopes.append((s, 1))
                other = self.stmt(s.else_case)
                self.scopes.pop()
            return tirx.IfThenElse(s.condition, then, other, s.span)
        if isinstance(s, tirx.AttrStmt):
            return tirx.AttrStmt(s.node, s.attr_key, s.value, self.stmt(s.body), s.span)
        if isinstance(s, tirx.TilePrimitiveCall):
            return self.call(s)
        return s

    def refill_in_branch(self, branch, then, before):
        """Carried values a branch directly in their carrying loop's body updates: the
        branch refills the carry itself, as the last statements of its ``then`` arm, so an
        iteration that does not take it leaves the carry (its circular buffer) untouched and
        the value flows on unchanged.  Every read and update of such a buffer in the
        iteration must be in that arm (the carry is consumed and refilled there only)."""
        if len(self.scopes) < 2 or not isinstance(self.scopes[-2][0], (tirx.For, tirx.While)):
            return then
        loop = self.scopes[-2][0]
        refills = []
        for lp, buf in self.carried:
            if not lp.same_as(loop):
                continue
            d0, d1 = _find(before, buf), _find(self.current, buf)
            if d0 is None or d1 is None or d1.buf.same_as(d0.buf):
                continue
            carry = d0.buf
            outside = [c for c in collect(loop.body, tirx.TilePrimitiveCall)
                       if not any(c.same_as(x) for x in collect(
                           branch.then_case, tirx.TilePrimitiveCall))
                       and any(r.source.same_as(buf) for r in _regions(c))]
            if outside or branch.else_case is not None or not any(
                    carry.same_as(v) for v, u in self.versions if u.same_as(buf)):
                where = outside[0].span if outside else branch.span
                raise TTUnsupportedError(
                    f"{buf.name} carries its value from one iteration of the loop at "
                    f"{_line(loop.span)} to the next and is updated under the branch at "
                    f"{_line(branch.span)}, and also read or written at {_line(where)} "
                    "(outside that branch, or in its else arm); a value carried through a "
                    "data-dependent branch is supported only when all its reads and updates "
                    "in the loop body are in the branch's then arm",
                    span=branch.span,
                    hint=f"move every use of {buf.name} in the loop into the branch")
            last = self.read(buf, branch)
            copy = _copy(_full(carry), _full(last), branch.span)
            refills.append(copy)
            self.current[buf] = _Def(carry, d0.scope, copy)
        return seq([then] + refills) if refills else then

    def acc_chain(self, buf, calls) -> bool:
        """``buf`` is an accumulator that only ``T.gemm`` updates in ``calls``."""
        return self.is_acc(buf) and all(
            c.op.name == "tirx.tile.gemm" for c in calls
            if _reads_writes(c)[1] is not None and _reads_writes(c)[1].same_as(buf))

    def loop(self, s):
        """A loop; a buffer it carries from one iteration to the next lives in a buffer of
        its own (the carry): filled before the loop with the value in force, read by the
        iterations before they redefine the buffer, refilled with the newest version at the
        end of every iteration, and read after the loop."""
        outer = self.scopes[-1] if self.scopes else None
        pre, carries = [], []
        for buf in _carried(s.body, self.acc_chain):
            if _find(self.current, buf) is None:
                raise TTCompileError(
                    f"{buf.name} is read in the loop at {_line(s.span)} before anything is "
                    "written to it; initialize it before the loop (T.fill / T.clear / T.copy)",
                    span=s.span)
            before = self.read(buf, s)
            carry = tirx.decl_buffer(buffer_shape(buf), buffer_dtype(buf), buf.name,
                                     scope=buffer_scope(buf))
            init = _copy(_full(carry), _full(before), s.span)
            pre += [tirx.AllocBuffer(carry, span=source_span(s.span)), init]
            self.current[buf] = _Def(carry, outer, init)
            self.versions.append((carry, buf))
            self.carried.append((s, buf))
            carries.append((buf, carry))
        self.scopes.append((s, 0))
        body = self.stmt(s.body)
        refill = []
        for buf, carry in carries:
            last = self.read(buf, s)
            if last.same_as(carry):  # refilled under a branch (refill_in_branch)
                refill.append(None)
                continue
            refill.append(_copy(_full(carry), _full(last), s.span))
        self.scopes.pop()
        for (buf, carry), copy in zip(carries, refill):
            if copy is not None:
                self.current[buf] = _Def(carry, outer, copy)
            else:
                self.current[buf] = _Def(carry, outer, _find(self.current, buf).call)
        refill = [c for c in refill if c is not None]
        if isinstance(s, tirx.While):
            loop = tirx.While(s.condition, seq([body] + refill), s.span)
        else:
            loop = tirx.For(s.loop_var, s.min, s.extent, s.kind, seq([body] + refill),
                            s.thread_binding, s.annotations, s.step, s.span)
        return seq(pre + [loop]) if pre else loop

    def zero_filled(self, buf) -> bool:
        """The value of ``buf`` in force is a ``T.clear`` made in the current scope."""
        d = _find(self.current, buf)
        if d is None or d.call.op.name != "tirx.tile.fill" or not self.in_scope(d.scope):
            return False
        value = d.call.args[1]
        return float(getattr(value, "value", value)) == 0.0

    def demoted_gemm(self, call):
        """``T.gemm`` into an accumulator that elementwise ops also update (_demoted):
        ``fresh = A @ B`` in an accumulator of its own, then ``C = C + fresh`` (``C = fresh``
        with ``clear_accum`` or when ``C`` holds a ``T.clear``, which then has no reader)."""
        import tvm.tirx.operator as tirx_op

        region = call.args[0]
        acc = region.source
        fresh = tirx.decl_buffer(buffer_shape(acc), buffer_dtype(acc), acc.name,
                                 scope="local.fragment")
        self.accs.append(fresh)
        self.versions.append((fresh, acc))
        args = list(call.args)
        args[0], args[3] = _full(fresh), _full(fresh)
        clear = float(call.args[7].value) == 0.0 or self.zero_filled(acc)
        args[7] = tirx.FloatImm("float32", 0.0)
        gemm = self.call(replace_tile_call(call, args=args))
        if clear:
            combine = _copy(_full(acc), _full(fresh), call.span)
        else:
            combine = with_tile_span(tirx_op.Add(_full(acc), _full(acc), _full(fresh),
                                                 workspace={}, config={}, dispatch=None,
                                                 scope=None), call.span)
        return seq([tirx.AllocBuffer(fresh, span=source_span(call.span)), gemm, self.call(combine)])

    def call(self, call):
        regions = _regions(call)
        if call.op.name == "tirx.tile.gemm" and any(regions[0].source.same_as(d)
                                                     for d in self.demoted):
            return self.demoted_gemm(call)
        if (call.op.name == "tirx.tile.copy" and regions[0].source.same_as(regions[1].source)
                and tvm_ffi.structural_equal(regions[0], regions[1])):
            return _NOOP  # a buffer copied onto itself (`s = s * 1.0` folds to this)
        args, pre, packs = list(call.args), [], []
        for k, a in enumerate(args):
            if k > 0 and isinstance(a, tvm.ir.TensorRegion) and _is_block(a.source):
                version = self.read(a.source, call)
                if not version.same_as(a.source):
                    args[k] = _on(a, version)
        dst = args[0].source if isinstance(args[0], tvm.ir.TensorRegion) else None
        # ops computed from CB operands into a CB: writing an accumulator makes a new version
        elementwise = call.op.name in ELEMENTWISE + ("tt.tile.cumsum",)
        if call.op.name in _READS_PACKED or call.op.name == "tirx.tile.copy":
            # accumulator operands are packed into fragments first, once per value: a later
            # reader (a copy out included) in the same scope reads the same fragment
            accs_read = []
            for a in args[1:]:
                if isinstance(a, tvm.ir.TensorRegion) and self.is_acc(a.source) and not any(
                        a.source.same_as(x) for x in accs_read):
                    accs_read.append(a.source)
            for acc in accs_read:
                packed = next((p for a, p, where in self.packed
                               if a.same_as(acc) and self.same_scope(where)), None)
                if packed is None and call.op.name not in _READS_PACKED and \
                        self.readers_of(acc) < 2:
                    continue  # its only reader, a copy: C1 makes it the pack itself
                if packed is None:
                    packed = tirx.decl_buffer(buffer_shape(acc), buffer_dtype(acc), acc.name,
                                              scope="local.fragment")
                    self.versions.append((packed, acc))
                    packs.append((acc, seq([
                        tirx.AllocBuffer(packed, span=source_span(call.span)),
                        _copy(_full(packed), _full(acc), call.span)])))
                    self.packed.append((acc, packed, self.scope_key()))
                args = [args[0]] + [_on(a, packed) if isinstance(a, tvm.ir.TensorRegion)
                                    and a.source.same_as(acc) else a for a in args[1:]]
        if dst is not None and self.is_acc(dst):  # a new value: packed again when read
            self.packed = [e for e in self.packed if not e[0].same_as(dst)]
        if dst is not None and _is_block(dst) and (not self.is_acc(dst) or elementwise):
            made = self.define(dst, call)
            if not made.same_as(dst):
                pre.append(tirx.AllocBuffer(made, span=source_span(call.span)))
                args[0] = _on(args[0], made)
        if not pre and all(a is b or getattr(a, "same_as", lambda _: False)(b)
                           for a, b in zip(args, call.args)):
            return call
        new = replace_tile_call(call, args=args)
        self.packs += [(acc, new, pack) for acc, pack in packs]
        return seq(pre + [new])

    def user_of(self, buf):
        return next((u for v, u in self.versions if v.same_as(buf)), buf)


def _place_packs(body, packs):
    """An accumulator is packed right after its last update, before anything else the
    reading statement needs (staged operands, derived vectors) can claim DST."""

    placed = set()

    def place(s: tirx.SeqStmt):  # post-order: the innermost statement list holding the reader
        items = list(s.seq)
        for n, (acc, reader, pack) in enumerate(packs):
            if n in placed:
                continue
            holds = [any(c.same_as(reader) for c in collect(it, tirx.TilePrimitiveCall))
                     for it in items]
            if not any(holds):
                continue
            placed.add(n)
            at = holds.index(True)
            updates = [i for i, it in enumerate(items[:at])
                       if any(c.op.name == "tirx.tile.gemm" and c.args[0].source.same_as(acc)
                              for c in collect(it, tirx.TilePrimitiveCall))]
            items.insert(updates[-1] + 1 if updates else at, pack)
        return seq(items) if len(items) != len(s.seq) else s

    return tt_map(body, [(tirx.SeqStmt, place)], order="post")


class _Uses:
    """Readers of every block buffer: (call, "writer" | "compute"), and its definitions."""

    def __init__(self, body):
        self.readers, self.defs = {}, {}
        for call in collect(body, tirx.TilePrimitiveCall):
            regions = _regions(call)
            if not regions:
                continue
            to_global = call.op.name == "tirx.tile.copy" and \
                buffer_scope(regions[0].source) == "global"
            for r in regions[1:]:
                if _is_block(r.source):
                    self.readers.setdefault(r.source, []).append(
                        (call, "writer" if to_global else "compute"))
            if _is_block(regions[0].source):
                self.defs.setdefault(regions[0].source, []).append(call)

    def of(self, table, buf):
        return next((v for k, v in table.items() if k.same_as(buf)), [])


def _one_consumer_kernel(body, accumulators):
    """Copies out of a buffer that has other readers copy a buffer of their own."""
    uses = _Uses(body)
    split = []
    for buf, readers in uses.readers.items():
        if any(buf.same_as(a) for a in accumulators):
            continue  # C1 packs an accumulator into a CB of its own for each copy out
        writers = [c for c, kind in readers if kind == "writer"]
        if writers and len(readers) > 1:
            split += writers
    if not split:
        return body

    def rewrite(call):
        if not any(call.same_as(c) for c in split):
            return call
        dst, src = call.args[0], call.args[1]
        own = tirx.decl_buffer(buffer_shape(src.source), buffer_dtype(src.source),
                               src.source.name, scope="shared")
        return seq([tirx.AllocBuffer(own, span=source_span(call.span)), _copy(_full(own), src, call.span),
                    replace_tile_call(call, args=[dst, _full(own)])])

    return tt_map(body, [(tirx.TilePrimitiveCall, rewrite)], order="post")


def _drop_dead(body, users_read):
    """Drop definitions no one reads (module docstring); ``users_read`` are the buffers
    (versions included) whose user buffer is read somewhere."""
    while True:
        uses = _Uses(body)
        dead = [c for buf, calls in uses.defs.items() for c in calls
                if not uses.of(uses.readers, buf) and any(buf.same_as(b) for b in users_read)]
        if not dead:
            break
        body = tt_map(body, [(tirx.TilePrimitiveCall,
                              lambda c: _NOOP if any(c.same_as(d) for d in dead) else c)])
    referenced = _Uses(body)

    def keep(alloc):
        buf = alloc.buffer
        if not _is_block(buf) or referenced.of(referenced.defs, buf) or \
                referenced.of(referenced.readers, buf):
            return alloc
        return _NOOP if any(buf.same_as(b) for b in users_read) else alloc

    return tt_map(body, [(tirx.AllocBuffer, keep)])


@tt_pass("VersionBlockBuffersTT", requires=("LegalizeTileOpsTT",))
def VersionBlockBuffersTT(func, mod, ctx):
    """Single-assignment block buffers (module docstring)."""
    return func.with_body(version_block_updates(func.body))


def version_block_updates(body):
    """Single-assignment block buffers (module docstring)."""
    versioner = _Versioner(body)
    body = versioner.stmt(body)
    body = _place_packs(body, versioner.packs)
    # the buffers (versions included) of user buffers that something reads
    uses = _Uses(body)
    groups = {}
    for buf in list(uses.defs) + list(uses.readers):
        user = versioner.user_of(buf)
        group = next((g for u, g in groups.items() if u.same_as(user)), None)
        if group is None:
            group = groups[user] = []
        if not any(buf.same_as(b) for b in group):
            group.append(buf)
    users_read = [b for group in groups.values()
                  if any(uses.of(uses.readers, x) for x in group) for b in group]
    body = _drop_dead(body, users_read)
    body = _one_consumer_kernel(body, versioner.accs)
    return tt_map(body, [(tirx.SeqStmt, lambda s: seq(s.seq))], order="post")
