"""TileLang names without a Tensix lowering: accepted as no-ops, or refused with the reason.

``tilelang_tt.language`` serves every name TileLang 0.1.14's ``tilelang.language`` exports.
The ones this module lists either have no meaning on Tensix and are accepted (``NO_OPS``:
scheduling and layout hints the compiler decides itself), or are refused (``REFUSED``): using
one raises :class:`TTUnsupportedError` naming it and saying why, at the kernel line that uses
it.  Referring to a refused name (``policy=T.GemmWarpPolicy.Square`` as a default argument,
``T.ws`` in a table) is not an error; calling it or reading its attributes is.
"""

from __future__ import annotations

import threading

from .errors import TTUnsupportedError

_STATE = threading.local()


def note_error(err: Exception) -> Exception:
    """Remember the TT error raised inside the TVMScript parser (which re-raises it as a
    DiagnosticError carrying only its text) so ``T.prim_func`` can restore its class."""
    _STATE.error = err
    return err


def take_noted_error():
    err = getattr(_STATE, "error", None)
    _STATE.error = None
    return err


# ---- reasons ----------------------------------------------------------------------------------
_SIMT = ("Tensix runs each block as one program per core (reader, compute and writer kernels "
         "over 32x32 tiles); there are no SIMT threads, lanes or warps to address")
_WARP = "warp-level operations have no Tensix equivalent (" + _SIMT + ")"
_ASYNC = ("the reader and writer kernels move data with NoC reads and writes synchronised "
          "through circular buffers; TMA, cp.async and mbarriers have no Tensix equivalent: "
          "write T.copy")
_CUDA_MMA = ("an NVIDIA tensor-core / PTX intrinsic; write T.gemm, which runs on the Tensix "
             "matrix engine")
_CLUSTER = "thread-block clusters and distributed shared memory are CUDA (SM90+) features"
_ATOMIC = ("packed and bitwise atomics are not supported by the Tenstorrent backend; write "
           "T.atomic_add / atomic_max / atomic_min per element in a T.Parallel nest, or of a "
           "whole block, instead")
_PTR = ("raw pointers and address arithmetic are not supported: tensors are interleaved "
        "DRAM buffers addressed by tile; pass tensors as kernel parameters")
_WS = ("warp specialisation schedules do not apply: the backend already splits each block into "
       "reader, compute and writer kernels")
_NOT_YET = "not supported by the Tenstorrent backend yet (docs/SUPPORT.md lists what compiles)"
_PACKED = "packed two-lane arithmetic; write the scalar expression in T.Parallel"
_META = "TileLang's eager-builder metaprogramming is not supported; use T.macro or Python"

REFUSED: dict[str, str] = {}


def _refuse(reason: str, *names: str) -> None:
    for n in names:
        REFUSED[n] = reason


_refuse(_SIMT, "KernelLaunchFrame", "extract_lane")
_refuse(_WARP, "shfl_sync", "shfl_up", "shfl_down", "shfl_xor", "activemask", "ballot",
        "ballot_sync", "any_sync", "all_sync", "match_all_sync", "match_any_sync",
        "syncthreads_and", "syncthreads_or", "syncthreads_count", "warp_reduce_sum",
        "warp_reduce_max", "warp_reduce_min", "warp_reduce_bitand", "warp_reduce_bitor",
        "WarpSpecialize", "WarpSpecializeFrame", "ws")
_refuse(_ASYNC, "async_copy", "tma_copy", "tma_load", "tma_load_2sm", "tma_store_arrive",
        "tma_store_wait", "tma_gather4", "tma_gather4_bytes", "tma_scatter4",
        "create_tma_descriptor", "alloc_barrier", "barrier_arrive", "barrier_wait",
        "mbarrier_arrive", "mbarrier_arrive_expect_tx", "mbarrier_expect_tx",
        "mbarrier_wait_parity", "named_barrier_arrive", "fence_proxy_async", "create_barriers",
        "ptx_cp_async", "ptx_cp_async_barrier", "ptx_commit_group", "ptx_wait_group",
        "ptx_init_barrier_thread_count", "ptx_arrive_barrier", "ptx_arrive_barrier_expect_tx",
        "ptx_cp_async_bulk", "ptx_fence_barrier_init", "ptx_wait_barrier",
        "cp_async_barrier_noinc", "ldg32", "ldg64", "ldg128", "ldg256", "lds32", "lds64",
        "lds128", "stg32", "stg64", "stg128", "stg256", "sts32", "sts64", "sts128",
        "sync_global", "sync_grid")
