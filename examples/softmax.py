"""Row softmax in TileLang style, fused on Tenstorrent: a row max and a row sum
(``T.reduce_max`` / ``T.reduce_sum``), and the exponentials of the differences evaluated in
DST with a column broadcast.

    tilelang-tt compile examples/softmax.py:softmax -o out/softmax
    python examples/softmax.py
"""

import ml_dtypes
import numpy as np

import tilelang_tt
import tilelang_tt.language as T

M, N = 512, 256
block_M = 32
dtype = "bfloat16"


@T.prim_func
def softmax(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
    with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
        X_shared = T.alloc_shared((block_M, N), dtype)
        row_max = T.alloc_fragment((block_M,), dtype)
        exps = T.alloc_fragment((block_M, N), dtype)
        row_sum = T.alloc_fragment((block_M,), dtype)
        Y_shared = T.alloc_shared((block_M, N), dtype)
        T.copy(X[bx * block_M, 0], X_shared)
        T.reduce_max(X_shared, row_max, dim=1)
        for i, j in T.Parallel(block_M, N):
            exps[i, j] = T.exp(X_shared[i, j] - row_max[i])
        T.reduce_sum(exps, row_sum, dim=1)
        for i, j in T.Parallel(block_M, N):
            Y_shared[i, j] = exps[i, j] / row_sum[i]
        T.copy(Y_shared, Y[bx * block_M, 0])


if __name__ == "__main__":
    kernel = tilelang_tt.compile(softmax, target="tenstorrent", out_idx=-1)
    x = (np.random.default_rng(0).standard_normal((M, N)) * 2).astype(ml_dtypes.bfloat16)
    y = kernel(x).astype(np.float32)
    xf = x.astype(np.float32)
    e = np.exp(xf - xf.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    err = np.abs(y - ref).max()
    assert err < 5e-3, err  # the exponentials are kept in bf16, as the kernel declares
    print(f"softmax matches numpy (max abs error {err:.1e}) on {len(kernel.plan['cores'])} cores")
