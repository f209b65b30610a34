"""Constructs from TileLang's regression tests for user-reported issues
(``testing/python/issue`` of TileLang 0.1.14) that compile here as there: a reduction straight
off a ``T.gemm`` accumulator (#1719), a block buffer allocated and never used, an eager kernel
with no inputs returning torch tensors (#1846), TileLang's ``T.gemm`` argument checks (#3010,
#3035) and ``T.round`` modes (#2635), and the refusals that name what has no Tensix meaning
(vector lanes, #2554); a serial reduction loop inside ``T.Parallel`` (#2393) runs as a tile
reduction."""

import numpy as np
import pytest

import tilelang_tt as tilelang
import tilelang_tt.language as T
from helpers import BF16
from tilelang_tt import TTCompileError, TTUnsupportedError


def gemm_then_reduce(M, N, K, reduce, dtype=T.bfloat16, accum_dtype=T.float32):
    """Q @ K^T into an accumulator, reduced along its rows with no elementwise op between
    (TileLang issue #1719's `T.gemm(...); T.reduce_max(acc_s, m_i)`)."""

    @T.prim_func
    def main(Q: T.Tensor((M, K), dtype), Kt: T.Tensor((N, K), dtype),
             O: T.Tensor((M,), accum_dtype)):
        with T.Kernel(1, threads=128):
            Q_shared = T.alloc_shared((M, K), dtype)
            K_shared = T.alloc_shared((N, K), dtype)
            acc_s = T.alloc_fragment((M, N), accum_dtype)
            m_i = T.alloc_fragment((M,), accum_dtype)
            T.copy(Q, Q_shared)
            T.copy(Kt, K_shared)
            T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, clear_accum=True)
            if reduce == "max":
                T.reduce_max(acc_s, m_i, dim=1)
            else:
                T.reduce_sum(acc_s, m_i, dim=1)
            T.copy(m_i, O)

    return main


@pytest.mark.parametrize("reduce", ["max", "sum"])
def test_reduce_of_gemm_accumulator_runs(reduce):
    M, N, K = 64, 64, 64
    kernel = tilelang.compile(gemm_then_reduce(M, N, K, reduce), out_idx=[2])
    rng = np.random.default_rng(0)
    q = rng.standard_normal((M, K)).astype(BF16)
    k = rng.standard_normal((N, K)).astype(BF16)
    s = q.astype(np.float32) @ k.astype(np.float32).T
    ref = s.max(axis=1) if reduce == "max" else s.sum(axis=1)
    out = kernel(q, k)
    # the reduction reads the packed fp32 accumulator through the unpacker (docs/MOCK.md
    # "Numerics": fp32 to SrcA keeps BF16's 8 significant bits without fp32 DST)
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-2 * np.abs(ref).max())


@pytest.mark.parametrize("copy_first", [False, True])
def test_gemm_accumulator_read_by_reduction_expression_and_copy_is_packed_once(copy_first):
    """Softmax numerators straight off the scores accumulator (no mask in between), and the
    scores copied out (before or after): one pack of the accumulator serves the readers."""
    M = N = K = 64

    @T.prim_func
    def main(Q: T.Tensor((M, K), T.bfloat16), Kt: T.Tensor((N, K), T.bfloat16),
             P: T.Tensor((M, N), T.float32), S: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=128):
            Q_shared = T.alloc_shared((M, K), T.bfloat16)
            K_shared = T.alloc_shared((N, K), T.bfloat16)
            acc_s = T.alloc_fragment((M, N), T.float32)
            m_i = T.alloc_fragment((M,), T.float32)
            p = T.alloc_fragment((M, N), T.float32)
            T.copy(Q, Q_shared)
            T.copy(Kt, K_shared)
            T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, clear_accum=True)
            if copy_first:
                T.copy(acc_s, S)
            T.reduce_max(acc_s, m_i, dim=1)
            for i, j in T.Parallel(M, N):
                p[i, j] = T.exp(acc_s[i, j] - m_i[i])
            T.copy(p, P)
            if not copy_first:
                T.copy(acc_s, S)

    kernel = tilelang.compile(main, out_idx=[2, 3])
    rng = np.random.default_rng(7)
    q = (rng.standard_normal((M, K)) * 0.3).astype(BF16)
    k = (rng.standard_normal((N, K)) * 0.3).astype(BF16)
    scores = q.astype(np.float32) @ k.astype(np.float32).T
    p, s = kernel(q, k)
    # bf16 operands: the GEMM accumulates in a 16-bit DST, and the pack is read by the
    # reduction, so every reader sees it through the unpacker as BF16 (docs/MOCK.md
    # "Numerics")
    np.testing.assert_allclose(s, scores, rtol=0, atol=1e-2 * np.abs(scores).max())
    np.testing.assert_allclose(p, np.exp(scores - scores.max(axis=1, keepdims=True)),
                               rtol=0, atol=2e-2)