_refuse(_CUDA_MMA, "ptx_mma", "ptx_mma_sp", "ptx_mma_sm70", "ptx_mma_block_scale",
        "ptx_ldmatrix", "ptx_wgmma_ss", "ptx_wgmma_rs", "ptx_wgmma_sp_ss", "ptx_wgmma_sp_rs",
        "ptx_tcgen05_mma_ss", "ptx_tcgen05_mma_ts", "ptx_tcgen05_mma_blockscaled_ss",
        "mma_fill", "mma_store", "wgmma_gemm", "wgmma_gemm_sp", "wgmma_mma", "wait_wgmma",
        "warpgroup_arrive", "warpgroup_commit_batch", "warpgroup_fence_operand",
        "warpgroup_wait", "tcgen05_gemm", "tcgen05_gemm_sp", "tcgen05_gemm_blockscaled",
        "tcgen05_mma", "tcgen05_mma_blockscaled", "tcgen05_mma_arrive",
        "tcgen05_after_thread_sync", "tcgen05_before_thread_sync", "tcgen05_cp_warpx4",
        "tcgen05_sf_warp_transpose", "mma_gemm_blockscaled", "make_blockscaled_gemm_layout",
        "alloc_tmem", "deallocate_tmem", "alloc_descriptor", "alloc_wgmma_desc",
        "alloc_tcgen05_smem_desc", "alloc_tcgen05_instr_desc", "alloc_tcgen05_instruction_desc",
        "increase_descriptor_offset", "initialize_wgmma_descriptor",
        "initialize_tcgen05_descriptor", "compute_gmma_descriptor", "compute_umma_descriptor",
        "WGMMADescriptorParams", "TCGEN05DescriptorParams", "get_ldmatrix_offset",
        "get_mma_micro_size", "get_swizzle_layout", "make_mma_swizzle_layout",
        "mma_store_index_map", "TensorCoreIntrinEmitter", "TensorCoreIntrinEmitterSM120",
        "TensorCoreIntrinEmitterWithLadderTransform", "SparseTensorCoreIntrinEmitter",
        "WGMMATensorCoreIntrinEmitter", "WGSparseTensorCoreIntrinEmitter",
        "TCGEN05TensorCoreIntrinEmitter", "__ffs", "__fns")
_refuse(_CLUSTER, "ClusterKernel", "alloc_cluster_barrier", "copy_cluster",
        "ptx_arrive_cluster_barrier", "cluster_arrive_relaxed", "cluster_arrive",
        "cluster_wait", "cluster_sync", "block_rank_in_cluster", "clc_try_cancel",
        "clc_try_cancel_multicast", "clc_is_canceled", "clc_get_first_ctaid_x",
        "clc_get_first_ctaid_y", "clc_get_first_ctaid_z")
_refuse(_ATOMIC, "atomic_addx2", "atomic_addx4", "atomic_or")
_refuse(_PTR, "access_ptr", "make_tensor", "make_tensor_from_addr", "ptr")
_refuse(_WS, "WSID", "WSInstr", "WSOpRef", "WSPipeline", "WSRole", "WSSchedule", "WSScope",
        "WSSync", "WSSyncKind", "annotate_ws_schedule", "ws_op")
_refuse("vector (multi-lane) values and indices are not supported: a block's elements are "
        "computed by tile operations; write the lanes as a T.Parallel loop over the elements",
        "Ramp", "Broadcast")
_refuse(_PACKED, "add2", "sub2", "mul2", "fma2", "max2", "min2", "abs2", "dp4a")
_refuse(_META, "inline", "meta_class", "has_let_value", "get_let_value")
_refuse("CUDA source kernels cannot run on Tensix; write the kernel in TileLang",
        "CUDASourceCodeKernel", "import_source")
_refuse("TileLang's tile schedulers are not supported; the backend already runs blocks "
        "persistently (each core loops over its share of the T.Kernel grid): launch T.Kernel "
        "over the tile grid, or write the loop as T.Persistent", "BaseTileScheduler",
        "PersistentTileScheduler")
_refuse("TVM's schedulable blocks (T.sblock, with their T.reads / T.writes and block-scoped "
        "annotations) are not supported: a kernel body is the T.Kernel scope itself; write the "
        "statements there (an annotation such as T.annotate_safe_value then applies to the "
        "whole kernel)", "sblock", "sblock_attr", "sblock_alloc_buffer")
