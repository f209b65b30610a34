"""TileLang's atomics (T.atomic_add / atomic_max / atomic_min) on the emulator against numpy:
TileLang's own language-test program, split-K GEMM in both forms, disjoint targets, and the
refusals (data-dependent targets, previous values, races the serialisation does not cover)."""

import ml_dtypes
import numpy as np
import pytest

pytest.importorskip("tilelang_tt.runtime.mockbuild", reason="emulator driver not installed")

import gemm_splitk
import tilelang_tt
import tilelang_tt.language as T
from tilelang_tt.errors import TTCompileError, TTUnsupportedError

HERE = __file__


def atomic_add_program(K, M, N, block_M, block_N, dtype=T.float32):
    """TileLang's testing/python/language/test_tilelang_language_atomic.py program."""

    @T.prim_func
    def atomic_add(A: T.Tensor((K, M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), K, threads=32) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_N), dtype)

            T.copy(A[bz, bx * block_M : (bx + 1) * block_M, by * block_N : (by + 1) * block_N], A_shared)

            for i, j in T.Parallel(block_M, block_N):
                T.atomic_add(B[bx * block_M + i, by * block_N + j], A_shared[i, j])

    return atomic_add


@pytest.mark.parametrize("K, dtype", [(2, "float32"), (4, "float32"), (3, "bfloat16")])
def test_atomic_add_sums_the_blocks_into_the_initial_value(K, dtype):
    M, N = 64, 96
    art = tilelang_tt.compile(atomic_add_program(K, M, N, 32, 32, dtype))
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float32
    rng = np.random.default_rng(K)
    a = rng.standard_normal((K, M, N)).astype(np_dtype)
    b = rng.standard_normal((M, N)).astype(np_dtype)
    ref = b.astype(np.float32)
    for k in range(K):  # block order: each contribution rounded to B's dtype, as an atomic is
        ref = (ref + a[k].astype(np.float32)).astype(np_dtype).astype(np.float32)
    art(a, b)
    # bf16: every partial sum is rounded (the engine's rounding, not numpy's), so allow a few
    # ulps of the partial sums (|partial| < 8: ulp 1/32)
    rtol, atol = (2e-2, 0.1) if dtype == "bfloat16" else (1e-5, 1e-5)
    np.testing.assert_allclose(b.astype(np.float32), ref, rtol=rtol, atol=atol)
    # the blocks of one B tile (bz) run on one core: B is read and written once per tile
    assert art.plan["grid"] == [2, 3, 1]


