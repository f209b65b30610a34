"""TileLang's block-sparse flash attention (examples/blocksparse_attention): the K / V steps a
per-block mask turns off are skipped.  The mask row of the query block is copied into a
fragment (``T.copy(BlockSparseMask[bz, by, bx, :], block_mask)``) and read by element
(``if block_mask[k] != 0:``): A0.1.4.1 makes those reads the mask tensor's elements (a scalar
tensor, docs/SUPPORT.md "Branches on tensor elements").  The running max, the log-sum and the
output accumulator are carried from one K step to the next and updated only under the branch:
A0.4 refills their carries inside the branch, so a step that is skipped leaves them as they
were.  Every kernel runs on the emulator and is compared with numpy."""

import numpy as np
import pytest

pytest.importorskip("tilelang_tt.runtime.mockbuild", reason="emulator driver not installed")

import tilelang_tt as tilelang
import tilelang_tt.language as T
from helpers import as_f32, rand
from tilelang_tt import TTUnsupportedError

LOG2E = 1.44269504


@tilelang.jit(out_idx=[4])
def blocksparse_flashattn(batch, heads, seq_len, dim, downsample_len, is_causal,
                          dtype="float16", mask_dtype="bool", block_M=64, block_N=64):
    scale = (1.0 / dim) ** 0.5 * LOG2E
    shape = [batch, heads, seq_len, dim]
    mask_shape = [batch, heads, downsample_len, downsample_len]
    accum_dtype = "float32"

    @T.prim_func
    def main(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
             BlockSparseMask: T.Tensor(mask_shape, mask_dtype), Output: T.Tensor(shape, dtype)):
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
            block_mask = T.alloc_fragment([downsample_len], mask_dtype)

            T.copy(Q[bz, by, bx * block_M:(bx + 1) * block_M, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))
            T.copy(BlockSparseMask[bz, by, bx, :], block_mask)

            loop_range = (T.min(T.ceildiv(seq_len, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                          if is_causal else T.ceildiv(seq_len, block_N))
            for k in T.Pipelined(loop_range, num_stages=1):
                if block_mask[k] != 0:
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


def reference(q, k, v, block_mask, block, causal):
    """Softmax attention over the keys the block mask (and causality) allows, in float64; a
    query row that may see no key is NaN (0 / 0)."""
    q, k, v = (as_f32(x).astype(np.float64) for x in (q, k, v))
    seq, dim = q.shape[-2:]
    allowed = np.kron(block_mask.astype(bool), np.ones((block, block), bool))[..., :seq, :seq]
    if causal:
        allowed = allowed & np.tril(np.ones((seq, seq), bool))
    s = np.einsum("bhsd,bhtd->bhst", q, k) / np.sqrt(dim)
    s = np.where(allowed, s, -np.inf)
    with np.errstate(invalid="ignore"):
        p = np.exp(s - s.max(-1, keepdims=True))
        p = p / p.sum(-1, keepdims=True)
    return np.einsum("bhst,bhtd->bhsd", p, v)


def masks(shape, causal, seed):
    """Block masks: the example's top-2 per query block (its block 0 always on), random, all on,
    and one query block of every head with no key block (NaN rows)."""
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal(shape)
    scores[..., 0] = 100
    topk = np.zeros(shape, bool)
    np.put_along_axis(topk, np.argsort(-scores, axis=-1)[..., :2], True, axis=-1)
    out = {"topk": topk, "random": rng.random(shape) > 0.5, "all": np.ones(shape, bool)}
    none_row = rng.random(shape) > 0.3
    none_row[..., 1, :] = False
    out["none_row"] = none_row
    if causal:
        out = {n: np.tril(m) for n, m in out.items()}
    return out


# 128x128 blocks of dim 128: the GEMMs' accumulators are computed in DST sub-blocks.  (Blocks
# with block_M > block_N and causal are not tested: the example's scores_max is the max of the
# step alone, so a query row whose keys in a step are all masked gets exp2(-inf + inf) there,
# NaN in TileLang too.)
# Each of causal / not, float16 / bfloat16, bool / uint8 masks and 64 / 128 blocks once.
@pytest.mark.parametrize("causal,dtype,mask_dtype,block,dim", [
    (True, "bfloat16", "uint8", 64, 64), (False, "float16", "bool", 128, 128)],
    ids=["causal_bf16_uint8", "full_128_blocks"])
def test_blocksparse_attention(causal, dtype, mask_dtype, block, dim):
    batch, heads, seq = 1, 2, 256
    n = seq // block
    kernel = blocksparse_flashattn(batch, heads, seq, dim, n, causal, dtype=dtype,
                                   mask_dtype=mask_dtype, block_M=block, block_N=block)
    tensors = {t["name"]: t for t in kernel.plan["tensors"]}
    assert tensors["BlockSparseMask"]["scalars"]  # read by element, no fragment of it
    cbs = {c["name"] for c in kernel.plan["circular_buffers"]}
    assert "block_mask" not in cbs and "BlockSparseMask_value" in cbs
    q, k, v = (rand((batch, heads, seq, dim), dtype, s) for s in (1, 2, 3))
    for name, mask in masks((batch, heads, n, n), causal, 4).items():
        out = as_f32(kernel(q, k, v, mask.astype(mask_dtype)))
        want = reference(q, k, v, mask, block, causal)
        # a query row that sees no key: 0 * recip(0); the device's product is 0 (the
        # emulator's model of it), TileLang's 0 / 0 on CUDA NaN
        empty = np.isnan(want)
        assert empty.any() == (name == "none_row"), name
        assert not np.isnan(out).any() and (out[empty] == 0).all(), name
        np.testing.assert_allclose(out[~empty], want[~empty], rtol=1e-2, atol=1e-2,
                                   err_msg=name)


def test_carried_sum_under_an_index_branch():
    """A sum carried over the loop and updated only in the steps a branch on the loop variable
    takes (every kernel takes the same branch; before, refused as "written inside a branch")."""
    M, N, bn = 64, 256, 32

    @T.prim_func
    def odd_blocks(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, bn), "float32")):
        with T.Kernel(1) as _bx:
            X_s = T.alloc_shared((M, bn), "float32")
            S = T.alloc_fragment((M, bn), "float32")
            T.clear(S)
            for ko in T.serial(N // bn):
                T.copy(X[0, ko * bn], X_s)
                if ko % 2 == 1:
                    for i, j in T.Parallel(M, bn):
                        S[i, j] = S[i, j] + X_s[i, j]
            T.copy(S, Y[0, 0])

    art = tilelang.compile(odd_blocks, target="tenstorrent", out_idx=-1)
    x = rand((M, N), "float32", 5)
    want = sum(x[:, k * bn:(k + 1) * bn] for k in range(1, N // bn, 2))
    np.testing.assert_allclose(art(x), want, rtol=1e-6, atol=1e-6)


# a 32-bit mask (one-byte masks copied into a fragment: test_blocksparse_attention)
@pytest.mark.parametrize("mask_dtype", ["int32"])
def test_mask_row_copied_in_the_loop(mask_dtype):
    """The mask row copied into a fragment inside the K loop, read by element after it in the
    same iteration: each read is the tensor's element of that iteration's row."""
    M, N, bn, steps = 64, 256, 64, 4

    @T.prim_func
    def masked_sum(X: T.Tensor((M, N), "float32"), Mask: T.Tensor((steps, 8), mask_dtype),
                   Y: T.Tensor((M, bn), "float32")):
        with T.Kernel(1) as _bx:
            X_s = T.alloc_shared((M, bn), "float32")
            S = T.alloc_fragment((M, bn), "float32")
            row = T.alloc_fragment((8,), mask_dtype)
            T.clear(S)
            for ko in T.serial(steps):
                T.copy(Mask[ko, :], row)
                if row[ko + 1] != 0:
                    T.copy(X[0, ko * bn], X_s)
                    for i, j in T.Parallel(M, bn):
                        S[i, j] = S[i, j] + X_s[i, j]
            T.copy(S, Y[0, 0])

    art = tilelang.compile(masked_sum, target="tenstorrent", out_idx=-1)
    assert {t["name"]: t for t in art.plan["tensors"]}["Mask"]["scalars"]
    x = rand((M, N), "float32", 6)
    rng = np.random.default_rng(7)
    for mask in (rng.integers(-2, 3, (steps, 8)), np.zeros((steps, 8), int)):
        mask = mask.astype(mask_dtype)
        want = sum((x[:, k * bn:(k + 1) * bn] for k in range(steps) if mask[k, k + 1]),
                   np.zeros((M, bn), np.float32))
        np.testing.assert_allclose(art(x, mask), want, rtol=1e-6, atol=1e-6)


def test_carried_value_read_outside_the_branch_is_refused():
    """A running max updated under the branch and also read after it in the same iteration:
    the carry would be consumed on iterations that do not refill it."""
    M, N, bm, bn = 64, 256, 64, 64

    @T.prim_func
    def row_max(A: T.Tensor((M, N), "float16"), Mask: T.Tensor((N // bn,), "bool"),
                Out: T.Tensor((M, bn), "float16")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((bm, bn), "float16")
            m = T.alloc_fragment((bm,), "float32")
            acc = T.alloc_fragment((bm, bn), "float32")
            O_s = T.alloc_shared((bm, bn), "float16")
            T.fill(m, -T.infinity("float32"))
            T.clear(acc)
            for k in T.Pipelined(N // bn, num_stages=1):
                if Mask[k]:
                    T.copy(A[0, k * bn], A_s)
                    T.reduce_max(A_s, m, dim=1, clear=False)
                for i, j in T.Parallel(bm, bn):
                    acc[i, j] = acc[i, j] + m[i]
            T.copy(acc, O_s)
            T.copy(O_s, Out[0, 0])

    with pytest.raises(TTUnsupportedError, match=r"m carries its value .* branch") as err:
        tilelang.compile(row_max, target="tenstorrent", out_idx=-1)
    assert "test_blocksparse_attention.py" in str(err.value)


def test_mask_row_read_before_its_copy_is_refused():
    """A mask fragment read in an iteration before that iteration's copy holds the previous
    row: not the tensor's element at the read, so it stays a fragment and is refused, naming
    it and the line."""
    M, N, bn, steps = 64, 256, 64, 4

    @T.prim_func
    def stale_row(X: T.Tensor((M, N), "float32"), Mask: T.Tensor((steps, 8), "bool"),
                  Y: T.Tensor((M, bn), "float32")):
        with T.Kernel(1) as _bx:
            X_s = T.alloc_shared((M, bn), "float32")
            S = T.alloc_fragment((M, bn), "float32")
            row = T.alloc_fragment((8,), "bool")
            T.clear(S)
            T.copy(Mask[0, :], row)
            for ko in T.serial(steps):
                if row[ko] != 0:
                    T.copy(X[0, ko * bn], X_s)
                    for i, j in T.Parallel(M, bn):
                        S[i, j] = S[i, j] + X_s[i, j]
                T.copy(Mask[ko, :], row)
            T.copy(S, Y[0, 0])

    with pytest.raises(TTUnsupportedError, match=r"row\[") as err:
        tilelang.compile(stale_row, target="tenstorrent", out_idx=-1)
    assert "test_blocksparse_attention.py" in str(err.value)
