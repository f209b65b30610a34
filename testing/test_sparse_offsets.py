"""Block offsets read from an index tensor under a guard (TileLang's native sparse attention,
examples/deepseek_nsa): ``i_s = BlockIndices[...] * BS`` places the K / V blocks a query reads,
and ``if i_s <= i_t and i_s >= 0:`` skips the indices that select nothing.  The guard bounds
the offset to the tensor, so the reader reads the index's word (as for a branch on a tensor
element) and uses it as the block's tile offset; a mask reading the offset is computed by the
reader from the same word (docs/SUPPORT.md "Block offsets read from tensors").  Every kernel
runs on the emulator and is compared with numpy."""

import numpy as np
import pytest

pytest.importorskip("tilelang_tt.runtime.mockbuild", reason="emulator driver not installed")

import tilelang_tt as tilelang
import tilelang_tt.language as T
from helpers import as_f32, rand
from tilelang_tt import TTCompileError

LOG2E = 1.44269504


@tilelang.jit(out_idx=[-1])
def block_gather(n_blocks, seq_len, dim, selected, guard="bounded", stride=32,
                 dtype="float16"):
    """Out block bx = the sum of the key blocks Idx[bx, :] selects (the guard skips the others)."""
    BS = 32

    @T.prim_func
    def main(K: T.Tensor((seq_len, dim), dtype), Idx: T.Tensor((n_blocks, selected), "int32"),
             O: T.Tensor((n_blocks * BS, dim), dtype)):
        with T.Kernel(n_blocks, threads=128) as bx:
            K_s = T.alloc_shared((BS, dim), dtype)
            acc = T.alloc_fragment((BS, dim), "float32")
            T.clear(acc)
            for i in T.serial(selected):
                i_s = Idx[bx, i] * stride
                if guard == "bounded":
                    if i_s >= 0 and i_s < seq_len:
                        T.copy(K[i_s:i_s + BS, :], K_s)
                        for r, c in T.Parallel(BS, dim):
                            acc[r, c] += K_s[r, c]
                elif guard == "end":
                    if i_s >= 0 and i_s + BS <= seq_len:
                        T.copy(K[i_s:i_s + BS, :], K_s)
                        for r, c in T.Parallel(BS, dim):
                            acc[r, c] += K_s[r, c]
                else:  # only a lower bound: the block can reach past K's end
                    if i_s >= 0:
                        T.copy(K[i_s:i_s + BS, :], K_s)
                        for r, c in T.Parallel(BS, dim):
                            acc[r, c] += K_s[r, c]
            T.copy(acc, O[bx * BS:(bx + 1) * BS, :])

    return main


@tilelang.jit(out_idx=[-1])
def block_scatter(n_blocks, dim, dtype="float16"):
    """Out block Dst[bx] = 2 * X block bx: the store's offset is read from a tensor."""
    BS = 32

    @T.prim_func
    def main(X: T.Tensor((n_blocks * BS, dim), dtype), Dst: T.Tensor((n_blocks,), "int32"),
             O: T.Tensor((n_blocks * BS, dim), dtype)):
        with T.Kernel(n_blocks, threads=128) as bx:
            X_s = T.alloc_shared((BS, dim), dtype)
            Y_s = T.alloc_shared((BS, dim), dtype)
            T.copy(X[bx * BS:(bx + 1) * BS, :], X_s)
            for r, c in T.Parallel(BS, dim):
                Y_s[r, c] = X_s[r, c] * 2.0
            o = Dst[bx] * BS
            if o >= 0 and o + BS <= n_blocks * BS:
                T.copy(Y_s, O[o:o + BS, :])

    return main


