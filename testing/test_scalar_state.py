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
    # `while bx < n: ...; bx = bx + programs`; block bx reads row block `src` = (bx + 1) % n,
    # a second scalar only the reader needs
    num_blocks = M // block_M

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(programs, threads=128) as pid:
            A_s = T.alloc_shared((block_M, N), dtype)
            B_l = T.alloc_fragment((block_M, N), dtype)
            bx = T.alloc_var(T.int32)
            src = T.alloc_var(T.int32)
            bx = pid
            src = (pid + 1) % num_blocks
            while bx < num_blocks:
                T.copy(A[src * block_M, 0], A_s)
                for i, j in T.Parallel(block_M, N):
                    B_l[i, j] = A_s[i, j] * 2.0 + 1.0
                T.copy(B_l, B[bx * block_M, 0])
                current = bx
                bx = current + programs
                src = (src + programs) % num_blocks

    return main


def persistent_sum(M=256, N=64, block_M=32, programs=9):
    # a block buffer carried across the `while`'s iterations: each program sums the row
    # blocks it visits (9 programs over 8 blocks: the last one visits none and stores zeros)
    num_blocks = M // block_M

    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), B: T.Tensor((programs * block_M, N), T.float32)):
        with T.Kernel(programs, threads=128) as pid:
            A_s = T.alloc_shared((block_M, N), T.float32)
            acc = T.alloc_fragment((block_M, N), T.float32)
            bx = T.alloc_var(T.int32)
            bx = pid
            T.fill(acc, 0)
            while bx < num_blocks:
                T.copy(A[bx * block_M, 0], A_s)
                for i, j in T.Parallel(block_M, N):
                    acc[i, j] = acc[i, j] + A_s[i, j]
                bx = bx + programs
            T.copy(acc, B[pid * block_M, 0])

    return main


def streamk(M=256, N=256, K=256, block_M=64, block_N=128, block_K=64, programs=3,
            dtype=T.bfloat16):
    # TileLang's stream-K GEMM (examples/gemm_streamk): start_iter / end_iter carried across
    # a `while`, a T.Pipelined K loop of `end_iter - start_iter` steps at offsets from the
    # scalars, a whole tile stored and a partial one added atomically, then full tiles in a
    # T.serial loop reusing the accumulator.  8 tiles of 4 K steps on 3 programs: 5 tiles in
    # the stream-K phase (7, 7 and 6 steps: tiles split between programs), 1 full tile each
    n_blocks, iters_per_tile = N // block_N, K // block_K
    total_tiles = (M // block_M) * n_blocks
    streamk_tiles = total_tiles % programs + programs
    full_iters, partial_iters = divmod(streamk_tiles * iters_per_tile, programs)
    full_tiles = (total_tiles - streamk_tiles) // programs

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype),
             C: T.Tensor((M, N), T.float32)):
        with T.Kernel(programs, threads=128) as pid:
            A_s = T.alloc_shared((block_M, block_K), dtype)
            B_s = T.alloc_shared((block_N, block_K), dtype)
            A_f = T.alloc_shared((block_M, block_K), dtype)
            B_f = T.alloc_shared((block_N, block_K), dtype)
            C_l = T.alloc_fragment((block_M, block_N), T.float32)
            start_iter = T.alloc_fragment((1,), T.int32, "local")
            end_iter = T.alloc_fragment((1,), T.int32, "local")
            start_iter[0] = pid * full_iters + T.min(pid, partial_iters)
            last_iter = (pid + 1) * full_iters + T.min(pid + 1, partial_iters)
            while start_iter[0] < last_iter:
                end_iter[0] = T.min(
                    start_iter[0] + (iters_per_tile - start_iter[0] % iters_per_tile), last_iter)
                tile_id = start_iter[0] // iters_per_tile
                remain = start_iter[0] % iters_per_tile
                pid_m = tile_id // n_blocks
                pid_n = tile_id % n_blocks
                T.clear(C_l)
                for k in T.Pipelined(end_iter[0] - start_iter[0], num_stages=2):
                    T.copy(A[pid_m * block_M, (k + start_iter[0] % iters_per_tile) * block_K],
                           A_s)
                    T.copy(B[pid_n * block_N, (k + start_iter[0] % iters_per_tile) * block_K],
                           B_s)
                    T.gemm(A_s, B_s, C_l, transpose_B=True)
                if remain == 0 and end_iter[0] % iters_per_tile == 0:
                    T.copy(C_l, C[pid_m * block_M, pid_n * block_N])
                else:
                    for i, j in T.Parallel(block_M, block_N):
                        T.atomic_add(C[pid_m * block_M + i, pid_n * block_N + j], C_l[i, j])
                start_iter[0] = end_iter[0]
            for p in T.serial(full_tiles):
                tile_id = pid + streamk_tiles + p * programs
                pid_m = tile_id // n_blocks
                pid_n = tile_id % n_blocks
                T.clear(C_l)
                for k in T.Pipelined(iters_per_tile, num_stages=1):
                    T.copy(A[pid_m * block_M, k * block_K], A_f)
                    T.copy(B[pid_n * block_N, k * block_K], B_f)
                    T.gemm(A_f, B_f, C_l, transpose_B=True)
                T.copy(C_l, C[pid_m * block_M, pid_n * block_N])

    return main


