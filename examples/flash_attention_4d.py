"""Flash attention forward on 4-D tensors, as TileLang writes it (tile-ai/tilelang
examples/flash_attention/example_mha_fwd_bhsd.py and example_mha_fwd_bshd.py), bf16 for
their fp16.

``flashattn_bhsd``: Q, K, V, Output are ``[batch, heads, seq_len, dim]`` and each block
copies the 2-D slice ``Q[bz, by, bx * block_M:(bx + 1) * block_M, :]`` of one head.
``flashattn_bshd``: the same kernel on ``[batch, seq_len, heads, dim]`` tensors, slices
``Q[bz, bx * block_M:(bx + 1) * block_M, by, :]`` (the head index lies between the sliced
dims).  ``is_causal=True`` is TileLang's causal variant (examples/flash_attention.py).

On Tensix a tensor is stored in 32x32 tiles of a 2-D plane with the other dims batched
(docs/SUPPORT.md, "Tensors of rank 3 and 4"): for BHSD that plane is ``(seq_len, dim)``,
the last two dims; for BSHD the compiler picks the same ``(seq_len, dim)`` plane from the
slices the kernel copies, and the host moves the head axis out of it when it writes the
tensor to the device (and back when it reads the output).

    tilelang-tt run examples/flash_attention_4d.py:attention_bhsd
    python examples/flash_attention_4d.py
"""

import ml_dtypes
import numpy as np

import tilelang_tt
import tilelang_tt.language as T


def flashattn_bhsd(batch, heads, seq_len, dim, block_M=32, block_N=32, num_stages=1,
                   is_causal=False):
    """Q, K, V, Output: [batch, heads, seq_len, dim]."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    shape = [batch, heads, seq_len, dim]
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

            T.copy(Q[bz, by, bx * block_M:(bx + 1) * block_M, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            loop_range = (
                T.min(T.ceildiv(seq_len, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                if is_causal else T.ceildiv(seq_len, block_N)
            )

            for k in T.Pipelined(loop_range, num_stages=num_stages):
                T.copy(K[bz, by, k * block_N:(k + 1) * block_N, :], K_shared)
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

                T.copy(V[bz, by, k * block_N:(k + 1) * block_N, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, by, bx * block_M:(bx + 1) * block_M, :])

    return main


def flashattn_bshd(batch, heads, seq_len, dim, block_M=32, block_N=32, num_stages=1,
                   is_causal=False):
    """Q, K, V, Output: [batch, seq_len, heads, dim]."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    shape = [batch, seq_len, heads, dim]
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

            T.copy(Q[bz, bx * block_M:(bx + 1) * block_M, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            loop_range = (
                T.min(T.ceildiv(seq_len, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                if is_causal else T.ceildiv(seq_len, block_N)
            )

            for k in T.Pipelined(loop_range, num_stages=num_stages):
                T.copy(K[bz, k * block_N:(k + 1) * block_N, by, :], K_shared)
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

                T.copy(V[bz, k * block_N:(k + 1) * block_N, by, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, bx * block_M:(bx + 1) * block_M, by, :])

    return main


def reference_bhsd(q, k, v, is_causal=False):
    """softmax(Q K^T / sqrt(dim)) V per (batch, head) of [batch, heads, seq_len, dim]
    (causal: key <= query), fp32."""
    qf, kf, vf = [np.asarray(x).astype(np.float32) for x in (q, k, v)]
    s = qf @ kf.transpose(0, 1, 3, 2) / np.sqrt(qf.shape[-1])
    if is_causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return p @ vf


def reference_bshd(q, k, v, is_causal=False):
    """The same on [batch, seq_len, heads, dim] tensors."""
    q, k, v = [np.asarray(x).transpose(0, 2, 1, 3) for x in (q, k, v)]
    return reference_bhsd(q, k, v, is_causal).transpose(0, 2, 1, 3)


BATCH, HEADS, SEQ_LEN, DIM = 2, 2, 64, 64
attention_bhsd = flashattn_bhsd(BATCH, HEADS, SEQ_LEN, DIM)
attention_bshd = flashattn_bshd(BATCH, HEADS, SEQ_LEN, DIM)

if __name__ == "__main__":
    rng = np.random.default_rng(0)
    for name, func, ref, shape in (
            ("BHSD", attention_bhsd, reference_bhsd, (BATCH, HEADS, SEQ_LEN, DIM)),
            ("BSHD", attention_bshd, reference_bshd, (BATCH, SEQ_LEN, HEADS, DIM))):
        q, k, v = [rng.standard_normal(shape).astype(ml_dtypes.bfloat16) for _ in range(3)]
        kernel = tilelang_tt.compile(func, out_idx=-1)
        out = kernel(q, k, v).astype(np.float32)
        expect = ref(q, k, v)
        np.testing.assert_allclose(out, expect, rtol=1e-2, atol=1e-2)
        print(f"flash attention {name} {list(shape)} matches numpy "
              f"(max abs error {np.abs(out - expect).max():.1e})")