@tilelang.jit(out_idx=[-1])
def sparse_attention(batch, seq_len, heads, dim, selected, block_size=32, dtype="float16"):
    """One query token per block (bx), its `heads` heads a block of rows (one KV head), the key
    blocks it attends to chosen by BlockIndices, causal within the block."""
    scale = (1.0 / dim) ** 0.5 * LOG2E
    BS = block_size
    G = heads

    @T.prim_func
    def main(Q: T.Tensor((batch, seq_len, heads, dim), dtype),
             K: T.Tensor((batch, seq_len, 1, dim), dtype),
             V: T.Tensor((batch, seq_len, 1, dim), dtype),
             BlockIndices: T.Tensor((batch, seq_len, 1, selected), "int32"),
             Output: T.Tensor((batch, seq_len, heads, dim), dtype)):
        with T.Kernel(seq_len, batch, threads=32) as (bx, bz):
            Q_shared = T.alloc_shared([G, dim], dtype)
            K_shared = T.alloc_shared([BS, dim], dtype)
            V_shared = T.alloc_shared([BS, dim], dtype)
            O_shared = T.alloc_shared([G, dim], dtype)
            acc_s = T.alloc_fragment([G, BS], "float32")
            acc_s_cast = T.alloc_fragment([G, BS], dtype)
            acc_o = T.alloc_fragment([G, dim], "float32")
            m = T.alloc_fragment([G], "float32")
            m_prev = T.alloc_fragment([G], "float32")
            rescale = T.alloc_fragment([G], "float32")
            row_sum = T.alloc_fragment([G], "float32")
            denom = T.alloc_fragment([G], "float32")
            T.copy(Q[bz, bx, :, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(denom, 0)
            T.fill(m, -T.infinity("float32"))
            for i in T.Pipelined(selected, num_stages=1):
                start = BlockIndices[bz, bx, 0, i] * BS
                if start <= bx and start >= 0:
                    T.copy(K[bz, start:start + BS, 0, :], K_shared)
                    for h, j in T.Parallel(G, BS):
                        acc_s[h, j] = T.if_then_else(bx >= start + j, 0, -T.infinity("float32"))
                    T.gemm(Q_shared, K_shared, acc_s, transpose_B=True)
                    T.copy(m, m_prev)
                    T.reduce_max(acc_s, m, dim=1, clear=True)
                    for h in T.Parallel(G):
                        m[h] = T.max(m[h], m_prev[h])
                    for h in T.Parallel(G):
                        rescale[h] = T.exp2(m_prev[h] * scale - m[h] * scale)
                    for h, j in T.Parallel(G, BS):
                        acc_s[h, j] = T.exp2(acc_s[h, j] * scale - m[h] * scale)
                    T.reduce_sum(acc_s, row_sum, dim=1)
                    for h in T.Parallel(G):
                        denom[h] = denom[h] * rescale[h] + row_sum[h]
                    T.copy(acc_s, acc_s_cast)
                    for h, j in T.Parallel(G, dim):
                        acc_o[h, j] *= rescale[h]
                    T.copy(V[bz, start:start + BS, 0, :], V_shared)
                    T.gemm(acc_s_cast, V_shared, acc_o)
            for h, j in T.Parallel(G, dim):
                acc_o[h, j] /= denom[h]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, bx, :, :])

    return main


def test_block_gather_guarded_offsets():
    """K blocks at offsets Idx * 32 under `if i_s >= 0 and i_s < seq_len:`: indices -1 and
    past the end are skipped, a repeated index reads its block twice; a block reaching into
    the tile padding of a tensor of 48 rows reads zeros there."""
    n_blocks, seq_len, dim, selected = 4, 128, 32, 3
    kernel = block_gather(n_blocks, seq_len, dim, selected)
    tensors = {t["name"]: t for t in kernel.plan["tensors"]}
    assert tensors["Idx"]["scalars"]
    assert "= 0u" not in kernel.sources["reader.cpp"]  # the guard bounds it: no run-time check
    k = rand((seq_len, dim), "float16", 2)
    idx = np.array([[0, -1, 3], [2, 2, 7], [-1, -1, -1], [1, 4, 3]], np.int32)
    out = as_f32(kernel(k, idx))
    kf = as_f32(k).astype(np.float64)
    for b in range(n_blocks):
        want = sum((kf[i * 32:(i + 1) * 32] for i in idx[b] if 0 <= i * 32 < seq_len),
                   np.zeros((32, dim)))
        np.testing.assert_allclose(out[b * 32:(b + 1) * 32], want, rtol=1e-2, atol=1e-2)
    # 48 keys: the block at 32 reaches into the padding up to 64, which reads zeros (TileLang's
    # safe value past a tensor's end)
    kernel = block_gather(2, 48, dim, 2)
    k = rand((48, dim), "float16", 4)
    idx = np.array([[1, 0], [-1, 1]], np.int32)
    out = as_f32(kernel(k, idx))
    kf = np.zeros((64, dim))
    kf[:48] = as_f32(k)
    for b in range(2):
        want = sum((kf[i * 32:(i + 1) * 32] for i in idx[b] if 0 <= i * 32 < 48),
                   np.zeros((32, dim)))
        np.testing.assert_allclose(out[b * 32:(b + 1) * 32], want, rtol=1e-2, atol=1e-2)