def test_unused_block_buffer_is_dropped():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float32), B: T.Tensor((64, 64), T.float32)):
        with T.Kernel(2, threads=128) as bx:
            A_shared = T.alloc_shared((32, 64), T.float32)
            unused = T.alloc_fragment((32, 64), T.float32)  # noqa: F841 - never used
            T.copy(A[bx * 32, 0], A_shared)
            T.copy(A_shared, B[bx * 32, 0])

    kernel = tilelang.compile(main, out_idx=[1])
    assert [cb["name"] for cb in kernel.plan["circular_buffers"]] == ["A_shared"]
    a = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    np.testing.assert_array_equal(kernel(a), a)


def test_eager_kernel_without_inputs_returns_torch():
    torch = pytest.importorskip("torch")

    @tilelang.jit
    def fill_scalar(fill, M):
        X = T.empty((M, M), dtype="float32")
        with T.Kernel(1, threads=M):
            for i, j in T.Parallel(M, M):
                X[i, j] = fill
        return X

    out = fill_scalar(fill=1.5, M=32)
    assert isinstance(out, torch.Tensor)
    torch.testing.assert_close(out, torch.full((32, 32), 1.5))


def gemm_with(M=64, N=64, K=64, k_pack=1):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.bfloat16), B: T.Tensor((K, N), T.bfloat16),
             C: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=128):
            A_shared = T.alloc_shared((M, K), T.bfloat16)
            B_shared = T.alloc_shared((K, N), T.bfloat16)
            C_local = T.alloc_fragment((M, N), T.float32)
            T.copy(A, A_shared)
            T.copy(B, B_shared)
            T.gemm(A_shared, B_shared, C_local, clear_accum=True, k_pack=k_pack)
            T.copy(C_local, C)

    return main


@pytest.mark.parametrize("k_pack", [0, 3, True, 2.0, "2", None])
def test_gemm_k_pack_checked_as_tilelang_does(k_pack):
    with pytest.raises(ValueError, match=r"T\.gemm k_pack must be an int equal to 1 or 2, got "
                       + repr(k_pack).replace(".", r"\.")):
        gemm_with(k_pack=k_pack)


def test_gemm_k_pack_2_runs():
    kernel = tilelang.compile(gemm_with(k_pack=2), out_idx=[2])
    rng = np.random.default_rng(2)
    a = rng.standard_normal((64, 64)).astype(BF16)
    b = rng.standard_normal((64, 64)).astype(BF16)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(kernel(a, b), ref, rtol=1e-2, atol=1e-2 * np.abs(ref).max())


@pytest.mark.parametrize("which", ["M", "N", "K"])
def test_gemm_symbolic_block_dimension_refused(which):
    dims = {"M": 64, "N": 64, "K": 64}
    dims[which] = T.dynamic(which)
    with pytest.raises(ValueError, match=f"T.gemm requires static tile dimensions, but {which} "
                       "is symbolic") as info:
        gemm_with(**dims)
    assert isinstance(info.value, TTCompileError)
    assert "test_tilelang_issues.py" in str(info.value)  # the kernel line


def rounding(mode):
    @T.prim_func
    def main(A: T.Tensor((32, 32), T.bfloat16), B: T.Tensor((32, 32), T.bfloat16)):
        with T.Kernel(1, threads=128):
            for i, j in T.Parallel(32, 32):
                B[i, j] = T.round(A[i, j], mode)

    return main


