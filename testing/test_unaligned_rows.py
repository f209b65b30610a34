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
        want = np.zeros((M + 32, N))  # an output's rows the kernel never stores read 0
        want[store_off:store_off + guard] = 2 * as_f32(a)[off:off + guard]
        # the same code on Blackhole (64-byte DRAM reads: bfloat16 reads face row pairs)
        for arch in ("wormhole_b0", "blackhole"):
            b[:] = 0
            kernel.run(a, b, arch=arch)
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
    if dtype == "bfloat16":  # blocks at even and odd rows, on Blackhole too: the same result
        np.testing.assert_array_equal(as_f32(kernel.run(x, cu, arch="blackhole")), y)


@tilelang.jit(out_idx=[-1])
def varlen_attention(batch, UQ, UKV, heads, dim, max_q, max_k, block=32, dtype="float16"):
    """TileLang's example_mha_fwd_varlen.py (not causal): its K loop over the sequence's key
    blocks (an extent read from cu_k), the mask dropping the keys past the sequence."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    acc_t = "float32"

    @T.prim_func
    def main(Q: T.Tensor((UQ, heads, dim), dtype), K: T.Tensor((UKV, heads, dim), dtype),
             V: T.Tensor((UKV, heads, dim), dtype), cu_q: T.Tensor((batch + 1,), "int32"),
             cu_k: T.Tensor((batch + 1,), "int32"), O: T.Tensor((UQ, heads, dim), dtype)):
        with T.Kernel(T.ceildiv(max_q, block), heads, batch) as (bx, by, bz):
            Q_s = T.alloc_shared((block, dim), dtype)
            K_s = T.alloc_shared((block, dim), dtype)
            V_s = T.alloc_shared((block, dim), dtype)
            O_s = T.alloc_shared((block, dim), dtype)
            acc_s = T.alloc_fragment((block, block), acc_t)
            acc_s_cast = T.alloc_fragment((block, block), dtype)
            acc_o = T.alloc_fragment((block, dim), acc_t)
            m = T.alloc_fragment((block,), acc_t)
            m_prev = T.alloc_fragment((block,), acc_t)
            sc = T.alloc_fragment((block,), acc_t)
            ssum = T.alloc_fragment((block,), acc_t)
            lsum = T.alloc_fragment((block,), acc_t)
            q_start = cu_q[bz]
            k_start = cu_k[bz]
            q_len = cu_q[bz + 1] - q_start
            k_len = cu_k[bz + 1] - k_start
            T.copy(Q[q_start + bx * block:q_start + bx * block + block, by, :], Q_s)
            T.fill(acc_o, 0)
            T.fill(lsum, 0)
            T.fill(m, -T.infinity(acc_t))
            for k in T.Pipelined(T.ceildiv(k_len, block), num_stages=1):
                T.copy(K[k_start + k * block:k_start + k * block + block, by, :], K_s)
                for i, j in T.Parallel(block, block):
                    acc_s[i, j] = T.if_then_else(
                        bx * block + i >= q_len or k * block + j >= k_len, -1e9, 0)
                T.gemm(Q_s, K_s, acc_s, transpose_B=True)
                T.copy(m, m_prev)
                T.fill(m, -T.infinity(acc_t))
                T.reduce_max(acc_s, m, dim=1, clear=False)
                for i in T.Parallel(block):
                    m[i] = T.max(m[i], m_prev[i])
                for i in T.Parallel(block):
                    sc[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                for i, j in T.Parallel(block, block):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m[i] * scale)
                T.reduce_sum(acc_s, ssum, dim=1)
                for i in T.Parallel(block):
                    lsum[i] = lsum[i] * sc[i] + ssum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block, dim):
                    acc_o[i, j] *= sc[i]
                T.copy(V[k_start + k * block:k_start + k * block + block, by, :], V_s)
                T.gemm(acc_s_cast, V_s, acc_o)
            for i, j in T.Parallel(block, dim):
                acc_o[i, j] = acc_o[i, j] / lsum[i]
            T.copy(acc_o, O_s)
            for i, d in T.Parallel(block, dim):
                if bx * block + i < q_len:
                    O[q_start + bx * block + i, by, d] = O_s[i, d]

    return main


def test_varlen_attention():
    """Queries and keys of 3 sequences (1, 33, 70 and 31, 1, 40 tokens) packed back to back:
    Q / K / V blocks gathered at cu_seqlens offsets, the mask reading the lengths, O stored
    under the row guard; float64 reference per sequence."""
    lens_q, lens_k, heads, dim = [1, 33, 70], [31, 1, 40], 1, 32
    cq = np.concatenate([[0], np.cumsum(lens_q)]).astype(np.int32)
    ck = np.concatenate([[0], np.cumsum(lens_k)]).astype(np.int32)
    kernel = varlen_attention(3, int(cq[-1]), int(ck[-1]), heads, dim, max(lens_q), max(lens_k))
    q, k, v = (rand((int(c[-1]), heads, dim), "float16", s) for c, s in ((cq, 1), (ck, 2), (ck, 3)))
    out = as_f32(kernel(q, k, v, cq, ck))
    np.testing.assert_array_equal(as_f32(kernel.run(q, k, v, cq, ck, arch="blackhole")), out)
    qf, kf, vf = (as_f32(x).astype(np.float64) for x in (q, k, v))
    for b in range(3):
        s = qf[cq[b]:cq[b + 1], 0] @ kf[ck[b]:ck[b + 1], 0].T / np.sqrt(dim)
        p = np.exp(s - s.max(-1, keepdims=True))
        want = (p / p.sum(-1, keepdims=True)) @ vf[ck[b]:ck[b + 1], 0]
        np.testing.assert_allclose(out[cq[b]:cq[b + 1], 0], want, rtol=2e-2, atol=1e-2)


def test_gemm_result_to_offset_rows():
    """A GEMM accumulator copied straight to rows 5 .. of each block (packed into an output
    CB, then scattered row by row)."""

    @T.prim_func
    def main(A: T.Tensor((128, 64), "float32"), B: T.Tensor((64, 64), "float32"),
             C: T.Tensor((160, 64), "float32")):
        with T.Kernel(4) as bx:
            A_s = T.alloc_shared((32, 64), "float32")
            B_s = T.alloc_shared((64, 64), "float32")
            C_l = T.alloc_fragment((32, 64), "float32")
            T.copy(A[bx * 32:bx * 32 + 32, :], A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, C_l, clear_accum=True)
            T.copy(C_l, C[bx * 32 + 5:bx * 32 + 37, :])

    a, b = rand((128, 64), "float32", 1), rand((64, 64), "float32", 2)
    c = np.zeros((160, 64), np.float32)
    tilelang.compile(main)(a, b, c)
    want = np.zeros((160, 64))
    want[5:133] = a.astype(np.float64) @ b
    np.testing.assert_allclose(c, want, rtol=1e-2, atol=5e-2)  # the matrix engine's TF32
    assert not c[:5].any() and not c[133:].any()


def shifted_back(M, N, block_M, dtype, read_shift, store_shift, pad):
    """TileLang's safe-value test: ``B[r - store_shift] = A[r - read_shift]`` per block, rows
    before ``A``'s start reading ``T.annotate_safe_value`` ``pad``, rows before ``B``'s start
    not stored."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, 32), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, 32), dtype)
            T.annotate_safe_value({A: pad})
            for i, j in T.Parallel(block_M, 32):
                A_shared[i, j] = A[by * block_M + i - read_shift, bx * 32 + j]
            for i, j in T.Parallel(block_M, 32):
                B[by * block_M + i - store_shift, bx * 32 + j] = A_shared[i, j]

    return main


def test_rows_before_the_start():
    """Blocks whose rows start before the tensor's (``by * 64 - 10``): those rows read the
    tensor's safe value (0, or ``T.annotate_safe_value``'s, in each dtype's bits) and stores
    there are dropped, as in TileLang; the tile row of a negative start is not split into an
    unsigned ``(i - 10) / 32`` (it read past the buffer)."""
    M, N = 128, 64
    for dtype, read_shift, store_shift, pad in (("float16", 10, 0, 10.0), ("float32", 3, 0, 0.0),
                                                 ("bfloat16", 10, 7, -2.5)):
        kernel = tilelang.compile(shifted_back(M, N, 64, dtype, read_shift, store_shift, pad))
        a = rand((M, N), dtype, 2)
        b = np.zeros((M, N), a.dtype)
        kernel(a, b)
        moved = np.full((M, N), pad)
        moved[read_shift:] = as_f32(a)[:M - read_shift]
        want = np.zeros((M, N))
        want[:M - store_shift] = moved[store_shift:]
        np.testing.assert_array_equal(as_f32(b), want)
