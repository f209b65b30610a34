"""A0.00 LaunchPersistentTilesTT: a ``T.Persistent`` tile loop becomes the kernel's launch.

Requires: nothing (the first stage; runs on the frontend TIR).

TileLang's persistent loop ``with T.Kernel(sm_num) as block_id: for bx, by in
T.Persistent([MB, NB], sm_num, block_id):`` visits every tile of the domain once over the
blocks: block ``block_id`` takes the tiles ``block_id``, ``block_id + sm_num``, ... (in
TileLang's grouped order, ``group_size`` tiles of the last dim together).  The frontend builds
it as a serial nest over the domain, one loop per dim, whose outer loop carries
``tt.persistent_tiles = [wave_size, index, group_size]``.  Here every launch is already run
persistently (B1 / B2 give each core a range of blocks and E1 loops over them), so the
tiles are the blocks of a launch over the domain: when no tile iteration depends on another
the two programs compute the same, whatever the order.

Guarantees: a kernel without the annotation is returned unchanged.  A kernel whose launch is
one-dimensional (``T.Kernel(n) as block_id``) and whose launch body is allocations, then
statements that do not use ``block_id`` and write no tensor (bindings, writes of the
launch's block (shared / fragment) or local buffers), then one ``T.Persistent`` nest over a
domain of 1 to 3 dims, is rewritten: the launch is ``T.Kernel(D0[, D1[, D2]])`` (the
extents with the bindings made before the nest inlined) whose block indices are the nest's
loop variables (``blockIdx.x`` the first dim), the allocations kept, the statements before
the nest moved to the start of each tile's body (a tile starts from what a block started
from), then the nest's body.  Refused with a
:class:`TTUnsupportedError` naming the ``T.Persistent`` line: ``index`` not the launch's one
block index; ``wave_size`` not provably the launch's extent (tiles would be skipped or
visited twice); ``block_id`` used anywhere but as ``index`` (an allocation's shape, the
domain included); more than one ``T.Persistent``
nest, or one that is not a top-level statement of the launch; a statement after the nest or
one before it that writes a tensor; a domain of more than 3 dims; and a value carried from
one tile to the next: a block or local buffer of the launch that the body writes and that a
statement of the body (named) reads while the iteration has not yet written all of it (its
value comes from the previous tile).  A write counts as writing all of a buffer when it
covers its whole shape on every path: a tile op whose destination region is the whole
buffer (``T.copy``, ``T.fill`` / ``T.clear``, elementwise ops, ``T.gemm(clear_accum=True)``,
a reduction with ``clear=True``; other tile ops also read their destination), a
``T.Parallel`` nest storing ``buf[i, j, ...]`` with its own loop variables over the
buffer's shape, a store to a one-element buffer (``T.alloc_var``); inside a serial loop only
when the loop runs at least once, inside an ``if`` only when both arms write it.  Tensors
are left to V0, which orders or refuses dependencies through global memory between blocks.
"""

from __future__ import annotations

import tvm
from tvm import tirx
from tvm.sym import Analyzer

from ... import attrs
from ...errors import TTUnsupportedError, describe_span
from ..common import (
    buffer_scope, buffer_shape, collect, inline_binds, launch_attrs, seq, stmts_of, tt_pass,
    uses_var,
)

_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
_LOCAL_SCOPES = ("shared", "local.fragment", "local", "shared.dyn")
# tile ops that write their whole destination region without reading it
_OVERWRITE = ("tirx.tile.copy", "tirx.tile.fill", "tirx.tile.add", "tirx.tile.sub",
              "tirx.tile.mul", "tt.tile.expr", "tt.tile.index_mask")
_REDUCE = ("tirx.tile.sum", "tirx.tile.max", "tirx.tile.min")


def _line(node) -> str:
    return describe_span(getattr(node, "span", None)) or "(no source line)"


def _refuse(loop, what: str):
    return TTUnsupportedError(f"T.Persistent at {_line(loop)}: {what}")


def _has(bufs, buf) -> bool:
    return any(b.same_as(buf) for b in bufs)


def _regions(call):
    return [a for a in call.args if isinstance(a, tvm.ir.TensorRegion)]


def _is_false(v) -> bool:
    if isinstance(v, bool):
        return not v
    if isinstance(v, (tirx.IntImm, tirx.FloatImm)):
        return float(v.value) == 0.0
    return False


