"""A0.1.4 StreamWideRowsTT: blocks of whole rows too wide for L1 stream their columns.

Requires: frontend TIR after A0.1.3 (``T.Parallel`` nests still loops, reductions tile ops).

TileLang's row-wise kernels (rms_norm, layernorm, online softmax at their default sizes) give
a block whole rows: block buffers ``[rows, N]`` with ``N = 8192``.  After A0.0 a block has 32
rows, and 32 rows of 8192 columns need megabytes of circular buffers against a core's L1.  A
statement over such buffers is elementwise along the columns - except a reduction along them
(``T.reduce_*(dim=1)``) - so the columns can be computed a chunk at a time, provided a value
that depends on a reduction's result is computed in a later pass over the columns than the
reduction itself.

**When.** The kernel's block buffers (every ``shared`` / ``local.fragment`` allocation, one
copy of each: ``tiles x tile bytes``) need more than the core's usable L1 (the number F's
resource check uses, ``DeviceProfile.l1_usable_bytes``), or the compile option
``tt.stream_cols`` asks for a chunk width.  Otherwise the kernel is returned unchanged.

**Shape** (decided from the IR alone; else ``TTResourceError`` naming the buffer or op, its
line and what to change).  ``N`` is the largest last dimension of the 2-D block buffers; the
*wide* buffers are the 2-D block buffers ``[rows, N]`` (one ``rows`` for all) and the 1-D
block buffers ``[N]`` (column vectors, layernorm's gamma / beta); the *row vectors* are 1-D
block buffers ``[rows]``; no other block buffer may be in the kernel.  A wide buffer is used
only by, in one statement list (the launch body, or the body of a serial / pipelined loop in
it - each list is streamed on its own):

* ``T.copy`` from a tensor region whose last dimension spans ``N`` columns (*copy-in*), and
  ``T.copy`` of a whole wide buffer to such a region (*copy-out*); ``T.fill`` / ``T.copy``
  between wide buffers;
* ``T.Parallel(rows, N)`` / ``T.Parallel(N)`` nests writing whole wide buffers, whose wide
  operands are indexed ``[i, j]`` / ``[j]`` and row vectors ``[i]`` (tensor operands may use
  ``j`` anywhere in their indices);
* ``T.reduce_sum/max/min`` (abs forms included) over ``dim=1`` of a wide buffer into a row
  vector, ``clear`` or not;

and every wide buffer a list reads is defined earlier in that list (nothing carried across
loop iterations or read after the list).  A ``T.gemm``, a ``dim=0`` reduction or any other
use of a wide buffer is refused.

**Phases.** Each statement gets a level: a wide statement's is the largest level of what it
reads (the wide statements defining its wide operands; a reduction's result is available one
level after the reduction's), a statement on row vectors alone (a *row statement*, also
``Bind`` s, tensor element stores and loops without wide buffers) runs between the phases,
after every earlier conflicting wide statement's phase.  Phase ``P`` is a serial loop over
the ``N / W`` column chunks whose body runs, in program order, the phase's reductions and
copies-out and every wide statement they need (their transitive wide operands:
*rematerialisation* - a wide buffer is recomputed from tensor reads in each phase that uses
it, never kept whole).  Wide buffers become ``[rows, W]`` (``[W]``) buffers of the same names;
copies read and write ``W`` columns at ``c0 + k * W``; ``T.Parallel`` nests run ``W`` columns,
tensor operands indexed ``j + k * W``.  A reduction becomes ``clear=False`` over the chunks,
its destination filled with the identity before the loop when it cleared (``0``, ``-inf``,
``+inf``); ``max`` / ``min`` are exact, a sum is regrouped (the sum of per-chunk sums).  Row
statements of level ``P`` run right before phase ``P``'s loop, those after the last phase
after it.  A rematerialised statement must see what it saw: a row vector, scalar or tensor it
reads may not be written between its first execution and the phase that repeats it (an
in-place update of a tensor read again in a later phase), else ``TTResourceError``.

**Chunk width** ``W``: ``tt.stream_cols`` if given (a multiple of 32 dividing ``N``), else
the widest multiple of 32 dividing ``N`` (at most ``N / 2``) whose block buffers, two copies
each, fit in half the usable L1 (the other half for the compiler's temporaries).  ``N`` not a
multiple of 32 is refused.

Guarantees: no block buffer wider than ``W`` columns; each row computes what it computed
before (sums regrouped per chunk); ``tt.col_stream`` records ``{"cols": N, "chunk": W,
"phases": [number of chunk loops per streamed list]}``.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ... import attrs
from ...errors import TTResourceError
from ...target import profile_of
from ..common import (TILE, buffer_dtype, buffer_scope, buffer_shape, collect, get_attr,
                      int_imm, launch_attrs, replace_tile_call, seq, stmts_of, tile_bytes,
                      to_py, tt_map, tt_pass, with_tile_span)

BLOCK_SCOPES = ("shared", "shared.dyn", "local.fragment")
REDUCTIONS = ("tirx.tile.sum", "tirx.tile.max", "tirx.tile.min")
COPY, FILL = "tirx.tile.copy", "tirx.tile.fill"


def _key(obj):
    return obj.__chandle__()


def _tiles(shape) -> int:
    n = 1
    for d in shape[:-1]:
        n *= d
    if len(shape) == 1:
        return -(-shape[0] // TILE)
    return -(-n // TILE) * -(-shape[-1] // TILE)


def _definitions(body) -> dict:
    """Buffer key -> how many statements write it (tile ops, outermost T.Parallel nests): A0.4
    gives each its own version, a circular buffer of its own."""
    count = {}
    for call in collect(body, tirx.TilePrimitiveCall):
        if call.args and isinstance(call.args[0], tvm.ir.TensorRegion):
            k = _key(call.args[0].source)
            count[k] = count.get(k, 0) + 1
    inner = set()
    for lp in collect(body, tirx.For):
        if lp.kind == tirx.ForKind.PARALLEL:
            inner.update(_key(x) for x in collect(lp.body, tirx.For))
    for lp in collect(body, tirx.For):
        if lp.kind == tirx.ForKind.PARALLEL and _key(lp) not in inner:
            for k in {_key(st.buffer) for st in collect(lp.body, tirx.BufferStore)}:
                count[k] = count.get(k, 0) + 1
    return count


def _footprint(bufs, width=None, wide=(), versions=None, depth=1) -> int:
    """Bytes of the block buffers (wide ones ``width`` columns when given): ``depth`` copies of
    each of their ``versions`` (one each when not given)."""
    total = 0
    for b in bufs:
        shape = buffer_shape(b)
        if any(not isinstance(d, int) for d in shape):
            continue
        if width is not None and _key(b) in wide:
            shape = shape[:-1] + [width]
        n = max(1, (versions or {}).get(_key(b), 1))
        dtype = buffer_dtype(b)
        total += n * depth * _tiles(shape) * tile_bytes(
            dtype if dtype in ("bfloat16", "float16", "float32") else "float32")
    return total


def _refuse(msg, span, hint="make the block narrower (fewer columns per block, a loop over "
                            "column blocks as rms_norm_splitk writes it)"):
    raise TTResourceError(msg, span=span, hint=hint)


class _Stmt:
    """One statement of a streamed list: its kind, level and what it touches."""

    def __init__(self, idx, node, kind):
        self.idx, self.node, self.kind = idx, node, kind
        self.wide_reads, self.wide_writes = [], []  # wide buffer keys
        self.reads, self.writes = set(), set()  # keys of non-wide buffers and vars
        self.deps = []  # indices of the statements defining its wide operands
        self.level = 0

    @property
    def in_phase(self):
        return self.kind != "row"


class _Kernel:
    def __init__(self, bufs, wide, cols, rows, width):
        self.bufs, self.wide, self.cols, self.rows, self.width = bufs, wide, cols, rows, width
        self.narrow = {}
        for k, b in wide.items():
            shape = buffer_shape(b)[:-1] + [width]
            self.narrow[k] = tirx.decl_buffer(shape, buffer_dtype(b), b.name,
                                              scope=buffer_scope(b))
        self.phases = []
        self.emitted = set()  # nests emitted once: later copies get fresh variables

    # ---- classification ---------------------------------------------------------------------
    def touches_wide(self, node):
        return any(_key(r.source) in self.wide for r in collect(node, tvm.ir.TensorRegion)) or \
            any(_key(ld.source) in self.wide for ld in collect(node, tvm.ir.TensorLoad)) or \
            any(_key(st.buffer) in self.wide for st in collect(node, tirx.BufferStore))

    def effects(self, node, s):
        """Non-wide reads / writes of ``node`` into ``s`` (buffers and scalar variables)."""
        for ld in collect(node, tvm.ir.TensorLoad):
            if _key(ld.source) not in self.wide:
                s.reads.add(_key(ld.source))
        for st in collect(node, tirx.BufferStore):
            if _key(st.buffer) not in self.wide:
                s.writes.add(_key(st.buffer))
        for call in collect(node, tirx.TilePrimitiveCall):
            regions = [a for a in call.args if isinstance(a, tvm.ir.TensorRegion)]
            for n, r in enumerate(regions):
                k = _key(r.source)
                if k in self.wide:
                    continue
                if n == 0:
                    s.writes.add(k)
                    accum = call.op.name in REDUCTIONS and bool(call.args[3])
                    if accum or call.op.name not in REDUCTIONS + (COPY, FILL):
                        s.reads.add(k)
                else:
                    s.reads.add(k)
        for b in collect(node, tirx.Bind):
            s.writes.add(_key(b.var))
        for v in collect(node, tvm.ir.Var):
            s.reads.add(_key(v))

    def classify(self, idx, node):
        if not self.touches_wide(node):
            s = _Stmt(idx, node, "row")
            self.effects(node, s)
            return s
        if isinstance(node, tirx.TilePrimitiveCall) or (
                isinstance(node, tirx.Evaluate) and isinstance(node.value, tirx.TilePrimitiveCall)):
            call = node if isinstance(node, tirx.TilePrimitiveCall) else node.value
            return self.classify_call(idx, node, call)
        if isinstance(node, tirx.For) and node.kind == tirx.ForKind.PARALLEL:
            return self.classify_nest(idx, node)
        if isinstance(node, tirx.For):
            return None  # a loop: streamed on its own by the caller
        _refuse(f"this statement uses the block buffer(s) "
                f"{self.names(node)} of {self.cols} columns in a way column streaming cannot "
                "split (only copies, T.Parallel nests, fills and dim=1 reductions can)",
                node.span)

    def names(self, node):
        found = {}
        for r in collect(node, tvm.ir.TensorRegion):
            if _key(r.source) in self.wide:
                found[r.source.name] = 1
        for ld in collect(node, tvm.ir.TensorLoad):
            if _key(ld.source) in self.wide:
                found[ld.source.name] = 1
        return ", ".join(f"`{n}`" for n in found)

    def region_is_whole(self, r):
        shape = buffer_shape(r.source)
        return all(isinstance(x.min, tirx.IntImm) and int(x.min.value) == 0 and
                   isinstance(x.extent, tirx.IntImm) and int(x.extent.value) == d
                   for x, d in zip(r.region, shape))

    def classify_call(self, idx, node, call):
        name = call.op.name
        regions = [a for a in call.args if isinstance(a, tvm.ir.TensorRegion)]
        wide = [r for r in regions if _key(r.source) in self.wide]
        span = call.span if call.span is not None else getattr(node, "span", None)
        for r in wide:
            if not self.region_is_whole(r):
                _refuse(f"`{r.source.name}` ({self.cols} columns) is used in part here; column "
                        "streaming splits whole wide buffers only", span)
        dst = regions[0]
        if name == COPY and len(regions) == 2:
            src = regions[1]
            dst_wide, src_wide = _key(dst.source) in self.wide, _key(src.source) in self.wide
            if dst_wide and src_wide:
                s = _Stmt(idx, node, "wide")
            else:
                tensor = src if dst_wide else dst
                if buffer_scope(tensor.source) in BLOCK_SCOPES:
                    _refuse(f"`{tensor.source.name}` is copied to or from the wide buffer "
                            f"`{(dst if dst_wide else src).source.name}`; column streaming "
                            "needs tensors there", span)
                last = tensor.region[-1].extent
                if not (isinstance(last, tirx.IntImm) and int(last.value) == self.cols):
                    _refuse(f"the copy between `{(dst if dst_wide else src).source.name}` and "
                            f"`{tensor.source.name}` does not move {self.cols} columns of the "
                            "tensor's last dimension; column streaming cannot split it", span)
                s = _Stmt(idx, node, "copy_in" if dst_wide else "copy_out")
        elif name == FILL and _key(dst.source) in self.wide:
            s = _Stmt(idx, node, "wide")
        elif name in REDUCTIONS and len(wide) == 1 and _key(regions[1].source) in self.wide \
                and _key(dst.source) not in self.wide:
            axes = [int(a) for a in call.args[2]]
            src = regions[1].source
            if len(buffer_shape(src)) != 2 or axes != [1]:
                _refuse(f"the reduction of `{src.name}` is not along its {self.cols} columns "
                        "(dim=1); column streaming cannot split it", span)
            if [int(d) for d in buffer_shape(dst.source)] != [self.rows]:
                _refuse(f"the reduction of `{src.name}` writes `{dst.source.name}`, not a row "
                        f"vector of {self.rows} rows", span)
            s = _Stmt(idx, node, "reduce")
        else:
            op = name.split(".")[-1]
            _refuse(f"`{op}` on {self.names(node)} ({self.cols} columns): column streaming "
                    "splits only copies, fills, T.Parallel nests and dim=1 reductions of a "
                    "wide buffer", span)
        s.call = call
        for n, r in enumerate(regions):
            k = _key(r.source)
            if k in self.wide:
                (s.wide_writes if n == 0 else s.wide_reads).append(k)
        self.effects(node, s)
        return s

    def classify_nest(self, idx, node):
        loops, body = [], node
        while isinstance(body, tirx.For) and body.kind == tirx.ForKind.PARALLEL:
            loops.append(body)
            body = body.body
        ext = [int(lp.extent.value) if isinstance(lp.extent, tirx.IntImm) else None
               for lp in loops]
        span = node.span
        if ext == [self.rows, self.cols]:
            row_var, col_var = loops[0].loop_var, loops[1].loop_var
        elif ext == [self.cols]:
            row_var, col_var = None, loops[0].loop_var
        else:
            _refuse(f"this T.Parallel nest ({' x '.join(map(str, ext))}) over "
                    f"{self.names(node)} is not T.Parallel({self.rows}, {self.cols}) or "
                    f"T.Parallel({self.cols}); column streaming cannot split it", span)
        s = _Stmt(idx, node, "wide")
        s.col_var = col_var
        s.col_loop = loops[-1]

        def check(buf, indices):
            k = _key(buf)
            shape = buffer_shape(buf)
            if k in self.wide:
                want = [col_var] if len(shape) == 1 else [row_var, col_var]
            elif buffer_scope(buf) in BLOCK_SCOPES:
                if shape != [self.rows] or row_var is None:
                    _refuse(f"`{buf.name}` is read or written in a T.Parallel nest over "
                            f"{self.cols} columns but is no row vector [{self.rows}]", span)
                want = [row_var]
            else:
                return
            if len(indices) != len(want) or not all(
                    w is not None and x.same_as(w) for x, w in zip(indices, want)):
                what = "wide buffers" if k in self.wide else "row vectors"
                _refuse(f"`{buf.name}` is indexed [{', '.join(map(str, indices))}] in a "
                        f"T.Parallel nest over {self.cols} columns; column streaming needs "
                        f"{what} indexed by the nest's own variables", span)

        for ld in collect(body, tvm.ir.TensorLoad):
            check(ld.source, list(ld.indices))
            if _key(ld.source) in self.wide and _key(ld.source) not in s.wide_reads:
                s.wide_reads.append(_key(ld.source))
        for st in collect(body, tirx.BufferStore):
            check(st.buffer, list(st.indices))
            k = _key(st.buffer)
            if k not in self.wide and buffer_scope(st.buffer) in BLOCK_SCOPES:
                _refuse(f"this T.Parallel nest over {self.cols} columns writes the row vector "
                        f"`{st.buffer.name}`; column streaming splits such folds only as "
                        "T.reduce_*(dim=1)", span)
            if k in self.wide and k not in s.wide_writes:
                if [int(lp.extent.value) for lp in loops] != buffer_shape(st.buffer):
                    _refuse(f"this nest writes part of `{st.buffer.name}`", span)
                s.wide_writes.append(k)
        self.effects(node, s)
        return s

    # ---- one statement list -------------------------------------------------------------------
    def stream_list(self, stmts):
        """The statements of one list streamed (recursing into loops over wide buffers)."""
        items, decls = [], []
        for node in stmts:
            if isinstance(node, (tirx.AllocBuffer, tirx.DeclBuffer)):
                decls.append(node)  # declarations first: they scope the rest of the list
                continue
            items.append(node)
        parsed = []
        for n, node in enumerate(items):
            s = self.classify(n, node)
            if s is None:  # a serial loop over wide buffers: its body is a list of its own
                inner = self.stream_list(stmts_of(node.body))
                loop = tirx.For(node.loop_var, node.min, node.extent, node.kind, inner,
                                node.thread_binding, node.annotations, node.step, node.span)
                s = _Stmt(n, loop, "row")
                self.effects(node, s)
                s.opaque_wide = [k for k in self.wide if self.writes_wide(node, k)]
            parsed.append(s)
        self.levels(parsed)
        return seq(decls + self.emit(parsed))

    def writes_wide(self, node, k):
        return any(_key(st.buffer) == k for st in collect(node, tirx.BufferStore)) or any(
            _key(c.args[0].source) == k for c in collect(node, tirx.TilePrimitiveCall)
            if c.args and isinstance(c.args[0], tvm.ir.TensorRegion))

    def levels(self, parsed):
        defs = {}  # wide key -> index of its defining statement (None: not replayable)
        for s in parsed:
            for k in getattr(s, "opaque_wide", []):
                defs[k] = None
            for k in s.wide_reads:
                d = defs.get(k, "missing")
                if d is None or d == "missing":
                    b = self.wide[k]
                    _refuse(f"`{b.name}` ({self.cols} columns) is read here before this "
                            "statement list defines it (carried across loop iterations or "
                            "from another list); column streaming recomputes wide buffers from "
                            "tensor reads in each pass and cannot reproduce it",
                            self.span_of(s), hint="copy it from its tensor in the same list")
                if d not in s.deps:
                    s.deps.append(d)
            level = max((parsed[d].level for d in s.deps), default=0)
            for t in parsed[:s.idx]:
                if not self.conflict(t, s):
                    continue
                if t.kind == "row":
                    level = max(level, t.level)
                elif s.kind == "row" or t.kind == "reduce" or not self.same_chunk(t, s):
                    level = max(level, t.level + 1)
                else:
                    level = max(level, t.level)
            s.level = level
            for k in s.wide_writes:
                defs[k] = s.idx

    def same_chunk(self, t, s):
        """Two phase statements on one tensor that a chunk loop may interleave: a copy-in and a
        later copy-out of the same columns (an in-place update, chunk by chunk)."""
        if t.kind == "copy_in" and s.kind == "copy_out":
            src, dst = t.call.args[1], s.call.args[0]
            return src.source.same_as(dst.source) and all(
                tvm_ffi.structural_equal(a.min, b.min) for a, b in zip(src.region, dst.region))
        return False

    @staticmethod
    def conflict(t, s):
        return bool(t.writes & (s.reads | s.writes) or s.writes & t.reads)

    def span_of(self, s):
        call = getattr(s, "call", None)
        if call is not None and call.span is not None:
            return call.span
        return getattr(s.node, "span", None)

    def emit(self, parsed):
        phase_stmts = [s for s in parsed if s.in_phase]
        if not phase_stmts:
            return [s.node for s in parsed]
        # the roots of each phase: reductions, copies-out, nests storing to tensors
        last = max(s.level for s in phase_stmts if self.is_root(s)) if any(
            self.is_root(s) for s in phase_stmts) else -1
        members = {}
        for s in phase_stmts:
            if self.is_root(s):
                members.setdefault(s.level, set()).update(self.closure(parsed, s))
        for p, idxs in members.items():
            for i in idxs:
                self.check_replay(parsed, parsed[i], p)
        out = []
        counts = 0
        for p in range(last + 2):
            out += [s.node for s in parsed if s.kind == "row" and s.level == p]
            if p in members:
                out += self.chunk_loop(parsed, sorted(members[p]))
                counts += 1
        out += [s.node for s in parsed if s.kind == "row" and s.level > last + 1]
        self.phases.append(counts)
        return out

    def is_root(self, s):
        return s.kind in ("reduce", "copy_out") or (s.kind == "wide" and bool(s.writes))

    def closure(self, parsed, root):
        seen, todo = set(), [root.idx]
        while todo:
            i = todo.pop()
            if i in seen:
                continue
            seen.add(i)
            todo += parsed[i].deps
        return seen

    def check_replay(self, parsed, s, p):
        """A statement repeated in phase ``p`` reads what it read the first time."""
        if s.level == p:
            return
        for t in parsed[s.idx + 1:]:
            hit = t.writes & s.reads
            if not hit:
                continue
            runs_before = (t.kind == "row" and t.level <= p) or (t.in_phase and t.level < p)
            same = t.in_phase and t.level == p and self.same_chunk(s, t)
            if runs_before or (t.in_phase and t.level == p and not same):
                _refuse(f"this statement is computed again in column pass {p} (its wide result "
                        "is needed there), but what it reads is overwritten in between "
                        f"(at line {_line(self.span_of(t))}); column streaming cannot "
                        "reproduce it", self.span_of(s),
                        hint="write the updated values to another tensor or buffer")

    # ---- the chunk loop ----------------------------------------------------------------------
    def chunk_loop(self, parsed, idxs):
        k = tirx.Var("col_chunk", "int32")
        w = self.width
        fills, body = [], []
        for i in idxs:
            s = parsed[i]
            if s.kind == "reduce":
                call = s.call
                if not bool(call.args[3]):
                    dst = call.args[0]
                    absolute = bool((call.config or {}).get(attrs.REDUCE_ABS, False))
                    fill = _tile_call("Fill", dst, _identity(call.op.name, absolute,
                                                             buffer_dtype(dst.source)))
                    fills.append(with_tile_span(fill, call.span))
                body.append(self.narrow_call(s.call, k, accum=True))
            elif s.kind in ("copy_in", "copy_out") or hasattr(s, "call"):
                body.append(self.narrow_call(s.call, k))
            else:
                body.append(self.narrow_nest(s, k))
        loop = tirx.For(k, int_imm(0), int_imm(self.cols // w), tirx.ForKind.SERIAL, seq(body))
        return fills + [loop]

    def narrow_region(self, r, k):
        key = _key(r.source)
        if key in self.narrow:
            nb = self.narrow[key]
            return nb[tuple(slice(0, d) for d in buffer_shape(nb))]
        if buffer_scope(r.source) in BLOCK_SCOPES:
            return r  # a row vector
        last = r.region[-1]
        lo = last.min + k * self.width
        ranges = [slice(x.min, x.min + x.extent) for x in r.region[:-1]]
        return r.source[tuple(ranges + [slice(lo, lo + self.width)])]

    def narrow_call(self, call, k, accum=None):
        args = [self.narrow_region(a, k) if isinstance(a, tvm.ir.TensorRegion) else a
                for a in call.args]
        if accum is not None:
            args[3] = tirx.const(True, "bool")
        return replace_tile_call(call, args=args)

    def narrow_nest(self, s, k):
        j, w = s.col_var, self.width

        def index(buf, idx):
            key = _key(buf)
            if key in self.narrow:
                return self.narrow[key], list(idx)
            if buffer_scope(buf) in BLOCK_SCOPES:
                return buf, list(idx)
            from ..common import substitute
            return buf, [substitute(e, {j: j + k * w}) for e in idx]

        def on_load(ld):
            buf, idx = index(ld.source, ld.indices)
            return buf[tuple(idx)]

        def on_store(st):
            buf, idx = index(st.buffer, st.indices)
            return tirx.BufferStore(buf, st.value, idx, st.span)

        def on_for(loop):
            if not loop.same_as(s.col_loop) and not loop.loop_var.same_as(j):
                return loop
            return tirx.For(loop.loop_var, loop.min, int_imm(w, str(loop.extent.ty.dtype)),
                            loop.kind, loop.body, loop.thread_binding, loop.annotations,
                            loop.step, loop.span)

        out = tt_map(s.node, [(tvm.ir.TensorLoad, on_load), (tirx.BufferStore, on_store),
                              (tirx.For, on_for)])
        if _key(s.node) in self.emitted:  # a rematerialised copy: variables of its own
            defined = [lp.loop_var for lp in collect(out, tirx.For)] + \
                [b.var for b in collect(out, tirx.Bind)]
            from ..common import substitute
            out = substitute(out, {v: tirx.Var(v.name, v.ty.dtype) for v in defined})
        self.emitted.add(_key(s.node))
        return out


def _tile_call(name, *args):
    import tvm.tirx.operator as tirx_op

    return getattr(tirx_op, name)(*args, workspace={}, config={}, dispatch=None, scope=None)


def _identity(kind: str, absolute: bool, dtype: str):
    if kind == "tirx.tile.max" and not absolute:
        return tirx.const(float("-inf"), dtype)
    if kind == "tirx.tile.min":
        return tirx.const(float("inf"), dtype)
    return tirx.const(0.0, dtype)


def _line(span):
    return getattr(span, "line", "?") if span is not None else "?"


def _shape_of(bufs):
    """(N, rows, wide buffers by key) of the kernel's block buffers, or a refusal."""
    two_d = [b for b in bufs if len(buffer_shape(b)) == 2]
    if not two_d:
        return None
    cols = max(buffer_shape(b)[-1] for b in two_d)
    wide_2d = [b for b in two_d if buffer_shape(b)[-1] == cols]
    rows = buffer_shape(wide_2d[0])[0]
    wide = {}
    for b in bufs:
        shape = buffer_shape(b)
        if shape == [rows, cols] or (shape == [cols] and cols != rows):
            wide[_key(b)] = b
        elif shape != [rows]:
            return cols, rows, wide, b
    return cols, rows, wide, None


