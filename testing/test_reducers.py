"""TileLang's reducers (T.alloc_reducer, T.reducer_init, T.reducer_update, T.finalize_reducer)
on the emulator against numpy: TileLang's own language-test kernels (reducer v2 and the v1
finalize_reducer kernel) at tile-able shapes, the gemv example's ``gemv_alloc_reducer``, and
the refusals (by message)."""

import ml_dtypes
import numpy as np
import pytest

pytest.importorskip("tilelang_tt.runtime.mockbuild", reason="emulator driver not installed")

import tilelang_tt as tilelang
import tilelang_tt as tl
import tilelang_tt.language as T
from tilelang_tt.errors import TTCompileError, TTUnsupportedError

RNG = np.random.default_rng(2408)


def test_deferred_sum_across_serial_tiles():
    """TileLang's test: accumulate across serial tiles, one final combine."""
    M, K, BLOCK_K, threads = 32, 256, 128, 128

    @T.prim_func
    def kernel(A: T.Tensor((M, K), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(1, threads=threads):
            acc = T.alloc_reducer((M,), T.float32, op="sum")
            T.reducer_init(acc)
            a_frag = T.alloc_fragment((M, BLOCK_K), T.float32)
            for k_tile in T.serial(T.ceildiv(K, BLOCK_K)):
                T.copy(A[0, k_tile * BLOCK_K], a_frag)
                for i, k in T.Parallel(M, BLOCK_K):
                    T.reducer_update(acc[i], a_frag[i, k])
            result = T.alloc_fragment((M,), T.float32)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    A = RNG.standard_normal((M, K)).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1)(A)
    np.testing.assert_allclose(np.asarray(B), A.sum(axis=1), atol=1e-1, rtol=1e-2)


def test_pipelined_accumulation():
    """TileLang's test: the epoch spans all T.Pipelined iterations, one finalize."""
    M, K, BLOCK_K, threads = 32, 256, 128, 128

    @T.prim_func
    def kernel(A: T.Tensor((M, K), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(1, threads=threads):
            acc = T.alloc_reducer((M,), T.float32, op="sum")
            T.reducer_init(acc)
            a_shared = T.alloc_shared((M, BLOCK_K), T.float32)
            for k_tile in T.Pipelined(T.ceildiv(K, BLOCK_K), num_stages=2):
                T.copy(A[0, k_tile * BLOCK_K], a_shared)
                for i, k in T.Parallel(M, BLOCK_K):
                    T.reducer_update(acc[i], a_shared[i, k])
            result = T.alloc_fragment((M,), T.float32)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    A = RNG.standard_normal((M, K)).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1,
                   pass_configs={tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True})(A)
    np.testing.assert_allclose(np.asarray(B), A.sum(axis=1), atol=1e-1, rtol=1e-2)


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min(op):
    """TileLang's test at M=32 (16 rows are half a tile): identity init, exact result."""
    M, N, threads = 32, 64, 128

    @T.prim_func
    def kernel(A: T.Tensor((M, N), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(1, threads=threads):
            a_frag = T.alloc_fragment((M, N), T.float32)
            T.copy(A, a_frag)
            acc = T.alloc_reducer((M,), T.float32, op=op)
            T.reducer_init(acc)
            for i, j in T.Parallel(M, N):
                T.reducer_update(acc[i], a_frag[i, j])
            result = T.alloc_fragment((M,), T.float32)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    # all of one sign, so a 0 start (instead of the identity) would show
    A = RNG.uniform(1.0, 2.0, (M, N)).astype(np.float32) * (-1.0 if op == "max" else 1.0)
    B = tl.compile(kernel, out_idx=-1)(A)
    ref = A.max(axis=1) if op == "max" else A.min(axis=1)
    # the matrix engine's reduction keeps float32 operands to 10 mantissa bits (tf32-like)
    np.testing.assert_allclose(np.asarray(B), ref, rtol=2e-3)


def test_packed_accumulation_bf16_max():
    """TileLang's bf16 max reducer (its `_pk` CUDA-source check dropped)."""
    M, K, threads = 32, 64, 128

    @T.prim_func
    def kernel(A: T.Tensor((M, K), T.bfloat16), B: T.Tensor((M,), T.bfloat16)):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((M, K), T.bfloat16)
            T.copy(A, src)
            acc = T.alloc_reducer((M,), T.bfloat16, op="max")
            T.reducer_init(acc)
            for i, k in T.Parallel(M, K):
                T.reducer_update(acc[i], src[i, k])
            result = T.alloc_fragment((M,), T.bfloat16)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    A = RNG.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    B = tl.compile(kernel, out_idx=-1)(A)
    np.testing.assert_array_equal(np.asarray(B).astype(np.float32),
                                  A.astype(np.float32).max(axis=1))


def test_float16_sum_with_seed():
    """A float16 sum reducer with a starting value, combined once per output."""
    M, K, BLOCK_K, seed = 64, 128, 64, 100.0

    @T.prim_func
    def kernel(A: T.Tensor((M, K), T.float16), B: T.Tensor((M,), T.float16)):
        with T.Kernel(1, threads=128):
            acc = T.alloc_reducer((M,), T.float16, op="sum")
            T.reducer_init(acc, seed)
            a_frag = T.alloc_fragment((M, BLOCK_K), T.float16)
            for k_tile in T.serial(K // BLOCK_K):
                T.copy(A[0, k_tile * BLOCK_K], a_frag)
                for i, k in T.Parallel(M, BLOCK_K):
                    T.reducer_update(acc[i], a_frag[i, k])
            result = T.alloc_fragment((M,), T.float16)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    A = RNG.uniform(0.0, 1.0, (M, K)).astype(np.float16)
    B = tl.compile(kernel, out_idx=-1)(A)
    ref = A.astype(np.float32).sum(axis=1) + seed
    np.testing.assert_allclose(np.asarray(B).astype(np.float32), ref, rtol=2e-2)


def test_inner_serial_update():
    """TileLang's `T.Parallel(M) { T.serial(K) }` form at M=32, K=64: the serial fold in
    `T.Parallel` is the row reduction (docs: TileLang issue #2393)."""
    M, K = 32, 64

    @T.prim_func
    def kernel(A: T.Tensor((M, K), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(1, threads=128):
            src = T.alloc_fragment((M, K), T.float32)
            T.copy(A, src)
            acc = T.alloc_reducer((M,), T.float32, op="sum")
            T.reducer_init(acc)
            for i in T.Parallel(M):
                for k in T.serial(K):
                    T.reducer_update(acc[i], src[i, k])
            result = T.alloc_fragment((M,), T.float32)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    A = RNG.standard_normal((M, K)).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1)(A)
    np.testing.assert_allclose(np.asarray(B), A.sum(axis=1), atol=5e-2, rtol=1e-2)


def test_epoch_inside_serial_loop():
    """TileLang's online-softmax epoch shape at 32 rows: an epoch opened, updated and finalized
    in every iteration of a serial loop, its result folded into a running maximum."""
    M, K, BLOCK_K = 32, 128, 64

    @T.prim_func
    def kernel(A: T.Tensor((M, K), T.float32), B: T.Tensor((M,), T.float32)):
        with T.Kernel(1, threads=128):
            run_max = T.alloc_fragment((M,), T.float32)
            T.fill(run_max, -T.infinity(T.float32))
            acc = T.alloc_reducer((M,), T.float32, op="max")
            tile_max = T.alloc_fragment((M,), T.float32)
            a_frag = T.alloc_fragment((M, BLOCK_K), T.float32)
            for k_tile in T.serial(K // BLOCK_K):
                T.reducer_init(acc)
                T.copy(A[0, k_tile * BLOCK_K], a_frag)
                for i, k in T.Parallel(M, BLOCK_K):
                    T.reducer_update(acc[i], a_frag[i, k] * 0.5)
                T.finalize_reducer(acc, tile_max)
                for i in T.Parallel(M):
                    run_max[i] = T.max(run_max[i], tile_max[i])
            T.copy(run_max, B)

    A = RNG.uniform(-3.0, -1.0, (M, K)).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1)(A)
    np.testing.assert_allclose(np.asarray(B), 0.5 * A.max(axis=1), rtol=2e-3)


def test_wide_plan_rows_in_a_serial_loop():
    """TileLang's `test_wide_plan_finalize_publication_static_indices_1d` at 32 rows: one
    reducer element per serial iteration, folded over a 1-D T.Parallel loop."""
    K = 64

    @T.prim_func
    def kernel(A: T.Tensor((32, K), T.float32), B: T.Tensor((32,), T.float32)):
        with T.Kernel(1, threads=128):
            src = T.alloc_fragment((32, K), T.float32)
            T.copy(A, src)
            acc = T.alloc_reducer((32,), T.float32, op="sum")
            T.reducer_init(acc)
            for i in T.serial(32):
                for k in T.Parallel(K):
                    T.reducer_update(acc[i], src[i, k])
            result = T.alloc_fragment((32,), T.float32)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    A = RNG.standard_normal((32, K)).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1)(A)
    np.testing.assert_allclose(np.asarray(B), A.sum(axis=1), atol=5e-2, rtol=1e-2)


def test_column_reducer_sums_over_rows():
    """A reducer indexed by the inner T.Parallel variable: a reduction over rows (dim 0)."""
    M, N = 64, 96

    @T.prim_func
    def kernel(A: T.Tensor((M, N), T.float32), B: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=128):
            a_frag = T.alloc_fragment((M, N), T.float32)
            T.copy(A, a_frag)
            acc = T.alloc_reducer((N,), T.float32, op="sum")
            T.reducer_init(acc)
            for i, j in T.Parallel(M, N):
                T.reducer_update(acc[j], a_frag[i, j] * 2.0)
            result = T.alloc_fragment((N,), T.float32)
            T.finalize_reducer(acc, result)
            T.copy(result, B)

    A = RNG.standard_normal((M, N)).astype(np.float32)
    B = tl.compile(kernel, out_idx=-1)(A)
    np.testing.assert_allclose(np.asarray(B), 2.0 * A.sum(axis=0), atol=5e-2, rtol=1e-2)


def _make_finalize_reducer_kernel(block_M, block_N, dtype, op, batch):
    """TileLang's test_tilelang_language_reduce.py v1 kernel (replication=, T.clear, `+=`,
    in-place finalize, then a read of the reducer)."""

    @T.prim_func
    def kernel(A: T.Tensor((block_M, block_N), dtype), B: T.Tensor((block_M,), dtype)):
        with T.Kernel(1, threads=256):
            o_reducer = T.alloc_reducer(block_M, dtype, op=op, replication="all")
            T.clear(o_reducer)
            A_smem = T.alloc_shared((block_M, block_N), dtype)
            T.copy(A, A_smem)
            A_frag = T.alloc_fragment((block_M, block_N), dtype)
            T.copy(A_smem, A_frag)
            for i, j in T.Parallel(block_M, block_N):
                if op == "sum":
                    o_reducer[i] += A_frag[i, j]
                elif op == "max":
                    o_reducer[i] = T.max(o_reducer[i], A_frag[i, j])
                else:
                    o_reducer[i] = T.min(o_reducer[i], A_frag[i, j])
            T.finalize_reducer(o_reducer, batch=batch)
            T.copy(o_reducer, B)

    return kernel


@pytest.mark.parametrize("op, dtype, block_M, block_N, batch", [
    ("sum", T.float32, 128, 64, 1), ("sum", T.float32, 128, 64, 4),
    ("max", T.float16, 64, 128, 1), ("min", T.float32, 128, 128, 16)])
def test_finalize_reducer_correctness(op, dtype, block_M, block_N, batch):
    np_dtype = np.float16 if str(dtype) == "float16" else np.float32
    A = RNG.standard_normal((block_M, block_N)).astype(np_dtype)
    B = tl.compile(_make_finalize_reducer_kernel(block_M, block_N, dtype, op, batch),
                   out_idx=-1)(A)
    a = A.astype(np.float32)
    # T.clear starts every reducer at 0 (TileLang's v1 semantics, whatever the op)
    ref = {"sum": a.sum(axis=1), "max": np.maximum(a.max(axis=1), 0),
           "min": np.minimum(a.min(axis=1), 0)}[op]
    np.testing.assert_allclose(np.asarray(B).astype(np.float32), ref, atol=1e-1, rtol=1e-2)


@tl.jit(pass_configs={tl.PassConfigKey.TL_DISABLE_TMA_LOWER: True,
                      tl.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True})
def gemv_alloc_reducer(a, x, block_M=128, block_N=128, num_stages=2, threads=256,
                       dtype: T.dtype = T.float16, accum_dtype: T.dtype = T.float):
    """examples/gemv/example_gemv.py, verbatim."""
    M, N = T.const("M, N")
    a: T.Tensor((M, N), dtype)
    x: T.Tensor((N,), dtype)
    o = T.empty((M,), dtype)

    with T.Kernel(T.ceildiv(M, block_M), threads=threads) as i0_m:
        o_reducer = T.alloc_reducer(block_M, accum_dtype, replication="all")
        T.clear(o_reducer)
        for i0_n in T.Pipelined(T.ceildiv(N, block_N), num_stages=num_stages):
            a_smem = T.alloc_shared((block_M, block_N), dtype)
            T.copy(a[i0_m * block_M, i0_n * block_N], a_smem)
            a_frag = T.alloc_fragment((block_M, block_N), dtype)
            T.copy(a_smem, a_frag)
            x_frag = T.alloc_fragment(block_N, dtype)
            T.copy(x[i0_n * block_N], x_frag)
            for i1_m, i1_n in T.Parallel(block_M, block_N):
                o_reducer[i1_m] += a_frag[i1_m, i1_n] * x_frag[i1_n]
        T.finalize_reducer(o_reducer)
        T.copy(o_reducer, o[i0_m * block_M])

    return o


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_gemv_alloc_reducer(dtype):
    M, N = 256, 256  # two row blocks, two pipelined column blocks
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float32
    kernel = gemv_alloc_reducer.compile(M=M, N=N, block_M=128, block_N=128, dtype=dtype)
    a = RNG.uniform(-1, 1, (M, N)).astype(np_dtype)
    x = RNG.uniform(-1, 1, (N,)).astype(np_dtype)
    o = kernel(a, x)
    ref = a.astype(np.float32) @ x.astype(np.float32)
    np.testing.assert_allclose(np.asarray(o).astype(np.float32), ref, atol=0.25, rtol=2e-2)


# ---- refusals ---------------------------------------------------------------------------------


def _expect(err_cls, match, make):
    with pytest.raises(err_cls, match=match):
        tl.compile(make(), out_idx=-1)


def test_reject_update_before_init():
    def make():
        @T.prim_func
        def kernel(A: T.Tensor((32, 64), T.float32), B: T.Tensor((32,), T.float32)):
            with T.Kernel(1, threads=128):
                src = T.alloc_fragment((32, 64), T.float32)
                T.copy(A, src)
                acc = T.alloc_reducer((32,), T.float32, op="sum")
                for i, k in T.Parallel(32, 64):
                    T.reducer_update(acc[i], src[i, k])
                result = T.alloc_fragment((32,), T.float32)
                T.finalize_reducer(acc, result)
                T.copy(result, B)
        return kernel

    _expect(TTCompileError, r"T.reducer_update\(acc\[...\]\) before T.reducer_init\(acc\)", make)


def test_reject_update_outside_parallel_and_double_init():
    def outside():
        @T.prim_func
        def kernel(A: T.Tensor((32, 64), T.float32), B: T.Tensor((32,), T.float32)):
            with T.Kernel(1, threads=128):
                src = T.alloc_fragment((32, 64), T.float32)
                T.copy(A, src)
                acc = T.alloc_reducer((32,), T.float32, op="sum")
                T.reducer_init(acc)
                T.reducer_update(acc[0], src[0, 0])
                result = T.alloc_fragment((32,), T.float32)
                T.finalize_reducer(acc, result)
                T.copy(result, B)
        return kernel

    def twice():
        @T.prim_func
        def kernel(A: T.Tensor((32, 64), T.float32), B: T.Tensor((32,), T.float32)):
            with T.Kernel(1, threads=128):
                acc = T.alloc_reducer((32,), T.float32, op="sum")
                T.reducer_init(acc)
                T.reducer_init(acc)
                result = T.alloc_fragment((32,), T.float32)
                T.finalize_reducer(acc, result)
                T.copy(result, B)
        return kernel

    _expect(TTUnsupportedError, "outside any T.Parallel loop.*T.Parallel", outside)
    _expect(TTCompileError, r"T.reducer_init\(acc\): double T.reducer_init", twice)


def test_reject_plain_store_read_and_clear_of_a_v2_reducer():
    def store():
        @T.prim_func
        def kernel(A: T.Tensor((32, 64), T.float32), B: T.Tensor((32,), T.float32)):
            with T.Kernel(1, threads=128):
                src = T.alloc_fragment((32, 64), T.float32)
                T.copy(A, src)
                acc = T.alloc_reducer((32,), T.float32, op="sum")
                T.reducer_init(acc)
                for i, k in T.Parallel(32, 64):
                    acc[i] += src[i, k]
                result = T.alloc_fragment((32,), T.float32)
                T.finalize_reducer(acc, result)
                T.copy(result, B)
        return kernel

    def read():
        @T.prim_func
        def kernel(A: T.Tensor((32, 64), T.float32), B: T.Tensor((32,), T.float32)):
            with T.Kernel(1, threads=128):
                src = T.alloc_fragment((32, 64), T.float32)
                T.copy(A, src)
                acc = T.alloc_reducer((32,), T.float32, op="sum")
                T.reducer_init(acc)
                for i, k in T.Parallel(32, 64):
                    T.reducer_update(acc[i], src[i, k])
                result = T.alloc_fragment((32,), T.float32)
                for i in T.Parallel(32):
                    result[i] = acc[i] * 2.0
                T.finalize_reducer(acc, result)
                T.copy(result, B)
        return kernel

    def clear():
        @T.prim_func
        def kernel(A: T.Tensor((32, 64), T.float32), B: T.Tensor((32,), T.float32)):
            with T.Kernel(1, threads=128):
                src = T.alloc_fragment((32, 64), T.float32)
                T.copy(A, src)
                acc = T.alloc_reducer((32,), T.float32, op="sum")
                T.clear(acc)  # the legacy form's init, then a v2 update
                for i, k in T.Parallel(32, 64):
                    T.reducer_update(acc[i], src[i, k])
                result = T.alloc_fragment((32,), T.float32)
                T.finalize_reducer(acc, result)
                T.copy(result, B)
        return kernel

    _expect(TTCompileError, r"test_reducers.py:\d+.*illegal store to reducer acc.*"
            r"T.reducer_update", store)
    _expect(TTCompileError, r"test_reducers.py:\d+.*illegal read of reducer acc.*read `result`",
            read)
    _expect(TTCompileError, r"T.clear\(acc\): illegal store to reducer acc", clear)


def test_reject_missing_finalize_inplace_v2_and_seed_dtype():
    def missing():
        @T.prim_func
        def kernel(A: T.Tensor((32, 64), T.float32), B: T.Tensor((32,), T.float32)):
            with T.Kernel(1, threads=128):
                acc = T.alloc_reducer((32,), T.float32, op="sum")
                T.reducer_init(acc)
                T.copy(A[0:32, 0], B)
        return kernel

    def inplace():
        @T.prim_func
        def kernel(A: T.Tensor((32, 64), T.float32), B: T.Tensor((32,), T.float32)):
            with T.Kernel(1, threads=128):
                acc = T.alloc_reducer((32,), T.float32, op="sum")
                T.reducer_init(acc)
                T.finalize_reducer(acc)
        return kernel

    def seed():
        @T.prim_func
        def kernel(A: T.Tensor((32, 64), T.float32), B: T.Tensor((32,), T.float32)):
            with T.Kernel(1, threads=128):
                acc = T.alloc_reducer((32,), T.float32, op="sum")
                T.reducer_init(acc, T.float16(1.0))
        return kernel

    _expect(TTCompileError, r"reducer acc is never finalized.*T.finalize_reducer\(acc, result\)",
            missing)
    _expect(TTCompileError, r"without a destination.*T.finalize_reducer\(acc, result\)", inplace)
    _expect(TTCompileError, "float16 does not match reducer acc's dtype float32", seed)


def test_reject_folds_with_no_tile_reduction():
    def scalar():  # TileLang's 8-element scalar sum shape family: one element per T.Parallel
        @T.prim_func
        def kernel(A: T.Tensor((32, 64), T.float32), B: T.Tensor((32,), T.float32)):
            with T.Kernel(1, threads=128):
                src = T.alloc_fragment((32, 64), T.float32)
                T.copy(A, src)
                acc = T.alloc_reducer((32,), T.float32, op="sum")
                T.reducer_init(acc)
                for k in T.Parallel(64):
                    T.reducer_update(acc[0], src[0, k])
                result = T.alloc_fragment((32,), T.float32)
                T.finalize_reducer(acc, result)
                T.copy(result, B)
        return kernel

    def wrong_op():  # a v1 max reducer updated with +
        @T.prim_func
        def kernel(A: T.Tensor((32, 64), T.float32), B: T.Tensor((32,), T.float32)):
            with T.Kernel(1, threads=128):
                src = T.alloc_fragment((32, 64), T.float32)
                T.copy(A, src)
                acc = T.alloc_reducer((32,), T.float32, op="max", replication="all")
                T.clear(acc)
                for i, k in T.Parallel(32, 64):
                    acc[i] += src[i, k]
                T.finalize_reducer(acc)
                T.copy(acc, B)
        return kernel

    _expect(TTUnsupportedError, r"test_reducers.py:\d+.*reducer acc folds a 1-loop T.Parallel "
            r"nest.*acc\[i\] for a sum over j", scalar)
    _expect(TTCompileError, "reducer acc combines with max but this update folds with sum",
            wrong_op)


def test_reject_finalize_outside_the_init_scope():
    """TileLang's rule: init and finalize share their loops (the finalize may be in an `if`)."""

    def make():
        @T.prim_func
        def kernel(A: T.Tensor((32, 64), T.float32), B: T.Tensor((32,), T.float32)):
            with T.Kernel(1, threads=128):
                src = T.alloc_fragment((32, 64), T.float32)
                T.copy(A, src)
                acc = T.alloc_reducer((32,), T.float32, op="sum")
                result = T.alloc_fragment((32,), T.float32)
                for _ in T.serial(4):
                    T.reducer_init(acc)
                    for i, k in T.Parallel(32, 64):
                        T.reducer_update(acc[i], src[i, k])
                T.finalize_reducer(acc, result)
                T.copy(result, B)
        return kernel

    _expect(TTCompileError, r"T.finalize_reducer\(acc\) is not in the scope of its "
            r"T.reducer_init\(acc\)", make)


def test_reject_bitwise_reducers():
    with pytest.raises(AssertionError, match="integer dtype"):
        @T.prim_func
        def kernel(A: T.Tensor((32, 64), T.float32), B: T.Tensor((32,), T.float32)):
            with T.Kernel(1, threads=32):
                acc = T.alloc_reducer((32,), T.float32, op="bitand")  # noqa: F841
    with pytest.raises(TTUnsupportedError, match="bitwise reductions have no tile operation"):
        @T.prim_func
        def kernel2(A: T.Tensor((32, 64), T.int32), B: T.Tensor((32,), T.int32)):
            with T.Kernel(1, threads=32):
                acc = T.alloc_reducer((32,), T.int32, op="bitor")  # noqa: F841


def test_finalize_reducer_default_alloc_v1_syntax():
    """TileLang's test at BLOCK=64, K=32: a reducer allocated without `replication` but used
    with the legacy syntax (T.clear, `+=`, in-place finalize, direct reads) is a legacy one."""
    BLOCK, K, threads = 64, 32, 128

    @T.prim_func
    def kernel(
        G: T.Tensor((BLOCK, K), T.float32),
        Y: T.Tensor((BLOCK, K), T.float32),
        O: T.Tensor((BLOCK, K), T.float32),
    ):
        with T.Kernel(1, threads=threads):
            g_frag = T.alloc_fragment((BLOCK, K), T.float32)
            y_frag = T.alloc_fragment((BLOCK, K), T.float32)
            out_frag = T.alloc_fragment((BLOCK, K), T.float32)
            reducer = T.alloc_reducer((BLOCK,), T.float32)
            T.copy(G, g_frag)
            T.copy(Y, y_frag)
            T.clear(reducer)
            for i, j in T.Parallel(BLOCK, K):
                reducer[i] += g_frag[i, j] * y_frag[i, j]
            T.finalize_reducer(reducer)
            for i, j in T.Parallel(BLOCK, K):
                out_frag[i, j] = g_frag[i, j] - reducer[i]
            T.copy(out_frag, O)

    G = RNG.standard_normal((BLOCK, K)).astype(np.float32)
    Y = RNG.standard_normal((BLOCK, K)).astype(np.float32)
    O = tl.compile(kernel, out_idx=-1)(G, Y)
    ref = G - (G * Y).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(np.asarray(O), ref, atol=5e-2, rtol=1e-2)


@pytest.mark.parametrize("batch, match", [(0, "batch must be >= 1"),
                                          (128, "exceeds total output elements"),
                                          (3, "must evenly divide")])
def test_finalize_reducer_invalid_batch(batch, match):
    """TileLang's checks of `batch` (which sizes a CUDA all-reduce: no effect here)."""
    with pytest.raises(TTCompileError, match=match):
        @T.prim_func
        def kernel(A: T.Tensor((64, 64), T.float32), B: T.Tensor((64,), T.float32)):
            with T.Kernel(1, threads=256):
                o_reducer = T.alloc_reducer(64, T.float32, op="sum", replication="all")
                T.clear(o_reducer)
                A_frag = T.alloc_fragment((64, 64), T.float32)
                T.copy(A, A_frag)
                for i, j in T.Parallel(64, 64):
                    o_reducer[i] += A_frag[i, j]
                T.finalize_reducer(o_reducer, batch=batch)
                T.copy(o_reducer, B)