class _Carried:
    """Reads of tracked buffers that the current tile iteration has not yet written whole."""

    def __init__(self, tracked):
        self.tracked = tracked
        self.ana = Analyzer()
        self.hits = []  # (buffer, statement) of each read before the iteration's write

    def read(self, buf, node, defined):
        if _has(self.tracked, buf) and not _has(defined, buf) and \
                not any(b.same_as(buf) for b, _ in self.hits):
            self.hits.append((buf, node))

    def loads(self, expr, node, defined, skip=()):
        for ld in collect(expr, tvm.ir.TensorLoad):
            if not _has(skip, ld.source):
                self.read(ld.source, node, defined)

    def whole(self, region) -> bool:
        shape = buffer_shape(region.source)
        if len(shape) != len(region.region):
            return False
        return all(self.ana.can_prove_equal(r.min, 0) and self.ana.can_prove_equal(r.extent, d)
                   for r, d in zip(region.region, shape))

    def call(self, call, defined):
        regions = _regions(call)
        if not regions:
            self.loads(call.args, call, defined)
            return defined
        dst, srcs = regions[0], regions[1:]
        name = call.op.name
        args = list(call.args)
        overwrite = name in _OVERWRITE
        if name == "tirx.tile.gemm":  # (C, A, B, C, tA, tB, alpha, beta)
            overwrite = _is_false(args[-1])
            if overwrite:
                srcs = srcs[:2]
        elif name in _REDUCE:  # (dst, src, dims, accumulate)
            overwrite = len(args) >= 4 and _is_false(args[3])
        for r in srcs:
            self.read(r.source, call, defined)
        for a in args:
            if isinstance(a, tvm.ir.TensorRegion):
                for r in a.region:
                    self.loads([r.min, r.extent], call, defined)
            elif isinstance(a, tvm.ir.Expr):
                self.loads(a, call, defined)
        if not overwrite:
            self.read(dst.source, call, defined)
        if self.whole(dst):
            return defined + [dst.source]
        return defined

    def parallel(self, nest, defined):
        loops = [nest]
        while isinstance(loops[-1].body, tirx.For) and loops[-1].body.kind == tirx.ForKind.PARALLEL:
            loops.append(loops[-1].body)
        body = loops[-1].body
        lvars = [lp.loop_var for lp in loops]
        extents = [lp.extent for lp in loops]
        written = []

        def visit(s, cond):
            nonlocal written
            if isinstance(s, tirx.SeqStmt):
                for x in s.seq:
                    visit(x, cond)
            elif isinstance(s, tirx.BufferStore):
                self.loads([s.value, *s.indices], s, defined + written)
                shape = buffer_shape(s.buffer)
                full = (not cond and len(s.indices) == len(lvars) == len(shape)
                        and all(isinstance(i, tvm.ir.Var) and i.same_as(v)
                                for i, v in zip(s.indices, lvars))
                        and all(self.ana.can_prove_equal(e, d) for e, d in zip(extents, shape)))
                if full:
                    written = written + [s.buffer]
            elif isinstance(s, tirx.IfThenElse):
                self.loads(s.condition, s, defined + written)
                visit(s.then_case, True)
                if s.else_case is not None:
                    visit(s.else_case, True)
            elif isinstance(s, (tirx.Bind, tirx.Evaluate)):
                self.loads(s.value, s, defined + written)
            elif hasattr(s, "body"):
                visit(s.body, True if isinstance(s, tirx.For) else cond)
            else:
                self.loads(s, s, defined + written)

        visit(body, False)
        return defined + written

    def stmt(self, s, defined):
        if isinstance(s, tirx.SeqStmt):
            for x in s.seq:
                defined = self.stmt(x, defined)
            return defined
        if isinstance(s, tirx.TilePrimitiveCall):
            return self.call(s, defined)
        if isinstance(s, tirx.BufferStore):
            self.loads([s.value, *s.indices], s, defined)
            shape = buffer_shape(s.buffer)
            if all(isinstance(d, int) and d == 1 for d in shape):
                return defined + [s.buffer]
            return defined
        if isinstance(s, (tirx.Bind, tirx.Evaluate)):
            self.loads(s.value, s, defined)
            return defined
        if isinstance(s, tirx.IfThenElse):
            self.loads(s.condition, s, defined)
            then = self.stmt(s.then_case, defined)
            other = self.stmt(s.else_case, defined) if s.else_case is not None else defined
            return [b for b in then if _has(other, b)]
        if isinstance(s, tirx.For):
            if s.kind == tirx.ForKind.PARALLEL:
                return self.parallel(s, defined)
            self.loads([s.min, s.extent], s, defined)
            after = self.stmt(s.body, defined)
            runs = self.ana.can_prove(s.extent >= 1)
            return after if runs else defined
        if isinstance(s, tirx.AttrStmt):
            return self.stmt(s.body, defined)
        if isinstance(s, (tirx.AllocBuffer, tirx.DeclBuffer)):
            return defined
        # anything else: every load a read, nothing written whole
        self.loads(s, s, defined)
        return defined


def _written(body) -> list:
    out = []
    for s in collect(body, tirx.BufferStore):
        if not _has(out, s.buffer):
            out.append(s.buffer)
    for c in collect(body, tirx.TilePrimitiveCall):
        regions = _regions(c)
        if regions and not _has(out, regions[0].source):
            out.append(regions[0].source)
    return out


def _nest(loop):
    """The loops of a ``T.Persistent`` nest (outer first): the annotation's rank many."""
    rank = int(list(loop.annotations[attrs.LOOP_PERSISTENT_TILES])[3])
    loops = [loop]
    while len(loops) < rank:
        loops.append(loops[-1].body)  # T.grid nests its loops directly
    return loops


