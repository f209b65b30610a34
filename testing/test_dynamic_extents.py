"""Loop extents that are not literals (TileLang issue 8's ``T.Parallel(span)``): a name bound
before the loop, a scalar parameter (specialised per value), ``T.min`` / ``T.max`` of them, or
block indices.  Iterations past the extent do nothing: the nest runs over a constant bound
(whole tiles) with its stores masked (A0.1.0.1 BoundLoopExtentsTT, docs/SUPPORT.md "Loop
extents that are not literals").  Each kernel runs on the emulator against numpy."""

import numpy as np
import pytest

import tilelang_tt
import tilelang_tt as tilelang
import tilelang_tt.language as T
from tilelang_tt import TTCompileError


@tilelang.jit(out_idx=[1])
def parallel_elementwise_dynamic(max_len=512, threads=256, dtype=T.float32):
    # TileLang 0.1.14's testing/python/language/test_tilelang_language_parallel.py
    @T.prim_func
    def main(
        A: T.Tensor((max_len,), dtype),
        B: T.Tensor((max_len,), dtype),
        valid_len: T.int32,
    ):
        with T.Kernel(1, threads=threads) as _:
            for i in T.Parallel(max_len):
                B[i] = 0.0
            span = T.min(valid_len, max_len)
            for i in T.Parallel(span):
                B[i] = A[i] - 1.0

    return main


# a prefix of one tile, and a value past max_len (T.min clamps it: the whole tensor); several
# tiles and zero rows in test_parallel_dynamic_extent_2d
@pytest.mark.parametrize("valid_len", [13, 600])
def test_parallel_dynamic_extent_1d(valid_len):
    kernel = parallel_elementwise_dynamic(max_len=512, threads=256)
    a = np.random.default_rng(valid_len).standard_normal(512).astype(np.float32)
    out = kernel(a, valid_len)
    ref = np.zeros_like(a)
    clip = min(valid_len, 512)
    ref[:clip] = a[:clip] - 1.0
    np.testing.assert_allclose(out, ref, atol=1e-5, rtol=1e-5)


@tilelang.jit(out_idx=[1])
def rows_then_prefix(M=128, N=64, dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), valid_rows: T.int32,
             valid_cols: T.int32):
        with T.Kernel(1, threads=128) as _:
            for i, j in T.Parallel(M, N):
                B[i, j] = -2.0
            rows = T.min(valid_rows, M)
            cols = T.max(T.min(valid_cols, N), 1)
            for i, j in T.Parallel(rows, cols):
                B[i, j] = A[i, j] * 2.0 + 1.0

    return main


# a prefix of both dims, every row and one column (T.max), no row at all; values past the
# bounds (clamped by T.min) in test_parallel_dynamic_extent_1d
@pytest.mark.parametrize("valid_rows, valid_cols", [(70, 40), (128, 1), (0, 64)])
def test_parallel_dynamic_extent_2d(valid_rows, valid_cols):
    kernel = rows_then_prefix()
    a = np.random.default_rng(1).standard_normal((128, 64)).astype(np.float32)
    out = kernel(a, valid_rows, valid_cols)
    ref = np.full_like(a, -2.0)
    r, c = min(valid_rows, 128), max(min(valid_cols, 64), 1)
    ref[:r, :c] = a[:r, :c] * 2.0 + 1.0
    np.testing.assert_allclose(out, ref, atol=1e-5, rtol=1e-5)


def tail_rows(M, N, limit, block_M=32, dtype=T.float32):
    # the extent depends on the block index: known only at run time, bounded by block_M
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as by:
            rows = T.min(block_M, limit - by * block_M)
            for i, j in T.Parallel(rows, N):
                B[by * block_M + i, j] = T.exp(A[by * block_M + i, j])

    return main


def test_parallel_extent_of_block_index_keeps_the_rest():
    # B is updated in place: the rows at or past `limit` keep what the caller passed
    kernel = tilelang.compile(tail_rows(128, 64, 70))
    rng = np.random.default_rng(2)
    a = rng.uniform(-1, 1, (128, 64)).astype(np.float32)
    b = rng.uniform(-1, 1, (128, 64)).astype(np.float32)
    ref = b.copy()
    ref[:70] = np.exp(a[:70])
    kernel(a, b)
    np.testing.assert_allclose(b, ref, rtol=1e-3, atol=1e-3)


def fragment_prefix(N=256, dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), n: T.int32):
        with T.Kernel(1, threads=128) as _:
            acc = T.alloc_fragment((N,), dtype)
            T.fill(acc, 3.0)
            span = T.min(n, N)
            for i in T.Parallel(span):
                acc[i] = A[i] * A[i]
            T.copy(acc, B)

    return main


