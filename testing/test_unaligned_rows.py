"""Blocks at tensor rows off a tile boundary (docs/SUPPORT.md "Rows off a tile boundary"):
TileLang's variable-length kernels pack sequences back to back and read a block at
``cu_seqlens[b] + bx * block_M``, then store it under the row guard ``bx * block_M + i <
seq_len``.  The reader gathers such a block row by row (two face rows of a DRAM tile per row
and tile column) and the writer scatters only the rows the guard keeps; every kernel runs on
the emulator and is compared with numpy."""

import numpy as np
import pytest

pytest.importorskip("tilelang_tt.runtime.mockbuild", reason="emulator driver not installed")

import tilelang_tt as tilelang
import tilelang_tt.language as T
from helpers import as_f32, rand


def shifted(M, N, off, store_off, dtype, guard):
    """B[bx * 32 + store_off + i] = 2 * A[bx * 32 + off + i] (static offsets), rows past
    ``guard`` not stored."""

    @T.prim_func
    def main(A: T.Tensor((M + 32, N), dtype), B: T.Tensor((M + 32, N), dtype)):
        with T.Kernel(M // 32) as bx:
            A_s = T.alloc_shared((32, N), dtype)
            T.copy(A[bx * 32 + off:bx * 32 + off + 32, :], A_s)
            for i, j in T.Parallel(32, N):
                if bx * 32 + i < guard:
                    B[bx * 32 + store_off + i, j] = A_s[i, j] * 2.0

    return main


def test_static_offsets():
    """Reads at rows 5 (float32: 64-byte face rows) and 17 (bfloat16: 32 bytes, the second
    face pair), guarded stores at rows 3 and 30: rows past the guard are not stored; an
    aligned block keeps the tile path."""
    M, N = 96, 64
    for dtype, off, store_off, guard in (("float32", 5, 3, 89), ("bfloat16", 17, 30, 96)):
        kernel = tilelang.compile(shifted(M, N, off, store_off, dtype, guard))
        reader, writer = kernel.sources["reader.cpp"], kernel.sources["writer.cpp"]
        assert "noc_async_read(A_accessor.get_noc_addr(" in reader
        assert "noc_async_write(" in writer and "noc_async_write_page" not in writer
        a = rand((M + 32, N), dtype, 1)
        b = np.zeros((M + 32, N), a.dtype)
        kernel(a, b)
        want = np.zeros((M + 32, N))  # an output's rows the kernel never stores read 0
        want[store_off:store_off + guard] = 2 * as_f32(a)[off:off + guard]
        np.testing.assert_allclose(as_f32(b), want, rtol=1e-2)
    aligned = tilelang.compile(shifted(M, N, 0, 0, "bfloat16", M + 32))
    assert "noc_async_read_page" in aligned.sources["reader.cpp"]
    assert "get_noc_addr" not in aligned.sources["reader.cpp"]


@tilelang.jit(out_idx=[-1])
def varlen_softmax(batch, total, heads, dim, max_len, block_M, dtype):
    """Per sequence b (rows cu[b] .. cu[b + 1] of the packed [total, heads, dim] tensor) and
    head: each row's softmax, stored under TileLang's row guard."""

    @T.prim_func
    def main(X: T.Tensor((total, heads, dim), dtype), cu: T.Tensor((batch + 1,), "int32"),
             Y: T.Tensor((total, heads, dim), dtype)):
        with T.Kernel(T.ceildiv(max_len, block_M), heads, batch) as (bx, by, bz):
            X_s = T.alloc_shared((block_M, dim), "float32")  # the read converts
            E = T.alloc_fragment((block_M, dim), "float32")
            m = T.alloc_fragment((block_M,), "float32")
            s = T.alloc_fragment((block_M,), "float32")
            start = cu[bz]
            seq_len = cu[bz + 1] - start
            T.copy(X[start + bx * block_M:start + bx * block_M + block_M, by, :], X_s)
            T.reduce_max(X_s, m, dim=1)
            for i, j in T.Parallel(block_M, dim):
                E[i, j] = T.exp(X_s[i, j] - m[i])
            T.reduce_sum(E, s, dim=1)
            for i, j in T.Parallel(block_M, dim):
                if bx * block_M + i < seq_len:
                    Y[start + bx * block_M + i, by, j] = E[i, j] / s[i]

    return main


@pytest.mark.parametrize("dtype,block_M", [("float32", 32), ("bfloat16", 64)])
def test_varlen_row_softmax(dtype, block_M):
    """Sequence lengths 0, 1, 31, 33, 100 packed into 165 rows, two heads, rows of 64: the
    blocks start wherever cu_seqlens puts them, rows past the tensor's end read zeros (the
    guard drops them), and each block stores only its own sequence's rows."""
    lens = [0, 1, 31, 33, 100]
    heads, dim = 2, 64
    cu = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
    total = int(cu[-1])
    kernel = varlen_softmax(len(lens), total, heads, dim, max(lens), block_M, dtype)
    x = rand((total, heads, dim), dtype, 3, scale=2.0)
    y = as_f32(kernel(x, cu))
    xf = as_f32(x).astype(np.float64)
    e = np.exp(xf - xf.max(-1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(-1, keepdims=True), rtol=2e-2, atol=2e-3)