def _chunk_width(cols, bufs, wide, versions, budget, forced, span):
    if cols % TILE:
        _refuse(f"the block's rows are {cols} columns wide, not a multiple of {TILE}; column "
                "streaming splits them in whole tiles", span)
    if forced:
        if forced % TILE or cols % forced or forced >= cols:
            _refuse(f"tt.stream_cols = {forced} must be a multiple of {TILE} dividing the "
                    f"{cols} columns (and fewer)", span, hint="pick a divisor of the width")
        return forced
    for w in range(cols // 2, TILE - 1, -TILE):
        if cols % w == 0 and _footprint(bufs, w, wide, versions, 2) <= budget * 3 // 4:
            return w
    return None


def stream_wide_rows(func):
    """The kernel with its wide row blocks streamed by columns, or None to leave it alone."""
    if get_attr(func, attrs.COL_STREAM) is not None:
        return None  # streamed already
    options = to_py(get_attr(func, attrs.COMPILE_OPTIONS, {})) or {}
    forced = int(options.get(attrs.PC_STREAM_COLS, 0) or 0)
    budget = profile_of(str(get_attr(func, attrs.TARGET))).l1_usable_bytes
    allocs = [a for a in collect(func.body, tirx.AllocBuffer)
              if buffer_scope(a.buffer) in BLOCK_SCOPES]
    bufs = [a.buffer for a in allocs]
    versions = _definitions(func.body)
    need = _footprint(bufs, versions=versions, depth=2)
    if not forced and need <= budget:
        return None
    # one copy of each buffer: beyond this F refuses the kernel whatever the later stages do
    certain = _footprint(bufs) > budget
    span = allocs[0].span if allocs else None
    shape = _shape_of(bufs)
    if shape is None:
        return None
    cols, rows, wide, odd = shape
    if rows % TILE and not forced:
        return None  # blocks of part of a tile's rows: later stages refuse or read them as rows
    if odd is not None and not certain and not forced:
        return None  # perhaps it fits after all: F's resource check decides
    if odd is not None:
        span = next((a.span for a in allocs if a.buffer.same_as(odd)), span)
        _refuse(f"the block buffers need {need // 1024} KiB of L1 ({budget // 1024} KiB usable) "
                f"and `{odd.name}` {buffer_shape(odd)} is neither a [{rows}, {cols}] row block, "
                f"a [{cols}] column vector nor a [{rows}] row vector, so the columns cannot be "
                "streamed", span)
    width = _chunk_width(cols, bufs, wide, versions, budget, forced, span)
    if width is None:
        _refuse(f"the block buffers need {need // 1024} KiB of L1 ({budget // 1024} KiB usable) "
                f"and even {TILE} columns of them do not fit", span)
    kern = _Kernel(bufs, wide, cols, rows, width)
    launch = launch_attrs(func.body)[-1]
    try:
        inner = kern.stream_list(stmts_of(launch.body))
    except TTResourceError:
        if certain or forced:
            raise
        return None  # the shape is not this pass's, and the kernel may fit after all: F decides

    def on_alloc(alloc):
        nb = kern.narrow.get(_key(alloc.buffer))
        return alloc if nb is None else tirx.AllocBuffer(nb, alloc.annotations, alloc.span)

    new_launch = tirx.AttrStmt(launch.node, launch.attr_key, launch.value, inner, launch.span)
    body = tt_map(func.body, [(tirx.AttrStmt, lambda a: new_launch if a.same_as(launch) else a)],
                  order="pre")
    body = tt_map(body, [(tirx.AllocBuffer, on_alloc)])
    leftover = [ld for ld in collect(body, tvm.ir.TensorLoad) if _key(ld.source) in wide] + \
        [r for r in collect(body, tvm.ir.TensorRegion) if _key(r.source) in wide]
    if leftover:
        from ...errors import TTVerifyError

        raise TTVerifyError("StreamWideRowsTT left a wide buffer in the kernel")
    return func.with_body(body).with_attr(attrs.COL_STREAM, {
        "cols": cols, "chunk": width, "phases": kern.phases})


@tt_pass("StreamWideRowsTT")
def StreamWideRowsTT(func, mod, ctx):
    """Row blocks too wide for L1 computed a chunk of columns at a time (module docstring)."""
    done = stream_wide_rows(func)
    return func if done is None else done
