"""TileLang's norm and online-softmax kernels with their one-row blocks (``blk_m = 1``,
``BLOCK_M = 1``), as TileLang's examples/norm/rms_norm.py, examples/norm/layernorm.py and
examples/online_softmax/online_softmax.py write them (eager ``@tilelang.jit`` with ``T.const``
sizes, or the factory form), at sizes an emulator runs in seconds.

A Tensix tile has 32 rows, so a block of one row is no block of tiles.  Each row of these
kernels is computed on its own, so the compiler runs 32 consecutive blocks as one block of 32
rows (A0.0 CoarsenRowBlocksTT, docs/SUPPORT.md "Blocks of fewer than 32 rows"): the grid
has ``M / 32`` blocks, every row computes what it computed before.  At TileLang's own width
(8192 columns) 32 rows exceed L1 and the columns are computed in chunks (A0.1.4
StreamWideRowsTT, docs/SUPPORT.md "Rows too wide for L1").

    python examples/row_blocks.py
    tilelang-tt run examples/row_blocks.py:layernorm_kernel
"""

import ml_dtypes
import numpy as np

import tilelang_tt as tilelang
import tilelang_tt.language as T


@tilelang.jit
def rms_norm_splitk(A, blk_m, blk_k):
    M, N = T.const("M, N")
    dtype = T.float

    A: T.Tensor((M, N), dtype)
    B = T.empty((M, N), dtype)

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

    return B


@tilelang.jit
def rms_norm(A, blk_m):
    M, N = T.const("M, N")
    dtype = T.float

    A: T.Tensor((M, N), dtype)
    B = T.empty((M, N), dtype)

    with T.Kernel(T.ceildiv(M, blk_m), threads=128) as bx:
        A_local = T.alloc_fragment((blk_m, N), dtype)
        A_pow_local = T.alloc_fragment((blk_m, N), dtype)
        A_powsum = T.alloc_fragment((blk_m,), dtype)

        T.copy(A[bx * blk_m : (bx + 1) * blk_m, :], A_local)
        for i, j in T.Parallel(blk_m, N):
            A_pow_local[i, j] = A_local[i, j] * A_local[i, j]
        T.reduce_sum(A_pow_local, A_powsum, dim=1)
        for i in T.Parallel(blk_m):
            A_powsum[i] = T.rsqrt(A_powsum[i] / N + 1e-12)
        for i, j in T.Parallel(blk_m, N):
            A_local[i, j] *= A_powsum[i]
        T.copy(A_local, B[bx * blk_m : (bx + 1) * blk_m, :])

    return B


@tilelang.jit(out_idx=[-3, -2, -1])
def layernorm_fwd(N, D, eps=1e-5, blk_m=1, threads=256, in_dtype="bfloat16", out_dtype="bfloat16"):
    accum_dtype = "float"

    @T.prim_func
    def main(
        X: T.Tensor((N, D), in_dtype),
        gamma: T.Tensor((D,), in_dtype),
        beta: T.Tensor((D,), in_dtype),
        Y: T.Tensor((N, D), out_dtype),
        Mean: T.Tensor((N,), accum_dtype),
        Rstd: T.Tensor((N,), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, blk_m), threads=threads) as bx:
            X_smem = T.alloc_shared((blk_m, D), in_dtype)
            G_smem = T.alloc_shared((D,), in_dtype)
            B_smem = T.alloc_shared((D,), in_dtype)
            X_local = T.alloc_fragment((blk_m, D), accum_dtype)
            X_sq_local = T.alloc_fragment((blk_m, D), accum_dtype)
            sum_row = T.alloc_fragment((blk_m,), accum_dtype)
            sumsq_row = T.alloc_fragment((blk_m,), accum_dtype)
            mean_row = T.alloc_fragment((blk_m,), accum_dtype)
            rstd_row = T.alloc_fragment((blk_m,), accum_dtype)

            T.copy(X[bx * blk_m, 0], X_smem)
            T.copy(gamma, G_smem)
            T.copy(beta, B_smem)

            for i, j in T.Parallel(blk_m, D):
                X_local[i, j] = T.Cast(accum_dtype, X_smem[i, j])
            for i, j in T.Parallel(blk_m, D):
                X_sq_local[i, j] = X_local[i, j] * X_local[i, j]

            T.reduce_sum(X_local, sum_row, dim=1)
            T.reduce_sum(X_sq_local, sumsq_row, dim=1)

            inv_D = T.float32(1.0) / T.Cast(accum_dtype, D)
            for i in T.Parallel(blk_m):
                mean_row[i] = sum_row[i] * inv_D
                rstd_row[i] = T.rsqrt(sumsq_row[i] * inv_D - mean_row[i] * mean_row[i] + T.Cast(accum_dtype, eps))
                Mean[bx * blk_m + i] = mean_row[i]
                Rstd[bx * blk_m + i] = rstd_row[i]

            for i, j in T.Parallel(blk_m, D):
                norm = (X_local[i, j] - mean_row[i]) * rstd_row[i]
                X_smem[i, j] = T.Cast(
                    out_dtype,
                    norm * T.Cast(accum_dtype, G_smem[j]) + T.Cast(accum_dtype, B_smem[j]),
                )

            T.copy(X_smem, Y[bx * blk_m, 0])

    return main


