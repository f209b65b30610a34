"""Tensors of rank 3 and 4 whose blocks are 2-D slices (issue 8 item 4): TileLang's BHSD
(``Q[bz, by, bx * block_M:(bx + 1) * block_M, :]``) and BSHD (``Q[bz, bx * block_M:..., by, :]``,
the head index between the sliced dims) copies, elementwise ops and GEMMs, and flash attention
forward on 4-D tensors, on the emulator against numpy."""

import ml_dtypes
import numpy as np
import pytest

import flash_attention_4d as fa4
import tilelang_tt
import tilelang_tt.language as T
from helpers import as_f32, assert_balanced, assert_matmul, rand
from tilelang_tt import attrs
from tilelang_tt.codegen.plan import build_plan
from tilelang_tt.passes.common import to_py

needs_emulator = pytest.mark.skipif(
    __import__("importlib").util.find_spec("tilelang_tt.runtime.mockbuild") is None,
    reason="emulator driver not installed")


def layouts(func):
    mod = tilelang_tt.lower(func, stop_after="A1")
    f = next(f for _, f in mod.functions.items())
    return {d["name"]: d for d in to_py(f.attrs[attrs.LAYOUT_DESC])}


def bshd_to_bhsd(B, S, H, D, block=32, dtype="float32"):
    """Y[b, h, s, :] = X[b, s, h, :] block by block: X sliced BSHD, Y sliced BHSD."""

    @T.prim_func
    def main(X: T.Tensor((B, S, H, D), dtype), Y: T.Tensor((B, H, S, D), dtype)):
        with T.Kernel(S // block, H, B) as (bx, by, bz):
            X_shared = T.alloc_shared((block, D), dtype)
            T.copy(X[bz, bx * block:(bx + 1) * block, by, :], X_shared)
            T.copy(X_shared, Y[bz, by, bx * block:(bx + 1) * block, :])

    return main


def bshd_to_bhsd_global(B, S, H, D, block=32, dtype="float32"):
    """The same as one T.copy between the two global tensors (staged through a 2-D block)."""

    @T.prim_func
    def main(X: T.Tensor((B, S, H, D), dtype), Y: T.Tensor((B, H, S, D), dtype)):
        with T.Kernel(S // block, H, B) as (bx, by, bz):
            T.copy(X[bz, bx * block:(bx + 1) * block, by, :],
                   Y[bz, by, bx * block:(bx + 1) * block, :])

    return main


def scale_add_rank3(S, H, D, block_S=32, dtype="float32"):
    """Z[s, h, :] = 2 * X[s, h, :] + Y[s, h, :] element by element on [seq, heads, dim] tensors
    (each block a [block_S, D] slice of one head), in TileLang's elementwise idiom."""

    @T.prim_func
    def main(X: T.Tensor((S, H, D), dtype), Y: T.Tensor((S, H, D), dtype),
             Z: T.Tensor((S, H, D), dtype)):
        with T.Kernel(S // block_S, H) as (bx, by):
            for i, j in T.Parallel(block_S, D):
                Z[bx * block_S + i, by, j] = X[bx * block_S + i, by, j] * 2.0 + \
                    Y[bx * block_S + i, by, j]

    return main


def batched_matmul_msk(batch, M, N, K, block_M=32, block_N=32, block_K=32, dtype="bfloat16"):
    """C[:, b, :] = A[:, b, :] @ B[b]: A is [M, batch, K] and C [M, batch, N] (their blocks
    slice dims 0 and 2; C is written straight from the accumulator), B is [batch, K, N] (its
    blocks slice the last two dims)."""
    accum_dtype = "float32"

    @T.prim_func
    def main(A: T.Tensor((M, batch, K), dtype), B: T.Tensor((batch, K, N), dtype),
             C: T.Tensor((M, batch, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), batch) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M:(by + 1) * block_M, bz, k * block_K:(k + 1) * block_K],
                       A_shared)
                T.copy(B[bz, k * block_K:(k + 1) * block_K, bx * block_N:(bx + 1) * block_N],
                       B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M:(by + 1) * block_M, bz, bx * block_N:(bx + 1) * block_N])

    return main


# ---- A1: the tiled plane is chosen from the copies ------------------------------------------

def test_a1_plane_from_copies():
    lay = layouts(bshd_to_bhsd(2, 64, 3, 64))
    x, y = lay["X"], lay["Y"]
    assert x["axes"] == [0, 2, 1, 3] and x["tiles"] == [2 * 3 * 2, 2]  # (b, h, s) rows, d cols
    assert y["axes"] == [0, 1, 2, 3] and y["tiles"] == [2 * 3 * 2, 2]
    assert not attrs.check(attrs.LAYOUT_DESC, x)
    lay = layouts(batched_matmul_msk(2, 64, 64, 96))
    assert lay["A"]["axes"] == [1, 0, 2] and lay["A"]["tiles"] == [4, 3]
    assert lay["B"]["axes"] == [0, 1, 2] and lay["C"]["axes"] == [1, 0, 2]


def test_a1_heads_need_not_be_tile_multiples():
    """BSHD with 3 heads: the head dim is batched, only (seq, dim) must be multiples of 32."""
    assert layouts(fa4.flashattn_bshd(1, 3, 64, 32))["Q"]["tiles"] == [6, 1]


def test_conflicting_planes_rejected():
    """One tensor sliced BSHD-style in one copy and BHSD-style in another."""
    B, S, H, D = 1, 64, 64, 32

    @T.prim_func
    def main(X: T.Tensor((B, S, H, D), "float32"), Y: T.Tensor((B, S, H, D), "float32")):
        with T.Kernel(S // 32, 2, B) as (bx, by, bz):
            a = T.alloc_shared((32, D), "float32")
            b = T.alloc_shared((32, D), "float32")
            T.copy(X[bz, bx * 32:(bx + 1) * 32, by, :], a)
            T.copy(X[bz, by, bx * 32:(bx + 1) * 32, :], b)
            for i, j in T.Parallel(32, D):
                a[i, j] = a[i, j] + b[i, j]
            T.copy(a, Y[bz, bx * 32:(bx + 1) * 32, by, :])

    with pytest.raises(tilelang_tt.TTLayoutError) as err:
        tilelang_tt.lower(main)
    msg = str(err.value)
    assert "tensor X" in msg and "dims [1, 3]" in msg and "dims [2, 3]" in msg
    assert "test_rank4.py:" in msg and "BHSD" in msg
    assert "T.copy(X[bz, by, bx * 32:(bx + 1) * 32, :], b)" in msg  # the other copy's line


def test_sharded_bshd_rejected():
    func = tilelang_tt.annotate_tt_layout(
        fa4.flashattn_bshd(2, 2, 64, 64),
        {"Q": {"memory": "DRAM", "layout": "sharded", "shard_grid": [2, 1]}})
    with pytest.raises(tilelang_tt.TTLayoutError,
                       match=r"Q: a sharded layout for a tensor copied as 2-D blocks over its "
                             r"dims \[1, 3\]") as err:
        tilelang_tt.lower(func)
    assert "flash_attention_4d.py:" in str(err.value) and "BHSD" in str(err.value)


@needs_emulator
def test_plane_blocks_held_as_padded_tiles():
    # the tensor's 48-wide plane dim is padded to 64 (testing/test_pad_shapes.py), and the
    # 32x48 block that copies all of it is held as 32x64 tiles (A0.5.1): the padding it copies
    # lands in the tensors' padding, which the host crops
    art = tilelang_tt.compile(bshd_to_bhsd(1, 64, 2, 48), out_idx=-1)
    x = rand((1, 64, 2, 48), "float32", 1)
    np.testing.assert_array_equal(art(x), x.transpose(0, 2, 1, 3))
    assert [t["axes"] for t in art.plan["tensors"]] == [[0, 2, 1, 3], [0, 1, 2, 3]]


# ---- on the emulator ----------------------------------------------------------------------

@needs_emulator
# (another shape, one batch of 2 heads with a 48-wide plane dim: test_plane_blocks_held_as_...)
@pytest.mark.parametrize("shape", [(2, 64, 3, 64)], ids=lambda s: "x".join(map(str, s)))
def test_copy_bshd_to_bhsd(shape):
    B, S, H, D = shape
    art = tilelang_tt.compile(bshd_to_bhsd(B, S, H, D), out_idx=-1)
    x = rand((B, S, H, D), "float32", 1)
    np.testing.assert_array_equal(art(x), x.transpose(0, 2, 1, 3))
    assert "permute_axes" in art.sources["main.cpp"]
    assert [t["axes"] for t in art.plan["tensors"]] == [[0, 2, 1, 3], [0, 1, 2, 3]]


def test_bshd_pages_read_and_written_once():
    """Each block reads the 2 tiles of one (batch, head)'s 32 sequence rows from X's
    [batch, heads] batches of (seq, dim) planes and writes them to the same pages of Y."""
    B, S, H, D = 2, 64, 3, 64
    pages = build_plan(tilelang_tt.lower(bshd_to_bhsd(B, S, H, D)), pages=True)
    n = B * H * (S // 32) * (D // 32)
    reads = sorted(p for c in pages["cores"] for p in c["reads"]["X"])
    writes = sorted(p for c in pages["cores"] for p in c["writes"]["Y"])
    assert reads == writes == list(range(n))
    # block (bx, by, bz) = (s block, head, batch) reads pages ((bz * H + by) * 2 + bx) * 2 + {0, 1}
    core = pages["cores"][0]  # work unit 0 on the first core
    assert core["start_id"] == 0 and core["reads"]["X"][:2] == [0, 1]
    unit = next(c for c in pages["cores"] if c["start_id"] == 1)  # bx = 1: rows 32..63, head 0
    assert unit["reads"]["X"][:2] == [2, 3]
    unit = next(c for c in pages["cores"] if c["start_id"] == 2)  # bx = 0, head 1
    assert unit["reads"]["X"][:2] == [4, 5]


@needs_emulator
def test_global_to_global_copy_bshd_to_bhsd():
    B, S, H, D = 2, 64, 3, 64
    art = tilelang_tt.compile(bshd_to_bhsd_global(B, S, H, D), out_idx=-1)
    x = rand((B, S, H, D), "float32", 6)
    np.testing.assert_array_equal(art(x), x.transpose(0, 2, 1, 3))


@needs_emulator
def test_elementwise_rank3_head_slices():
    S, H, D = 64, 3, 64
    art = tilelang_tt.compile(scale_add_rank3(S, H, D), out_idx=-1)
    x, y = rand((S, H, D), "float32", 2), rand((S, H, D), "float32", 3)
    np.testing.assert_array_equal(art(x, y), x * np.float32(2) + y)


@needs_emulator
def test_gemm_rank3_operand_sliced_over_dims_0_and_2():
    batch, M, N, K = 2, 64, 64, 96
    art = tilelang_tt.compile(batched_matmul_msk(batch, M, N, K), out_idx=-1)
    a, b = rand((M, batch, K), "bfloat16", 4), rand((batch, K, N), "bfloat16", 5)
    c = art(a, b)
    assert c.shape == (M, batch, N)
    for i in range(batch):
        assert_matmul(c[:, i, :], a[:, i, :], b[i], art)


# (batch, heads, seq_len, dim, block_M, block_N); the last on 64 blocks: V0 proves the blocks'
# writes disjoint axis by axis (flattened [batch * heads * seq_len, dim] offsets it cannot
# separate beyond 16 blocks), for both layouts.  The first (3 heads: not a tile multiple) in
# BSHD.  (Both layouts at dim 64 in 64 x 32 blocks: test_causal.py's 4-D flash attention.)
ATTENTION_4D = [(1, 3, 128, 32, 64, 32), (2, 4, 256, 32, 32, 64)]
ATTENTION_BHSD = ATTENTION_4D[1:]
ATTENTION_BSHD = ATTENTION_4D


def _qkv(shape, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(ml_dtypes.bfloat16) for _ in range(3)]


@needs_emulator
@pytest.mark.parametrize("shape", ATTENTION_BHSD, ids=lambda s: "x".join(map(str, s)))
def test_flash_attention_bhsd(shape):
    batch, heads, seq_len, dim, bm, bn = shape
    art = tilelang_tt.compile(fa4.flashattn_bhsd(batch, heads, seq_len, dim, bm, bn),
                              out_idx=-1)
    q, k, v = _qkv((batch, heads, seq_len, dim), seq_len + dim)
    np.testing.assert_allclose(as_f32(art(q, k, v)), fa4.reference_bhsd(q, k, v),
                               rtol=1e-2, atol=1e-2)
    assert "permute_axes" not in art.sources["main.cpp"]  # BHSD tiles the last two dims
    for name in ("reader.cpp", "compute.cpp", "writer.cpp"):
        assert_balanced(art.sources[name], name)


@needs_emulator
@pytest.mark.parametrize("shape", ATTENTION_BSHD, ids=lambda s: "x".join(map(str, s)))
def test_flash_attention_bshd(shape):
    batch, heads, seq_len, dim, bm, bn = shape
    art = tilelang_tt.compile(fa4.flashattn_bshd(batch, heads, seq_len, dim, bm, bn),
                              out_idx=-1)
    q, k, v = _qkv((batch, seq_len, heads, dim), seq_len + dim + 1)
    np.testing.assert_allclose(as_f32(art(q, k, v)), fa4.reference_bshd(q, k, v),
                               rtol=1e-2, atol=1e-2)
    assert {tuple(t["axes"]) for t in art.plan["tensors"]} == {(0, 2, 1, 3)}
