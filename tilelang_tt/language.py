"""TileLang-compatible kernel language: ``import tilelang_tt.language as T``.

Kernels written for TileLang compile with only the import changed.  Parsing is TVM's own
TVMScript parser; the TileLang tile ops are lowered at parse time onto TVM 0.27's native tile
primitives (``TilePrimitiveCall`` nodes ``tirx.tile.copy`` / ``gemm`` / ``fill`` / ``sum`` /
``max``), so the frontend IR prints and parses as ordinary TVMScript:

==========================  ===============================================================
TileLang                    frontend TIR
==========================  ===============================================================
``T.Kernel(gx, gy)``        ``launch_thread("blockIdx.x", gx)``, ``("blockIdx.y", gy)``
``T.alloc_shared``          ``alloc_buffer(scope="shared")``
``T.alloc_fragment``        ``alloc_buffer(scope="local.fragment")``
``T.copy(src, dst)``        ``tile.copy(dst_region, src_region)`` (TileLang operand order
                            swapped; an element operand takes its extent from the other side)
``T.gemm(A, B, C, ...)``    ``tile.gemm(C, A, B, C, transpose_A, transpose_B, 1, beta)`` with
                            ``beta = 0`` when ``clear_accum`` else ``1`` (C += A @ B)
``T.clear`` / ``T.fill``    ``tile.fill(dst, value)``
``T.Pipelined(n, k)``       serial loop annotated ``{"num_stages": k}``
``T.Parallel(...)``         a loop nest of kind ``parallel``
``T.reduce_sum/max``        ``tile.sum`` / ``tile.max``
==========================  ===============================================================

Anything else in TVMScript (``T.float32``, ``T.exp``, ``T.max`` ...) is forwarded unchanged.
"""

from __future__ import annotations

import contextlib
import inspect
import threading

import tvm
import tvm_ffi
from tvm import tirx
from tvm.ir import TensorRegion
from tvm.script import tirx as _T
from tvm.script.ir_builder import tirx as _IB
from tvm.tirx import is_buffer_var

from . import attrs
from .errors import TTCompileError, TTLayoutError, TTUnsupportedError

Tensor = _T.Buffer
Buffer = _T.Buffer
ceildiv = _T.ceildiv
serial = _T.serial
grid = _T.grid

_STATE = threading.local()


def _parallel_vars() -> set:
    if not hasattr(_STATE, "parallel_vars"):
        _STATE.parallel_vars = []
    return _STATE.parallel_vars


# --------------------------------------------------------------------------------------------
# prim_func
# --------------------------------------------------------------------------------------------
def prim_func(func=None, *, private: bool = False, check_well_formed: bool = True):
    """Parse a TileLang-style kernel into a ``tvm.tirx.PrimFunc`` (``@T.prim_func``)."""

    def decorate(fn):
        from tvm.script.parser._core import parse, utils

        if not inspect.isfunction(fn):
            raise TypeError(f"@T.prim_func expects a function, got {fn!r}")
        extra_vars = utils.inspect_function_capture(fn)
        _parallel_vars().clear()
        try:
            parsed = parse(fn, extra_vars, check_well_formed=check_well_formed)
        except tvm.error.DiagnosticError as err:
            raise TTCompileError(f"cannot parse kernel {fn.__name__!r}:\n{err}") from None
        finally:
            marked = list(_parallel_vars())
            _parallel_vars().clear()
        parsed = _mark_parallel_loops(parsed, marked)
        return parsed

    if func is None:
        return decorate
    return decorate(func)


# the TVMScript parser dispatches on the decorator's token
prim_func.dispatch_token = "tirx"


def _mark_parallel_loops(func: tirx.PrimFunc, loop_vars: list) -> tirx.PrimFunc:
    """Turn the loops whose variables ``T.Parallel`` created into ``ForKind.PARALLEL``."""
    if not loop_vars:
        return func

    def is_marked(var):
        return any(var.same_as(v) for v in loop_vars)

    def rewrite(loop: tirx.For):
        if loop.kind == tirx.ForKind.SERIAL and is_marked(loop.loop_var):
            return tirx.For(loop.loop_var, loop.min, loop.extent, tirx.ForKind.PARALLEL,
                            loop.body, loop.thread_binding, loop.annotations, loop.step,
                            loop.span)
        return loop

    body = tvm_ffi.structural_map(func.body, [(tirx.For, rewrite)], order="post")
    return func.with_body(body)


