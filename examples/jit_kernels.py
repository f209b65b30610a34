"""Kernels in TileLang's ``@tilelang.jit`` idiom: only the imports differ from TileLang.

Eager form (TileLang's current style: sizes from ``T.const``, tensors annotated in the body,
outputs from ``T.empty``) and factory form (``@tilelang.jit(out_idx=[-1])`` returning a
``@T.prim_func``).  Run ``python examples/jit_kernels.py`` to check them all on the emulator.
"""

import numpy as np

import tilelang_tt as tilelang
import tilelang_tt.language as T


# ---- eager form ---------------------------------------------------------------------------
@tilelang.jit
def elementwise_add(A, B, block_M, block_N, in_dtype=T.float32, out_dtype=T.float32,
                    threads=128):
    M, N = T.const("M, N")

    A: T.Tensor((M, N), in_dtype)
    B: T.Tensor((M, N), in_dtype)
    C = T.empty((M, N), out_dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_N), in_dtype)
        B_shared = T.alloc_shared((block_M, block_N), in_dtype)
        C_local = T.alloc_fragment((block_M, block_N), out_dtype)
        C_shared = T.alloc_shared((block_M, block_N), out_dtype)

        T.copy(A[by * block_M, bx * block_N], A_shared)
        T.copy(B[by * block_M, bx * block_N], B_shared)
        for local_y, local_x in T.Parallel(block_M, block_N):
            C_local[local_y, local_x] = A_shared[local_y, local_x] + B_shared[local_y, local_x]
        T.copy(C_local, C_shared)
        T.copy(C_shared, C[by * block_M, bx * block_N])

    return C


@tilelang.jit
def matmul(A, B, block_M, block_N, block_K, dtype=T.bfloat16, accum_dtype=T.float32):
    M, N, K = T.const("M, N, K")

    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    C = T.empty((M, N), dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), dtype)
        B_shared = T.alloc_shared((block_K, block_N), dtype)
        C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

        T.clear(C_local)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
            T.copy(A[by * block_M, k * block_K], A_shared)
            T.copy(B[k * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local, policy=T.GemmWarpPolicy.Square)

        T.copy(C_local, C[by * block_M, bx * block_N])

    return C


@tilelang.jit(pass_configs={tilelang.PassConfigKey.TL_DISABLE_TMA_LOWER: True})
def rms_norm(A, blk_m, eps=1e-6):
    M, N = T.const("M, N")
    dtype = T.float

    A: T.Tensor((M, N), dtype)
    B = T.empty((M, N), dtype)

    with T.Kernel(T.ceildiv(M, blk_m), threads=128) as bx:
        A_local = T.alloc_fragment((blk_m, N), dtype)
        A_pow_local = T.alloc_fragment((blk_m, N), dtype)
        A_powsum = T.alloc_fragment((blk_m,), dtype)

        T.copy(A[bx * blk_m:(bx + 1) * blk_m, :], A_local)
        for i, j in T.Parallel(blk_m, N):
            A_pow_local[i, j] = A_local[i, j] * A_local[i, j]
        T.reduce_sum(A_pow_local, A_powsum, dim=1)
        for i, j in T.Parallel(blk_m, N):
            A_local[i, j] = A_local[i, j] * T.rsqrt(A_powsum[i] / N + eps)
        T.copy(A_local, B[bx * blk_m:(bx + 1) * blk_m, :])

    return B


# ---- factory form -------------------------------------------------------------------------
@tilelang.jit(out_idx=[-1])
def matmul_nt(M, N, K, block_M, block_N, block_K, dtype=T.bfloat16, accum_dtype=T.float32):
    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((N, K), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_N, block_K), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            C_shared = T.alloc_shared((block_M, block_N), dtype)

            T.use_swizzle(panel_size=10)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[bx * block_N, ko * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C_shared)
            T.copy(C_shared, C[by * block_M, bx * block_N])

    return main


@tilelang.jit(out_idx=[-1])
def softmax(M, N, block_M, dtype=T.float32, accum_dtype=T.float32):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            X_shared = T.alloc_shared((block_M, N), dtype)
            row_max = T.alloc_fragment((block_M,), accum_dtype)
            row_sum = T.alloc_fragment((block_M,), accum_dtype)
            E = T.alloc_fragment((block_M, N), accum_dtype)
            Y_local = T.alloc_fragment((block_M, N), dtype)

            T.copy(X[bx * block_M, 0], X_shared)
            T.reduce_max(X_shared, row_max, dim=1)
            for i, j in T.Parallel(block_M, N):
                E[i, j] = T.exp(X_shared[i, j] - row_max[i])
            T.reduce_sum(E, row_sum, dim=1)
            for i, j in T.Parallel(block_M, N):
                Y_local[i, j] = E[i, j] / row_sum[i]
            T.copy(Y_local, Y[bx * block_M, 0])

    return main


def _check(name, got, ref, atol):
    err = float(np.abs(np.asarray(got, np.float32) - np.asarray(ref, np.float32)).max())
    assert err <= atol, f"{name}: max error {err} > {atol}"
    print(f"{name}: matches numpy (max error {err:.3g})")


if __name__ == "__main__":
    import ml_dtypes

    rng = np.random.default_rng(0)
    a = rng.standard_normal((256, 128)).astype(np.float32)
    b = rng.standard_normal((256, 128)).astype(np.float32)
    _check("elementwise_add (eager)", elementwise_add(a, b, block_M=64, block_N=64), a + b, 0)

    x = rng.standard_normal((128, 256)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((256, 128)).astype(ml_dtypes.bfloat16)
    ref = x.astype(np.float32) @ w.astype(np.float32)
    _check("matmul (eager)", matmul(x, w, 64, 64, 32), ref, 0.25)

    kernel = matmul_nt(128, 128, 256, 64, 64, 32)
    _check("matmul_nt (factory)", kernel(x, np.ascontiguousarray(w.T)), ref, 0.25)

    s = rng.standard_normal((64, 128)).astype(np.float32)
    kernel = rms_norm.compile(M=64, N=128, blk_m=32)
    kernel.get_profiler().assert_allclose(
        lambda A: A / np.sqrt((A * A).mean(-1, keepdims=True) + 1e-6), rtol=0.01, atol=0.01)
    print("rms_norm (eager): profiler.assert_allclose passes")

    kernel = softmax(64, 128, 32)
    e = np.exp(s - s.max(-1, keepdims=True))
    _check("softmax (factory)", kernel(s), e / e.sum(-1, keepdims=True), 0.02)
