"""Loop extents read from tensor elements and block reads that may leave the tensor
(docs/SUPPORT.md "Loop extents read from tensor elements", "Block offsets read from tensors").

``for k in T.serial(Lens[bx]):`` / ``T.Pipelined(T.ceildiv(cu[b + 1] - cu[b], 32))``: the reader
reads the elements before the loop and every kernel running it uses the same word (a loop
whose extent is 0 or negative runs 0 times); a block read at an offset from the loop variable,
or from an index tensor no guard bounds (NSA decoding's ``if i_s >= 0:``), is checked per tile
when the reader runs: a tile outside the tensor reads zeros (TileLang's safe value).  Every
kernel runs on the emulator against numpy."""

import numpy as np
import pytest

pytest.importorskip("tilelang_tt.runtime.mockbuild", reason="emulator driver not installed")

import tilelang_tt as tilelang
import tilelang_tt.language as T
from helpers import as_f32, rand
from tilelang_tt import TTUnsupportedError

LOG2E = 1.44269504


@tilelang.jit(out_idx=[-1])
def block_sums(n_out, n_blocks, dim, store_in_loop=False, dtype="float16"):
    """Out block bx = the sum of A's first Lens[bx] blocks of 32 rows."""

    @T.prim_func
    def main(A: T.Tensor((n_blocks * 32, dim), dtype), Lens: T.Tensor((n_out,), "int32"),
             C: T.Tensor((n_out * 32, dim), dtype)):
        with T.Kernel(n_out, threads=128) as bx:
            S = T.alloc_shared((32, dim), dtype)
            Acc = T.alloc_fragment((32, dim), "float32")
            T.clear(Acc)
            if store_in_loop:
                T.copy(Acc, C[bx * 32, 0])
            n = Lens[bx]
            for k in T.serial(n):
                T.copy(A[k * 32, 0], S)
                for i, j in T.Parallel(32, dim):
                    Acc[i, j] = Acc[i, j] + S[i, j]
                if store_in_loop:  # the writer runs the loop too
                    T.copy(Acc, C[bx * 32, 0])
            if not store_in_loop:
                T.copy(Acc, C[bx * 32, 0])

    return main


def test_element_loop_extent_block_sums():
    """Lengths 0, 1, negative (0 iterations), A's 3 blocks and 5 (two blocks past A: zeros);
    the same with the store inside the loop (the writer takes the word as well)."""
    a = rand((96, 32), "float16", 1)
    af = as_f32(a).astype(np.float64)
    lens = np.array([0, 1, -2, 3, 5], np.int32)
    for store_in_loop in (False, True):
        kernel = block_sums(5, 3, 32, store_in_loop)
        reader = kernel.sources["reader.cpp"]
        assert "Lens_value" in reader and "read_tile_value(Lens_value_cb" in \
            kernel.sources["compute.cpp"]
        assert ("Lens_value_w_cb" in kernel.sources["writer.cpp"]) == store_in_loop
        out = as_f32(kernel(a, lens))
        for b, n in enumerate(lens):
            want = sum((af[i * 32:(i + 1) * 32] for i in range(max(n, 0)) if i < 3),
                       np.zeros((32, 32)))
            np.testing.assert_allclose(out[b * 32:(b + 1) * 32], want, rtol=1e-2, atol=1e-2)


@tilelang.jit(out_idx=[-1])
def varlen_attention(batch, total, dim, dtype="float16"):
    """One 32-row query block per sequence b, attending to the keys cu[b]:cu[b + 1] (cu[b] a
    multiple of 32) in blocks of 32, online softmax carried across the loop."""
    scale = (1.0 / dim) ** 0.5 * LOG2E

    @T.prim_func
    def main(Q: T.Tensor((batch * 32, dim), dtype), K: T.Tensor((total, dim), dtype),
             V: T.Tensor((total, dim), dtype), cu: T.Tensor((batch + 1,), "int32"),
             O: T.Tensor((batch * 32, dim), dtype)):
        with T.Kernel(batch, threads=128) as b:
            Q_s = T.alloc_shared((32, dim), dtype)
            K_s = T.alloc_shared((32, dim), dtype)
            V_s = T.alloc_shared((32, dim), dtype)
            s = T.alloc_fragment((32, 32), "float32")
            s_cast = T.alloc_fragment((32, 32), dtype)
            acc = T.alloc_fragment((32, dim), "float32")
            m = T.alloc_fragment((32,), "float32")
            m_prev = T.alloc_fragment((32,), "float32")
            rescale = T.alloc_fragment((32,), "float32")
            row_sum = T.alloc_fragment((32,), "float32")
            denom = T.alloc_fragment((32,), "float32")
            T.copy(Q[b * 32, 0], Q_s)
            T.fill(acc, 0)
            T.fill(denom, 0)
            T.fill(m, -T.infinity("float32"))
            start = cu[b] // 32 * 32  # a tile offset for every value
            for k in T.Pipelined(T.ceildiv(cu[b + 1] - cu[b], 32), num_stages=1):
                T.copy(K[start + k * 32, 0], K_s)
                T.clear(s)
                T.gemm(Q_s, K_s, s, transpose_B=True)
                for h, j in T.Parallel(32, 32):  # the last block's keys past the sequence
                    s[h, j] = T.if_then_else(k * 32 + j < cu[b + 1] - cu[b], s[h, j],
                                             -T.infinity("float32"))
                T.copy(m, m_prev)
                T.reduce_max(s, m, dim=1, clear=True)
                for h in T.Parallel(32):
                    m[h] = T.max(m[h], m_prev[h])
                for h in T.Parallel(32):
                    rescale[h] = T.exp2(m_prev[h] * scale - m[h] * scale)
                for h, j in T.Parallel(32, 32):
                    s[h, j] = T.exp2(s[h, j] * scale - m[h] * scale)
                T.reduce_sum(s, row_sum, dim=1)
                for h in T.Parallel(32):
                    denom[h] = denom[h] * rescale[h] + row_sum[h]
                T.copy(s, s_cast)
                for h, j in T.Parallel(32, dim):
                    acc[h, j] *= rescale[h]
                T.copy(V[start + k * 32, 0], V_s)
                T.gemm(s_cast, V_s, acc)
            for h, j in T.Parallel(32, dim):
                acc[h, j] = T.if_then_else(denom[h] > 0, acc[h, j] / denom[h], 0)
            T.copy(acc, O[b * 32, 0])

    return main