# --------------------------------------------------------------------------------------------
# kernel launch, allocation, loops
# --------------------------------------------------------------------------------------------
class Kernel:
    """``with T.Kernel(gx, gy[, gz], threads=...) as (bx, by[, bz]):`` - one program per block."""

    _TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")

    def __init__(self, *extents, threads=None, prelude=None, is_cpu=False):
        if not 1 <= len(extents) <= 3:
            raise TTCompileError(f"T.Kernel takes 1 to 3 grid extents, got {len(extents)}")
        self.extents = extents
        self.threads = threads  # accepted for TileLang compatibility; Tensix has no SIMT threads
        self._stack = None

    def __enter__(self):
        self._stack = contextlib.ExitStack()
        vs = [self._stack.enter_context(_IB.launch_thread(tag, ext))
              for tag, ext in zip(self._TAGS, self.extents)]
        return tuple(vs) if len(vs) > 1 else vs[0]

    def __exit__(self, *exc):
        return self._stack.__exit__(*exc)


def alloc_shared(shape, dtype="float16", scope="shared"):
    """A block-local tile buffer in L1 (lowered to a circular buffer)."""
    if scope.startswith("shared"):
        scope = "shared"
    return _IB.alloc_buffer(shape, dtype, scope=scope)


def alloc_fragment(shape, dtype="float32", scope="local.fragment"):
    """A block-local accumulator (lives in the DST register file on Tensix)."""
    return _IB.alloc_buffer(shape, dtype, scope=scope)


def alloc_local(shape, dtype="float32", scope="local"):
    return _IB.alloc_buffer(shape, dtype, scope=scope)


def alloc_var(dtype="int32", init=None):
    buf = _IB.alloc_buffer((1,), dtype, scope="local")
    if init is not None:
        _IB.buffer_store(buf, init, [0])
    return buf


def Pipelined(start, stop=None, num_stages=0, order=None, stage=None, sync=None, group=None):
    """Software-pipelined serial loop; ``num_stages`` becomes the circular-buffer depth."""
    annotations = {attrs.LOOP_NUM_STAGES: int(num_stages)} if num_stages else None
    if stop is None:
        return _IB.serial(0, start, annotations=annotations)
    return _IB.serial(start, stop, annotations=annotations)


def Parallel(*extents):
    """Element-parallel loop nest; recognised by the compiler as a tile operation."""
    frame = _IB.grid(*extents)
    _parallel_vars().extend(list(frame.vars))
    return frame


def use_swizzle(panel_size=None, order="row", enable=True):
    """Accepted for TileLang compatibility: block order is decided by the work partitioner."""
    return None


def symbolic(name, dtype="int32"):
    """TileLang ``T.symbolic``: a named symbolic dimension (shapes using it are rejected by
    InferTTLayout until dynamic shapes are supported)."""
    return tirx.Var(name, dtype)



def annotate_layout(layout_map):
    """Accepted for TileLang compatibility (fragment layouts do not apply to Tensix)."""
    return None


# --------------------------------------------------------------------------------------------
# tile ops
# --------------------------------------------------------------------------------------------
def _insert(op_node):
    from tvm.tirx.script.builder import _ffi_api as _builder_ffi

    return _builder_ffi.TilePrimitiveCall(op_node)


def _operator(name):
    import tvm.tirx.operator as tirx_op

    return getattr(tirx_op, name)


def _extents(x):
    """Shape of a buffer or region operand, or None for an element access."""
    if is_buffer_var(x):
        return list(x.ty.shape)
    if isinstance(x, TensorRegion):
        return [r.extent for r in x.region]
    return None


def _full_region(buf):
    return buf[tuple(slice(None) for _ in buf.ty.shape)]


