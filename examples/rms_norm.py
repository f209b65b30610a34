"""TileLang's split-K RMS norm (examples/norm/rms_norm.py): a first loop over column blocks
accumulates ``x * x`` into a fragment carried from one iteration to the next
(``A_local[i, j] += ...``), a row sum and ``rsqrt`` give the scale, a second loop writes
the scaled blocks.  ``blk_m = 32`` (a Tensix tile) here; TileLang's ``blk_m = 1`` runs too,
as blocks of 32 rows (examples/row_blocks.py).

    tilelang-tt run examples/rms_norm.py:rms_norm
    python examples/rms_norm.py
"""

import numpy as np

import tilelang_tt
import tilelang_tt.language as T


def rms_norm_splitk(M, N, blk_m, blk_k, dtype=T.float):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, blk_m), threads=128) as bx:
            A_shared = T.alloc_shared((blk_m, blk_k), dtype)
            A_local = T.alloc_fragment((blk_m, blk_k), dtype)
            A_powsum = T.alloc_fragment((blk_m,), dtype)

            num_k_step = T.ceildiv(N, blk_k)
            T.clear(A_local)
            for k in T.Serial(num_k_step):
                T.copy(A[bx * blk_m, k * blk_k], A_shared)
                for i, j in T.Parallel(blk_m, blk_k):
                    A_local[i, j] += A_shared[i, j] * A_shared[i, j]
            T.reduce_sum(A_local, A_powsum, dim=1)
            for i in T.Parallel(blk_m):
                A_powsum[i] = T.rsqrt(A_powsum[i] / N + 1e-12)

            for k in T.Serial(num_k_step):
                # reverse, better cache hit rate
                T.copy(A[bx * blk_m, (num_k_step - 1 - k) * blk_k], A_shared)
                for i, j in T.Parallel(blk_m, blk_k):
                    A_shared[i, j] *= A_powsum[i]
                T.copy(A_shared, B[bx * blk_m, (num_k_step - 1 - k) * blk_k])

    return main


def reference(x):
    x = np.asarray(x).astype(np.float32)
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-12)


M, N = 128, 512
rms_norm = rms_norm_splitk(M, N, 32, 128)

if __name__ == "__main__":
    kernel = tilelang_tt.compile(rms_norm, out_idx=-1)
    a = np.random.default_rng(0).standard_normal((M, N)).astype(np.float32)
    b = kernel(a)
    err = np.abs(b - reference(a)).max()
    assert err < 1e-2, err
    print(f"split-K rms_norm matches numpy (max abs error {err:.1e})")
