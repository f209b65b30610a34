"""TileLang's split-K GEMM (examples/gemm_splitk): the grid's third index ``bz`` splits K, and
every block adds its partial product into ``C`` with ``T.atomic_add`` - as a whole block
(``matmul``) or element by element in a ``T.Parallel`` nest (``matmul_elementwise``).  Only
the imports differ from TileLang.

On Tensix the blocks of one ``C`` tile (the ``split_k`` values of ``bz``, which its index does
not use) run one after the other on one core, their partial products summed into one copy of
the tile in L1 that is read from and written to ``C`` once (docs/SUPPORT.md, "Atomics").
Run ``python examples/gemm_splitk.py`` to check both forms on the emulator.
"""

import numpy as np

import tilelang_tt as tilelang
import tilelang_tt.language as T


@tilelang.jit
def matmul(A, B, C, block_M, block_N, block_K, split_k, dtype=T.float16,
           accum_dtype=T.float32, out_dtype=T.float32):
    M, N, K = T.const("M, N, K")
    splitK = K // split_k

    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    C: T.Tensor((M, N), out_dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), split_k, threads=128) as (bx, by, bz):
        A_shared = T.alloc_shared((block_M, block_K), dtype)
        B_shared = T.alloc_shared((block_K, block_N), dtype)
        C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

        T.clear(C_local)
        for ko in T.Pipelined(T.ceildiv(splitK, block_K), num_stages=0):
            T.copy(A[by * block_M, bz * splitK + ko * block_K], A_shared)
            T.copy(B[bz * splitK + ko * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)

        T.atomic_add(C[by * block_M, bx * block_N], C_local)


@tilelang.jit
def matmul_elementwise(A, B, C, block_M, block_N, block_K, split_k, dtype=T.float16,
                       accum_dtype=T.float32, out_dtype=T.float32):
    M, N, K = T.const("M, N, K")
    splitK = K // split_k

    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    C: T.Tensor((M, N), out_dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), split_k, threads=128) as (bx, by, bz):
        A_shared = T.alloc_shared((block_M, block_K), dtype)
        B_shared = T.alloc_shared((block_K, block_N), dtype)
        C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

        T.clear(C_local)
        for ko in T.Pipelined(T.ceildiv(splitK, block_K), num_stages=0):
            T.copy(A[by * block_M, bz * splitK + ko * block_K], A_shared)
            T.copy(B[bz * splitK + ko * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)

        for i, j in T.Parallel(block_M, block_N):
            T.atomic_add(C[by * block_M + i, bx * block_N + j], C_local[i, j])


def main(M=128, N=128, K=512, block_M=64, block_N=64, block_K=32, split_k=4):
    rng = np.random.default_rng(42)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    for kernel in (matmul, matmul_elementwise):
        c = np.zeros((M, N), np.float32)
        kernel(a, b, c, block_M, block_N, block_K, split_k)
        np.testing.assert_allclose(c, ref, rtol=1e-2, atol=1e-2 * np.abs(ref).max())
        print(f"split-K GEMM {M}x{N}x{K}, split_k={split_k}: matches numpy")


if __name__ == "__main__":
    main()