def _attention(q, k, v):
    s = q @ k.T / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True) @ v


def test_varlen_attention_element_extents():
    """Sequences of 0 keys, 1 block, 2 blocks and 54 keys from 96 (the mask reading cu drops
    the last block's keys past 150; those from 128 are past K's end: zeros, as TileLang reads
    them), within 1e-2 of a float64 reference."""
    batch, total, dim = 4, 128, 32
    kernel = varlen_attention(batch, total, dim)
    q, k, v = (rand(s, "float16", i) for i, s in
               enumerate([(batch * 32, dim), (total, dim), (total, dim)]))
    cu = np.array([0, 0, 32, 96, 150], np.int32)
    out = as_f32(kernel(q, k, v, cu)).astype(np.float64)
    qf, kf, vf = (as_f32(x).astype(np.float64) for x in (q, k, v))
    kp, vp = np.zeros((256, dim)), np.zeros((256, dim))
    kp[:total], vp[:total] = kf, vf
    for b in range(batch):
        lo, hi = cu[b], cu[b + 1]
        want = np.zeros((32, dim)) if hi <= lo else \
            _attention(qf[b * 32:(b + 1) * 32], kp[lo:hi], vp[lo:hi])
        np.testing.assert_allclose(out[b * 32:(b + 1) * 32], want, rtol=1e-2, atol=1e-2)


@tilelang.jit(out_idx=[-1])
def sparse_decode(batch, seq_len, heads, dim, selected, dtype="float16"):
    """NSA decoding: one query token of `heads` heads (a block of rows, one KV head) attends to
    the key blocks BlockIndices selects; `if i_s >= 0:` skips -1 but does not bound the block
    to K (an index past K's end reads zeros)."""
    scale = (1.0 / dim) ** 0.5 * LOG2E
    BS = 32

    @T.prim_func
    def main(Q: T.Tensor((batch, 1, heads, dim), dtype),
             K: T.Tensor((batch, seq_len, 1, dim), dtype),
             V: T.Tensor((batch, seq_len, 1, dim), dtype),
             BlockIndices: T.Tensor((batch, 1, 1, selected), "int32"),
             O: T.Tensor((batch, 1, heads, dim), dtype)):
        with T.Kernel(batch, threads=32) as bz:
            Q_s = T.alloc_shared([heads, dim], dtype)
            K_s = T.alloc_shared([BS, dim], dtype)
            V_s = T.alloc_shared([BS, dim], dtype)
            s = T.alloc_fragment([heads, BS], "float32")
            s_cast = T.alloc_fragment([heads, BS], dtype)
            acc = T.alloc_fragment([heads, dim], "float32")
            m = T.alloc_fragment([heads], "float32")
            m_prev = T.alloc_fragment([heads], "float32")
            rescale = T.alloc_fragment([heads], "float32")
            row_sum = T.alloc_fragment([heads], "float32")
            denom = T.alloc_fragment([heads], "float32")
            T.copy(Q[bz, 0, :, :], Q_s)
            T.fill(acc, 0)
            T.fill(denom, 0)
            T.fill(m, -T.infinity("float32"))
            for i in T.Pipelined(selected, num_stages=0):
                i_s = BlockIndices[bz, 0, 0, i] * BS
                if i_s >= 0:
                    T.copy(K[bz, i_s:i_s + BS, 0, :], K_s)
                    T.clear(s)
                    T.gemm(Q_s, K_s, s, transpose_B=True)
                    T.copy(m, m_prev)
                    T.reduce_max(s, m, dim=1, clear=True)
                    for h in T.Parallel(heads):
                        m[h] = T.max(m[h], m_prev[h])
                    for h in T.Parallel(heads):
                        rescale[h] = T.exp2(m_prev[h] * scale - m[h] * scale)
                    for h, j in T.Parallel(heads, BS):
                        s[h, j] = T.exp2(s[h, j] * scale - m[h] * scale)
                    T.reduce_sum(s, row_sum, dim=1)
                    for h in T.Parallel(heads):
                        denom[h] = denom[h] * rescale[h] + row_sum[h]
                    T.copy(s, s_cast)
                    for h, j in T.Parallel(heads, dim):
                        acc[h, j] *= rescale[h]
                    T.copy(V[bz, i_s:i_s + BS, 0, :], V_s)
                    T.gemm(s_cast, V_s, acc)
            for h, j in T.Parallel(heads, dim):
                acc[h, j] /= denom[h]
            T.copy(acc, O[bz, 0, :, :])

    return main


