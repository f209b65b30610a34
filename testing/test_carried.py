"""Loop-carried state (issue 8 item 5): values carried across T.Pipelined / T.serial
iterations, in TileLang's own kernels, on the emulator against numpy."""

import ml_dtypes
import numpy as np
import pytest

pytest.importorskip("tilelang_tt.runtime.mockbuild", reason="emulator driver not installed")

import online_softmax as osm
import rms_norm as rms
import tilelang_tt
import tilelang_tt.language as T
from helpers import assert_balanced


def _allclose(actual, expected, rtol=1e-2, atol=1e-2):
    """TileLang's own check for these kernels (profiler.assert_allclose(rtol=0.01, atol=0.01))."""
    actual = np.asarray(actual).astype(np.float32)
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


# (M, N, BLOCK_N): one and several column blocks, more row blocks (66) than cores (64) (the
# example's own 128 x 256 in 64-wide blocks: test_examples.py)
SOFTMAX = [(64, 64, 64), (2112, 64, 32)]


@pytest.mark.parametrize("shape", SOFTMAX, ids=lambda s: "x".join(map(str, s)))
def test_online_softmax(shape):
    M, N, bn = shape
    art = tilelang_tt.compile(osm.softmax_kernel(M, N, BLOCK_N=bn), out_idx=-1)
    x = (np.random.default_rng(1).standard_normal((M, N)) * 2).astype(ml_dtypes.bfloat16)
    _allclose(art(x), osm.reference(x))
    for name in ("reader.cpp", "compute.cpp", "writer.cpp"):
        assert_balanced(art.sources[name], name)


# (M, N, blk_m, blk_k): one-tile and two-tile K blocks (the example's own 128 x 512 in 128-wide
# K blocks: test_examples.py)
RMS = [(32, 128, 32, 32), (96, 192, 32, 64)]


@pytest.mark.parametrize("shape", RMS, ids=lambda s: "x".join(map(str, s)))
def test_rms_norm_splitk(shape):
    M, N, bm, bk = shape
    art = tilelang_tt.compile(rms.rms_norm_splitk(M, N, bm, bk), out_idx=-1)
    a = np.random.default_rng(2).standard_normal((M, N)).astype(np.float32)
    _allclose(art(a), rms.reference(a))


