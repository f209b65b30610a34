"""Row-conditioned stores (TileLang's GQA decoding, ``examples/flash_decoding/
example_gqa_decode.py``: ``for i in T.Parallel(block_H): if i < valid_block_H: glse[...,
hid * valid_block_H + i, ...] = logsum[i]``).  A ``T.Parallel`` body that is one ``if``
without ``else`` comparing the nest's loop variables with bounds, ``if i < k:``, runs the body
for the same elements as ``T.Parallel(T.min(N, k))``; A0.1.0.1 (BoundLoopExtentsTT) rewrites
it so, then bounds and masks it as any extent (docs/SUPPORT.md "Loop extents that are not
literals").  Stores to a block buffer keep the buffer's values past ``k``; stores to a tensor
keep the tensor's values, read back, which is sound only where no other block writes those
elements: otherwise V0 refuses the race.  Each kernel runs on the emulator against numpy."""

import numpy as np
import pytest

import tilelang_tt
import tilelang_tt as tilelang
import tilelang_tt.language as T
from tilelang_tt import TTCompileError


def guarded_fragment_rows(M=64, N=64, valid=20, dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(1, threads=128) as _:
            acc = T.alloc_fragment((M, N), dtype)
            T.fill(acc, -1.0)
            for i, j in T.Parallel(M, N):
                if i < valid:
                    acc[i, j] = A[i, j] * 2.0
            T.copy(acc, B)

    return main


# inside the first face, across a face, across a tile, past the nest (clamped to its 64 rows,
# the case of valid == 64 too)
@pytest.mark.parametrize("valid", [4, 20, 33, 100])
def test_guarded_rows_of_a_fragment(valid):
    kernel = tilelang.compile(guarded_fragment_rows(valid=valid), out_idx=[1])
    a = np.random.default_rng(valid).uniform(-2, 2, (64, 64)).astype(np.float32)
    ref = np.full_like(a, -1.0)
    ref[:valid] = a[:valid] * 2.0
    np.testing.assert_allclose(kernel(a), ref, rtol=1e-5, atol=1e-5)


def guarded_rows_and_cols(M=64, N=64, rows=40, cols=24, dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(1, threads=128) as _:
            acc = T.alloc_fragment((M, N), dtype)
            T.copy(A, acc)
            for i, j in T.Parallel(M, N):
                if i < rows and j < cols:
                    acc[i, j] = T.exp(acc[i, j])
            T.copy(acc, B)

    return main


def test_guarded_rows_and_columns_of_a_fragment():
    kernel = tilelang.compile(guarded_rows_and_cols(), out_idx=[1])
    a = np.random.default_rng(7).uniform(-1, 1, (64, 64)).astype(np.float32)
    ref = a.copy()
    ref[:40, :24] = np.exp(a[:40, :24])
    np.testing.assert_allclose(kernel(a), ref, rtol=1e-3, atol=1e-3)


def guarded_head_rows(heads=128, block_H=64, valid=40, dim=32, dtype=T.float32):
    # each block owns block_H rows of O and writes its first `valid`; the rest keep O's values
    @T.prim_func
    def main(Q: T.Tensor((heads, dim), dtype), O: T.Tensor((heads, dim), dtype)):
        with T.Kernel(heads // block_H, threads=128) as hid:
            q = T.alloc_fragment((block_H, dim), dtype)
            T.copy(Q[hid * block_H:(hid + 1) * block_H, :], q)
            for i, j in T.Parallel(block_H, dim):
                if i < valid:
                    O[hid * block_H + i, j] = q[i, j] + 1.0

    return main


def test_guarded_rows_of_a_tensor_keep_the_rest():
    kernel = tilelang.compile(guarded_head_rows())
    rng = np.random.default_rng(9)
    q = rng.uniform(-1, 1, (128, 32)).astype(np.float32)
    o = rng.uniform(-1, 1, (128, 32)).astype(np.float32)
    ref = o.copy()
    for h in range(2):
        ref[h * 64:h * 64 + 40] = q[h * 64:h * 64 + 40] + 1.0
    kernel(q, o)
    np.testing.assert_allclose(o, ref, rtol=1e-5, atol=1e-5)


def test_guard_is_the_nest_extent_after_a0101():
    f = tilelang_tt.lower(guarded_fragment_rows(valid=20), stop_after="A0.1.0.1")["main"]
    text = str(f).replace("T.", "")
    assert "if i < 20" not in text
    assert "if_then_else(i < 20, A[i, j] * float32(2.0), acc[i, j])" in text


def gqa_rows(heads=128, valid=32, block_H=64, dim=32, dtype=T.float32):
    # TileLang's GQA decoding: block_H rows computed, the first `valid` stored at
    # hid * valid + i: the rows past `valid` are the next block's
    # (each row scaled by W's row: a block's rows past `valid` differ from the next block's)
    @T.prim_func
    def main(Q: T.Tensor((heads + block_H, dim), dtype), W: T.Tensor((block_H, dim), dtype),
             O: T.Tensor((heads, dim), dtype)):
        with T.Kernel(heads // valid, threads=128) as hid:
            q = T.alloc_fragment((block_H, dim), dtype)
            w = T.alloc_fragment((block_H, dim), dtype)
            T.copy(Q[hid * valid:hid * valid + block_H, :], q)
            T.copy(W, w)
            for i, j in T.Parallel(block_H, dim):
                if i < valid:
                    O[hid * valid + i, j] = q[i, j] * w[i, j]

    return main


@pytest.mark.parametrize("dtype", [T.float32, T.bfloat16])
def test_guarded_rows_another_block_owns_the_rest(dtype):
    # the rows past `valid` are the next block's: the writer writes only the block's first
    # `valid` rows (whole tiles), so the next block's rows are not written back
    kernel = tilelang.compile(gqa_rows(dtype=dtype), out_idx=[2])
    rng = np.random.default_rng(11)
    q = rng.uniform(-1, 1, (128 + 64, 32)).astype(np.float32)
    w = np.where(np.arange(64)[:, None] < 32, 1.0, -1.0) * np.ones((64, 32))
    w = w.astype(np.float32)
    if dtype == T.bfloat16:
        q = (q.view(np.uint32) & 0xFFFF0000).view(np.float32)  # bf16-exact
    np.testing.assert_allclose(np.asarray(kernel(q, w), dtype=np.float32), q[:128], rtol=0,
                               atol=0)


def test_guarded_rows_off_a_tile_boundary_are_refused():
    # TileLang's default GQA sizes: 4 valid rows per block of 64; each block's rows start at
    # hid * 4, inside a tile: its Q copy is refused, naming Q and the start
    with pytest.raises(TTCompileError, match=r"T.copy\(Q\[hid \* valid:hid \* valid \+ block_H, :\], q\).*blocks of 4 rows"):
        tilelang.compile(gqa_rows(valid=4), out_idx=[2])


def test_guarded_rows_of_part_of_a_tile_another_block_writes_are_refused():
    # 40 of 64 rows at a stride of 32: rows 32..39 of one block are the next block's first
    # rows (a race in TileLang too); the whole-tile store of rows 32..63 is refused
    with pytest.raises(TTCompileError, match=r"blocks race on tensor O"):
        tilelang.compile(overlapping_rows(), out_idx=[1])


def overlapping_rows(heads=128, dim=32, dtype=T.float32):
    @T.prim_func
    def main(Q: T.Tensor((heads + 64, dim), dtype), O: T.Tensor((heads + 64, dim), dtype)):
        with T.Kernel(heads // 32, threads=128) as hid:
            q = T.alloc_fragment((64, dim), dtype)
            T.copy(Q[hid * 32:hid * 32 + 64, :], q)
            for i, j in T.Parallel(64, dim):
                if i < 40:
                    O[hid * 32 + i, j] = q[i, j]

    return main


def gqa_lse(heads=128, groups=2, num_split=2, block_H=64, dtype=T.float32):
    valid = min(block_H, heads // groups)

    @T.prim_func
    def main(L: T.Tensor((heads, 64), dtype), Out: T.Tensor((heads, num_split), dtype)):
        glse = T.alloc_global([1, heads, num_split], dtype)
        with T.Kernel(heads // valid, num_split, threads=128) as (hid, sid):
            s = T.alloc_fragment((block_H, 64), dtype)
            logsum = T.alloc_fragment((block_H,), dtype)
            T.copy(L[hid * valid:hid * valid + block_H, :], s)
            T.reduce_sum(s, logsum, dim=1)
            for i in T.Parallel(block_H):
                if i < valid:
                    glse[0, hid * valid + i, sid] = logsum[i]
        with T.Kernel(heads, threads=128) as by:
            for k in T.Parallel(num_split):
                Out[by, k] = glse[0, by, k]

    return main


def test_vector_store_along_a_global_middle_dim_is_refused():
    # the GQA example at 128 heads in 2 groups: the guard holds for all 64 rows; the store of
    # a 1-D fragment along glse's middle dim is refused naming both buffers
    with pytest.raises(TTCompileError, match=r"glse.*logsum"):
        tilelang.compile(gqa_lse(), out_idx=[1])


def gqa_row_sums(heads=128, valid=32, block_H=64, dim=64, dtype=T.float32):
    # a per-row value (a dim=1 reduction: a column vector) stored for the block's first
    # `valid` rows into a 1-D tensor, the next rows being the next block's
    @T.prim_func
    def main(S: T.Tensor((heads + block_H, dim), dtype), W: T.Tensor((block_H, dim), dtype),
             L: T.Tensor((heads,), dtype)):
        with T.Kernel(heads // valid, threads=128) as hid:
            s = T.alloc_fragment((block_H, dim), dtype)
            w = T.alloc_fragment((block_H, dim), dtype)
            logsum = T.alloc_fragment((block_H,), dtype)
            T.copy(S[hid * valid:hid * valid + block_H, :], s)
            T.copy(W, w)
            for i, j in T.Parallel(block_H, dim):
                s[i, j] = s[i, j] * w[i, j]
            T.reduce_sum(s, logsum, dim=1)
            for i in T.Parallel(block_H):
                if i < valid:
                    L[hid * valid + i] = logsum[i]

    return main


def test_guarded_rows_of_a_column_vector():
    kernel = tilelang.compile(gqa_row_sums(), out_idx=[2])
    s = np.random.default_rng(13).uniform(0, 1, (128 + 64, 64)).astype(np.float32)
    w = np.where(np.arange(64)[:, None] < 32, 1.0, -1.0) * np.ones((64, 64))
    np.testing.assert_allclose(kernel(s, w.astype(np.float32)), s[:128].sum(axis=1),
                               rtol=1e-2, atol=1e-2)


def gqa_rows_converted(heads=128, valid=32, block_H=64, dim=32):
    @T.prim_func
    def main(Q: T.Tensor((heads + block_H, dim), T.float32),
             W: T.Tensor((block_H, dim), T.float32), O: T.Tensor((heads, dim), T.bfloat16)):
        with T.Kernel(heads // valid, threads=128) as hid:
            q = T.alloc_fragment((block_H, dim), T.float32)
            w = T.alloc_fragment((block_H, dim), T.float32)
            T.copy(Q[hid * valid:hid * valid + block_H, :], q)
            T.copy(W, w)
            for i, j in T.Parallel(block_H, dim):
                if i < valid:
                    O[hid * valid + i, j] = q[i, j] * w[i, j]

    return main


def test_guarded_rows_converted_to_the_tensor_dtype():
    kernel = tilelang.compile(gqa_rows_converted(), out_idx=[2])
    q = np.random.default_rng(17).uniform(-1, 1, (128 + 64, 32)).astype(np.float32)
    w = np.where(np.arange(64)[:, None] < 32, 1.0, -1.0) * np.ones((64, 32))
    out = np.asarray(kernel(q, w.astype(np.float32)), dtype=np.float32)
    np.testing.assert_allclose(out, q[:128], rtol=1e-2, atol=1e-2)


def gqa_output_rows(heads=128, valid=32, block_H=64, dim=64, start=0, dtype=T.float32):
    # TileLang's GQA decoding epilogue: `T.copy(acc_o[:valid_block_H, :], O_shared)`, then
    # `T.copy(O_shared, Output_partial[bid, hid * valid_block_H:(hid + 1) * valid_block_H, ...])`
    @T.prim_func
    def main(Q: T.Tensor((heads + block_H, dim), dtype), W: T.Tensor((block_H, dim), dtype),
             O: T.Tensor((heads, dim), dtype)):
        with T.Kernel(heads // valid, threads=128) as hid:
            acc_o = T.alloc_fragment((block_H, dim), dtype)
            w = T.alloc_fragment((block_H, dim), dtype)
            O_shared = T.alloc_shared((valid, dim), dtype)
            T.copy(Q[hid * valid:hid * valid + block_H, :], acc_o)
            T.copy(W, w)
            for i, j in T.Parallel(block_H, dim):
                acc_o[i, j] = acc_o[i, j] * w[i, j]
            T.copy(acc_o[start:start + valid, :], O_shared)
            T.copy(O_shared, O[hid * valid:(hid + 1) * valid, :])

    return main


def test_copy_of_a_blocks_leading_rows_into_a_block():
    kernel = tilelang.compile(gqa_output_rows(), out_idx=[2])
    q = np.random.default_rng(19).uniform(-1, 1, (128 + 64, 64)).astype(np.float32)
    w = np.where(np.arange(64)[:, None] < 32, 0.5, -1.0) * np.ones((64, 64))
    np.testing.assert_allclose(kernel(q, w.astype(np.float32)), q[:128] * 0.5, rtol=1e-5,
                               atol=1e-5)


def test_copy_of_rows_not_leading_into_a_block():
    # rows 32:64 are not the leading tiles of acc_o's CB block: A0.1.0.0 splits acc_o (and w,
    # which the nest reads with it) into two blocks of 32 rows; the first ones are dead
    with pytest.warns(Warning, match="acc_o_r0_32 is written but never read"):
        kernel = tilelang.compile(gqa_output_rows(start=32), out_idx=[2])
    q = np.random.default_rng(19).uniform(-1, 1, (128 + 64, 64)).astype(np.float32)
    w = np.where(np.arange(64)[:, None] < 32, 0.5, -1.0) * np.ones((64, 64))
    np.testing.assert_allclose(kernel(q, w.astype(np.float32)), -q[32:160], rtol=1e-5,
                               atol=1e-5)