def test_unbounded_offsets_read_zeros_misaligned_gathered():
    """Without an upper bound (`if i_s >= 0:`) the block can reach past K: the reader checks
    the tile when it runs and a block past K's end reads zeros (TileLang's safe value); an
    offset Idx * 16 is not a tile offset for every index: gathered row by row; a store at an offset read
    from a tensor: refused (two blocks may store the same block)."""
    kernel = block_gather(2, 64, 32, 3, guard="lower")
    assert kernel.plan["tensors"][1]["scalars"]
    k = rand((64, 32), "float16", 3)
    idx = np.array([[0, 2, 1], [7, -1, 1]], np.int32)  # 2 and 7: past K's 2 blocks
    out = as_f32(kernel(k, idx))
    kf = as_f32(k).astype(np.float64)
    for b in range(2):
        want = sum((kf[i * 32:(i + 1) * 32] for i in idx[b] if 0 <= i < 2), np.zeros((32, 32)))
        np.testing.assert_allclose(out[b * 32:(b + 1) * 32], want, rtol=1e-2, atol=1e-2)
    # an offset Idx * 16 (not a tile offset for every index) is gathered row by row
    # (testing/test_unaligned_rows.py): blocks at rows 16 and 0, the guard skipping -1 and 3
    kernel = block_gather(2, 64, 32, 2, guard="end", stride=16)
    k = rand((64, 32), "float16", 5)
    idx = np.array([[1, -1], [0, 3]], np.int32)
    out, kf = as_f32(kernel(k, idx)), as_f32(k).astype(np.float64)
    for b in range(2):
        want = sum((kf[i * 16:i * 16 + 32] for i in idx[b] if 0 <= i * 16 <= 32),
                   np.zeros((32, 32)))
        np.testing.assert_allclose(out[b * 32:(b + 1) * 32], want, rtol=1e-2, atol=1e-2)
    # a block stored at an offset read from a tensor: blocks may store the same elements
    with pytest.raises(TTCompileError, match="blocks race on tensor O"):
        block_scatter(4, 64)


def nsa_reference(q, k, v, indices, block_size):
    """Attention of each query token (all heads) over the selected key blocks, causal."""
    q, k, v = (as_f32(x).astype(np.float64) for x in (q, k, v))
    batch, seq_len, heads, dim = q.shape
    out = np.zeros_like(q)
    for b in range(batch):
        for t in range(seq_len):
            keys = [j for i in indices[b, t, 0] if 0 <= i * block_size <= t
                    for j in range(i * block_size, min((i + 1) * block_size, t + 1))]
            if not keys:
                continue
            s = q[b, t] @ k[b, keys, 0].T / np.sqrt(dim)
            p = np.exp(s - s.max(-1, keepdims=True))
            out[b, t] = (p / p.sum(-1, keepdims=True)) @ v[b, keys, 0]
    return out


def test_native_sparse_attention_forward():
    """TileLang's NSA forward kernel shape: 16 query heads of one KV head as a block of rows,
    key blocks chosen per token (-1 and blocks after the token are skipped), causal mask
    `bx >= start + j` reading the selected offset."""
    batch, seq_len, heads, dim, selected = 1, 64, 16, 32, 2
    kernel = sparse_attention(batch, seq_len, heads, dim, selected)
    q = rand((batch, seq_len, heads, dim), "float16", 4)
    k = rand((batch, seq_len, 1, dim), "float16", 5)
    v = rand((batch, seq_len, 1, dim), "float16", 6)
    rng = np.random.default_rng(7)
    idx = np.full((batch, seq_len, 1, selected), -1, np.int32)
    for t in range(seq_len):
        choice = rng.permutation(t // 32 + 1)[:selected]
        idx[0, t, 0, :len(choice)] = choice
    idx[0, 40, 0, 1] = 1  # token 40 also selects its own block
    idx[0, 10, 0, 1] = 1  # a block after token 10: the guard skips it
    out = as_f32(kernel(q, k, v, idx))
    want = nsa_reference(q, k, v, idx, 32)
    np.testing.assert_allclose(out, want, rtol=1e-2, atol=1e-2)