def _as_region(x, other_extents, op_name):
    """TileLang operand -> TensorRegion; an element access takes the other side's extents."""
    if is_buffer_var(x):
        return _full_region(x)
    if isinstance(x, TensorRegion):
        return x
    if isinstance(x, tvm.ir.TensorLoad):
        if other_extents is None:
            raise TTCompileError(
                f"T.{op_name}: both operands are single elements; one side must be a buffer or a "
                "region so the copy's extent is known")
        indices = list(x.indices)
        if len(other_extents) > len(indices):
            raise TTLayoutError(
                f"T.{op_name}: element operand {x.source.name}[...] has rank {len(indices)} but "
                f"the other operand has rank {len(other_extents)}")
        ext = [1] * (len(indices) - len(other_extents)) + list(other_extents)
        return x.source[tuple(slice(i, i + e) for i, e in zip(indices, ext))]
    raise TTCompileError(f"T.{op_name}: unsupported operand {x!r}; pass a buffer, a region "
                         "(A[a:b, c:d]) or an element (A[i, j])")


def copy(src, dst, coalesced_width=None, disable_tma=False, eviction_policy=None):
    """TileLang ``T.copy(src, dst)``: either side may be a buffer, a region or an element."""
    s_ext, d_ext = _extents(src), _extents(dst)
    dst_r = _as_region(dst, s_ext, "copy")
    src_r = _as_region(src, d_ext, "copy")
    return _insert(_operator("Copy")(dst_r, src_r, workspace={}, config={}, dispatch=None,
                                     scope=None))


def gemm(A, B, C, transpose_A=False, transpose_B=False, policy=None, clear_accum=False,
         k_pack=1, wg_wait=0):
    """TileLang ``T.gemm``: ``C += A @ B`` (``C = A @ B`` with ``clear_accum``)."""
    regions = [_as_region(x, None, "gemm") for x in (A, B, C)]
    a_r, b_r, c_r = regions
    if isinstance(clear_accum, tirx.IntImm):
        clear_accum = bool(clear_accum.value)
    if not isinstance(clear_accum, (bool, int)):
        raise TTUnsupportedError(
            f"T.gemm(clear_accum={clear_accum}) must be a constant True/False; to start a K loop "
            "from zero, call T.clear on the accumulator before the loop")
    beta = tirx.FloatImm("float32", 0.0 if clear_accum else 1.0)
    alpha = tirx.FloatImm("float32", 1.0)
    return _insert(_operator("Gemm")(c_r, a_r, b_r, c_r, bool(transpose_A), bool(transpose_B),
                                     alpha, beta, workspace={}, config={}, dispatch=None,
                                     scope=None))


def fill(buffer, value):
    region = _as_region(buffer, None, "fill")
    return _insert(_operator("Fill")(region, value, workspace={}, config={}, dispatch=None,
                                     scope=None))


def clear(buffer):
    return fill(buffer, 0)


def _reduce(kind, src, dst, dim, clear_dst):
    src_r = _as_region(src, None, f"reduce_{kind}")
    dst_r = _as_region(dst, None, f"reduce_{kind}")
    op = _operator({"sum": "Sum", "max": "Max", "min": "Min", "abssum": "Sum",
                    "absmax": "Max"}[kind])
    # |x| reductions carry a marker the compiler expands (abs first, then sum / max)
    config = {attrs.REDUCE_ABS: True} if kind.startswith("abs") else {}
    return _insert(op(dst_r, src_r, (int(dim),), not clear_dst, workspace={}, config=config,
                      dispatch=None, scope=None))


def reduce_sum(src, dst, dim=-1, clear=True):
    return _reduce("sum", src, dst, dim, clear)


def reduce_max(src, dst, dim=-1, clear=True):
    return _reduce("max", src, dst, dim, clear)


def reduce_min(src, dst, dim=-1, clear=True):
    return _reduce("min", src, dst, dim, clear)


def reduce_abssum(src, dst, dim=-1, clear=True):
    return _reduce("abssum", src, dst, dim, clear)


def reduce_absmax(src, dst, dim=-1, clear=True):
    return _reduce("absmax", src, dst, dim, clear)


# TileLang operations this backend does not lower yet (a clearer error than a missing name)
_NOT_YET = ("cumsum", "atomic_add",
            "atomic_max", "atomic_min", "gemm_sp", "im2col", "c2d_im2col")


def __getattr__(name):
    """Everything else is TVMScript's own (T.float32, T.exp, T.max, T.if_then_else, ...)."""
    if name in _NOT_YET:
        raise AttributeError(
            f"T.{name} is a TileLang operation the Tenstorrent backend does not support yet "
            "(docs/SUPPORT.md lists what compiles)")
    try:
        return getattr(_T, name)
    except AttributeError:
        raise AttributeError(f"tilelang_tt.language has no attribute {name!r}") from None