@tilelang.jit(out_idx=[-3])
def layernorm_bwd(N, D, blk_m=32, threads=256, in_dtype="bfloat16"):
    assert N % blk_m == 0, f"N={N} must be a multiple of blk_m={blk_m}"
    accum_dtype = "float"

    @T.prim_func
    def main(
        DY: T.Tensor((N, D), in_dtype),
        X: T.Tensor((N, D), in_dtype),
        gamma: T.Tensor((D,), in_dtype),
        Mean: T.Tensor((N,), accum_dtype),
        Rstd: T.Tensor((N,), accum_dtype),
        DX: T.Tensor((N, D), in_dtype),
        DGamma: T.Tensor((D,), accum_dtype),
        DBeta: T.Tensor((D,), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, blk_m), threads=threads) as bx:
            DY_smem = T.alloc_shared((1, D), in_dtype)
            X_smem = T.alloc_shared((1, D), in_dtype)
            G_smem = T.alloc_shared((D,), in_dtype)
            DX_smem = T.alloc_shared((1, D), in_dtype)

            x_hat = T.alloc_fragment((1, D), accum_dtype)
            dx_hat = T.alloc_fragment((1, D), accum_dtype)
            dx_hat_x_hat = T.alloc_fragment((1, D), accum_dtype)
            sum_dx_hat = T.alloc_fragment((1,), accum_dtype)
            sum_dx_hat_x_hat = T.alloc_fragment((1,), accum_dtype)
            dgamma_acc = T.alloc_fragment((D,), accum_dtype)
            dbeta_acc = T.alloc_fragment((D,), accum_dtype)

            T.copy(gamma, G_smem)
            T.clear(dgamma_acc)
            T.clear(dbeta_acc)

            inv_D = T.float32(1.0) / T.Cast(accum_dtype, D)

            for k in T.serial(blk_m):
                row = bx * blk_m + k
                T.copy(DY[row, 0], DY_smem)
                T.copy(X[row, 0], X_smem)
                m_v = Mean[row]
                r_v = Rstd[row]

                for i, j in T.Parallel(1, D):
                    xv = T.Cast(accum_dtype, X_smem[i, j])
                    dy_v = T.Cast(accum_dtype, DY_smem[i, j])
                    g_v = T.Cast(accum_dtype, G_smem[j])
                    x_hat[i, j] = (xv - m_v) * r_v
                    dx_hat[i, j] = dy_v * g_v
                    dx_hat_x_hat[i, j] = dx_hat[i, j] * x_hat[i, j]

                T.reduce_sum(dx_hat, sum_dx_hat, dim=1)
                T.reduce_sum(dx_hat_x_hat, sum_dx_hat_x_hat, dim=1)

                for i, j in T.Parallel(1, D):
                    c1 = sum_dx_hat_x_hat[0] * inv_D
                    c2 = sum_dx_hat[0] * inv_D
                    dx_v = r_v * (dx_hat[i, j] - c2 - x_hat[i, j] * c1)
                    DX_smem[i, j] = T.Cast(in_dtype, dx_v)
                    dy_v = T.Cast(accum_dtype, DY_smem[i, j])
                    dgamma_acc[j] += dy_v * x_hat[i, j]
                    dbeta_acc[j] += dy_v

                T.copy(DX_smem, DX[row, 0])

            for j in T.Parallel(D):
                T.atomic_add(DGamma[j], dgamma_acc[j], memory_order="relaxed")
                T.atomic_add(DBeta[j], dbeta_acc[j], memory_order="relaxed")

    return main


