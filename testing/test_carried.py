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


# (M, N, BLOCK_N): one and several column blocks, more row blocks (66) than cores (64)
SOFTMAX = [(64, 64, 64), (96, 256, 64), (2112, 64, 32)]


@pytest.mark.parametrize("shape", SOFTMAX, ids=lambda s: "x".join(map(str, s)))
def test_online_softmax(shape):
    M, N, bn = shape
    art = tilelang_tt.compile(osm.softmax_kernel(M, N, BLOCK_N=bn), out_idx=-1)
    x = (np.random.default_rng(1).standard_normal((M, N)) * 2).astype(ml_dtypes.bfloat16)
    _allclose(art(x), osm.reference(x))
    for name in ("reader.cpp", "compute.cpp", "writer.cpp"):
        assert_balanced(art.sources[name], name)


# (M, N, blk_m, blk_k)
RMS = [(32, 128, 32, 32), (64, 512, 32, 128), (96, 192, 32, 64)]


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