def test_atomic_max_min_with_memory_order():
    """The split index first (blockIdx.x): the grouping follows the indices' use, not their
    position; 66 groups on 64 cores."""
    K, M, N = 3, 32 * 11, 32 * 6

    @T.prim_func
    def k(A: T.Tensor((K, M, N), "float32"), C: T.Tensor((M, N), "float32"),
          D: T.Tensor((M, N), "float32")):
        with T.Kernel(K, M // 32, N // 32) as (bz, bx, by):
            A_shared = T.alloc_shared((32, 32), "float32")
            T.copy(A[bz, bx * 32, by * 32], A_shared)
            T.atomic_max(C[bx * 32, by * 32], A_shared, memory_order="relaxed")
            for i, j in T.Parallel(32, 32):
                T.atomic_min(D[bx * 32 + i, by * 32 + j], A_shared[i, j], memory_order="release")

    art = tilelang_tt.compile(k)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((K, M, N)).astype(np.float32)
    c, d = np.zeros((M, N), np.float32), np.full((M, N), np.inf, np.float32)
    art(a, c, d)
    np.testing.assert_array_equal(c, np.maximum(0, a.max(0)))
    np.testing.assert_array_equal(d, a.min(0))
    assert art.plan["grid"] == [1, 11, 6]


@pytest.mark.parametrize("kernel", ["matmul", "matmul_elementwise"])
def test_splitk_gemm(kernel):
    M, N, K = 64, 96, 256
    rng = np.random.default_rng(7)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = rng.standard_normal((M, N)).astype(np.float32)
    ref = c + a.astype(np.float32) @ b.astype(np.float32)
    getattr(gemm_splitk, kernel)(a, b, c, 32, 32, 32, 4)
    np.testing.assert_allclose(c, ref, rtol=1e-2, atol=1e-2 * np.abs(ref).max())


def test_disjoint_targets_keep_the_grid():
    """Every block updates its own tile: no block is serialised, each tile is one RMW."""
    M, N = 64, 128

    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(N // 32, M // 32) as (bx, by):
            for i, j in T.Parallel(32, 32):
                T.atomic_add(B[by * 32 + i, bx * 32 + j], A[by * 32 + i, bx * 32 + j] * 2.0)

    art = tilelang_tt.compile(k)
    assert art.plan["grid"] == [4, 2, 1]
    rng = np.random.default_rng(9)
    a, b = (rng.standard_normal((M, N)).astype(np.float32) for _ in range(2))
    ref = b + 2 * a
    art(a, b)
    np.testing.assert_allclose(b, ref, rtol=1e-6, atol=1e-6)


def test_data_dependent_target_is_refused():
    """A histogram: which blocks collide depends on the data."""

    @T.prim_func
    def hist(Idx: T.Tensor((64, 64), "int32"), V: T.Tensor((64, 64), "float32"),
             H: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, 2) as (bx, by):
            for i, j in T.Parallel(32, 32):
                T.atomic_add(H[Idx[bx * 32 + i, by * 32 + j], j], V[bx * 32 + i, by * 32 + j])

    with pytest.raises(TTUnsupportedError) as e:
        tilelang_tt.compile(hist)
    msg = str(e.value)
    assert "T.atomic_add(H[...])" in msg and "reads tensor data" in msg and f"{HERE}:" in msg


def test_previous_value_is_refused():
    with pytest.raises(TTUnsupportedError, match=r"return_prev=True"):
        @T.prim_func
        def k(A: T.Tensor((32, 32), "float32"), B: T.Tensor((32, 32), "float32")):
            with T.Kernel(1) as bx:
                for i, j in T.Parallel(32, 32):
                    T.atomic_add(B[i, j], A[i, j], return_prev=True)


def test_overlapping_targets_the_grid_still_separates_are_rejected():
    """``B[bz % 2]``: the target uses bz, so the blocks stay parallel, and V0 finds that bz and
    bz + 2 update the same tile."""

    @T.prim_func
    def k(A: T.Tensor((4, 32, 32), "float32"), B: T.Tensor((64, 32), "float32")):
        with T.Kernel(1, 1, 4) as (bx, by, bz):
            A_shared = T.alloc_shared((32, 32), "float32")
            T.copy(A[bz, 0, 0], A_shared)
            T.atomic_add(B[bz % 2 * 32, 0], A_shared)

    with pytest.raises(TTCompileError, match="blocks race on tensor B") as e:
        tilelang_tt.compile(k)
    assert f"{HERE}:" in str(e.value) and "T.atomic_add(B[bz % 2 * 32, 0], A_shared)" in str(e.value)


def test_atomic_in_a_loop_and_a_scalar_onto_a_region():
    """TileLang's TMA atomic program (``use_tma`` is a CUDA data path, ignored): a loop that
    repeats the update; and ``T.atomic_add(A[region], 1.0)``."""

    @T.prim_func
    def repeat(out: T.Tensor((64, 64), "float32")):
        with T.Kernel(1):
            out_shared = T.alloc_shared((64, 64), "float32")
            T.fill(out_shared, 1)
            for _ in range(5):
                T.atomic_add(out, out_shared, use_tma=True)

    @T.prim_func
    def plus_one(A: T.Tensor((64, 96), "float32")):
        with T.Kernel(2, 3) as (bx, by):
            T.atomic_add(A[bx * 32 : (bx + 1) * 32, by * 32 : (by + 1) * 32], 1.0)

    out = np.random.default_rng(11).standard_normal((64, 64)).astype(np.float32)
    ref = out + 5
    tilelang_tt.compile(repeat)(out)
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)
    a = np.arange(64 * 96, dtype=np.float32).reshape(64, 96) / 7
    ref = a + 1
    tilelang_tt.compile(plus_one)(a)
    np.testing.assert_allclose(a, ref, rtol=1e-6, atol=1e-6)


def test_memory_orders_tilelang_rejects_are_value_errors():
    with pytest.raises(ValueError, match="atomic_load does not support memory_order=.release.: "
                       "expected one of relaxed, consume, acquire, seq_cst"):
        @T.prim_func
        def k(A: T.Tensor((32, 32), "float32"), B: T.Tensor((32, 32), "float32")):
            with T.Kernel(1):
                for i, j in T.Parallel(32, 32):
                    B[i, j] = T.atomic_load(A[i, j], memory_order="release")


def test_bounds_guard_that_always_holds_and_one_that_does_not():
    """TileLang's atomic_different_memory_orders program: ``if idx_i < M and idx_j < N`` holds
    for every block and iteration, so it is dropped; ``if j < 16`` is a real branch: refused."""
    M, N, block_M, block_N = 64, 64, 32, 32

    def program(guarded_half):
        @T.prim_func
        def k(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"),
              C: T.Tensor((M, N), "float32"), D: T.Tensor((M, N), "float32")):
            with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), threads=32) as (bx, by):
                for i, j in T.Parallel(block_M, block_N):
                    idx_i = bx * block_M + i
                    idx_j = by * block_N + j
                    if idx_i < M and idx_j < N - guarded_half * 16:
                        val = A[idx_i, idx_j]
                        T.atomic_add(B[idx_i, idx_j], val, memory_order="release")
                        T.atomic_max(C[idx_i, idx_j], val, memory_order="relaxed")
                        T.atomic_min(D[idx_i, idx_j], val, memory_order="relaxed")

        return k

    art = tilelang_tt.compile(program(0))
    a = np.random.default_rng(13).standard_normal((M, N)).astype(np.float32)
    b, c = np.zeros((M, N), np.float32), np.zeros((M, N), np.float32)
    d = np.full((M, N), np.inf, np.float32)
    art(a, b, c, d)
    np.testing.assert_array_equal(b, a)
    np.testing.assert_array_equal(c, np.maximum(0, a))
    np.testing.assert_array_equal(d, a)
    with pytest.raises(TTUnsupportedError, match="T.atomic_add: inside a branch"):
        tilelang_tt.compile(program(1))