def test_sparse_decode_indices_past_the_tensor():
    """Indices -1 (skipped), in K, and 2 / 3 past K's 2 blocks of the same batch (zeros there,
    not the next batch's rows): within 1e-2 of a float64 reference over zero-padded K / V."""
    batch, seq_len, heads, dim, selected = 2, 64, 16, 32, 3
    kernel = sparse_decode(batch, seq_len, heads, dim, selected)
    reader = kernel.sources["reader.cpp"]
    # the guard proves the start: only the end is checked per tile, else zeros
    assert reader.count("static_cast<int32_t>(2)") == 2 and "K_s_l1)) = 0u" in reader
    assert "static_cast<int32_t>(0) <=" not in reader
    q = rand((batch, 1, heads, dim), "float16", 5)
    k = rand((batch, seq_len, 1, dim), "float16", 6)
    v = rand((batch, seq_len, 1, dim), "float16", 7)
    idx = np.array([[[[1, 2, -1]]], [[[0, -1, 3]]]], np.int32)
    out = as_f32(kernel(q, k, v, idx)).astype(np.float64)
    qf, kf, vf = (as_f32(x).astype(np.float64) for x in (q, k, v))
    for b in range(batch):
        blocks = [i for i in idx[b, 0, 0] if i >= 0]
        kp = np.concatenate([kf[b, i * 32:(i + 1) * 32, 0] if i < 2 else np.zeros((32, dim))
                             for i in blocks])
        vp = np.concatenate([vf[b, i * 32:(i + 1) * 32, 0] if i < 2 else np.zeros((32, dim))
                             for i in blocks])
        np.testing.assert_allclose(out[b, 0], _attention(qf[b, 0], kp, vp),
                                   rtol=1e-2, atol=1e-2)


def test_store_at_loop_offset_refused():
    """A store whose block moves with a loop whose extent reads a tensor element cannot be
    bounded to the tensor (nor kept from racing): refused, naming the tensor and the line."""

    @T.prim_func
    def main(A: T.Tensor((128, 64), "bfloat16"), Lens: T.Tensor((4,), "int32"),
             C: T.Tensor((128, 64), "bfloat16")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((32, 64), "bfloat16")
            for k in T.serial(Lens[bx]):
                T.copy(A[k * 32, 0], S)
                T.copy(S, C[k * 32, 0])

    with pytest.raises(TTUnsupportedError) as err:
        tilelang.compile(main)
    text = str(err.value)
    assert "tensor C" in text and "T.copy(S, C[k * 32, 0])" in text


@tilelang.jit(out_idx=[-1])
def gemm_k_steps(M, N, K, dtype="bfloat16"):
    """Row block by of C = A[:, :32 * Ks[by]] @ B[:32 * Ks[by], :]: a K loop read from a
    tensor, its A and B blocks past K reading zeros."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             Ks: T.Tensor((M // 32,), "int32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(N // 32, M // 32, threads=128) as (bx, by):
            A_s = T.alloc_shared((32, 32), dtype)
            B_s = T.alloc_shared((32, 32), dtype)
            acc = T.alloc_fragment((32, 32), "float32")
            T.clear(acc)
            for k in T.Pipelined(Ks[by], num_stages=2):
                T.copy(A[by * 32, k * 32], A_s)
                T.copy(B[k * 32, bx * 32], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[by * 32, bx * 32])

    return main


def test_gemm_element_k_loop():
    """K steps 0, 1, 3 (all of K) and 5 (two past K: A's columns and B's rows read zeros) per
    row block; the accumulator carried across the loop."""
    M, N, K = 128, 64, 96
    kernel = gemm_k_steps(M, N, K)
    a, b = rand((M, K), "bfloat16", 1), rand((K, N), "bfloat16", 2)
    ks = np.array([0, 1, 3, 5], np.int32)
    out = kernel(a, b, ks)
    af, bf = as_f32(a).astype(np.float64), as_f32(b).astype(np.float64)
    for i, n in enumerate(ks):
        n = min(max(n, 0), 3)
        want = af[i * 32:(i + 1) * 32, :n * 32] @ bf[:n * 32]
        np.testing.assert_allclose(out[i * 32:(i + 1) * 32], want, rtol=1e-2, atol=5e-2)
