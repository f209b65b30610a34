"""A0.00.1 ScalarProgramTT: a launch of scalar code runs on the reader's RISC-V core.

TileLang's language tests write single-threaded scalar code in a kernel: ``T.alloc_var`` /
``T.alloc_local`` scalars, ``T.serial`` / ``range`` loops (with steps), ``while`` loops, ``if``s,
tensor element reads and element stores outside ``T.Parallel``::

    with T.Kernel(1) as _:
        i = T.alloc_var(T.int32, 0)
        s = T.alloc_var(T.int32)
        while i < 10:
            s += i
            i += 1
        A[0] = s

On Tensix such a launch is one data-movement kernel: the reader runs it, its scalars C++ locals
(so loop-carried values are natural), every tensor it touches a *scalar tensor* (32-bit words,
16 to a 64-byte DRAM page, converted by the host: ``analysis/scalar_reads.py``).

Requires: LaunchPersistentTilesTT (a ``T.Persistent`` tile loop is the launch over its domain
first, so its tiles are blocks here).

Guarantees: a launch whose body (inside its ``T.Kernel`` thread extents) holds no tile
primitive but ``T.copy`` / ``T.fill`` / ``T.clear`` of single elements (``T.copy(A, A_local)`` of
``[1]`` buffers: made their element stores first), no ``T.Parallel`` loop, no buffer but ``local`` ones and tensor parameters, no
statement marker but atomics' (``AttrStmt``: reducer updates), no ``T.Persistent`` loop, no
``tt.*`` call but the reader's own (``T.print`` of scalars, ``T.device_assert``), and stores at
least one tensor element, is a *scalar program*:

* every element read ``T[i, j]`` of a tensor parameter becomes ``tt.scalar.load(T, flat)``
  (``flat`` the row-major index; a float element through ``tt.bits_to_float`` /
  ``tt.bits_to_bfloat16`` / ``tt.bits_to_float16``: the host passes float16 and bfloat16
  elements as float32 words, exactly), every element store ``tt.scalar.store(T, flat, word)``
  (floats through ``tt.float_to_bits``: the value is of the tensor's dtype already, so the
  host's conversion back is exact);
* an atomic (``T.atomic_add`` / ``max`` / ``min`` of an element: A0.1.1's marked store
  ``dst = dst op v``) is its store: the launch's blocks (and a per-thread program's threads,
  A0.000) run one after the other on one core, so the update is a read-modify-write no
  other update interleaves with;
* ``T.if_then_else(c, a, b)`` becomes a select (printed as C++'s ``c ? a : b``, which
  evaluates only the arm it takes, as ``T.if_then_else`` does);
* a loop of constant step ``k != 1`` runs over its trip count ``max(0, ceil(extent / k))``
  from 0 with ``i = min + iter * k`` bound first (TVM's RemoveNoOp drops a loop of negative
  extent: ``range(10, 0, -1)``);
* the body is wrapped in ``AttrStmt(tt.scalar_program)``; local buffers, loops, ``while``
  loops, branches and bindings stay as they are;
* ``tt.scalar_program`` on the function lists the parameters it stores into (the plan's
  outputs: the host passes them in and reads them back, each store a read-modify-write of its
  page, so the page's other words keep the caller's values);
* a launch of several blocks runs on one core (``tt.schedule`` ``core_grid = [1, 1]``: B1
  gives that core every block, in block order), since the blocks' read-modify-writes of a
  shared page (``A[bx] = ...``, 16 words a page) would race on several cores.

Later stages that have nothing to do on such a launch leave it alone (``common.tt_pass``'s
``scalar_programs``); LowerScalarProgramTT (after D2) makes the loads and stores page reads
through an L1 scratch page.  Refused (``TTUnsupportedError`` naming the tensor and line): a
tensor element of a dtype other than int32 / float32 / bfloat16 / float16, stores in a launch of a run-time number
of blocks, a loop step that is not a nonzero constant, a call of a math function or another
TVM intrinsic (``T.sin``, ``T.exp``, bitwise operations).
Other launches are returned unchanged.
"""

from __future__ import annotations

import tvm
from tvm import tirx

from ... import attrs, ops
from ...errors import TTUnsupportedError
from ..common import buffer_shape, collect, get_attr, int_imm, to_py, tt_map, tt_pass
from .parallel_to_tile import _SELECTS

# the dtypes a scalar program reads and stores tensor elements of (the host passes the words)
DTYPES = ("int32", "float32", "bfloat16", "float16")
# a float element's word -> its value (the host converts float16 / bfloat16 to float32 words)
_FROM_BITS = {"float32": "tt.bits_to_float", "bfloat16": "tt.bits_to_bfloat16",
              "float16": "tt.bits_to_float16"}