def persistent_attention(seq=256, dim=64, block_M=64, block_N=64, num_split_q=2,
                         dtype=T.bfloat16):
    # TileLang's AMD flash attention forward (examples/amd): a persistent `while` over query
    # blocks around a whole flash attention (its running max, sum and output carried across
    # the K loop), 4 query blocks on 2 programs
    scale = (1.0 / dim) ** 0.5
    num_q_blocks = seq // block_M

    @T.prim_func
    def main(Q: T.Tensor((seq, dim), dtype), K: T.Tensor((seq, dim), dtype),
             V: T.Tensor((seq, dim), dtype), Output: T.Tensor((seq, dim), dtype)):
        with T.Kernel(num_split_q, threads=128) as b_split:
            bx = T.alloc_var(T.int32)
            bx = b_split
            while bx < num_q_blocks:
                acc_o = T.alloc_fragment([block_M, dim], T.float32)
                m_i = T.alloc_fragment([block_M], T.float32)
                l_i = T.alloc_fragment([block_M], T.float32)
                T.fill(acc_o, 0)
                T.fill(m_i, -T.infinity(T.float32))
                T.fill(l_i, 0)
                current_bx = bx
                q_off = current_bx * block_M
                Q_s = T.alloc_shared([block_M, dim], dtype)
                K_s = T.alloc_shared([block_N, dim], dtype)
                V_s = T.alloc_shared([block_N, dim], dtype)
                acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
                acc_s = T.alloc_fragment([block_M, block_N], T.float32)
                m_prev = T.alloc_fragment([block_M], T.float32)
                scale_factor = T.alloc_fragment([block_M], T.float32)
                row_sum = T.alloc_fragment([block_M], T.float32)
                T.copy(Q[q_off:q_off + block_M, :], Q_s)
                for k in T.Pipelined(seq // block_N, num_stages=1):
                    T.copy(K[k * block_N:(k + 1) * block_N, :], K_s)
                    T.copy(V[k * block_N:(k + 1) * block_N, :], V_s)
                    T.clear(acc_s)
                    T.gemm(Q_s, K_s, acc_s, transpose_B=True)
                    T.copy(m_i, m_prev)
                    T.reduce_max(acc_s, m_i, dim=1, clear=False)
                    for i in T.Parallel(block_M):
                        m_i[i] = T.max(m_i[i], m_prev[i])
                    for i in T.Parallel(block_M):
                        sf = T.exp(m_prev[i] * scale - m_i[i] * scale)
                        l_i[i] *= sf
                        scale_factor[i] = sf
                    for i, j in T.Parallel(block_M, dim):
                        acc_o[i, j] *= scale_factor[i]
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.exp(acc_s[i, j] * scale - m_i[i] * scale)
                    T.reduce_sum(acc_s, row_sum, dim=1)
                    for i in T.Parallel(block_M):
                        l_i[i] += row_sum[i]
                    T.copy(acc_s, acc_s_cast)
                    T.gemm(acc_s_cast, V_s, acc_o)
                l_inv = T.alloc_fragment([block_M], T.float32)
                for i in T.Parallel(block_M):
                    l_inv[i] = 1.0 / l_i[i]
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= l_inv[i]
                T.copy(acc_o, Output[q_off:q_off + block_M, :])
                bx = current_bx + num_split_q

    return main


def test_scalar_state_persistent_streamk_attention():
    # a persistent `while` over row blocks: 8 blocks on 3 programs (3, 3 and 2 iterations)
    rng = np.random.default_rng(0)
    kernel = tilelang.compile(persistent_rows(), out_idx=[1])
    a = rng.standard_normal((256, 64)).astype(np.float32)
    ref = np.roll(a.reshape(8, 32, 64), -1, axis=0).reshape(256, 64) * 2.0 + 1.0
    np.testing.assert_allclose(kernel(a), ref, rtol=1e-5, atol=1e-5)
    # every kernel keeps its own copy of the scalar: a C++ local assigned in each; `src` only
    # in the reader, the one kernel that reads it
    for kind in ("reader", "compute", "writer"):
        src = kernel.sources[f"{kind}.cpp"]
        assert "int32_t bx = 0;" in src and "bx = (bx + 3);" in src, kind
        assert "while (" in src, kind
        assert ("int32_t src = 0;" in src) == (kind == "reader"), kind

    kernel = tilelang.compile(persistent_sum())
    b = np.full((9 * 32, 64), np.nan, np.float32)
    kernel(a, b)
    ref = np.concatenate([a.reshape(8, 32, 64)[p::9].sum(0) for p in range(9)])
    np.testing.assert_allclose(b, ref, rtol=1e-5, atol=1e-5)

    # stream-K: run-time K extents, offsets from the scalars, whole tiles stored and partial
    # ones added atomically (the programs' atomics serialised on one core), full tiles after
    kernel = tilelang.compile(streamk())
    a, b = (rng.uniform(-1, 1, (256, 256)).astype(ml_dtypes.bfloat16) for _ in range(2))
    c = np.zeros((256, 256), np.float32)
    kernel(a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(c, ref, rtol=1e-2, atol=1e-2)

    # a persistent `while` over query blocks around a flash attention
    kernel = tilelang.compile(persistent_attention(), out_idx=[3])
    q, k, v = (rng.standard_normal((256, 64)).astype(ml_dtypes.bfloat16) for _ in range(3))
    s = q.astype(np.float64) @ k.astype(np.float64).T / 8.0
    p = np.exp(s - s.max(1, keepdims=True))
    ref = (p / p.sum(1, keepdims=True)) @ v.astype(np.float64)
    np.testing.assert_allclose(kernel(q, k, v).astype(np.float64), ref, atol=2e-2, rtol=2e-2)


def test_scalar_state_streamk_16_row_blocks():
    # TileLang's stream-K GEMM as its example writes it, with 16-row A / C blocks: the rows
    # start at `pid_m * 16` with `pid_m` from the mutable scalar `start_iter`, so half of them
    # are off a 32-row tile boundary.  A0.5.1 holds each 16-row block as a 32-row tile; A is
    # read row by row (all 32 rows), C is written row by row, block rows 0-15 only, both by
    # the whole-tile store and by the atomic's read-modify-write.  8 tiles (C rows 16 m ..
    # 16 m + 15, columns 64 n ..) of 4 K steps on 5 programs, all in the stream-K phase, run
    # in program order on one core: (0, 0), (1, 0), (2, 0), (2, 1), (3, 1) stored whole,
    # (0, 1) added atomically by programs 0 and 1, (1, 1) by programs 1 and 2, (3, 0) by
    # programs 3 and 4.  A store of all 32 rows of tile (2, 0) would put the full product of
    # rows 48-63 under tile (3, 0)'s atomics, an RMW of all 32 rows of tile (0, 1) a partial
    # product of rows 16-31 under tile (1, 1)'s: both would add to the result
    rng = np.random.default_rng(1)
    kernel = tilelang.compile(streamk(M=64, N=128, K=128, block_M=16, block_N=64, block_K=32,
                                      programs=5))
    a, b = (rng.uniform(-1, 1, (n, 128)).astype(ml_dtypes.bfloat16) for n in (64, 128))
    c = np.zeros((64, 128), np.float32)
    kernel(a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(c, ref, rtol=1e-2, atol=1e-2)
    # the writer stores block rows 0-15 only (row-granular NOC writes of the block's own rows:
    # the other 16 rows of each DRAM tile belong to another block), on every store path
    writer = kernel.sources["writer.cpp"]
    assert writer.count("< static_cast<int32_t>(16))") == 2, writer
    assert "noc_async_write_tile" not in writer and "noc_async_write_page" not in writer
    # one column block (N = block_N): the full-tile loop's rows are `(pid + 4 + p * 3) * 16`,
    # blocks of 16 rows along pid; pid also feeds `start_iter`, so A0.0 leaves the axis as
    # written (no coarsening of blocks that each carry their own scalars)
    kernel = tilelang.compile(streamk(M=64, N=64, K=128, block_M=16, block_N=64, block_K=32))
    a, b = (rng.uniform(-1, 1, (64, 128)).astype(ml_dtypes.bfloat16) for _ in range(2))
    c = np.zeros((64, 64), np.float32)
    kernel(a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
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
