"""Loop bounds built from T.max / T.min of values that are negative for some blocks (a sliding
window's first block: T.max(0, bx - 1)) run from the clamped bound: device kernels compute in
uint32_t, and TIR's int32 min / max compare as signed."""

import numpy as np

import tilelang_tt as tilelang
import tilelang_tt.language as T


@tilelang.jit(out_idx=[1])
def window_sum(M=128, N=64, block=32, window=2):
    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(M, block), threads=128) as bx:
            acc = T.alloc_fragment((block, N), T.float32)
            a_s = T.alloc_shared((block, N), T.float32)
            T.clear(acc)
            start = T.max(0, bx - window + 1)
            for k in T.Pipelined(start, bx + 1, num_stages=2):
                T.copy(A[k * block, 0], a_s)
                for i, j in T.Parallel(block, N):
                    acc[i, j] += a_s[i, j]
            T.copy(acc, B[bx * block, 0])

    return main


def test_window_start_clamped_at_zero():
    a = np.random.default_rng(0).standard_normal((128, 64)).astype(np.float32)
    b = window_sum()(a)
    blocks = a.reshape(4, 32, 64)
    ref = np.concatenate([blocks[max(0, i - 1): i + 1].sum(axis=0) for i in range(4)])
    np.testing.assert_allclose(b, ref, rtol=1e-6, atol=1e-6)
