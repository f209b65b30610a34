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
    exact = a.astype(np.float64) + b.astype(np.float64)
    ref = exact.astype(np.float32).astype(ml_dtypes.bfloat16)  # numpy: round to nearest even
    # the Tensix adds on its matrix engine and rounds ties away from zero (docs/MOCK.md):
    # every element within one bf16 ulp of the exact sum, a few percent one ulp from numpy's
    ulp = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(exact), 2.0 ** -126))) - 7)
    assert np.all(np.abs(c.astype(np.float64) - exact) <= ulp)
    differ = np.mean(c.astype(np.float32) != ref.astype(np.float32))
    print(f"add matches the exact sum within one bf16 ulp on {len(kernel.plan['cores'])} cores; "
          f"{differ:.1%} of elements are one ulp from numpy's round-to-nearest-even (Tensix rounding)")
