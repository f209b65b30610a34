"""Which statements of a row-wise kernel can be computed a chunk of columns at a time, and in
which pass over the columns (for A0.1.4 StreamWideRowsTT, ``frontend/wide_rows.py``, whose
docstring states the rules).

Facts only, from the IR structure: the kernel's wide buffers (``shape_of``), the L1 its block
buffers need (``footprint``, ``definitions``), and per statement list the statements' kinds
(copy-in, copy-out, wide elementwise - a column reduction ``dim=0`` into an ``[N]`` vector
included -, reduction along the columns, row statement), their
levels (the number of reductions on their dependency path, with the ordering constraints of
what they read and write) and each phase's statements (``ColumnPhases.plan``: its roots -
reductions, copies to tensors, tensor stores - and the wide statements they need).  A
statement outside the shape raises ``TTResourceError`` naming the buffer, op and line.
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx

from ...errors import TTResourceError
from ..common import (TILE, buffer_dtype, buffer_scope, buffer_shape, collect, stmts_of,
                      tile_bytes)

BLOCK_SCOPES = ("shared", "shared.dyn", "local.fragment")
REDUCTIONS = ("tirx.tile.sum", "tirx.tile.max", "tirx.tile.min")
COPY, FILL = "tirx.tile.copy", "tirx.tile.fill"


def key_of(obj):
    return obj.__chandle__()


def tiles_of(shape) -> int:
    n = 1
    for d in shape[:-1]:
        n *= d
    if len(shape) == 1:
        return -(-shape[0] // TILE)
    return -(-n // TILE) * -(-shape[-1] // TILE)


def definitions(body) -> dict:
    """Buffer key -> how many statements write it (tile ops, outermost T.Parallel nests): A0.4
    gives each its own version, a circular buffer of its own."""
    count = {}
    for call in collect(body, tirx.TilePrimitiveCall):
        if call.args and isinstance(call.args[0], tvm.ir.TensorRegion):
            k = key_of(call.args[0].source)
            count[k] = count.get(k, 0) + 1
    inner = set()
    for lp in collect(body, tirx.For):
        if lp.kind == tirx.ForKind.PARALLEL:
            inner.update(key_of(x) for x in collect(lp.body, tirx.For))
    for lp in collect(body, tirx.For):
        if lp.kind == tirx.ForKind.PARALLEL and key_of(lp) not in inner:
            for k in {key_of(st.buffer) for st in collect(lp.body, tirx.BufferStore)}:
                count[k] = count.get(k, 0) + 1
    return count


def footprint(bufs, width=None, wide=(), versions=None, depth=1) -> int:
    """Bytes of the block buffers (wide ones ``width`` columns when given): ``depth`` copies of
    each of their ``versions`` (one each when not given)."""
    total = 0
    for b in bufs:
        shape = buffer_shape(b)
        if any(not isinstance(d, int) for d in shape):
            continue
        if width is not None and key_of(b) in wide:
            shape = shape[:-1] + [width]
        n = max(1, (versions or {}).get(key_of(b), 1))
        dtype = buffer_dtype(b)
        total += n * depth * tiles_of(shape) * tile_bytes(
            dtype if dtype in ("bfloat16", "float16", "float32") else "float32")
    return total


def refuse(msg, span, hint="make the block narrower (fewer columns per block, a loop over "
                            "column blocks as rms_norm_splitk writes it)"):
    raise TTResourceError(msg, span=span, hint=hint)



def line_of(span):
    return getattr(span, "line", "?") if span is not None else "?"




def shape_of(bufs):
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
            wide[key_of(b)] = b
        elif shape != [rows]:
            return cols, rows, wide, b
    return cols, rows, wide, None



class Stmt:
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


class ColumnPhases:
    """Classification and phases of the statement lists of one kernel (module docstring)."""

    def __init__(self, wide, cols, rows):
        self.wide, self.cols, self.rows = wide, cols, rows

    def touches_wide(self, node):
        return any(key_of(r.source) in self.wide for r in collect(node, tvm.ir.TensorRegion)) or \
            any(key_of(ld.source) in self.wide for ld in collect(node, tvm.ir.TensorLoad)) or \
            any(key_of(st.buffer) in self.wide for st in collect(node, tirx.BufferStore))

    def effects(self, node, s):
        """Non-wide reads / writes of ``node`` into ``s`` (buffers and scalar variables)."""
        for ld in collect(node, tvm.ir.TensorLoad):
            if key_of(ld.source) not in self.wide:
                s.reads.add(key_of(ld.source))
        for st in collect(node, tirx.BufferStore):
            if key_of(st.buffer) not in self.wide:
                s.writes.add(key_of(st.buffer))
        for call in collect(node, tirx.TilePrimitiveCall):
            regions = [a for a in call.args if isinstance(a, tvm.ir.TensorRegion)]
            for n, r in enumerate(regions):
                k = key_of(r.source)
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
            s.writes.add(key_of(b.var))
        for v in collect(node, tvm.ir.Var):
            s.reads.add(key_of(v))

    def classify(self, idx, node):
        if not self.touches_wide(node):
            s = Stmt(idx, node, "row")
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
        refuse(f"this statement uses the block buffer(s) "
                f"{self.names(node)} of {self.cols} columns in a way column streaming cannot "
                "split (only copies, T.Parallel nests, fills and dim=1 reductions can)",
                node.span)

    def names(self, node):
        found = {}
        for r in collect(node, tvm.ir.TensorRegion):
            if key_of(r.source) in self.wide:
                found[r.source.name] = 1
        for ld in collect(node, tvm.ir.TensorLoad):
            if key_of(ld.source) in self.wide:
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
        wide = [r for r in regions if key_of(r.source) in self.wide]
        span = call.span if call.span is not None else getattr(node, "span", None)
        for r in wide:
            if not self.region_is_whole(r):
                refuse(f"`{r.source.name}` ({self.cols} columns) is used in part here; column "
                        "streaming splits whole wide buffers only", span)
        dst = regions[0]
        if name == COPY and len(regions) == 2:
            src = regions[1]
            dst_wide, src_wide = key_of(dst.source) in self.wide, key_of(src.source) in self.wide
            if dst_wide and src_wide:
                s = Stmt(idx, node, "wide")
            else:
                tensor = src if dst_wide else dst
                if buffer_scope(tensor.source) in BLOCK_SCOPES:
                    refuse(f"`{tensor.source.name}` is copied to or from the wide buffer "
                            f"`{(dst if dst_wide else src).source.name}`; column streaming "
                            "needs tensors there", span)
                last = tensor.region[-1].extent
                if not (isinstance(last, tirx.IntImm) and int(last.value) == self.cols):
                    refuse(f"the copy between `{(dst if dst_wide else src).source.name}` and "
                            f"`{tensor.source.name}` does not move {self.cols} columns of the "
                            "tensor's last dimension; column streaming cannot split it", span)
                s = Stmt(idx, node, "copy_in" if dst_wide else "copy_out")
        elif name == FILL and key_of(dst.source) in self.wide:
            s = Stmt(idx, node, "wide")
        elif name in REDUCTIONS and len(wide) == 1 and key_of(regions[1].source) in self.wide \
                and key_of(dst.source) not in self.wide:
            axes = [int(a) for a in call.args[2]]
            src = regions[1].source
            if len(buffer_shape(src)) != 2 or axes != [1]:
                refuse(f"the reduction of `{src.name}` is not along its {self.cols} columns "
                        "(dim=1); column streaming cannot split it", span)
            if [int(d) for d in buffer_shape(dst.source)] != [self.rows]:
                refuse(f"the reduction of `{src.name}` writes `{dst.source.name}`, not a row "
                        f"vector of {self.rows} rows", span)
            s = Stmt(idx, node, "reduce")
        elif name in REDUCTIONS and key_of(dst.source) in self.wide and len(regions) == 2 \
                and key_of(regions[1].source) in self.wide \
                and len(buffer_shape(regions[1].source)) == 2 \
                and [int(a) for a in call.args[2]] == [0] \
                and len(buffer_shape(dst.source)) == 1:
            # a column reduction (dim=0) of a [rows, N] block into an [N] column vector: each
            # column's value is its own column's, so it is elementwise along the columns
            s = Stmt(idx, node, "wide")
            if bool(call.args[3]):  # accumulating: it reads its destination
                s.wide_reads.append(key_of(dst.source))
        else:
            op = name.split(".")[-1]
            refuse(f"`{op}` on {self.names(node)} ({self.cols} columns): column streaming "
                    "splits only copies, fills, T.Parallel nests, dim=1 reductions and dim=0 "
                    f"reductions of a [{self.rows}, {self.cols}] block into a [{self.cols}] "
                    "column vector", span)
        s.call = call
        for n, r in enumerate(regions):
            k = key_of(r.source)
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
            refuse(f"this T.Parallel nest ({' x '.join(map(str, ext))}) over "
                    f"{self.names(node)} is not T.Parallel({self.rows}, {self.cols}) or "
                    f"T.Parallel({self.cols}); column streaming cannot split it", span)
        s = Stmt(idx, node, "wide")
        s.col_var = col_var
        s.col_loop = loops[-1]

        def check(buf, indices):
            k = key_of(buf)
            shape = buffer_shape(buf)
            if k in self.wide:
                want = [col_var] if len(shape) == 1 else [row_var, col_var]
            elif buffer_scope(buf) in BLOCK_SCOPES:
                if shape != [self.rows] or row_var is None:
                    refuse(f"`{buf.name}` is read or written in a T.Parallel nest over "
                            f"{self.cols} columns but is no row vector [{self.rows}]", span)
                want = [row_var]
            else:
                return
            if len(indices) != len(want) or not all(
                    w is not None and x.same_as(w) for x, w in zip(indices, want)):
                what = "wide buffers" if k in self.wide else "row vectors"
                refuse(f"`{buf.name}` is indexed [{', '.join(map(str, indices))}] in a "
                        f"T.Parallel nest over {self.cols} columns; column streaming needs "
                        f"{what} indexed by the nest's own variables", span)

        for ld in collect(body, tvm.ir.TensorLoad):
            check(ld.source, list(ld.indices))
        written = set()  # a wide buffer read after the nest's own store (same element) is no
        for part in stmts_of(body):  # read of what the list defined before
            for ld in collect(part, tvm.ir.TensorLoad):
                k = key_of(ld.source)
                if k in self.wide and k not in written and k not in s.wide_reads:
                    s.wide_reads.append(k)
            if isinstance(part, tirx.BufferStore):  # an unconditional store of the element
                written.add(key_of(part.buffer))
        for st in collect(body, tirx.BufferStore):
            check(st.buffer, list(st.indices))
            k = key_of(st.buffer)
            if k not in self.wide and buffer_scope(st.buffer) in BLOCK_SCOPES:
                refuse(f"this T.Parallel nest over {self.cols} columns writes the row vector "
                        f"`{st.buffer.name}`; column streaming splits such folds only as "
                        "T.reduce_*(dim=1)", span)
            if k in self.wide and k not in s.wide_writes:
                if [int(lp.extent.value) for lp in loops] != buffer_shape(st.buffer):
                    refuse(f"this nest writes part of `{st.buffer.name}`", span)
                s.wide_writes.append(k)
        self.effects(node, s)
        return s

    # ---- one statement list -------------------------------------------------------------------
    def writes_wide(self, node, k):
        return any(key_of(st.buffer) == k for st in collect(node, tirx.BufferStore)) or any(
            key_of(c.args[0].source) == k for c in collect(node, tirx.TilePrimitiveCall)
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
                    refuse(f"`{b.name}` ({self.cols} columns) is read here before this "
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
                refuse(f"this statement is computed again in column pass {p} (its wide result "
                        "is needed there), but what it reads is overwritten in between "
                        f"(at line {line_of(self.span_of(t))}); column streaming cannot "
                        "reproduce it", self.span_of(s),
                        hint="write the updated values to another tensor or buffer")

    def plan(self, parsed):
        """(phase -> indices of the statements its chunk loop runs, last phase) of a list whose
        levels are set; a statement repeated in a later phase is checked to read what it read.

        A copy to a tensor that earlier copies of the list read (an in-place update) is stored
        in the last phase that reads the tensor again (recomputing its value there), so every
        such read sees the old values, chunk by chunk; when a later statement of the list needs
        the new values before that phase, the copy stays in its own phase (and the re-read is
        refused by ``check_replay``)."""
        roots = [s for s in parsed if s.in_phase and self.is_root(s)]

        def members_of():
            out = {}
            for s in roots:
                out.setdefault(s.level, set()).update(self.closure(parsed, s))
            return out

        members = members_of()
        moved = False
        for s in roots:
            if s.kind != "copy_out":
                continue
            target = max([p for p, idxs in members.items() for i in idxs
                          if i < s.idx and parsed[i].kind == "copy_in"
                          and self.same_chunk(parsed[i], s)] + [s.level])
            if target > s.level and all(
                    t.level > target for t in parsed[s.idx + 1:] if self.conflict(s, t)):
                s.level, moved = target, True
        if moved:
            members = members_of()
        last = max(members, default=-1)
        for p, idxs in members.items():
            for i in idxs:
                self.check_replay(parsed, parsed[i], p)
        return members, last