# (the extent of 100, several tiles, lowered in test_let_bound_extent_is_constant_after_a0101)
@pytest.mark.parametrize("n", [5])
def test_parallel_dynamic_extent_into_fragment(n):
    kernel = tilelang.compile(fragment_prefix(), out_idx=[1])
    a = np.random.default_rng(3).uniform(-2, 2, 256).astype(np.float32)
    ref = np.full_like(a, 3.0)
    ref[:n] = a[:n] * a[:n]
    np.testing.assert_allclose(kernel(a, n), ref, rtol=1e-5, atol=1e-5)


def test_let_bound_extent_is_constant_after_a0101():
    # specialised: the extent is the constant 100; the nest runs over the whole fragment
    func = fragment_prefix()
    f = tilelang_tt.lower(func.specialize({func.params[2]: 100}), stop_after="A0.1.0.1")["main"]
    assert [int(lp.extent) for lp in _loops(f.body)] == [256]
    assert "if_then_else(i < 100, A[i] * A[i], acc[i])" in str(f).replace("T.", "")
    # the tensors alone: 13 rounded up to whole tiles, the old value taken from the zeros
    func = parallel_elementwise_dynamic.get_tir()
    f = tilelang_tt.lower(func.specialize({func.params[2]: 13}), stop_after="A0.1.0.1")["main"]
    assert [int(lp.extent) for lp in _loops(f.body)] == [512, 32]
    assert "if_then_else(i < 13, A[i] - float32(1.0), float32(0.0))" in str(f).replace("T.", "")


@tilelang.jit(out_idx=[1])
def serial_steps(N=64, dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((N, N), dtype), B: T.Tensor((N, N), dtype), steps: T.int32):
        with T.Kernel(1, threads=128) as _:
            acc = T.alloc_fragment((N, N), dtype)
            a_s = T.alloc_shared((N, N), dtype)
            T.copy(A, a_s)
            T.fill(acc, 0.0)
            n = T.min(steps, 4)
            for k in T.serial(n):
                for i, j in T.Parallel(N, N):
                    acc[i, j] = acc[i, j] + a_s[i, j]
            T.copy(acc, B)

    return main


def test_serial_let_bound_extent():
    kernel = serial_steps()
    a = np.random.default_rng(4).uniform(-1, 1, (64, 64)).astype(np.float32)
    for steps in (3, 0):  # (a value past the T.min bound: test_parallel_dynamic_extent_1d)
        np.testing.assert_allclose(kernel(a, steps), min(steps, 4) * a, rtol=1e-5, atol=1e-5)


def _loops(stmt):
    from tvm import tirx
    from tilelang_tt.passes.common import collect
    return collect(stmt, tirx.For)


def unbounded(dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((64,), dtype), B: T.Tensor((64,), dtype), n: T.int32):
        with T.Kernel(1, threads=128) as _:
            for i in T.Parallel(n):
                B[i] = A[i] + 1.0

    return main


def test_extent_without_upper_bound_is_refused():
    with pytest.raises(TTCompileError, match=r"T.Parallel\(n\).*no constant upper bound") as e:
        tilelang_tt.lower(unbounded(), stop_after="A0.1.0.1")
    assert "T.min(n, N)" in str(e.value)


def copied_then_prefix(dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((64,), dtype), B: T.Tensor((64,), dtype), n: T.int32):
        with T.Kernel(1, threads=128) as _:
            s = T.alloc_shared((64,), dtype)
            T.copy(A, s)
            for i in T.Parallel(64):
                s[i] = s[i] * 3.0
            T.copy(s, B)
            span = T.min(n, 64)
            for i in T.Parallel(span):
                B[i] = A[i] + 1.0

    return main


@pytest.mark.parametrize("n", [40])
def test_masked_store_after_a_tensor_copy_keeps_the_copied_block(n):
    # the elements past the extent keep what T.copy(s, B) stored: read from s, not from B
    kernel = tilelang.compile(copied_then_prefix(), out_idx=[1])
    a = np.random.default_rng(n).uniform(-1, 1, 64).astype(np.float32)
    ref = a * 3.0
    ref[:n] = a[:n] + 1.0
    np.testing.assert_allclose(kernel(a, n), ref, rtol=1e-6, atol=1e-6)


def twice_copied_then_prefix(dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((64,), dtype), B: T.Tensor((64,), dtype), n: T.int32):
        with T.Kernel(1, threads=128) as _:
            s = T.alloc_shared((64,), dtype)
            T.copy(A, s)
            T.copy(s, B)
            for i in T.Parallel(64):
                s[i] = s[i] * 3.0
            span = T.min(n, 64)
            for i in T.Parallel(span):
                B[i] = s[i] + 1.0

    return main


def test_masked_store_after_a_copy_of_a_changed_block_is_refused():
    # B's elements past the extent are s's old value, which the kernel no longer holds
    with pytest.raises(TTCompileError, match=r"stores to tensor B under a mask.*line \d+") as e:
        tilelang_tt.lower(twice_copied_then_prefix(), stop_after="A0.1.0.1")
    assert "write B once" in str(e.value)