_LOCAL_SCOPES = ("local", "local.var")


def _is_param(func, buf) -> bool:
    return any(buf.same_as(p) for p in func.params if tirx.is_buffer_var(p))


def _launch(body):
    """(the thread-extent AttrStmts around the program, the program)."""
    outer = []
    while isinstance(body, tirx.AttrStmt) and str(body.attr_key) == "thread_extent":
        outer.append(body)
        body = body.body
    return outer, body


def _one_element(region) -> bool:
    return isinstance(region, tvm.ir.TensorRegion) and all(
        isinstance(r.extent, tirx.IntImm) and int(r.extent) == 1 for r in region.region)


def _element_op(call):
    """A ``T.copy`` / ``T.fill`` / ``T.clear`` of one element (``T.copy(A, A_local)`` of
    ``[1]`` buffers) as its element store, or None."""
    name, args = call.op.name, call.args
    if name == "tirx.tile.copy" and len(args) >= 2 and _one_element(args[0]) and \
            _one_element(args[1]):
        dst, src = args[0], args[1]
        value = src.source[tuple(r.min for r in src.region)]
        if str(src.source.dtype) != str(dst.source.dtype):
            value = tirx.Cast(str(dst.source.dtype), value)
        return tirx.BufferStore(dst.source, value, [r.min for r in dst.region], span=call.span)
    if name == "tirx.tile.fill" and len(args) >= 2 and _one_element(args[0]) and \
            isinstance(args[1], (tirx.PrimExpr, int, float)):
        dst = args[0]
        value = args[1]
        if isinstance(value, (int, float)):
            value = tirx.const(value, str(dst.source.dtype))
        elif str(value.ty) != str(dst.source.dtype):
            value = tirx.Cast(str(dst.source.dtype), value)
        return tirx.BufferStore(dst.source, value, [r.min for r in dst.region], span=call.span)
    return None


def is_scalar_program(func) -> bool:
    """The launch is scalar code that stores tensor elements (see the module docstring)."""
    outer, body = _launch(func.body)
    if not outer:
        return False
    if any(_element_op(c) is None for c in collect(body, tirx.TilePrimitiveCall)):
        return False
    if any(loop.kind == tirx.ForKind.PARALLEL for loop in collect(body, tirx.For)):
        return False
    for alloc in collect(body, tirx.AllocBuffer):
        if str(alloc.buffer.scope()) not in _LOCAL_SCOPES:
            return False
    for call in collect(body, tvm.ir.Call):
        name = ops.tt_op_name(call)
        if name is not None and ops.spec(name).kernel not in ("reader", "any"):
            return False
    if collect(body, tirx.AttrStmt, lambda a: str(a.attr_key) != attrs.ATOMIC):
        return False  # markers other passes lower (reducers ...)
    if any(attrs.LOOP_PERSISTENT_TILES in (loop.annotations or {})
           for loop in collect(body, tirx.For)):
        return False  # a T.Persistent tile loop (A0.00 makes it the launch first)
    return any(_is_param(func, s.buffer) for s in collect(body, tirx.BufferStore))


def _flat(indices, shape):
    flat = int_imm(0)
    for i, d in zip(indices, shape):
        flat = flat * int(d) + i
    return flat


def _span(body, node):
    """The span of ``node``, or of the innermost statement holding it."""
    span = getattr(node, "span", None)
    if span is not None:
        return span
    for stmt in collect(body, tirx.Stmt, lambda st: getattr(st, "span", None) is not None):
        if any(x.same_as(node) for x in collect(stmt, type(node))):
            span = stmt.span
    return span