@tilelang.jit
def softmax_kernel(X, BLOCK_M=1, BLOCK_N=256, dtype: T.dtype = T.float16):
    M, N = T.const("M, N")  # TileLang's script takes them from module globals

    X: T.Tensor([M, N], dtype)
    Y = T.empty([M, N], dtype)

    accum_dtype = T.float32

    scale = 1.44269504  # log2(e)

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

    return Y


# ---- references (numpy; TileLang's use torch) -----------------------------------------------
def rms_norm_reference(x):
    x = np.asarray(x).astype(np.float32)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-12)


def layernorm_reference(x, g, b, eps=1e-5):
    x, g, b = (np.asarray(v).astype(np.float32) for v in (x, g, b))
    mean = x.mean(-1)
    rstd = 1.0 / np.sqrt(x.var(-1) + eps)
    return (x - mean[:, None]) * rstd[:, None] * g + b, mean, rstd


def layernorm_bwd_reference(dy, x, g, mean, rstd):
    """dx, dgamma, dbeta of y = (x - mean) * rstd * g + b (TileLang's checks use torch autograd)."""
    dy, x, g = (np.asarray(v).astype(np.float32) for v in (dy, x, g))
    x_hat = (x - mean[:, None]) * rstd[:, None]
    dx_hat = dy * g
    c1 = (dx_hat * x_hat).mean(1, keepdims=True)
    c2 = dx_hat.mean(1, keepdims=True)
    return rstd[:, None] * (dx_hat - c2 - x_hat * c1), (dy * x_hat).sum(0), dy.sum(0)


def softmax_reference(x):
    x = np.asarray(x).astype(np.float32)
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


layernorm_kernel = layernorm_fwd.get_tir(64, 256)  # for `tilelang-tt run`

if __name__ == "__main__":
    rng = np.random.default_rng(0)

    def check(name, got, want):
        np.testing.assert_allclose(np.asarray(got).astype(np.float32), want, rtol=1e-2, atol=1e-2)
        print(f"{name} matches numpy")

    a = rng.standard_normal((64, 512)).astype(np.float32)
    check("rms_norm (blk_m = 1)", rms_norm.compile(M=64, N=512, blk_m=1)(a), rms_norm_reference(a))
    check("rms_norm_splitk (blk_m = 1, blk_k = 128)",
          rms_norm_splitk.compile(M=64, N=512, blk_m=1, blk_k=128)(a), rms_norm_reference(a))
    x = rng.standard_normal((64, 256)).astype(ml_dtypes.bfloat16)
    g = rng.standard_normal(256).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal(256).astype(ml_dtypes.bfloat16)
    y, mean, rstd = layernorm_fwd(64, 256)(x, g, b)
    check("layernorm forward (blk_m = 1)", y, layernorm_reference(x, g, b)[0])
    xs = rng.standard_normal((64, 1024)).astype(np.float16)
    check("online softmax (BLOCK_M = 1, float16)", softmax_kernel(xs), softmax_reference(xs))
    # TileLang's own width: 32 rows of 8192 columns exceed L1, so A0.1.4 streams the columns
    # (docs/SUPPORT.md "Rows too wide for L1")
    a = rng.standard_normal((64, 8192)).astype(np.float32)
    check("rms_norm at 8192 columns", rms_norm.compile(M=64, N=8192, blk_m=1)(a),
          rms_norm_reference(a))
    xs = rng.standard_normal((32, 8192)).astype(np.float16)
    check("online softmax at BLOCK_N = 8192", softmax_kernel(xs, BLOCK_N=8192),
          softmax_reference(xs))
