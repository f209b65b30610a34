"""Flash attention backward as TileLang programs write it (the four kernels of TileLang's
examples/flash_attention/example_mha_bwd_bhsd.py, written here in the same idiom): a forward
pass that also stores the row log-sum-exp into a [batch, heads, seq] tensor slice, the
Delta = rowsum(O * dO) preparation, the backward kernel (per K/V block a loop over the query
blocks, dQ accumulated by T.atomic_add into a block that moves with the loop) and the dQ
fp32 -> fp16 conversion with its T.annotate_layout; checked on the emulator against a numpy
reference within TileLang's tolerances."""

import numpy as np
import pytest

pytest.importorskip("tilelang_tt.runtime.mockbuild", reason="emulator driver not installed")

import tilelang_tt as tilelang
import tilelang_tt.language as T

LOG2E = 1.44269504


@tilelang.jit(out_idx=[3, 4])
def attn_fwd_lse(batch, heads, seq_len, dim, block_M, block_N):
    scale = (1.0 / dim) ** 0.5 * LOG2E
    shape = [batch, heads, seq_len, dim]
    dtype, accum_dtype = T.float16, T.float32

    @T.prim_func
    def fwd(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
            O: T.Tensor(shape, dtype), LSE: T.Tensor([batch, heads, seq_len], accum_dtype)):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=128) as (bx, by, bz):
            q_s = T.alloc_shared([block_M, dim], dtype)
            k_s = T.alloc_shared([block_N, dim], dtype)
            v_s = T.alloc_shared([block_N, dim], dtype)
            s = T.alloc_fragment([block_M, block_N], accum_dtype)
            p = T.alloc_fragment([block_M, block_N], dtype)
            o = T.alloc_fragment([block_M, dim], accum_dtype)
            m = T.alloc_fragment([block_M], accum_dtype)
            m_prev = T.alloc_fragment([block_M], accum_dtype)
            alpha = T.alloc_fragment([block_M], accum_dtype)
            row_sum = T.alloc_fragment([block_M], accum_dtype)
            l = T.alloc_fragment([block_M], accum_dtype)

            T.copy(Q[bz, by, bx * block_M:(bx + 1) * block_M, :], q_s)
            T.fill(o, 0)
            T.fill(l, 0)
            T.fill(m, -T.infinity(accum_dtype))
            for k in T.Pipelined(T.ceildiv(seq_len, block_N), num_stages=1):
                T.copy(K[bz, by, k * block_N:(k + 1) * block_N, :], k_s)
                T.clear(s)
                T.gemm(q_s, k_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(V[bz, by, k * block_N:(k + 1) * block_N, :], v_s)
                T.copy(m, m_prev)
                T.reduce_max(s, m, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    m[i] = T.max(m[i], m_prev[i])
                for i in T.Parallel(block_M):
                    alpha[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                for i, j in T.Parallel(block_M, dim):
                    o[i, j] *= alpha[i]
                for i, j in T.Parallel(block_M, block_N):
                    s[i, j] = T.exp2(s[i, j] * scale - m[i] * scale)
                T.copy(s, p)
                T.gemm(p, v_s, o, policy=T.GemmWarpPolicy.FullRow)
                T.reduce_sum(s, row_sum, dim=1)
                for i in T.Parallel(block_M):
                    l[i] = l[i] * alpha[i] + row_sum[i]
            for i, j in T.Parallel(block_M, dim):
                o[i, j] /= l[i]
            T.copy(o, O[bz, by, bx * block_M:(bx + 1) * block_M, :])
            for i in T.Parallel(block_M):
                l[i] = T.log2(l[i]) + m[i] * scale
            T.copy(l, LSE[bz, by, bx * block_M:(bx + 1) * block_M])

    return fwd


@tilelang.jit(out_idx=[2])
def attn_bwd_prep(batch, heads, seq_len, dim, blk=32):
    shape = [batch, heads, seq_len, dim]
    dtype, accum_dtype = T.float16, T.float32

    @T.prim_func
    def prep(O: T.Tensor(shape, dtype), dO: T.Tensor(shape, dtype),
             Delta: T.Tensor([batch, heads, seq_len], accum_dtype)):
        with T.Kernel(heads, T.ceildiv(seq_len, blk), batch) as (bx, by, bz):
            o = T.alloc_fragment([blk, blk], dtype)
            do = T.alloc_fragment([blk, blk], dtype)
            acc = T.alloc_fragment([blk, blk], accum_dtype)
            delta = T.alloc_fragment([blk], accum_dtype)
            T.clear(acc)
            for c in range(T.ceildiv(dim, blk)):
                T.copy(O[bz, bx, by * blk:(by + 1) * blk, c * blk:(c + 1) * blk], o)
                T.copy(dO[bz, bx, by * blk:(by + 1) * blk, c * blk:(c + 1) * blk], do)
                for i, j in T.Parallel(blk, blk):
                    acc[i, j] += o[i, j] * do[i, j]
            T.reduce_sum(acc, delta, 1)
            T.copy(delta, Delta[bz, bx, by * blk:(by + 1) * blk])

    return prep


@tilelang.jit(out_idx=[1])
def attn_bwd_post(batch, heads, seq_len, dim, blk=64):
    shape = [batch, heads, seq_len, dim]

    @T.prim_func
    def post(dQ: T.Tensor(shape, T.float32), dQ_out: T.Tensor(shape, T.float16)):
        with T.Kernel(T.ceildiv(seq_len, blk), heads, batch, threads=128) as (bx, by, bz):
            # TileLang reorders dQ for its vectorised atomics; a hint without meaning here
            T.annotate_layout({dQ: T.Layout(dQ.shape, lambda b, h, l, d: [b, h, l // 8, d])})
            T.copy(dQ[bz, by, bx * blk:(bx + 1) * blk, :],
                   dQ_out[bz, by, bx * blk:(bx + 1) * blk, :])

    return post


@tilelang.jit
def attn_bwd(batch, heads, seq_len, dim, block_M, block_N, is_causal=False):
    sm_scale = (1.0 / dim) ** 0.5
    scale = sm_scale * LOG2E
    shape = [batch, heads, seq_len, dim]
    dtype, accum_dtype = T.float16, T.float32

    @T.prim_func
    def bwd(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
            dO: T.Tensor(shape, dtype), LSE: T.Tensor([batch, heads, seq_len], accum_dtype),
            Delta: T.Tensor([batch, heads, seq_len], accum_dtype),
            dQ: T.Tensor(shape, accum_dtype), dK: T.Tensor(shape, dtype),
            dV: T.Tensor(shape, dtype)):
        with T.Kernel(heads, T.ceildiv(seq_len, block_M), batch, threads=128) as (bx, by, bz):
            k_s = T.alloc_shared([block_M, dim], dtype)
            v_s = T.alloc_shared([block_M, dim], dtype)
            q_s = T.alloc_shared([block_N, dim], dtype)
            do_s = T.alloc_shared([block_N, dim], dtype)
            lse_s = T.alloc_shared([block_N], accum_dtype)
            delta_s = T.alloc_shared([block_N], accum_dtype)
            pT = T.alloc_fragment([block_M, block_N], accum_dtype)
            dpT = T.alloc_fragment([block_M, block_N], accum_dtype)
            pT_cast = T.alloc_fragment([block_M, block_N], dtype)
            dsT_cast = T.alloc_fragment([block_M, block_N], dtype)
            dsT_s = T.alloc_shared([block_M, block_N], dtype)
            dv = T.alloc_fragment([block_M, dim], accum_dtype)
            dk = T.alloc_fragment([block_M, dim], accum_dtype)
            dq = T.alloc_fragment([block_N, dim], accum_dtype)

            T.copy(K[bz, bx, by * block_M:(by + 1) * block_M, :], k_s)
            T.copy(V[bz, bx, by * block_M:(by + 1) * block_M, :], v_s)
            T.clear(dv)
            T.clear(dk)
            start = T.floordiv(by * block_M, block_N) if is_causal else 0
            for k in T.Pipelined(start, T.ceildiv(seq_len, block_N), num_stages=2):
                T.copy(Q[bz, bx, k * block_N:(k + 1) * block_N, :], q_s)
                T.clear(pT)
                T.gemm(k_s, q_s, pT, transpose_B=True)
                T.copy(LSE[bz, bx, k * block_N:(k + 1) * block_N], lse_s)
                for i, j in T.Parallel(block_M, block_N):
                    pT[i, j] = T.exp2(pT[i, j] * scale - lse_s[j])
                if is_causal:  # key row i of this block may only see query columns j >= i
                    for i, j in T.Parallel(block_M, block_N):
                        pT[i, j] = T.if_then_else(by * block_M + i <= k * block_N + j, pT[i, j], 0)
                T.copy(dO[bz, bx, k * block_N:(k + 1) * block_N, :], do_s)
                T.clear(dpT)
                T.gemm(v_s, do_s, dpT, transpose_B=True)
                T.copy(pT, pT_cast)
                T.gemm(pT_cast, do_s, dv)
                T.copy(Delta[bz, bx, k * block_N:(k + 1) * block_N], delta_s)
                for i, j in T.Parallel(block_M, block_N):
                    dsT_cast[i, j] = pT[i, j] * (dpT[i, j] - delta_s[j]) * sm_scale
                T.gemm(dsT_cast, q_s, dk)
                T.copy(dsT_cast, dsT_s)
                T.clear(dq)
                T.gemm(dsT_s, k_s, dq, transpose_A=True)
                for i, j in T.Parallel(block_N, dim):
                    T.atomic_add(dQ[bz, bx, k * block_N + i, j], dq[i, j])
            T.copy(dv, dV[bz, bx, by * block_M:(by + 1) * block_M, :])
            T.copy(dk, dK[bz, bx, by * block_M:(by + 1) * block_M, :])

    return bwd


def reference(q, k, v, do, causal=False):
    """O, LSE (base 2, as the kernels keep it), dQ, dK, dV of softmax(Q K^T / sqrt(d)) V."""
    q, k, v, do = (x.astype(np.float64) for x in (q, k, v, do))
    s = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    s_max = s.max(-1, keepdims=True)
    e = np.exp(s - s_max)
    p = e / e.sum(-1, keepdims=True)
    o = p @ v
    lse = (np.log(e.sum(-1)) + s_max[..., 0]) * LOG2E
    dv = p.swapaxes(-1, -2) @ do
    dp = do @ v.swapaxes(-1, -2)
    ds = p * (dp - (o * do).sum(-1, keepdims=True)) / np.sqrt(q.shape[-1])
    return o, lse, ds @ k, ds.swapaxes(-1, -2) @ q, dv


def test_flash_attention_backward_bhsd():
    """Four query and key blocks per head: each core runs one head's key blocks in order and
    adds every one's dQ contribution into the four dQ blocks (one read-modify-write each per
    key block)."""
    B, H, S, D, bm, bn = 1, 2, 128, 32, 32, 32
    rng = np.random.default_rng(0)
    q, k, v, do = (rng.standard_normal((B, H, S, D)).astype(np.float16) for _ in range(4))
    o_ref, lse_ref, dq_ref, dk_ref, dv_ref = reference(q, k, v, do)

    o, lse = attn_fwd_lse(B, H, S, D, bm, bn)(q, k, v)
    np.testing.assert_allclose(o.astype(np.float32), o_ref, rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(lse, lse_ref, rtol=1e-2, atol=1e-2)
    delta = attn_bwd_prep(B, H, S, D)(o, do)
    np.testing.assert_allclose(delta, (o.astype(np.float64) * do).sum(-1), rtol=1e-2, atol=1e-2)

    kernel = attn_bwd(B, H, S, D, bm, bn)
    dq = np.zeros((B, H, S, D), np.float32)
    dk = np.empty((B, H, S, D), np.float16)
    dv = np.empty((B, H, S, D), np.float16)
    kernel(q, k, v, do, lse, delta, dq, dk, dv)
    # the blocks that update one dQ block (by) run on one core, in order
    assert kernel.plan["grid"] == [H, 1, B] and kernel.plan["rmw_semaphore"] is not None
    dq16 = attn_bwd_post(B, H, S, D)(dq)
    for got, want in ((dq16, dq_ref), (dk, dk_ref), (dv, dv_ref)):
        np.testing.assert_allclose(got.astype(np.float32), want, rtol=1e-2, atol=1e-2)


def test_causal_flash_attention_backward():
    """The causal kernel: key block by starts its query loop at by * block_M // block_N (a
    bound known at run time; the blocks of one head run on one core in order) and masks the
    scores above the diagonal; lse and Delta from the reference."""
    B, H, S, D, bm, bn = 1, 1, 128, 32, 64, 32
    rng = np.random.default_rng(1)
    q, k, v, do = (rng.standard_normal((B, H, S, D)).astype(np.float16) for _ in range(4))
    o, lse, dq_ref, dk_ref, dv_ref = reference(q, k, v, do, causal=True)
    delta = (o * do.astype(np.float64)).sum(-1).astype(np.float32)
    dq = np.zeros((B, H, S, D), np.float32)
    dk = np.empty((B, H, S, D), np.float16)
    dv = np.empty((B, H, S, D), np.float16)
    attn_bwd(B, H, S, D, bm, bn, True)(q, k, v, do, lse.astype(np.float32), delta, dq, dk, dv)
    for got, want in ((dq, dq_ref), (dk, dk_ref), (dv, dv_ref)):
        np.testing.assert_allclose(got.astype(np.float32), want, rtol=1e-2, atol=1e-2)
