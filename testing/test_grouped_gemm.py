"""TileLang's grouped GEMM (``examples/grouped_gemm``; docs/SUPPORT.md "Grouped GEMM: a batch
chosen by a loop over tensor elements"): row blocks of several groups packed back to back,
each block's group chosen by a constant-trip loop of selects on the padded offsets (A0.1
unrolls it), its rows read at ``m_start`` (off a tile boundary: gathered row by row), its B
at the data-dependent group index (the reader reads the offsets first), its rows stored
under ``i < actual_rows``.  Every kernel runs on the emulator and is compared with numpy."""

import math

import numpy as np
import pytest

pytest.importorskip("tilelang_tt.runtime.mockbuild", reason="emulator driver not installed")

import tilelang_tt as tilelang
import tilelang_tt.language as T
from helpers import as_f32, assert_matmul, rand


@tilelang.jit
def grouped_gemm(sizes, K, N, block_M, block_N, block_K, trans_b, dtype):
    """TileLang's forward kernel (its idiom: ``T.alloc_var`` scalars, ``for i in
    range(batch_count)`` choosing the group)."""
    batch_sum, batch_count = sum(sizes), len(sizes)
    m_blocks = sum(math.ceil(s / block_M) for s in sizes)
    B_shape = (batch_count, N, K) if trans_b else (batch_count, K, N)
    B_shared_shape = (block_N, block_K) if trans_b else (block_K, block_N)

    @T.prim_func
    def main(A: T.Tensor((batch_sum, K), dtype), B: T.Tensor(B_shape, dtype),
             batch_sizes: T.Tensor((batch_count,), "int32"),
             batch_offsets: T.Tensor((batch_count,), "int32"),
             batch_padded_offsets: T.Tensor((batch_count,), "int32"),
             C: T.Tensor((batch_sum, N), dtype)):
        with T.Kernel(m_blocks, T.ceildiv(N, block_N), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared(B_shared_shape, dtype)
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            cur_batch_idx = T.alloc_var(dtype="int32")
            cur_batch_size = T.alloc_var(dtype="int32")
            m_start_padded = bx * block_M
            cur_batch_idx = 0
            for i in range(batch_count):
                in_cur_batch_idx = m_start_padded >= batch_padded_offsets[i]
                cur_batch_idx = T.if_then_else(in_cur_batch_idx, i, cur_batch_idx)
            cur_batch_size = batch_sizes[cur_batch_idx]
            m_start = m_start_padded - batch_padded_offsets[cur_batch_idx] + \
                batch_offsets[cur_batch_idx]
            actual_rows = T.max(0, T.min(block_M, cur_batch_size +
                                         batch_padded_offsets[cur_batch_idx] - m_start_padded))
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[m_start:m_start + block_M, k * block_K:(k + 1) * block_K], A_shared)
                if trans_b:
                    T.copy(B[cur_batch_idx, by * block_N:(by + 1) * block_N,
                             k * block_K:(k + 1) * block_K], B_shared)
                else:
                    T.copy(B[cur_batch_idx, k * block_K:(k + 1) * block_K,
                             by * block_N:(by + 1) * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=trans_b)
            for i, j in T.Parallel(block_M, block_N):
                if i < actual_rows:
                    C[m_start + i, by * block_N + j] = C_local[i, j]

    return main


def offsets(sizes, block_M):
    """The example's ``batch_offsets`` and ``batch_padded_offsets`` (each group's blocks
    start at a multiple of ``block_M``)."""
    off = np.cumsum([0] + sizes[:-1]).astype(np.int32)
    padded = np.cumsum([0] + [math.ceil(s / block_M) * block_M for s in sizes[:-1]])
    return off, padded.astype(np.int32)


@pytest.mark.parametrize("sizes,block_M,trans_b,dtype", [
    ([40, 1, 0, 70], 32, False, "bfloat16"),   # a group of 1 row, one of 0, rows off 32
    ([5, 64, 33], 64, True, "float32"),        # 64-row blocks, B transposed
])
def test_grouped_gemm(sizes, block_M, trans_b, dtype):
    K, N = 64, 64
    kernel = grouped_gemm(sizes, K, N, block_M, 32, 32, trans_b, dtype)
    tensors = {t["name"]: t for t in kernel.plan["tensors"]}
    assert all(tensors[n]["scalars"] for n in ("batch_sizes", "batch_offsets",
                                                "batch_padded_offsets"))
    reader = kernel.sources["reader.cpp"]
    assert "noc_async_read(A_accessor.get_noc_addr(" in reader  # A's rows gathered
    assert "noc_async_read_page(" in reader  # B's tiles at the chosen group
    G, total = len(sizes), sum(sizes)
    a = rand((total, K), dtype, 1)
    b = rand((G, N, K) if trans_b else (G, K, N), dtype, 2)
    off, padded = offsets(sizes, block_M)
    c = np.full((total, N), 7, a.dtype)  # every row belongs to a group: all overwritten
    kernel(a, b, np.array(sizes, np.int32), off, padded, c)
    for g, n in enumerate(sizes):
        rows = slice(off[g], off[g] + n)
        if n:
            assert_matmul(c[rows], a[rows], b[g], kernel, transpose_b=trans_b)


def test_block_read_at_element_offset():
    """A block read whose start reads an element with no `if` around it (a gather): the reader
    reads the element's page right before the read; an index outside A reads zeros (its tiles
    checked when the reader runs, TileLang's safe value)."""
    @T.prim_func
    def gather(A: T.Tensor((128, 64), "bfloat16"), Idx: T.Tensor((4,), "int32"),
               C: T.Tensor((128, 64), "bfloat16")):
        with T.Kernel(4, threads=128) as bx:
            S = T.alloc_shared((32, 64), "bfloat16")
            T.copy(A[Idx[bx] * 32, 0], S)
            T.copy(S, C[bx * 32, 0])

    kernel = tilelang.compile(gather, out_idx=[-1])
    a = rand((128, 64), "bfloat16", 3)
    idx = np.array([2, -1, 0, 7], np.int32)
    c = kernel(a, idx)
    want = np.zeros((128, 64), np.float32)
    for blk, i in enumerate(idx):
        if 0 <= i < 4:
            want[blk * 32:(blk + 1) * 32] = as_f32(a)[i * 32:(i + 1) * 32]
    np.testing.assert_array_equal(as_f32(c), want)


def test_scalar_loop_unrolled():
    """A loop of constant extent that only assigns scalars is unrolled (A0.1): an offset
    chosen from block indices by selects, and a sum of the loop variable."""
    @T.prim_func
    def pick(A: T.Tensor((128, 64), "float32"), C: T.Tensor((128, 64), "float32")):
        with T.Kernel(4, threads=128) as bx:
            S = T.alloc_shared((32, 64), "float32")
            off = T.alloc_var(dtype="int32")
            total = T.alloc_var(dtype="int32")
            off = 0
            total = 0
            for i in T.serial(3):
                off = T.if_then_else(bx >= i + 1, i + 1, off)
                total = total + i
            T.copy(A[(3 - off) * 32, 0], S)
            for i, j in T.Parallel(32, 64):
                C[bx * 32 + i, j] = S[i, j] + total

    kernel = tilelang.compile(pick, out_idx=[-1])
    a = rand((128, 64), "float32", 4)
    c = kernel(a)
    want = np.concatenate([a[(3 - min(blk, 3)) * 32:(4 - min(blk, 3)) * 32] + 3
                           for blk in range(4)])
    np.testing.assert_allclose(c, want, rtol=1e-6)
