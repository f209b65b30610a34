"""Layer normalisation forward in TileLang's form (examples/norm/layernorm.py of TileLang): each
block normalises ``blk_m`` rows of ``X``, writes ``Y = (x - mean) * rstd * gamma + beta`` and
the per-row statistics ``Mean`` and ``Rstd`` to two 1-D float32 outputs.

The statistics are row reductions (``T.reduce_sum(..., dim=1)``): column vectors, one tile per
32 rows with the values in column 0.  A 1-D tensor is a row vector in DRAM, so the compiler
transposes each tile (``transpose_tile``) on the way out.  ``inv_D`` is a scalar binding of a
constant, folded into the expressions that use it.  ``blk_m = 32`` here; TileLang's
``blk_m = 1`` runs too, as blocks of 32 rows (examples/row_blocks.py).

    tilelang-tt run examples/layer_norm.py:layer_norm
    python examples/layer_norm.py
"""

import numpy as np

import tilelang_tt as tilelang
import tilelang_tt.language as T


@tilelang.jit(out_idx=[-3, -2, -1])
def layer_norm_fwd(N, D, eps=1e-5, blk_m=32, in_dtype=T.bfloat16, out_dtype=T.bfloat16):
    accum_dtype = T.float32

    @T.prim_func
    def main(X: T.Tensor((N, D), in_dtype), gamma: T.Tensor((D,), in_dtype),
             beta: T.Tensor((D,), in_dtype), Y: T.Tensor((N, D), out_dtype),
             Mean: T.Tensor((N,), accum_dtype), Rstd: T.Tensor((N,), accum_dtype)):
        with T.Kernel(T.ceildiv(N, blk_m), threads=128) as bx:
            x_s = T.alloc_shared((blk_m, D), in_dtype)
            g_s = T.alloc_shared((D,), in_dtype)
            b_s = T.alloc_shared((D,), in_dtype)
            x = T.alloc_fragment((blk_m, D), accum_dtype)
            x2 = T.alloc_fragment((blk_m, D), accum_dtype)
            s1 = T.alloc_fragment((blk_m,), accum_dtype)
            s2 = T.alloc_fragment((blk_m,), accum_dtype)
            mean = T.alloc_fragment((blk_m,), accum_dtype)
            rstd = T.alloc_fragment((blk_m,), accum_dtype)

            T.copy(X[bx * blk_m, 0], x_s)
            T.copy(gamma, g_s)
            T.copy(beta, b_s)
            for i, j in T.Parallel(blk_m, D):
                x[i, j] = T.Cast(accum_dtype, x_s[i, j])
                x2[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(x, s1, dim=1)
            T.reduce_sum(x2, s2, dim=1)

            inv_D = T.float32(1.0) / T.Cast(accum_dtype, D)
            for i in T.Parallel(blk_m):
                mean[i] = s1[i] * inv_D
                rstd[i] = T.rsqrt(s2[i] * inv_D - mean[i] * mean[i] + T.Cast(accum_dtype, eps))
                Mean[bx * blk_m + i] = mean[i]
                Rstd[bx * blk_m + i] = rstd[i]

            for i, j in T.Parallel(blk_m, D):
                y = (x[i, j] - mean[i]) * rstd[i]
                x_s[i, j] = T.Cast(out_dtype, y * T.Cast(accum_dtype, g_s[j])
                                   + T.Cast(accum_dtype, b_s[j]))
            T.copy(x_s, Y[bx * blk_m, 0])

    return main


def reference(x, gamma, beta, eps=1e-5):
    x = np.asarray(x).astype(np.float64)
    mean = x.mean(axis=-1)
    rstd = 1 / np.sqrt(x.var(axis=-1) + eps)
    y = (x - mean[:, None]) * rstd[:, None] * np.asarray(gamma, np.float64) \
        + np.asarray(beta, np.float64)
    return y, mean, rstd


N, D = 128, 512
layer_norm = layer_norm_fwd.get_tir(N, D)

if __name__ == "__main__":
    import ml_dtypes

    kernel = layer_norm_fwd(N, D)
    rng = np.random.default_rng(0)
    x, g, b = (rng.standard_normal(s).astype(ml_dtypes.bfloat16) for s in ((N, D), (D,), (D,)))
    y, mean, rstd = kernel(x, g, b)
    y_ref, mean_ref, rstd_ref = reference(x, g, b)
    # TileLang's tolerances (rtol = atol = 1e-2) for Y; the statistics are float32
    np.testing.assert_allclose(np.asarray(y, np.float32), y_ref, rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(mean, mean_ref, rtol=1e-2, atol=1e-3)
    np.testing.assert_allclose(rstd, rstd_ref, rtol=1e-2, atol=1e-3)
    print(f"layer_norm matches numpy (Y max abs error {np.abs(y - y_ref).max():.1e}, "
          f"Mean {np.abs(mean - mean_ref).max():.1e}, Rstd {np.abs(rstd - rstd_ref).max():.1e})")
