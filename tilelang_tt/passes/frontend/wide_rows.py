"""A0.1.4 StreamWideRowsTT: blocks of whole rows too wide for L1 stream their columns.

Requires: frontend TIR after A0.1.3 (``T.Parallel`` nests still loops, reductions tile ops).

TileLang's row-wise kernels (rms_norm, layernorm, online softmax at their default sizes) give
a block whole rows: block buffers ``[rows, N]`` with ``N = 8192``.  After A0.0 a block has 32
rows, and 32 rows of 8192 columns need megabytes of circular buffers against a core's L1.  A
statement over such buffers is elementwise along the columns - except a reduction along them
(``T.reduce_*(dim=1)``) - so the columns can be computed a chunk at a time, provided a value
that depends on a reduction's result is computed in a later pass over the columns than the
reduction itself.

**When.** The kernel's block buffers would not fit the core's usable L1 (the number F's
resource check uses, ``DeviceProfile.l1_usable_bytes``): every ``shared`` / ``local.fragment``
allocation in ``tiles x tile bytes``, once per statement that writes it (A0.4 makes each a
version, a circular buffer of its own) and double-buffered - or the compile option
``tt.stream_cols`` asks for a chunk width.  Otherwise the kernel is returned unchanged (so
is a kernel whose blocks have part of a tile's rows, which later stages refuse or read as
rows).  A kernel of another shape is refused only when its buffers exceed L1 even counted
once each; otherwise F's resource check, which sees the real circular buffers, decides.

**Shape** (decided from the IR alone; else ``TTResourceError`` naming the buffer or op, its
line and what to change; the facts are ``analysis/column_phases.py``'s).  ``N`` is the largest last dimension of the 2-D block buffers; the
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
* ``T.reduce_*`` over ``dim=0`` of a ``[rows, N]`` wide buffer into an ``[N]`` column vector
  (each column's value from its own column: a wide statement like a nest; accumulating, it
  reads its destination - A0.0.1's column sums of TileLang's layernorm backward);

and every wide buffer a list reads is defined earlier in that list (nothing carried across
loop iterations or read after the list; a nest reading, at ``[i, j]``, what it stored there
earlier in its body reads its own value).  One carried form is taken: a **held column
accumulator** - an ``[N]`` column vector ``acc`` read from a tensor region by a
``T.Parallel(N)`` nest ``acc[a] = T[idx(a)]`` before a serial loop, updated in the loop by a
nest of the loop's body (``acc[j] = f(acc[j], ...)``, its only use there), written back by
``T[idx(a)] = acc[a]`` after the loop, ``T`` used nowhere else in the kernel (A0.1.1's form
of an atomic whose blocks run on one core: ``DGamma_atomic``).  The tensor holds it instead
(``_Streamer.unhold``): the read and the write-back move into the loop around the update,
between ``tt.rmw_acquire`` and ``tt.rmw_release`` (A0.1.1's read-modify-write of a target
that moves with a loop: the reader's read waits for the writer's previous write-back), and
are streamed with it, a chunk at a time; an update nest that updates several such
accumulators is split into one nest per store.  A ``T.gemm``, another reduction or any other
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
after it.  A copy to a tensor that earlier copies of the list read (an in-place update) is
stored in the last phase that re-reads the tensor, its value recomputed there, unless a later
statement needs the new values before.  A rematerialised statement must see what it saw: a
row vector, scalar or tensor it reads may not be written between its first execution and the
phase that repeats it (other than by such a store after it in the same chunk), else
``TTResourceError``.

**Chunk width** ``W``: ``tt.stream_cols`` if given (a multiple of 32 dividing ``N``, below
it), else the widest multiple of 32 dividing ``N`` (at most ``N / 2``) whose block buffers,
estimated as above, take at most three quarters of the usable L1 (the rest for the
compiler's temporaries).  ``N`` not a multiple of 32 is refused.

Guarantees: no block buffer wider than ``W`` columns; each row computes what it computed
before (sums regrouped per chunk); ``tt.col_stream`` records ``{"cols": N, "chunk": W,
"phases": [number of chunk loops per streamed list]}``.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ... import attrs, ops
from ...errors import TTResourceError, TTVerifyError
from ...target import profile_of
from ..analysis.column_phases import (BLOCK_SCOPES, ColumnPhases, Stmt, definitions,
                                      footprint, key_of, refuse, shape_of)
from ..common import (TILE, buffer_dtype, buffer_scope, buffer_shape, collect, get_attr, int_imm,
                      launch_attrs, reduction_identity, replace_tile_call, seq, stmts_of,
                      substitute, to_py, tt_map, tt_pass, with_tile_span)


class _Streamer(ColumnPhases):
    """The rewrite: wide buffers narrowed to ``width`` columns, each list's phases as chunk
    loops."""

    def __init__(self, wide, cols, rows, width):
        super().__init__(wide, cols, rows)
        self.width = width
        self.narrow = {}
        for k, b in wide.items():
            shape = buffer_shape(b)[:-1] + [width]
            self.narrow[k] = tirx.decl_buffer(shape, buffer_dtype(b), b.name,
                                              scope=buffer_scope(b))
        self.phases = []
        self.emitted = set()  # nests emitted once: later copies get fresh variables
        self.root = None  # the function body (set by stream_wide_rows)
        self.rmw = {}  # update nest key -> (accumulator, its read nest, its write-back nest)

    # ---- one statement list -------------------------------------------------------------------
    def stream_list(self, stmts):
        """The statements of one list streamed (recursing into loops over wide buffers)."""
        items, decls = [], []
        for node in stmts:
            if isinstance(node, (tirx.AllocBuffer, tirx.DeclBuffer)):
                decls.append(node)  # declarations first: they scope the rest of the list
                continue
            items.append(node)
        items = self.unhold(items)
        parsed = []
        for n, node in enumerate(items):
            s = self.classify(n, node)
            held = self.rmw.get(key_of(node))
            if held is not None:  # the accumulator comes from its tensor in the same chunk
                acc, read, _ = held
                s.wide_reads = [k for k in s.wide_reads if k != key_of(acc)]
                tensor = key_of(read.body.value.source)
                s.reads.add(tensor)
                s.writes.add(tensor)
            if s is None:  # a serial loop over wide buffers: its body is a list of its own
                inner = self.stream_list(stmts_of(node.body))
                loop = tirx.For(node.loop_var, node.min, node.extent, node.kind, inner,
                                node.thread_binding, node.annotations, node.step, node.span)
                s = Stmt(n, loop, "row")
                self.effects(node, s)
                s.opaque_wide = [k for k in self.wide if self.writes_wide(node, k)]
            parsed.append(s)
        self.levels(parsed)
        return seq(decls + self.emit(parsed))


    # ---- column accumulators held across a serial loop ------------------------------------------
    def unhold(self, items):
        """A column vector ``acc`` ``[N]`` held across a serial loop - read from a tensor region
        by a ``T.Parallel(N)`` nest before the loop, updated in the loop by a nest of the loop's
        body ``acc[j] = f(acc[j], ...)``, written back to the same region after the loop, the
        tensor used nowhere else (A0.1.1's form of an atomic whose blocks run on one core:
        ``DGamma_atomic``) - cannot be held whole; the tensor holds it instead: the read and the
        write-back move into the loop around the update, between ``tt.rmw_acquire`` and
        ``tt.rmw_release`` (A0.1.1's read-modify-write of a target that moves with a loop), so
        each chunk reads the column values the previous iteration wrote back.  An update nest
        that also updates other such accumulators is split into one nest per store."""
        n = 0
        while n < len(items):
            found = self.held_read(items[n])
            if found is None:
                n += 1
                continue
            acc, tensor, index, var = found
            users = [m for m, node in enumerate(items) if m != n and self.uses(node, acc)]
            if len(users) != 2 or users[0] < n:
                n += 1
                continue
            m_loop, m_write = users
            loop, write = items[m_loop], items[m_write]
            if not (isinstance(loop, tirx.For) and loop.kind == tirx.ForKind.SERIAL) or \
                    not self.is_write_back(write, acc, tensor, index, var) or \
                    self.accesses(self.root, tensor) != 2:
                n += 1
                continue
            new_loop = self.hold_in_loop(loop, acc, items[n], write)
            if new_loop is None:
                n += 1
                continue
            items = [x for m, x in enumerate(items) if m not in (n, m_write)]
            items[items.index(loop)] = new_loop
        return items

    def held_read(self, node):
        """(acc, tensor, index, var) of a nest ``for a in T.Parallel(N): acc[a] = T[idx]``."""
        one = self.one_store_nest(node)
        if one is None:
            return None
        var, st = one
        if key_of(st.buffer) not in self.wide or len(buffer_shape(st.buffer)) != 1 or \
                not isinstance(st.value, tvm.ir.TensorLoad) or \
                buffer_scope(st.value.source) in BLOCK_SCOPES:
            return None
        if len(st.indices) != 1 or not st.indices[0].same_as(var):
            return None
        return st.buffer, st.value.source, list(st.value.indices), var

    def is_write_back(self, node, acc, tensor, index, var):
        one = self.one_store_nest(node)
        if one is None:
            return False
        v, st = one
        value = st.value
        return st.buffer.same_as(tensor) and isinstance(value, tvm.ir.TensorLoad) and \
            value.source.same_as(acc) and len(value.indices) == 1 and \
            value.indices[0].same_as(v) and len(st.indices) == len(index) and \
            all(tvm_ffi.structural_equal(substitute(a, {var: v}), b)
                for a, b in zip(index, st.indices))

    def one_store_nest(self, node):
        if not (isinstance(node, tirx.For) and node.kind == tirx.ForKind.PARALLEL and
                isinstance(node.extent, tirx.IntImm) and int(node.extent.value) == self.cols
                and isinstance(node.body, tirx.BufferStore)):
            return None
        return node.loop_var, node.body

    @staticmethod
    def uses(node, buf):
        return bool(collect(node, tvm.ir.TensorLoad, lambda x: x.source.same_as(buf)) or
                    collect(node, tvm.ir.TensorRegion, lambda x: x.source.same_as(buf)) or
                    collect(node, tirx.BufferStore, lambda x: x.buffer.same_as(buf)))

    @staticmethod
    def accesses(node, buf):
        return len(collect(node, tvm.ir.TensorLoad, lambda x: x.source.same_as(buf))) + \
            len(collect(node, tvm.ir.TensorRegion, lambda x: x.source.same_as(buf))) + \
            len(collect(node, tirx.BufferStore, lambda x: x.buffer.same_as(buf)))

    def hold_in_loop(self, loop, acc, read, write):
        """The loop with its update of ``acc`` (one nest of its body, alone in a nest of its
        own) registered as a read-modify-write of the tensor; None when the loop does not
        have that form."""
        body = stmts_of(loop.body)
        users = [m for m, x in enumerate(body) if self.uses(x, acc)]
        if len(users) != 1:
            return None
        nest = body[users[0]]
        if not (isinstance(nest, tirx.For) and nest.kind == tirx.ForKind.PARALLEL and
                isinstance(nest.extent, tirx.IntImm) and int(nest.extent.value) == self.cols):
            return None
        j, inner = nest.loop_var, stmts_of(nest.body)
        if any(not isinstance(x, (tirx.Bind, tirx.BufferStore)) for x in inner):
            return None
        stores = [x for x in inner if isinstance(x, tirx.BufferStore)]
        mine = [x for x in stores if x.buffer.same_as(acc)]
        if len(mine) != 1 or len(mine[0].indices) != 1 or not mine[0].indices[0].same_as(j):
            return None
        loads = collect(nest, tvm.ir.TensorLoad, lambda x: x.source.same_as(acc))
        if len(loads) != 1 or len(loads[0].indices) != 1 or not loads[0].indices[0].same_as(j):
            return None
        pieces = [nest]
        if len(stores) > 1:  # one nest per store (each with the bindings), fresh variables
            binds = [x for x in inner if isinstance(x, tirx.Bind)]
            pieces = []
            for st in stores:
                piece = tirx.For(j, nest.min, nest.extent, nest.kind, seq(binds + [st]),
                                 nest.thread_binding, nest.annotations, nest.step, nest.span)
                fresh = [j] + [b.var for b in binds]
                pieces.append(substitute(piece, {v: tirx.Var(v.name, v.ty.dtype)
                                                 for v in fresh}))
        piece = next(p for p in pieces if self.uses(p, acc))
        self.rmw[key_of(piece)] = (acc, read, write)
        body = body[:users[0]] + pieces + body[users[0] + 1:]
        return tirx.For(loop.loop_var, loop.min, loop.extent, loop.kind, seq(body),
                        loop.thread_binding, loop.annotations, loop.step, loop.span)

    def emit(self, parsed):
        members, last = self.plan(parsed)
        if not members:
            return [s.node for s in parsed]
        out = []
        for p in range(last + 2):
            out += [s.node for s in parsed if s.kind == "row" and s.level == p]
            if p in members:
                out += self.chunk_loop(parsed, sorted(members[p]))
        out += [s.node for s in parsed if s.kind == "row" and s.level > last + 1]
        self.phases.append(len(members))
        return out

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
                    fill = _tile_call("Fill", dst, reduction_identity(call.op.name, absolute,
                                                             buffer_dtype(dst.source)))
                    fills.append(with_tile_span(fill, call.span))
                body.append(self.narrow_call(s.call, k, accum=True))
            elif s.kind in ("copy_in", "copy_out") or hasattr(s, "call"):
                body.append(self.narrow_call(s.call, k))
            elif key_of(s.node) in self.rmw:
                _, read, write = self.rmw[key_of(s.node)]
                span = write.body.span
                body += [ops.evaluate("tt.rmw_acquire", span=span),
                         self.narrow_nest(self.classify_nest(-1, read), k),
                         self.narrow_nest(s, k),
                         self.narrow_nest(self.classify_nest(-1, write), k),
                         ops.evaluate("tt.rmw_release", span=span)]
            else:
                body.append(self.narrow_nest(s, k))
        loop = tirx.For(k, int_imm(0), int_imm(self.cols // w), tirx.ForKind.SERIAL, seq(body))
        return fills + [loop]

    def narrow_region(self, r, k):
        key = key_of(r.source)
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
        """The nest over ``W`` columns: the column variable ``j`` is ``j + k * W`` everywhere
        (tensor indices, values, conditions) but in the narrowed buffers' own ``[i, j]``."""
        j, w = s.col_var, self.width

        def narrowed(buf, idx):
            nb = self.narrow.get(key_of(buf))
            return (buf, list(idx)) if nb is None else (nb, list(idx)[:-1] + [j])

        def on_load(ld):
            buf, idx = narrowed(ld.source, ld.indices)
            return buf[tuple(idx)]

        def on_store(st):
            buf, idx = narrowed(st.buffer, st.indices)
            return tirx.BufferStore(buf, st.value, idx, st.span)

        def on_for(loop):
            if not loop.same_as(s.col_loop):
                return loop
            inner = substitute(loop.body, {j: j + k * w})
            inner = tt_map(inner, [(tvm.ir.TensorLoad, on_load), (tirx.BufferStore, on_store)])
            return tirx.For(loop.loop_var, loop.min, int_imm(w, str(loop.extent.ty.dtype)),
                            loop.kind, inner, loop.thread_binding, loop.annotations,
                            loop.step, loop.span)

        out = tt_map(s.node, [(tirx.For, on_for)])
        if key_of(s.node) in self.emitted:  # a rematerialised copy: variables of its own
            defined = [lp.loop_var for lp in collect(out, tirx.For)] + \
                [b.var for b in collect(out, tirx.Bind)]
            out = substitute(out, {v: tirx.Var(v.name, v.ty.dtype) for v in defined})
        self.emitted.add(key_of(s.node))
        return out


def _tile_call(name, *args):
    import tvm.tirx.operator as tirx_op

    return getattr(tirx_op, name)(*args, workspace={}, config={}, dispatch=None, scope=None)


def _chunk_width(cols, bufs, wide, versions, budget, forced, span):
    if cols % TILE:
        refuse(f"the block's rows are {cols} columns wide, not a multiple of {TILE}; column "
                "streaming splits them in whole tiles", span)
    if forced:
        if forced % TILE or cols % forced or forced >= cols:
            refuse(f"tt.stream_cols = {forced} must be a multiple of {TILE} dividing the "
                    f"{cols} columns (and fewer)", span, hint="pick a divisor of the width")
        return forced
    for w in range(cols // 2, TILE - 1, -TILE):
        if cols % w == 0 and footprint(bufs, w, wide, versions, 2) <= budget * 3 // 4:
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
    versions = definitions(func.body)
    need = footprint(bufs, versions=versions, depth=2)
    if not forced and need <= budget:
        return None
    # one copy of each buffer: beyond this F refuses the kernel whatever the later stages do
    certain = footprint(bufs) > budget
    span = allocs[0].span if allocs else None
    shape = shape_of(bufs)
    if shape is None:
        return None
    cols, rows, wide, odd = shape
    if rows % TILE and not forced:
        return None  # blocks of part of a tile's rows: later stages refuse or read them as rows
    if odd is not None and not certain and not forced:
        return None  # perhaps it fits after all: F's resource check decides
    if odd is not None:
        span = next((a.span for a in allocs if a.buffer.same_as(odd)), span)
        refuse(f"the block buffers need {need // 1024} KiB of L1 ({budget // 1024} KiB usable) "
                f"and `{odd.name}` {buffer_shape(odd)} is neither a [{rows}, {cols}] row block, "
                f"a [{cols}] column vector nor a [{rows}] row vector, so the columns cannot be "
                "streamed", span)
    width = _chunk_width(cols, bufs, wide, versions, budget, forced, span)
    if width is None:
        refuse(f"the block buffers need {need // 1024} KiB of L1 ({budget // 1024} KiB usable) "
                f"and even {TILE} columns of them do not fit", span)
    kern = _Streamer(wide, cols, rows, width)
    kern.root = func.body
    launch = launch_attrs(func.body)[-1]
    try:
        inner = kern.stream_list(stmts_of(launch.body))
    except TTResourceError:
        if certain or forced:
            raise
        return None  # the shape is not this pass's, and the kernel may fit after all: F decides

    def on_alloc(alloc):
        nb = kern.narrow.get(key_of(alloc.buffer))
        return alloc if nb is None else tirx.AllocBuffer(nb, alloc.annotations, alloc.span)

    new_launch = tirx.AttrStmt(launch.node, launch.attr_key, launch.value, inner, launch.span)
    body = tt_map(func.body, [(tirx.AttrStmt, lambda a: new_launch if a.same_as(launch) else a)],
                  order="pre")
    body = tt_map(body, [(tirx.AllocBuffer, on_alloc)])
    leftover = [ld for ld in collect(body, tvm.ir.TensorLoad) if key_of(ld.source) in wide] + \
        [r for r in collect(body, tvm.ir.TensorRegion) if key_of(r.source) in wide]
    if leftover:
        raise TTVerifyError("StreamWideRowsTT left a wide buffer in the kernel")
    return func.with_body(body).with_attr(attrs.COL_STREAM, {
        "cols": cols, "chunk": width, "phases": kern.phases})


@tt_pass("StreamWideRowsTT")
def StreamWideRowsTT(func, mod, ctx):
    """Row blocks too wide for L1 computed a chunk of columns at a time (module docstring)."""
    done = stream_wide_rows(func)
    return func if done is None else done
