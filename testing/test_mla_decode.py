"""DeepSeek MLA decoding as TileLang's ``examples/deepseek_mla/example_mla_decode.py`` writes
it (its no-split kernel, in our words): the scores ``Q @ KV^T + Q_pe @ K_pe^T`` start with
``T.gemm(..., clear_accum=True)`` (which does not read the accumulator: not a value carried
from the previous iteration) and add the positional part with a second GEMM; the key blocks
are sliced between let-bound ``kv_start`` / ``kv_end`` (a constant extent once the bindings
are inlined).  Run on the emulator against a float64 softmax attention."""

import numpy as np
import pytest

pytest.importorskip("tilelang_tt.runtime.mockbuild", reason="emulator driver not installed")

import tilelang_tt as tilelang
import tilelang_tt.language as T


@tilelang.jit(out_idx=[4])
def mla_decode(batch, heads, seqlen_kv, dim, pe_dim, block_N, block_H, scale):
    dtype, accum_dtype = T.float16, T.float32
    scale = scale * 1.44269504  # log2(e)

    @T.prim_func
    def main(
        Q: T.Tensor([batch, heads, dim], dtype),
        Q_pe: T.Tensor([batch, heads, pe_dim], dtype),
        KV: T.Tensor([batch, seqlen_kv, 1, dim], dtype),
        K_pe: T.Tensor([batch, seqlen_kv, 1, pe_dim], dtype),
        Output: T.Tensor([batch, heads, dim], dtype),
    ):
        with T.Kernel(heads // block_H, batch, threads=256) as (hid, bid):
            Q_shared = T.alloc_shared([block_H, dim], dtype)
            Q_pe_shared = T.alloc_shared([block_H, pe_dim], dtype)
            KV_shared = T.alloc_shared([block_N, dim], dtype)
            K_pe_shared = T.alloc_shared([block_N, pe_dim], dtype)
            S_shared = T.alloc_shared([block_H, block_N], dtype)
            acc_s = T.alloc_fragment([block_H, block_N], accum_dtype)
            acc_o = T.alloc_fragment([block_H, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_H], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_H], accum_dtype)
            scores_scale = T.alloc_fragment([block_H], accum_dtype)
            scores_sum = T.alloc_fragment([block_H], accum_dtype)
            logsum = T.alloc_fragment([block_H], accum_dtype)

            T.copy(Q[bid, hid * block_H:(hid + 1) * block_H, :], Q_shared)
            T.copy(Q_pe[bid, hid * block_H:(hid + 1) * block_H, :], Q_pe_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))
            for k in T.Pipelined(T.ceildiv(seqlen_kv, block_N), num_stages=2):
                kv_start = k * block_N
                kv_end = (k + 1) * block_N
                T.copy(KV[bid, kv_start:kv_end, 0, :], KV_shared)
                T.copy(K_pe[bid, kv_start:kv_end, 0, :], K_pe_shared)
                T.gemm(Q_shared, KV_shared, acc_s, transpose_B=True, clear_accum=True)
                T.gemm(Q_pe_shared, K_pe_shared, acc_s, transpose_B=True)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_H):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_H):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                T.copy(acc_s, S_shared)
                for i in T.Parallel(block_H):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.gemm(S_shared, KV_shared, acc_o)
            for i, j in T.Parallel(block_H, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, Output[bid, hid * block_H:(hid + 1) * block_H, :])

    return main


def test_mla_decode_matches_softmax_attention():
    batch, heads, ctx, dim, pe = 2, 64, 192, 64, 32
    scale = (dim + pe) ** -0.5
    rng = np.random.default_rng(0)
    q, qp = (rng.standard_normal((batch, heads, d)).astype(np.float16) for d in (dim, pe))
    kv, kp = (rng.standard_normal((batch, ctx, 1, d)).astype(np.float16) for d in (dim, pe))
    out = mla_decode(batch, heads, ctx, dim, pe, 64, 32, scale)(q, qp, kv, kp)
    query = np.concatenate([q, qp], -1).astype(np.float64)
    key = np.concatenate([kv, kp], -1)[:, :, 0].astype(np.float64)
    s = np.einsum("bhd,bsd->bhs", query, key) * scale
    p = np.exp(s - s.max(-1, keepdims=True))
    want = np.einsum("bhs,bsd->bhd", p / p.sum(-1, keepdims=True), kv[:, :, 0].astype(np.float64))
    np.testing.assert_allclose(out.astype(np.float64), want, atol=1e-2)