def nested_loop_body(dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((64, 64), dtype), B: T.Tensor((64,), dtype), n: T.int32):
        with T.Kernel(1, threads=128) as _:
            span = T.min(n, 64)
            for i in T.Parallel(span):
                for j in T.serial(64):
                    B[i] = B[i] + A[i, j]

    return main


def test_masked_nest_with_a_loop_in_its_body_is_refused():
    with pytest.raises(TTCompileError, match=r"T.Parallel\(span\).*a loop `for j in"):
        tilelang_tt.lower(nested_loop_body(), stop_after="A0.1.0.1")


@tilelang.jit(out_idx=[1])
def prefix_of_parameter(N=256, dtype=T.float32):
    # the scalar parameter is the extent itself: specialised, a literal extent
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype), n: T.int32):
        with T.Kernel(1, threads=128) as _:
            for i in T.Parallel(N):
                B[i] = 7.0
            for i in T.Parallel(n):
                B[i] = T.abs(A[i])

    return main


# one element, and a tile and one more (the whole tensor is a plain nest)
@pytest.mark.parametrize("n", [1, 33])
def test_parallel_extent_is_the_scalar_parameter(n):
    a = np.random.default_rng(n).uniform(-2, 2, 256).astype(np.float32)
    ref = np.full_like(a, 7.0)
    ref[:n] = np.abs(a[:n])
    np.testing.assert_allclose(prefix_of_parameter()(a, n), ref, rtol=1e-6, atol=1e-6)


def literal_short(start, length):
    @T.prim_func
    def main(A: T.Tensor((length,), "float32"), B: T.Tensor((length,), "float32")):
        with T.Kernel(1, threads=128) as _:
            for i in T.Parallel(13):
                B[start + i] = A[start + i] + 1.0

    return main


def test_literal_short_nest_reaching_the_tensor_end_is_unchanged():
    # its padding lands past the tensor's end (cropped): no mask needed, A0.1.0.1 leaves it
    func = literal_short(0, 13)
    f = tilelang_tt.lower(func, stop_after="A0.1.0.1")["main"]
    assert [int(lp.extent) for lp in _loops(f.body)] == [13]
    assert "if_then_else" not in str(f)
    a = np.random.default_rng(9).uniform(-1, 1, 13).astype(np.float32)
    np.testing.assert_allclose(tilelang.compile(func, out_idx=[1])(a), a + 1.0, rtol=1e-6)


def test_literal_short_nest_off_a_tile_boundary_keeps_its_refusal():
    # 13 elements from element 5: whole tiles of the tensor would not start at 5
    with pytest.raises(TTCompileError, match=r"starting at `5` in its dim 0, which is not a "
                                             r"multiple of 32"):
        tilelang.compile(literal_short(5, 64), out_idx=[1])


def uninitialised_prefix(dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((64,), dtype), B: T.Tensor((64,), dtype), n: T.int32):
        with T.Kernel(1, threads=128) as _:
            acc = T.alloc_fragment((64,), dtype)
            span = T.min(n, 64)
            for i in T.Parallel(span):
                acc[i] = A[i] * 2.0
            T.copy(acc, B)

    return main


def test_prefix_of_a_fragment_never_written_before():
    # the elements past the extent are whatever the fragment held (TileLang: undefined); the
    # prefix is right
    kernel = tilelang.compile(uninitialised_prefix(), out_idx=[1])
    a = np.random.default_rng(11).uniform(-1, 1, 64).astype(np.float32)
    np.testing.assert_allclose(kernel(a, 20)[:20], a[:20] * 2.0, rtol=1e-6)


@tilelang.jit(out_idx=[2])
def gemm_first_k_blocks(M=64, N=64, K=128, block_M=32, block_N=32, block_K=32,
                        dtype=T.bfloat16, accum_dtype=T.float32):
    # a T.Pipelined K loop over the first `k_blocks` K blocks (a let-bound T.min of a scalar)
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             C: T.Tensor((M, N), accum_dtype), k_blocks: T.int32):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            steps = T.min(k_blocks, T.ceildiv(K, block_K))
            for k in T.Pipelined(steps, num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


# one step and three of four (a value past the T.min bound: test_parallel_dynamic_extent_1d)
@pytest.mark.parametrize("k_blocks", [1, 3])
def test_pipelined_let_bound_extent(k_blocks):
    import ml_dtypes

    rng = np.random.default_rng(k_blocks)
    a = rng.uniform(-1, 1, (64, 128)).astype(ml_dtypes.bfloat16)
    b = rng.uniform(-1, 1, (128, 64)).astype(ml_dtypes.bfloat16)
    kk = min(k_blocks, 4) * 32
    ref = a[:, :kk].astype(np.float64) @ b[:kk, :].astype(np.float64)
    np.testing.assert_allclose(gemm_first_k_blocks()(a, b, k_blocks), ref, rtol=1e-2, atol=1e-2)