def test_carried_value_unread_after_the_loop_is_freed():
    """A running maximum only the loop reads: the block of the last iteration is freed after
    the loop, so the next work unit on the core (130 blocks on 64 cores) starts afresh."""
    M, N = 130 * 32, 64

    @T.prim_func
    def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(M // 32) as bx:
            x = T.alloc_shared((32, 32), "float32")
            m = T.alloc_fragment((32,), "float32")
            y = T.alloc_shared((32, 32), "float32")
            T.fill(m, 0)
            for kk in T.serial(N // 32):
                T.copy(X[bx * 32, kk * 32], x)
                for i, j in T.Parallel(32, 32):
                    y[i, j] = x[i, j] + m[i]
                T.reduce_sum(x, m, dim=1)
                T.copy(y, Y[bx * 32, kk * 32])

    art = tilelang_tt.compile(k, out_idx=-1)
    # small integers: exact through the matrix engine's TF32 operands, so the check is exact
    x = np.random.default_rng(3).integers(-4, 5, (M, N)).astype(np.float32)
    ref = x.copy()
    ref[:, 32:] += x[:, :32].sum(axis=1, keepdims=True)
    np.testing.assert_array_equal(art(x), ref)


def test_shared_buffer_updated_in_place_across_iterations():
    """``X_s = X_s * 2`` in a loop: the loop carries the shared buffer (TileLang reads the
    value the previous iteration wrote)."""

    @T.prim_func
    def k(X: T.Tensor((64, 64), "float32"), Y: T.Tensor((64, 64), "float32")):
        with T.Kernel(1) as _bx:
            X_s = T.alloc_shared((64, 32), "float32")
            T.copy(X[0, 0], X_s)
            for ko in T.serial(3):
                for i, j in T.Parallel(64, 32):
                    X_s[i, j] = X_s[i, j] * 2.0
            T.copy(X_s, Y[0, 0])

    art = tilelang_tt.compile(k, out_idx=-1)
    x = np.random.default_rng(4).standard_normal((64, 64)).astype(np.float32)
    np.testing.assert_array_equal(art(x)[:, :32], x[:, :32] * 8)


def test_reduce_sum_clear_false_accumulates_across_iterations():
    """T.reduce_sum(..., clear=False): the running row sum of all column blocks."""
    M, N = 64, 96

    @T.prim_func
    def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, 32), "float32")):
        with T.Kernel(M // 32) as bx:
            x = T.alloc_shared((32, 32), "float32")
            r = T.alloc_fragment((32,), "float32")
            y = T.alloc_shared((32, 32), "float32")
            T.clear(r)
            for kk in T.Pipelined(N // 32, num_stages=2):
                T.copy(X[bx * 32, kk * 32], x)
                T.reduce_sum(x, r, dim=1, clear=False)
            T.copy(X[bx * 32, 0], x)
            for i, j in T.Parallel(32, 32):
                y[i, j] = x[i, j] + r[i]
            T.copy(y, Y[bx * 32, 0])

    art = tilelang_tt.compile(k, out_idx=-1)
    x = np.random.default_rng(5).integers(-4, 5, (M, N)).astype(np.float32)
    ref = x[:, :32] + x.sum(axis=1, keepdims=True)
    np.testing.assert_array_equal(art(x), ref)


def _gemm_inputs(M, N, K, seed):
    rng = np.random.default_rng(seed)
    # small integers: every product and sum is exact in bf16 operands and an fp32 accumulator
    a = rng.integers(-3, 4, (M, K)).astype(ml_dtypes.bfloat16)
    b = rng.integers(-3, 4, (K, N)).astype(ml_dtypes.bfloat16)
    return a, b


def test_accumulator_rescaled_before_each_gemm():
    """acc[i, j] *= s[i] before every T.gemm into acc (flash attention's acc_o update)."""
    M, N, K, bk = 64, 64, 96, 32

    @T.prim_func
    def k(A: T.Tensor((M, K), "bfloat16"), B: T.Tensor((K, N), "bfloat16"),
          S: T.Tensor((M, 32), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, M // 32) as (bx, by):
            A_s = T.alloc_shared((32, bk), "bfloat16")
            B_s = T.alloc_shared((bk, N), "bfloat16")
            S_s = T.alloc_shared((32, 32), "float32")
            s = T.alloc_fragment((32,), "float32")
            acc = T.alloc_fragment((32, N), "float32")
            T.copy(S[by * 32, 0], S_s)
            T.reduce_max(S_s, s, dim=1)
            T.fill(acc, 0)
            for ko in T.Pipelined(K // bk, num_stages=2):
                T.copy(A[by * 32, ko * bk], A_s)
                T.copy(B[ko * bk, 0], B_s)
                for i, j in T.Parallel(32, N):
                    acc[i, j] *= s[i]
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[by * 32, 0])

    art = tilelang_tt.compile(k, out_idx=-1)
    a, b = _gemm_inputs(M, N, K, 6)
    scale = np.random.default_rng(7).choice([0.5, 2.0, -1.0], (M, 1)).astype(np.float32)
    s_in = np.repeat(scale, 32, axis=1)
    ref = np.zeros((M, N), np.float32)
    af, bf = a.astype(np.float32), b.astype(np.float32)
    for ko in range(K // bk):
        ref = ref * scale + af[:, ko * bk:(ko + 1) * bk] @ bf[ko * bk:(ko + 1) * bk]
    np.testing.assert_array_equal(art(a, b, s_in), ref)


def test_accumulator_initialized_by_copy():
    """C_local = C_in, then a K loop of T.gemm into it: C = C_in + A @ B."""
    M, N, K = 64, 64, 64

    @T.prim_func
    def k(A: T.Tensor((M, K), "bfloat16"), B: T.Tensor((K, N), "bfloat16"),
          Cin: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, M // 32) as (bx, by):
            A_s = T.alloc_shared((32, 32), "bfloat16")
            B_s = T.alloc_shared((32, N), "bfloat16")
            acc = T.alloc_fragment((32, N), "float32")
            T.copy(Cin[by * 32, 0], acc)
            for ko in T.serial(K // 32):
                T.copy(A[by * 32, ko * 32], A_s)
                T.copy(B[ko * 32, 0], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[by * 32, 0])

    art = tilelang_tt.compile(k, out_idx=-1)
    a, b = _gemm_inputs(M, N, K, 8)
    c_in = np.random.default_rng(9).integers(-8, 9, (M, N)).astype(np.float32)
    np.testing.assert_array_equal(art(a, b, c_in), c_in + a.astype(np.float32) @ b.astype(np.float32))


# (batch, heads, seq_len, dim, block_M, block_N): one K/V block of 64-wide blocks over two
# batches, and several K/V blocks with 68 query blocks on 64 cores (one head: V0 cannot yet prove
# flattened (batch, head) offsets of more than 16 blocks disjoint) (a core runs two: its running
# values start afresh).  The example's 1 x 2 x 128 x 64 in 32 x 32 blocks runs in
# test_l1_alias.py and test_examples.py; several 64 x 64 K/V blocks in test_pad_shapes.py.
ATTENTION = [(2, 1, 64, 64, 64, 64), (1, 1, 2176, 32, 32, 64)]


@pytest.mark.parametrize("shape", ATTENTION, ids=lambda s: "x".join(map(str, s)))
def test_flash_attention(shape):
    import flash_attention as fa

    batch, heads, seq_len, dim, bm, bn = shape
    art = tilelang_tt.compile(fa.flashattn(batch, heads, seq_len, dim, False, bm, bn),
                              out_idx=-1)
    rng = np.random.default_rng(seq_len + dim)
    q, k, v = [rng.standard_normal((batch * heads * seq_len, dim)).astype(ml_dtypes.bfloat16)
               for _ in range(3)]
    _allclose(art(q, k, v), fa.reference(q, k, v, batch, heads, seq_len, dim, False))
    for name in ("reader.cpp", "compute.cpp", "writer.cpp"):
        assert_balanced(art.sources[name], name)


def test_carried_in_an_inner_loop():
    """A sum carried by an inner loop and restarted by each iteration of the outer one."""
    M, N = 64, 128

    @T.prim_func
    def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, 64), "float32")):
        with T.Kernel(M // 32) as bx:
            x = T.alloc_shared((32, 32), "float32")
            s = T.alloc_fragment((32, 32), "float32")
            for half in T.serial(2):
                T.clear(s)
                for kk in T.serial(2):
                    T.copy(X[bx * 32, half * 64 + kk * 32], x)
                    for i, j in T.Parallel(32, 32):
                        s[i, j] = s[i, j] + x[i, j]
                T.copy(s, Y[bx * 32, half * 32])

    art = tilelang_tt.compile(k, out_idx=-1)
    x = np.random.default_rng(10).integers(-4, 5, (M, N)).astype(np.float32)
    ref = np.concatenate([x[:, 0:32] + x[:, 32:64], x[:, 64:96] + x[:, 96:128]], axis=1)
    np.testing.assert_array_equal(art(x), ref)
