"""Constant, tile-aligned regions of block buffers (A0.1.0.0 SplitBlockRegionsTT): each part
between the regions' bounds is a block buffer of its own; copies, fills, GEMMs and
T.Parallel nests over several parts are split per part."""

import warnings

import numpy as np
import pytest

import tilelang_tt as tilelang
import tilelang_tt.language as T
from helpers import as_f32, assert_matmul, rand
from tilelang_tt import TTCompileError


def gemm_with_stride(M, N, K, bM, bN, bK, dtype, accum="float32"):
    # TileLang's testing/python/kernel/test_tilelang_kernel_gemm_with_stride.py
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=128) as (bx, by):
            A_shared = T.alloc_shared((bM, bK * 2), dtype, scope="shared")
            B_shared = T.alloc_shared((bK, bN * 2), dtype, scope="shared")
            C_local = T.alloc_fragment((bM, bN), accum)
            T.clear(C_local)
            T.clear(B_shared)
            T.clear(A_shared)
            for ko in T.Pipelined(T.ceildiv(K, bK), num_stages=0):
                for i, k in T.Parallel(bM, bK):
                    A_shared[i, k + bK] = A[by * bM + i, ko * bK + k]
                for i, k in T.Parallel(bK, bN):
                    B_shared[i, k] = B[ko * bK + i, bx * bN + k]
                T.gemm(A_shared[:, bK:], B_shared[0:bK, 0:bN], C_local)
            T.copy(C_local, C[by * bM, bx * bN])
    return main


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_gemm_with_stride(dtype):
    a, b = rand((64, 96), dtype, 1), rand((96, 64), dtype, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel = tilelang.compile(gemm_with_stride(64, 64, 96, 32, 32, 32, dtype), out_idx=[2])
    # the halves nothing reads are only cleared: dead writes, named by their part
    dead = " ".join(str(w.message) for w in caught)
    assert "A_shared_c0_32" in dead and "B_shared_c32_64" in dead
    lowered = tilelang.lower(gemm_with_stride(64, 64, 96, 32, 32, 32, dtype),
                             stop_after="SplitBlockRegionsTT").script()
    assert "A_shared_c32_64[i, k] = A[" in lowered
    c = kernel(a, b)
    if dtype == "float32":
        np.testing.assert_allclose(as_f32(c), a @ b, rtol=2e-2, atol=5e-2)  # TF32 inputs
    else:
        assert_matmul(c, as_f32(a), as_f32(b), kernel)


def halves(M, D, bM=32, dtype="float32"):
    # DeepSeek MLA's epilogue: O_shared written whole, stored in two halves
    @T.prim_func
    def main(X: T.Tensor((M, D), dtype), Y: T.Tensor((M, 2 * D), dtype)):
        with T.Kernel(M // bM) as bx:
            O_local = T.alloc_fragment((bM, D), dtype)
            O_shared = T.alloc_shared((bM, D), dtype)
            T.copy(X[bx * bM, 0], O_local)
            for i, j in T.Parallel(bM, D):
                O_local[i, j] = O_local[i, j] * 2.0
            T.copy(O_local, O_shared)
            T.copy(O_shared[:, : D // 2], Y[bx * bM : bx * bM + bM, 0 : D // 2])
            T.copy(O_shared[:, D // 2 : D], Y[bx * bM : bx * bM + bM, D + D // 2 : 2 * D])
    return main


def split_k(M, N, D, bM=32, dtype="bfloat16"):
    # sparse MLA's Q_shared[:, :D] @ KV, Q_shared[:, D:] @ KV_tail into one accumulator
    @T.prim_func
    def main(Q: T.Tensor((M, 2 * D), dtype), K1: T.Tensor((N, D), dtype),
             K2: T.Tensor((N, D), dtype), S: T.Tensor((M, N), "float32")):
        with T.Kernel(M // bM) as bx:
            Q_shared = T.alloc_shared((bM, 2 * D), dtype)
            K1_shared = T.alloc_shared((N, D), dtype)
            K2_shared = T.alloc_shared((N, D), dtype)
            S_local = T.alloc_fragment((bM, N), "float32")
            T.copy(Q[bx * bM, 0], Q_shared)
            T.copy(K1, K1_shared)
            T.copy(K2, K2_shared)
            T.gemm(Q_shared[:, :D], K1_shared, S_local, transpose_B=True, clear_accum=True)
            T.gemm(Q_shared[:, D:], K2_shared, S_local, transpose_B=True)
            T.copy(S_local, S[bx * bM, 0])
    return main


def stripes(M, N, bM=32, bN=64, w=32, dtype="float32"):
    # the blockscaled GEMMs' epilogue: a fragment stored in column stripes by an unrolled loop
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(N // bN, M // bM) as (bx, by):
            C_local = T.alloc_fragment((bM, bN), dtype)
            C_shared = T.alloc_shared((bM, w), dtype)
            T.copy(X[by * bM, bx * bN], C_local)
            for i in T.unroll(bN // w):
                T.copy(C_local[:, i * w:(i + 1) * w], C_shared)
                T.copy(C_shared, Y[by * bM, bx * bN + i * w])
    return main


def split_gemm(D=64, N=64, bM=64, dtype="bfloat16", rows=False):
    # one T.gemm over whole buffers whose parts other ops make: Q_shared filled in two column
    # halves (K) -> two GEMMs into S_local; with `rows`, S_local stored in two row halves (M)
    # -> one GEMM per part of the result
    @T.prim_func
    def main(Q1: T.Tensor((bM, 2 * D if rows else D), dtype), Q2: T.Tensor((bM, D), dtype),
             K: T.Tensor((N, 2 * D), dtype), S: T.Tensor((2 * bM, N), "float32")):
        with T.Kernel(1) as bx:
            Q_shared = T.alloc_shared((bM, 2 * D), dtype)
            K_shared = T.alloc_shared((N, 2 * D), dtype)
            S_local = T.alloc_fragment((bM, N), "float32")
            if rows:
                T.copy(Q1, Q_shared)
            else:
                T.copy(Q1, Q_shared[:, :D])
                T.copy(Q2, Q_shared[:, D:])
            T.copy(K, K_shared)
            T.gemm(Q_shared, K_shared, S_local, transpose_B=True, clear_accum=True)
            if rows:
                T.copy(S_local[0:32, :], S[0:32, :])
                T.copy(S_local[32:64, :], S[96:128, :])
            else:
                T.copy(S_local, S[0:bM, :])
    return main


def test_halves_stripes_and_split_k():
    x = rand((64, 64), "float32", 3)
    y = np.zeros((64, 128), np.float32)
    out = halves(64, 64)
    kernel = tilelang.compile(out)
    kernel(x, y)
    np.testing.assert_array_equal(y[:, :32], 2 * x[:, :32])
    np.testing.assert_array_equal(y[:, 96:], 2 * x[:, 32:])
    # the whole-buffer copy and nest became one per part, down to the fragment
    lowered = tilelang.lower(out, stop_after="SplitBlockRegionsTT").script()
    assert "T.tile.copy(O_shared_c32_64[0:32, 0:32], O_local_c32_64[0:32, 0:32])" in lowered
    assert "T.tile.copy(O_local_c32_64[0:32, 0:32], X[bx * 32:bx * 32 + 32, 32:64])" in lowered
    assert "O_local_c32_64[i, j] = O_local_c32_64[i, j] * " in lowered

    kernel = tilelang.compile(stripes(64, 128), out_idx=[1])
    x = rand((64, 128), "float32", 7)
    np.testing.assert_array_equal(kernel(x), x)

    q = rand((64, 128), "bfloat16", 4)
    k1, k2 = rand((64, 64), "bfloat16", 5), rand((64, 64), "bfloat16", 6)
    s = np.zeros((64, 64), np.float32)
    kernel = tilelang.compile(split_k(64, 64, 64))
    kernel(q, k1, k2, s)
    # one GEMM of K = 128 over [Q1 | Q2] and [K1 | K2]
    assert_matmul(s, as_f32(q), np.concatenate([as_f32(k1), as_f32(k2)], axis=1).T, kernel)

    q1, q2, kk = rand((64, 64), "bfloat16", 8), rand((64, 64), "bfloat16", 9), \
        rand((64, 128), "bfloat16", 10)
    q = np.concatenate([as_f32(q1), as_f32(q2)], axis=1)
    for rows in (False, True):
        lowered = tilelang.lower(split_gemm(rows=rows), stop_after="SplitBlockRegionsTT")
        assert lowered.script().count("T.tile.gemm(") == 2
        s = np.zeros((128, 64), np.float32)
        kernel = tilelang.compile(split_gemm(rows=rows))
        kernel(q.astype(q1.dtype) if rows else q1, q2, kk, s)
        if rows:  # the two row halves of the result, stored apart
            assert_matmul(s[0:32], q[0:32], as_f32(kk).T, kernel)
            assert_matmul(s[96:128], q[32:64], as_f32(kk).T, kernel)
            np.testing.assert_array_equal(s[32:96], 0.0)
        else:  # two GEMMs along K into one accumulator
            assert_matmul(s[0:64], q, as_f32(kk).T, kernel)


def test_unaligned_region_refused():
    @T.prim_func
    def main(X: T.Tensor((32, 64), "float32"), Y: T.Tensor((32, 16), "float32")):
        with T.Kernel(1) as bx:
            X_shared = T.alloc_shared((32, 64), "float32")
            T.copy(X, X_shared)
            T.copy(X_shared[:, 8:24], Y)
    with pytest.raises(TTCompileError,
                       match=r"(?s)X_shared\[0:32, 8:24\] is neither.*multiples of 32"):
        tilelang.compile(main)
