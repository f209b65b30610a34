"""TileLang's GEMM, compiled for Tenstorrent: only the import differs from the TileLang example.

    tilelang-tt compile examples/gemm.py:gemm -o out/gemm       # the generated project
    python examples/gemm.py                                     # run it on the emulator
"""

import ml_dtypes
import numpy as np

import tilelang_tt
import tilelang_tt.language as T

M, N, K = 512, 512, 256
block_M, block_N, block_K = 128, 128, 32
dtype, accum_dtype = "bfloat16", "float32"


@T.prim_func
def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), dtype)):
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), dtype)
        B_shared = T.alloc_shared((block_N, block_K), dtype)
        C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
        C_shared = T.alloc_shared((block_M, block_N), dtype)
        T.clear(C_local)
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
            T.copy(A[by * block_M, ko * block_K], A_shared)
            T.copy(B[bx * block_N, ko * block_K], B_shared)
            T.gemm(A_shared, B_shared, C_local, transpose_B=True)
        T.copy(C_local, C_shared)
        T.copy(C_shared, C[by * block_M, bx * block_N])


if __name__ == "__main__":
    kernel = tilelang_tt.compile(gemm, target="tenstorrent", out_idx=-1)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((N, K)).astype(ml_dtypes.bfloat16)
    c = kernel(a, b)
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=1e-2, atol=1e-2 * np.abs(ref).max())
    print("gemm matches numpy;", kernel.last_run_stats["total"]["tile_ops"])
