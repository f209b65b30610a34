"""TileLang's elementwise-add example, compiled for Tenstorrent (only the import differs).

    tilelang-tt compile examples/elementwise_add.py:add -o out/add
    python examples/elementwise_add.py
"""

import ml_dtypes
import numpy as np

import tilelang_tt
import tilelang_tt.language as T

M, N = 1024, 1024
block_M, block_N = 64, 64
dtype = "bfloat16"


@T.prim_func
def add(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        start_x = bx * block_N
        start_y = by * block_M
        for local_y, local_x in T.Parallel(block_M, block_N):
            y = start_y + local_y
            x = start_x + local_x
            C[y, x] = A[y, x] + B[y, x]


if __name__ == "__main__":
    kernel = tilelang_tt.compile(add, target="tenstorrent", out_idx=-1)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, N)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((M, N)).astype(ml_dtypes.bfloat16)
    c = kernel(a, b)
    ref = (a.astype(np.float32) + b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    assert np.array_equal(c.astype(np.float32), ref.astype(np.float32))
    print(f"add matches numpy bit for bit on {len(kernel.plan['cores'])} cores")