def test_round_modes_as_tilelang_names_them():
    with pytest.raises(TTUnsupportedError, match="ties-away-from-zero.*no Tensix lowering"):
        rounding("ties-away-from-zero")
    with pytest.raises(ValueError, match="Unsupported T.round rounding_mode 'up'"):
        rounding("up")
    kernel = tilelang.compile(rounding("ties-to-even"))  # the vector engine's round_tile
    a = (np.arange(32 * 32, dtype=np.float32).reshape(32, 32) / 4 - 128).astype(BF16)
    b = np.zeros((32, 32), BF16)
    kernel(a, b)
    np.testing.assert_array_equal(b.astype(np.float32), np.round(a.astype(np.float32)))


def test_vector_lanes_refused_at_their_line():
    with pytest.raises(TTUnsupportedError, match=r"T\.Ramp: vector \(multi-lane\).*T\.Parallel"):
        @T.prim_func
        def main(A: T.Tensor((1024,), T.float32), B: T.Tensor((4, 4), T.float32)):
            with T.Kernel(1, threads=1):
                for t in T.serial(4):
                    B[t, T.Ramp(0, 1, 4)] = A[T.Ramp(t - 2, 1, 4)]


def serial_folds(M, N, dtype=T.float32):
    """Row sums of squares and row maxima written as serial loops inside T.Parallel (TileLang
    issue #2393's idiom, here on an ordinary fragment)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), S: T.Tensor((M,), T.float32),
             X: T.Tensor((M,), T.float32)):
        with T.Kernel(1, threads=128):
            A_local = T.alloc_fragment((M, N), dtype)
            s = T.alloc_fragment((M,), T.float32)
            m = T.alloc_fragment((M,), T.float32)
            T.copy(A, A_local)
            T.fill(s, 0.0)
            T.fill(m, -T.infinity(T.float32))
            for i in T.Parallel(M):
                for j in T.serial(N):
                    s[i] += A_local[i, j] * A_local[i, j]
            for i in T.Parallel(M):
                for j in T.serial(N):
                    m[i] = T.max(m[i], A_local[i, j])
            T.copy(s, S)
            T.copy(m, X)

    return main


def test_serial_fold_inside_parallel_runs_as_a_reduction():
    kernel = tilelang.compile(serial_folds(64, 96), out_idx=[1, 2])
    a = np.random.default_rng(3).standard_normal((64, 96)).astype(np.float32)
    s, x = kernel(a)
    ref_s, ref_x = (a * a).sum(axis=1), a.max(axis=1)
    np.testing.assert_allclose(s, ref_s, rtol=0, atol=1e-2 * np.abs(ref_s).max())
    np.testing.assert_allclose(x, ref_x, rtol=0, atol=1e-2 * np.abs(ref_x).max())


def test_serial_fold_with_bindings_over_a_tensor_runs():
    @T.prim_func
    def main(A: T.Tensor((128, 64), T.float32), S: T.Tensor((128,), T.float32)):
        with T.Kernel(4, threads=128) as by:
            s = T.alloc_fragment((32,), T.float32)
            T.fill(s, 0.0)
            for i in T.Parallel(32):
                row = by * 32 + i
                for j in T.serial(64):
                    v = A[row, j]
                    s[i] += T.exp(v) * 0.5
            for i in T.Parallel(32):
                S[by * 32 + i] = s[i]

    kernel = tilelang.compile(main, out_idx=[1])
    a = np.random.default_rng(6).standard_normal((128, 64)).astype(np.float32)
    ref = (np.exp(a) * 0.5).sum(axis=1)
    np.testing.assert_allclose(kernel(a), ref, rtol=0, atol=1e-2 * np.abs(ref).max())


def test_serial_fold_of_gemm_accumulator_runs():
    """TileLang issue #2393's kernel: TileLang refuses the fold of an MMA-layout fragment;
    Tensix reduces the packed accumulator as any block."""
    M, N, KD = 64, 64, 64

    @tilelang.jit
    def k(Q: T.Tensor((M, KD), T.bfloat16), Kk: T.Tensor((N, KD), T.bfloat16)):
        out = T.empty((M,), T.float32)
        with T.Kernel(1, threads=128):
            Qs = T.alloc_shared((M, KD), T.bfloat16)
            Ks = T.alloc_shared((N, KD), T.bfloat16)
            acc = T.alloc_fragment((M, N), T.float32)
            s = T.alloc_fragment((M,), T.float32)
            T.copy(Q, Qs)
            T.copy(Kk, Ks)
            T.clear(acc)
            T.gemm(Qs, Ks, acc, transpose_B=True)
            T.fill(s, 0.0)
            for i in T.Parallel(M):
                for j in T.serial(N):
                    s[i] += acc[i, j]
            T.copy(s, out)
        return out

    rng = np.random.default_rng(4)
    q = rng.standard_normal((M, KD)).astype(BF16)
    kk = rng.standard_normal((N, KD)).astype(BF16)
    scores = q.astype(np.float32) @ kk.astype(np.float32).T
    # the reduction unpacks the fp32 scores to BF16 (truncated: relative error below 2^-7
    # each, docs/MOCK.md "Numerics"), so a row's error is bounded by its terms' magnitudes
    bound = 2.0 ** -7 * np.abs(scores).sum(axis=1)
    assert np.all(np.abs(k(q, kk) - scores.sum(axis=1)) <= bound)


def test_serial_fold_into_a_tensor_names_the_tile_reduction():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float32), S: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=128):
            A_local = T.alloc_fragment((64, 64), T.float32)
            T.copy(A, A_local)
            for i in T.Parallel(64):
                for j in T.serial(64):
                    a = A_local[i, j]
                    S[i] += a

    with pytest.raises(TTUnsupportedError, match=r"loop `for j in T\.serial\(64\)` that folds "
                       r"elements into S\[\.\.\.\].*T\.reduce_sum\(A_local, S, dim=1, "
                       r"clear=False\)") as info:
        tilelang.compile(main)
    assert "T.Buffer" not in str(info.value)  # no IR dump


def test_element_read_in_a_region_bound_names_its_line():
    num_tokens = T.symbolic("num_tokens")

    @T.prim_func
    def main(x: T.Tensor[(num_tokens,), T.float32]):
        with T.Kernel(num_tokens, threads=128):
            a, b = T.alloc_var(T.int32), T.alloc_var(T.int32)
            T.fill(x[a:b], 0)

    with pytest.raises(TTUnsupportedError, match=r"test_tilelang_issues\.py:\d+ "
                       r"`T\.fill\(x\[a:b\], 0\)`: element read of [ab]\[\.\.\.\]"):
        tilelang.lower(main)


@tilelang.jit
def tmp_var_kernel(N, block_N, dtype=T.float32):
    """TileLang issue #814: a binding read by two assignments, one of them overwriting the
    tensor it was read from."""

    @T.prim_func
    def kernel(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=128) as bx:
            for i in T.Parallel(block_N):
                idx = bx * block_N + i
                tmp = T.max(A[idx], 1)
                B[idx] = tmp / 2
                A[idx] = tmp * 2

    return kernel


def test_in_place_update_after_a_read_of_the_same_elements_runs():
    kernel = tmp_var_kernel(1024, 128)
    a = np.random.default_rng(5).standard_normal(1024).astype(np.float32)
    a_ref = a.copy()
    b = np.empty(1024, np.float32)
    kernel(a, b)
    np.testing.assert_array_equal(b, np.maximum(a_ref, 1) / 2)
    np.testing.assert_array_equal(a, np.maximum(a_ref, 1) * 2)


def test_overwrite_independent_of_the_read_still_refused():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float32), B: T.Tensor((64, 64), T.float32)):
        with T.Kernel(2, threads=128) as bx:
            for i, j in T.Parallel(32, 64):
                B[bx * 32 + i, j] = A[bx * 32 + i, j] * 2.0
                A[bx * 32 + i, j] = 1.0

    with pytest.raises(TTUnsupportedError, match="tensor A is read at .* and overwritten at "):
        tilelang.compile(main)
