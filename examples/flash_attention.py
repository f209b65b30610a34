"""Flash attention forward, TileLang's kernel (tile-ai/tilelang
examples/flash_attention/example_mha_fwd_bhsd.py) with bf16 for its fp16
and the (batch, head) dims of Q, K, V flattened into the rows: for each block of queries, a loop over
key/value blocks keeps a running row maximum, a running row sum and an output accumulator
that is rescaled by a per-row factor before the next ``T.gemm`` into it.  The scores are
cast to bf16 and are the A operand of that GEMM.

On Tensix the running values are circular buffers that the compute kernel reads and refills
every iteration; ``acc_o`` gets each ``P @ V`` added to it (docs/PIPELINE.md,
"Loop-carried state").  With ``is_causal`` the loop stops at the last key block a query
block sees (TileLang's bound) and the scores start from TileLang's index mask
(``T.if_then_else(bx * block_M + i >= k * block_N + j, 0, -inf)``): the reader writes the
mask block (1.0 / 0.0) from the indices and the compute kernel selects with ``where_tile``.

    tilelang-tt run examples/flash_attention.py:attention
    tilelang-tt run examples/flash_attention.py:attention_causal
    python examples/flash_attention.py
"""

import ml_dtypes
import numpy as np

import tilelang_tt
import tilelang_tt.language as T


def flashattn(batch, heads, seq_len, dim, is_causal, block_M=32, block_N=32, num_stages=1):
    """Q, K, V, Output: [batch * heads * seq_len, dim] (BHSD with the leading dims
    flattened)."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    shape = [batch * heads * seq_len, dim]
    dtype = T.bfloat16
    accum_dtype = T.float32

    @T.prim_func
    def main(
        Q: T.Tensor(shape, dtype),
        K: T.Tensor(shape, dtype),
        V: T.Tensor(shape, dtype),
        Output: T.Tensor(shape, dtype),
    ):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=128) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([block_M, dim], dtype)
            acc_s = T.alloc_fragment([block_M, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
            acc_o = T.alloc_fragment([block_M, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_M], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_M], accum_dtype)
            scores_scale = T.alloc_fragment([block_M], accum_dtype)
            scores_sum = T.alloc_fragment([block_M], accum_dtype)
            logsum = T.alloc_fragment([block_M], accum_dtype)

            base = (bz * heads + by) * seq_len
            T.copy(Q[base + bx * block_M, 0], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            loop_range = (
                T.min(T.ceildiv(seq_len, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                if is_causal else T.ceildiv(seq_len, block_N)
            )

            for k in T.Pipelined(loop_range, num_stages=num_stages):
                T.copy(K[base + k * block_N, 0], K_shared)
                if is_causal:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0,
                                                     -T.infinity(acc_s.dtype))
                else:
                    T.clear(acc_s)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True,
                       policy=T.GemmWarpPolicy.FullRow)

                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_M):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)

                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]

                T.copy(V[base + k * block_N, 0], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[base + bx * block_M, 0])

    return main


def reference(q, k, v, batch, heads, seq_len, dim, is_causal):
    """softmax(Q K^T / sqrt(dim)) V per (batch, head) (causal: key <= query), in float32."""
    qf, kf, vf = [np.asarray(x).astype(np.float32).reshape(batch * heads, seq_len, dim)
                  for x in (q, k, v)]
    s = qf @ kf.transpose(0, 2, 1) / np.sqrt(dim)
    if is_causal:
        s = np.where(np.tril(np.ones((seq_len, seq_len), bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return (p @ vf).reshape(batch * heads * seq_len, dim)


BATCH, HEADS, SEQ_LEN, DIM = 1, 2, 128, 64
attention = flashattn(BATCH, HEADS, SEQ_LEN, DIM, is_causal=False)
attention_causal = flashattn(BATCH, HEADS, SEQ_LEN, DIM, is_causal=True)

if __name__ == "__main__":
    rng = np.random.default_rng(0)
    q, k, v = [rng.standard_normal((BATCH * HEADS * SEQ_LEN, DIM)).astype(ml_dtypes.bfloat16)
               for _ in range(3)]
    for is_causal, func in ((False, attention), (True, attention_causal)):
        kernel = tilelang_tt.compile(func, out_idx=-1)
        out = kernel(q, k, v).astype(np.float32)
        ref = reference(q, k, v, BATCH, HEADS, SEQ_LEN, DIM, is_causal)
        np.testing.assert_allclose(out, ref, rtol=1e-2, atol=1e-2)
        print(f"flash attention (causal={is_causal}) matches numpy "
              f"(max abs error {np.abs(out - ref).max():.1e})")