@tt_pass("ScalarProgramTT", requires=("LaunchPersistentTilesTT",), scalar_programs=True)
def ScalarProgramTT(func, mod, ctx):
    """A launch of scalar code -> tensor element accesses as ``tt.scalar.load`` /
    ``tt.scalar.store`` in an ``AttrStmt(tt.scalar_program)`` (see module docstring)."""
    if not is_scalar_program(func):
        return func
    outer, body = _launch(func.body)
    blocks = 1
    for a in outer:
        if not isinstance(a.value, tirx.IntImm):
            blocks = None
            break
        blocks *= int(a.value)
    accessed = collect(body, tvm.ir.TensorLoad, lambda ld: _is_param(func, ld.source)) + \
        collect(body, tirx.BufferStore, lambda st: _is_param(func, st.buffer))
    for node in accessed:
        buf = node.source if isinstance(node, tvm.ir.TensorLoad) else node.buffer
        if str(buf.dtype) not in DTYPES:
            raise TTUnsupportedError(
                f"element access of tensor {buf.name} (dtype {buf.dtype}) in scalar code: a "
                f"scalar program reads and stores tensors of dtype {' or '.join(DTYPES)} only",
                span=_span(body, node), hint="use an int32 or float32 tensor")
        if not all(isinstance(d, int) for d in buffer_shape(buf)):
            raise TTUnsupportedError(
                f"element access of tensor {buf.name} of symbolic shape {buffer_shape(buf)} in "
                "scalar code is not supported", span=_span(body, node))
    stores = [s for s in accessed if isinstance(s, tirx.BufferStore)]
    if blocks is None:
        st = stores[0]
        raise TTUnsupportedError(
            f"element store to tensor {st.buffer.name} in scalar code of a launch of a "
            "run-time number of blocks is not supported", span=_span(body, st),
            hint="give T.Kernel constant extents")

    def on_load(ld):
        if not _is_param(func, ld.source):
            return ld
        word = ops.call("tt.scalar.load", ld.source, _flat(ld.indices, buffer_shape(ld.source)))
        dtype = str(ld.source.dtype)
        return ops.call(_FROM_BITS[dtype], word) if dtype in _FROM_BITS else word

    def on_store(st):
        if not _is_param(func, st.buffer):
            return st
        value = st.value
        word = ops.call("tt.float_to_bits", value) if str(st.buffer.dtype) in _FROM_BITS \
            else value
        return ops.evaluate("tt.scalar.store", st.buffer,
                            _flat(st.indices, buffer_shape(st.buffer)), word, span=st.span)

    def on_for(loop):  # a stepped loop -> a loop over its trip count (TVM drops negative extents)
        step = loop.step
        if step is None or (isinstance(step, tirx.IntImm) and int(step) == 1):
            return loop
        if not isinstance(step, tirx.IntImm) or int(step) == 0:
            raise TTUnsupportedError(f"loop {loop.loop_var.name} has a step {step} that is not a "
                                     "nonzero constant", span=loop.span)
        k = int(step)
        trip = tirx.FloorDiv(loop.extent + (k - 1 if k > 0 else k + 1), int_imm(k))
        trip = tirx.Max(int_imm(0), trip)
        var = tirx.Var(f"{loop.loop_var.name}_iter", "int32")
        body = tirx.SeqStmt([tirx.Bind(loop.loop_var, loop.min + var * k), loop.body])
        return tirx.For(var, int_imm(0), trip, loop.kind, body, None, loop.annotations,
                        None, loop.span)

    def on_attr(attr):  # an atomic's store is its update: the program runs serially
        return attr.body if str(attr.attr_key) == attrs.ATOMIC else attr

    def on_call(call):  # T.if_then_else -> a select: C++'s `c ? a : b` evaluates one arm too
        if isinstance(call.op, tvm.ir.Op) and call.op.name in _SELECTS:
            return tirx.Select(*call.args)
        return call

    body = tt_map(body, [(tirx.TilePrimitiveCall, _element_op)], order="post")
    body = tt_map(body, [(tvm.ir.TensorLoad, on_load), (tirx.BufferStore, on_store),
                         (tirx.For, on_for), (tvm.ir.Call, on_call),
                         (tirx.AttrStmt, on_attr)], order="post")
    for call in collect(body, tvm.ir.Call, lambda c: ops.tt_op_name(c) is None):
        name = call.op.name.split(".")[-1] if isinstance(call.op, tvm.ir.Op) else str(call.op)
        raise TTUnsupportedError(
            f"`T.{name}` in scalar code (a launch without tile operations, which the reader's "
            "RISC-V core runs): the reader's code computes with integer and float arithmetic, "
            "comparisons, min / max and selects, and calls no math library",
            span=_span(body, call),
            hint="compute it on tiles: a T.Parallel nest over a block buffer copied to and "
                 "from the tensor")
    body = tirx.AttrStmt(0, attrs.SCALAR_PROGRAM, int_imm(1), body)
    for a in reversed(outer):
        body = tirx.AttrStmt(a.node, a.attr_key, a.value, body, a.span)
    written = []
    for i, p in enumerate(func.params):
        if any(p.same_as(s.buffer) for s in stores) and i not in written:
            written.append(i)
    func = func.with_body(body).with_attr(attrs.SCALAR_PROGRAM, written)
    if blocks > 1:
        # each store is a read-modify-write of a 16-word page that another block may share
        # (`A[bx] = ...`): the blocks run one after the other on one core, in block order
        sched = dict(to_py(get_attr(func, attrs.SCHEDULE, {})) or {})
        sched["core_grid"] = [1, 1]
        func = func.with_attr(attrs.SCHEDULE, sched)
    return func