def _launch(func, loop):
    launches = launch_attrs(func.body)
    if len(launches) != 1 or not func.body.same_as(launches[0]):
        raise _refuse(loop, "the kernel must be a one-dimensional `with T.Kernel(n) as "
                            "block_id:` whose block index is T.Persistent's index")
    return launches[0]


def _launch_dtype(func) -> str:
    launches = launch_attrs(func.body)
    return str(launches[0].value.dtype) if launches else "int32"


@tt_pass("LaunchPersistentTilesTT")
def LaunchPersistentTilesTT(func, mod, ctx):
    """A0.00: a ``T.Persistent`` tile loop -> the launch over its domain (module docstring)."""
    marked = collect(func.body, tirx.For,
                     lambda f: attrs.LOOP_PERSISTENT_TILES in (f.annotations or {}))
    if not marked:
        return func
    loop = marked[0]
    if len(marked) > 1:
        raise _refuse(marked[1], "a kernel takes one T.Persistent loop (another at "
                                 f"{_line(loop)})")
    wave_size, index = list(loop.annotations[attrs.LOOP_PERSISTENT_TILES])[:2]
    if isinstance(wave_size, int):
        wave_size = tirx.IntImm(_launch_dtype(func), wave_size)
    launch = _launch(func, loop)
    block = launch.node.var
    if not (isinstance(index, tvm.ir.Var) and index.same_as(block)):
        raise _refuse(loop, f"its index {index} must be the block index of the kernel's "
                            f"T.Kernel ({block.name})")
    if not Analyzer().can_prove_equal(wave_size, launch.value):
        raise _refuse(loop, f"its wave size {wave_size} must be the T.Kernel extent "
                            f"{launch.value} (block b takes the tiles b, b + {launch.value}, ...)")

    stmts = stmts_of(launch.body)
    at = next((i for i, s in enumerate(stmts) if s.same_as(loop)), None)
    if at is None:
        raise _refuse(loop, "the loop must be a statement of the T.Kernel body itself (not "
                            "inside another loop or branch)")
    before, after = stmts[:at], stmts[at + 1:]
    for s in after:
        if not (isinstance(s, tirx.Evaluate) and isinstance(s.value, tirx.IntImm)):
            raise _refuse(loop, f"the statement at {_line(s)} runs after the tile loop, once "
                                "per block; a T.Persistent kernel ends with its tile loop here")
    allocs, moved = [], []
    for s in before:
        if isinstance(s, (tirx.AllocBuffer, tirx.DeclBuffer)):
            allocs.append(s)
            continue
        if uses_var(s, block):
            raise _refuse(loop, f"the statement at {_line(s)} uses the block index "
                                f"{block.name}; with T.Persistent it may only be the loop's "
                                "index")
        tensors = [b for b in _written(s) if buffer_scope(b) not in _LOCAL_SCOPES]
        if tensors:
            raise _refuse(loop, f"the statement at {_line(s)} writes tensor {tensors[0].name} "
                                "once per block before the tile loop; write it in the loop")
        moved.append(s)

    loops = _nest(loop)
    body = loops[-1].body
    rank = len(loops)
    if uses_var(body, block):
        raise _refuse(loop, f"the block index {block.name} is used in the tile loop; with "
                            "T.Persistent the loop's variables are the tile's coordinates")
    if rank > 3:
        raise _refuse(loop, f"a domain of {rank} dims; the launch takes at most 3 (merge dims)")
    for lp in loops:
        if not Analyzer().can_prove_equal(lp.min, 0):
            raise _refuse(loop, "its domain must start at 0")
    # the launch extents are outside the body: integer bindings made before the loop inlined
    binds = {s.var: s.value for s in moved if isinstance(s, tirx.Bind)}
    extents = [inline_binds(lp.extent, binds) for lp in loops]
    if any(uses_var(e, block) for e in extents) or any(
            uses_var(s, block) for s in allocs):
        raise _refuse(loop, f"its domain or an allocation uses the block index {block.name}")

    tracked = [s.buffer for s in allocs if buffer_scope(s.buffer) in _LOCAL_SCOPES]
    check = _Carried(tracked)
    check.stmt(body, [])
    written = _written(body)
    carried = [(b, n) for b, n in check.hits if _has(written, b)]
    if carried:
        buf, node = carried[0]
        raise _refuse(loop, f"{buf.name} is carried from one tile to the next: the statement "
                            f"at {_line(node)} reads it before the tile's iteration has written "
                            "all of it, and the loop writes it (TileLang gives each block's "
                            "tiles one after another; here the tiles are independent blocks); "
                            "write it whole at the start of each tile (T.clear / T.fill / "
                            "T.copy)")

    new_body = seq(allocs + moved + [body])
    for lp, ext, tag in reversed(list(zip(loops, extents, _TAGS))):
        iv = tirx.IterVar(tvm.ir.Range(0, ext), lp.loop_var, launch.node.iter_type, tag)
        new_body = tirx.AttrStmt(iv, "thread_extent", ext, new_body)
    return func.with_body(new_body)
