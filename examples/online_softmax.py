"""TileLang's online softmax (examples/online_softmax): a first pass over the row blocks
keeps a running log-sum-exp per row (``lse``, a 1-D fragment carried from one iteration to
the next), a second pass writes ``exp(x - lse)``.  On Tensix the running value lives in a
circular buffer that every iteration reads and refills.

The kernel is TileLang's, with bf16 for its fp16 and ``BLOCK_M = 32`` for its 1 (a Tensix
tile has 32 rows); TileLang's float16 with ``BLOCK_M = 1`` runs too, as blocks of 32 rows
(examples/row_blocks.py).

    tilelang-tt run examples/online_softmax.py:online_softmax
    python examples/online_softmax.py
"""

import ml_dtypes
import numpy as np

import tilelang_tt
import tilelang_tt.language as T


def softmax_kernel(M, N, BLOCK_M=32, BLOCK_N=64, dtype=T.bfloat16):
    accum_dtype = T.float32

    scale = 1.44269504  # log2(e)

    @T.prim_func
    def main(X: T.Tensor([M, N], dtype), Y: T.Tensor([M, N], dtype)):
        with T.Kernel(T.ceildiv(M, BLOCK_M), threads=128) as (i_m):
            x = T.alloc_fragment([BLOCK_M, BLOCK_N], dtype)
            y = T.alloc_fragment([BLOCK_M, BLOCK_N], dtype)
            lse = T.alloc_fragment([BLOCK_M], accum_dtype)
            max_x = T.alloc_fragment([BLOCK_M], dtype)
            exp_x = T.alloc_fragment([BLOCK_M, BLOCK_N], accum_dtype)
            sum_exp_x = T.alloc_fragment([BLOCK_M], accum_dtype)
            T.fill(lse, -T.infinity(accum_dtype))

            for i_n in T.Pipelined(T.ceildiv(N, BLOCK_N)):
                T.copy(X[i_m * BLOCK_M, i_n * BLOCK_N], x)
                T.reduce_max(x, max_x, dim=1, clear=True)

                for i, j in T.Parallel(BLOCK_M, BLOCK_N):
                    exp_x[i, j] = T.exp2(x[i, j] * scale - max_x[i] * scale)

                T.reduce_sum(exp_x, sum_exp_x, dim=1, clear=True)

                for i in T.Parallel(BLOCK_M):
                    lse[i] = max_x[i] * scale + T.log2(T.exp2(lse[i] - max_x[i] * scale) + sum_exp_x[i])

            for i_n in T.Pipelined(T.ceildiv(N, BLOCK_N)):
                T.copy(X[i_m * BLOCK_M, i_n * BLOCK_N], x)

                for i, j in T.Parallel(BLOCK_M, BLOCK_N):
                    y[i, j] = T.exp2(x[i, j] * scale - lse[i])

                T.copy(y, Y[i_m * BLOCK_M, i_n * BLOCK_N])

    return main


def reference(x):
    xf = np.asarray(x).astype(np.float32)
    e = np.exp(xf - xf.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


M, N = 128, 256
online_softmax = softmax_kernel(M, N)

if __name__ == "__main__":
    kernel = tilelang_tt.compile(online_softmax, out_idx=-1)
    x = (np.random.default_rng(0).standard_normal((M, N)) * 2).astype(ml_dtypes.bfloat16)
    y = kernel(x).astype(np.float32)
    err = np.abs(y - reference(x)).max()
    assert err < 1e-2, err
    print(f"online softmax matches numpy (max abs error {err:.1e})")
