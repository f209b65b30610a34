"""Integer scalars carried across loop iterations in kernels with tile work (A0.1
ScalarsToBindTT's replicated state, docs/SUPPORT.md "Scalars carried across loops"): every
kernel keeps its own copy of the scalar and runs the same assignments, so `while` loops over
such scalars around tile work are ordinary control flow in the reader, compute and writer.
Each kernel runs on the emulator against numpy."""

import ml_dtypes
import numpy as np
import pytest

import tilelang_tt as tilelang
import tilelang_tt.language as T
from tilelang_tt import TTUnsupportedError


def persistent_rows(M=256, N=64, block_M=32, programs=3, dtype=T.float32):
    # a persistent loop over row blocks (TileLang's AMD flash attention's structure):
    # `while bx < n: ...; bx = bx + programs`
    num_blocks = M // block_M

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(programs, threads=128) as pid:
            A_s = T.alloc_shared((block_M, N), dtype)
            B_l = T.alloc_fragment((block_M, N), dtype)
            bx = T.alloc_var(T.int32)
            bx = pid
            while bx < num_blocks:
                T.copy(A[bx * block_M, 0], A_s)
                for i, j in T.Parallel(block_M, N):
                    B_l[i, j] = A_s[i, j] * 2.0 + 1.0
                T.copy(B_l, B[bx * block_M, 0])
                current = bx
                bx = current + programs

    return main


def streamk_whole_tiles(M=256, N=256, K=256, block_M=64, block_N=128, block_K=64, programs=4,
                        dtype=T.bfloat16):
    # TileLang's stream-K GEMM loop (start_iter / end_iter carried across a `while`, a
    # T.Pipelined K loop of `end_iter - start_iter` steps at offsets from the scalars), with
    # every program given whole tiles (two per program here), so each tile is stored once
    n_blocks, iters_per_tile = N // block_N, K // block_K
    per_program = (M // block_M) * n_blocks * iters_per_tile // programs

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype),
             C: T.Tensor((M, N), T.float32)):
        with T.Kernel(programs, threads=128) as pid:
            A_s = T.alloc_shared((block_M, block_K), dtype)
            B_s = T.alloc_shared((block_N, block_K), dtype)
            C_l = T.alloc_fragment((block_M, block_N), T.float32)
            start_iter = T.alloc_fragment((1,), T.int32, "local")
            end_iter = T.alloc_fragment((1,), T.int32, "local")
            start_iter[0] = pid * per_program
            last_iter = (pid + 1) * per_program
            while start_iter[0] < last_iter:
                end_iter[0] = T.min(
                    start_iter[0] + (iters_per_tile - start_iter[0] % iters_per_tile), last_iter)
                tile_id = start_iter[0] // iters_per_tile
                pid_m = tile_id // n_blocks
                pid_n = tile_id % n_blocks
                T.clear(C_l)
                for k in T.Pipelined(end_iter[0] - start_iter[0], num_stages=2):
                    T.copy(A[pid_m * block_M, (k + start_iter[0] % iters_per_tile) * block_K],
                           A_s)
                    T.copy(B[pid_n * block_N, (k + start_iter[0] % iters_per_tile) * block_K],
                           B_s)
                    T.gemm(A_s, B_s, C_l, transpose_B=True)
                T.copy(C_l, C[pid_m * block_M, pid_n * block_N])
                start_iter[0] = end_iter[0]

    return main


def test_scalar_state_persistent_and_streamk():
    # a persistent `while` over row blocks: 8 blocks on 3 programs (3, 3 and 2 iterations)
    rng = np.random.default_rng(0)
    kernel = tilelang.compile(persistent_rows(), out_idx=[1])
    a = rng.standard_normal((256, 64)).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a * 2.0 + 1.0, rtol=1e-5, atol=1e-5)
    # every kernel keeps its own copy of the scalar: a C++ local assigned in each
    for kind in ("reader", "compute", "writer"):
        src = kernel.sources[f"{kind}.cpp"]
        assert "int32_t bx = 0;" in src and "bx = (bx + 3);" in src, kind
        assert "while (" in src, kind

    # stream-K's loop: a run-time K extent and block offsets from the scalars
    kernel = tilelang.compile(streamk_whole_tiles())
    a = rng.uniform(-1, 1, (256, 256)).astype(np.float32)
    b = rng.uniform(-1, 1, (256, 256)).astype(np.float32)
    a16, b16 = a.astype(ml_dtypes.bfloat16), b.astype(ml_dtypes.bfloat16)
    c = np.zeros((256, 256), np.float32)
    kernel(a16, b16, c)
    ref = a16.astype(np.float64) @ b16.astype(np.float64).T
    np.testing.assert_allclose(c, ref, rtol=1e-2, atol=1e-2)


def test_scalar_state_refusals():
    # a scalar fed by a tensor element stays refused (only integer state computed from
    # constants, block and loop indices and other such scalars is replicated)
    @T.prim_func
    def from_element(A: T.Tensor((64, 64), T.float32), N: T.Tensor((4,), T.int32),
                     B: T.Tensor((64, 64), T.float32)):
        with T.Kernel(1, threads=128) as _:
            A_s = T.alloc_shared((32, 64), T.float32)
            i = T.alloc_var(T.int32)
            i = 0
            while i < 2:
                T.copy(A[i * 32, 0], A_s)
                T.copy(A_s, B[i * 32, 0])
                i = i + N[0]

    with pytest.raises(TTUnsupportedError, match="scalar i is assigned inside a loop"):
        tilelang.compile(from_element)