_refuse("bitwise reductions need int32 blocks, and blocks are bfloat16, float16 or float32 "
        "tiles (int32 is not exact in the matrix and vector engines' float formats); "
        "TT-Metalium 0.81.1's compute API has integer bitwise ops only elementwise, between "
        "tiles in DST (bitwise_and/or/xor_binary_tile<DataFormat::Int32>), and no bitwise "
        "reduction across a tile's rows or columns (reduce_tile sums or maxes floats on the "
        "matrix engine); reduce int32 data on the host, or use T.reduce_sum / reduce_max on "
        "float data", "reduce_bitand", "reduce_bitor", "reduce_bitxor")
_refuse(_NOT_YET, "gemm_sp",
        "loop_break", "rng_init", "rng_rand", "rng_rand_float",
        "ret", "ProducerLoad")


# ---- no-ops -----------------------------------------------------------------------------------
def _noop(*_args, **_kwargs):
    return None


NO_OPS: dict[str, str] = {
    "use_swizzle": "block order is chosen by the work partitioner",
    "annotate_layout": "fragment and shared-memory layouts do not apply to tiles in CBs",
    "annotate_l2_hit_ratio": "Tensix has no L2 cache to steer",
    "annotate_min_blocks_per_sm": "an occupancy hint for CUDA SMs",
    "annotate_restrict_buffers": "an aliasing hint; tensors never alias here",
    "annotate_producer_reg_dealloc": "a register-file hint for CUDA warp groups",
    "annotate_consumer_reg_alloc": "a register-file hint for CUDA warp groups",
    "set_max_nreg": "a register-file hint for CUDA warp groups",
    "inc_max_nreg": "a register-file hint for CUDA warp groups",
    "dec_max_nreg": "a register-file hint for CUDA warp groups",
    "no_set_max_nreg": "a register-file hint for CUDA warp groups",
    "disable_warp_group_reg_alloc": "a register-file hint for CUDA warp groups",
    "sync_threads": "a block is one program per core; its kernels are ordered by the "
                    "circular-buffer protocol",
    "sync_warp": "a block is one program per core; there are no warps",
    "pdl_trigger": "kernels run one after another; programmatic dependent launch is CUDA's",
    "pdl_sync": "kernels run one after another; programmatic dependent launch is CUDA's",
}


class _WarpPolicy(int):
    """One GemmWarpPolicy value (an int, as TileLang's enum); asking it for a warp partition
    is refused."""

    def compute_warp_partition(self, *_args, **_kwargs):
        raise note_error(TTUnsupportedError(
            "GemmWarpPolicy.compute_warp_partition: " + _SIMT + "; T.gemm needs no warp "
            "partition (the matrix engine works on whole 32x32 tiles)"))


class GemmWarpPolicy:
    """TileLang's warp partition policy for ``T.gemm``: accepted and ignored (the matrix
    engine works on whole tiles; there are no warps to partition)."""

    Square = _WarpPolicy(0)
    FullRow = _WarpPolicy(1)
    FullCol = _WarpPolicy(2)
    Free = _WarpPolicy(3)

    def __init__(self, *args, **kwargs):
        pass


class LayoutHint:
    """``T.Layout`` / ``T.Fragment`` objects: built only to be handed to ``T.annotate_layout``,
    which is a no-op here; any method returns the hint itself."""

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *a, **k: self

    def __call__(self, *args, **kwargs):
        return self


class Refused:
    """A TileLang name without a Tensix meaning: using it raises TTUnsupportedError."""

    def __init__(self, name: str, reason: str, prefix: str = "T."):
        self._name = prefix + name
        self._reason = reason

    def _error(self):
        return note_error(TTUnsupportedError(f"{self._name}: {self._reason}"))

    def __call__(self, *args, **kwargs):
        raise self._error()

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        raise self._error()

    def __enter__(self):
        raise self._error()

    def __getitem__(self, _key):  # T.StridedTensor[shape, strides, dtype]
        raise self._error()

    def __mro_entries__(self, _bases):  # class B(tilelang.language.eager.ast.BaseBuilder)
        raise self._error()

    def __exit__(self, *exc):
        return False

    def __iter__(self):
        raise self._error()

    # used as a value (a set of names compared, searched or measured): refused the same way
    def __contains__(self, _item):
        raise self._error()

    def __len__(self):
        raise self._error()

    def __bool__(self):  # truthy as any object (not through __len__)
        return True

    def __lt__(self, _other):
        raise self._error()

    __le__ = __gt__ = __ge__ = __lt__

    def __repr__(self):
        return f"<refused TileLang name {self._name}>"


def resolve(name: str):
    """The object ``T.<name>`` stands for when language.py does not define it, or None."""
    if name in NO_OPS:
        return _noop
    if name in REFUSED:
        return Refused(name, REFUSED[name])
    return None
