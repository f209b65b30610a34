"""Transposes as TileLang users write them, run on the emulator against numpy:
``T.transpose(src, dst)``, transposed element access in ``T.Parallel`` (the loop variables
swapped in an index), and ``T.gemm(transpose_A=True)`` (with and without ``transpose_B``).

A transposition moves values exactly (bf16 and float16 through SrcA, float32 CBs unpacked
straight to DST and transposed there), so copies are checked bit for bit (float16 subnormals
flushed by the pack, as for any float16 copy); GEMMs within the
matrix engine's bound (helpers.assert_matmul)."""

import numpy as np
import pytest

pytest.importorskip("tilelang_tt.runtime.mockbuild", reason="emulator driver not installed")

import tilelang_tt
import tilelang_tt.language as T
from helpers import (BF16, as_f32, assert_matmul, compute_config, pack_round_bf16,
                     pack_round_fp16, rand, src_operand)
from tilelang_tt import TTCompileError, TTLayoutError, TTUnsupportedError


# --- T.transpose: TileLang's testing/python/language/test_tilelang_language_transpose.py -----
def tilelang_transpose(M, N, block_M, block_N, dtype=T.bfloat16):
    """A tile of A into shared, transposed in shared, written to B: B = A.T."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((N, M), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            tile = T.alloc_shared((block_M, block_N), dtype)
            tile_T = T.alloc_shared((block_N, block_M), dtype)
            T.copy(A[by * block_M:(by + 1) * block_M, bx * block_N:(bx + 1) * block_N], tile)
            T.transpose(tile, tile_T)
            T.copy(tile_T, B[bx * block_N:(bx + 1) * block_N, by * block_M:(by + 1) * block_M])

    return main


# each dtype (bf16 through SrcA, float32 straight to DST, float16 flushing subnormals) and each
# shape (square, rectangular blocks, 32 x 32 blocks over 3 x 2 blocks) once
@pytest.mark.parametrize("M,N,block_M,block_N,dtype", [(128, 128, 64, 64, "bfloat16"),
                                                       (128, 256, 64, 128, "float32"),
                                                       (96, 64, 32, 32, "float16")])
def test_tilelang_transpose(M, N, block_M, block_N, dtype):
    art = tilelang_tt.compile(tilelang_transpose(M, N, block_M, block_N, dtype), out_idx=[1])
    code = art.sources["compute.cpp"]
    assert "transpose_init(tile_cb)" in code and "transpose_tile(tile_cb" in code
    assert code.count("pack_tile(") == 1  # one DST pass straight into tile_T
    a = rand((M, N), dtype, 1)
    b = art(a)
    assert b.shape == (N, M) and b.dtype == a.dtype
    # float16 goes through the 32-bit DST; its pack flushes float16 subnormals to zero, as
    # for any float16 copy (docs/MOCK.md "Numerics")
    expected = pack_round_fp16(as_f32(a).T) if dtype == "float16" else a.T
    np.testing.assert_array_equal(b, expected)


def test_transpose_of_global_regions_stages_blocks():
    """T.transpose straight between tensor regions (TileLang accepts any regions): the
    regions move through staged block buffers."""

    @T.prim_func
    def main(A: T.Tensor((64, 128), "float32"), B: T.Tensor((128, 64), "float32")):
        with T.Kernel(2, 2) as (bx, by):
            T.transpose(A[by * 32:(by + 1) * 32, bx * 64:(bx + 1) * 64],
                        B[bx * 64:(bx + 1) * 64, by * 32:(by + 1) * 32])

    art = tilelang_tt.compile(main, out_idx=[1])
    a = rand((64, 128), "float32", 2)
    np.testing.assert_array_equal(art(a), a.T)


def test_float32_block_the_matrix_engine_also_reads_transposes_as_tf32():
    """A float32 CB that a matmul also reads cannot be unpacked straight to DST, so its
    transposition goes through SrcA and keeps TF32 (as every fp32 read of the matrix engine
    does, docs/SUPPORT.md); read only by transposes and copies it is exact (above)."""

    @T.prim_func
    def main(A: T.Tensor((32, 32), "float32"), C: T.Tensor((32, 32), "float32"),
             D: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, 1) as (bx, by):
            a = T.alloc_shared((32, 32), "float32")
            t = T.alloc_shared((32, 32), "float32")
            c = T.alloc_fragment((32, 32), "float32")
            T.copy(A, a)
            T.clear(c)
            T.gemm(a, a, c)
            T.copy(c, C)
            T.transpose(a, t)
            T.copy(t, D)

    art = tilelang_tt.compile(main, out_idx=[1, 2])
    assert compute_config(art)["unpack_to_dest_fp32"] == []
    x = rand((32, 32), "float32", 16)
    c, d = art(x)
    assert_matmul(c, x, x, art)
    np.testing.assert_array_equal(d, src_operand(x, True).astype(np.float32).T)


def test_transpose_shape_mismatch_is_a_layout_error():
    with pytest.raises(TTLayoutError) as info:
        @T.prim_func
        def main(A: T.Tensor((64, 32), "bfloat16"), B: T.Tensor((64, 32), "bfloat16")):
            with T.Kernel(1) as bx:
                s = T.alloc_shared((64, 32), "bfloat16")
                t = T.alloc_shared((64, 32), "bfloat16")
                T.copy(A, s)
                T.transpose(s, t)
                T.copy(t, B)
    assert "T.transpose" in str(info.value) and "(32, 64)" in str(info.value)


# --- transposed element access in T.Parallel --------------------------------------------------
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_parallel_transposed_shared_copy(dtype):
    """``B_shared[j, i] = A_shared[i, j]`` over a 64 x 96 block (2 x 3 tiles -> 3 x 2)."""

    @T.prim_func
    def main(A: T.Tensor((128, 192), dtype), B: T.Tensor((192, 128), dtype)):
        with T.Kernel(2, 2) as (bx, by):
            A_shared = T.alloc_shared((64, 96), dtype)
            B_shared = T.alloc_shared((96, 64), dtype)
            T.copy(A[by * 64, bx * 96], A_shared)
            for i, j in T.Parallel(64, 96):
                B_shared[j, i] = A_shared[i, j]
            T.copy(B_shared, B[bx * 96, by * 64])

    art = tilelang_tt.compile(main, out_idx=[1])
    assert "transpose_tile(A_shared_cb" in art.sources["compute.cpp"]
    a = rand((128, 192), dtype, 3)
    np.testing.assert_array_equal(art(a), a.T)


@pytest.mark.parametrize("block", [32, 64])
def test_parallel_transposed_global_copy(block):
    """TileLang's element-wise transpose: ``C[bx * b + j, by * b + i] = A[by * b + i, bx * b
    + j]`` between global tensors (the destination's indices swapped)."""
    M, N = 128, 192

    @T.prim_func
    def main(A: T.Tensor((M, N), "bfloat16"), C: T.Tensor((N, M), "bfloat16")):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block)) as (bx, by):
            for i, j in T.Parallel(block, block):
                C[bx * block + j, by * block + i] = A[by * block + i, bx * block + j]

    art = tilelang_tt.compile(main, out_idx=[1])
    a = rand((M, N), "bfloat16", 4)
    np.testing.assert_array_equal(art(a), a.T)


def test_parallel_transposed_operand_read():
    """The operand's indices swapped instead: ``C[i, j] = A[j, i]`` (also through index
    bindings), converting float32 -> bfloat16 on the way (the pack rounds)."""

    @T.prim_func
    def main(A: T.Tensor((96, 64), "float32"), C: T.Tensor((64, 96), "bfloat16")):
        with T.Kernel(3, 2) as (bx, by):
            row0 = by * 32
            col0 = bx * 32
            for i, j in T.Parallel(32, 32):
                C[row0 + i, col0 + j] = A[col0 + j, row0 + i]

    art = tilelang_tt.compile(main, out_idx=[1])
    a = rand((96, 64), "float32", 5)
    c = art(a)
    assert c.dtype == BF16
    np.testing.assert_array_equal(as_f32(c), pack_round_bf16(np.ascontiguousarray(a.T)))


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_parallel_expression_of_a_block_and_its_transpose(dtype):
    """``B = A[j, i] + A[i, j]`` per block: A's block at (bx, by) read transposed plus the block
    at (by, bx), one fused DST pass (transpose_tile and copy_tile, add on the vector engine in
    fp32, packed once)."""

    @T.prim_func
    def main(A: T.Tensor((64, 64), dtype), B: T.Tensor((64, 64), dtype)):
        with T.Kernel(2, 2) as (bx, by):
            for i, j in T.Parallel(32, 32):
                B[by * 32 + i, bx * 32 + j] = A[bx * 32 + j, by * 32 + i] + \
                    A[by * 32 + i, bx * 32 + j]

    art = tilelang_tt.compile(main, out_idx=[1])
    code = art.sources["compute.cpp"]
    assert "transpose_tile(" in code and "copy_tile(" in code and "add_binary_tile(" in code
    a = rand((64, 64), dtype, 6)
    exact = as_f32(a).T + as_f32(a)  # both operands exact in fp32 DST, one fp32 add
    expected = pack_round_bf16(exact) if dtype == "bfloat16" else exact
    np.testing.assert_array_equal(as_f32(art(a)), expected)


def test_transposed_operand_next_to_a_row_maximum():
    """``C_s[j, i] = A_s[i, j] - R[j]``: R (the row maxima of B_s, a column vector of the
    destination) meets a transposed operand, so it is broadcast into a whole block first (the
    matrix engine reads tiles as stored).  fp32: the reduction (vector engine, B_s unpacked
    straight to DST), the transposition and the subtraction are exact fp32."""

    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32"),
             C: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, 2) as (bx, by):
            A_s = T.alloc_shared((32, 32), "float32")
            B_s = T.alloc_shared((32, 32), "float32")
            C_s = T.alloc_shared((32, 32), "float32")
            R = T.alloc_fragment((32,), "float32")
            T.copy(A[bx * 32, by * 32], A_s)
            T.copy(B[by * 32, bx * 32], B_s)
            T.reduce_max(B_s, R, dim=1)
            for i, j in T.Parallel(32, 32):
                C_s[j, i] = A_s[i, j] - R[j]
            T.copy(C_s, C[by * 32, bx * 32])

    art = tilelang_tt.compile(main, out_idx=[2])
    a, b = rand((64, 64), "float32", 13), rand((64, 64), "float32", 14)
    row_max = b
    expected = np.empty((64, 64), np.float32)
    for r in range(0, 64, 32):
        for c in range(0, 64, 32):
            m = row_max[r:r + 32, c:c + 32].max(axis=1)
            expected[r:r + 32, c:c + 32] = a[c:c + 32, r:r + 32].T - m[:, None]
    np.testing.assert_array_equal(art(a, b), expected)


def test_row_vector_used_as_a_block_operand():
    """``C_s[i, j] = A_s[i, j] * 2.0 - R[j]``: R (the column maxima of B_s, a row vector) stands
    where only a whole block goes (after ``A_s * 2.0`` on the vector engine), so the compute
    kernel broadcasts it into its own DST slot with ``unary_bcast<BroadcastType::ROW>`` (no block
    of it is filled and added).  fp32: neither the reduction nor the broadcast reads through
    source registers (TF32): B_s and R are unpacked straight to DST (the vector engine's
    reduction, ``unary_bcast`` of an ``UnpackToDestFp32`` CB); the product and the difference
    are exact fp32 / one rounding."""

    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32"),
             C: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, 2) as (bx, by):
            A_s = T.alloc_shared((32, 32), "float32")
            B_s = T.alloc_shared((32, 32), "float32")
            C_s = T.alloc_shared((32, 32), "float32")
            R = T.alloc_fragment((32,), "float32")
            T.copy(A[by * 32, bx * 32], A_s)
            T.copy(B[by * 32, bx * 32], B_s)
            T.reduce_max(B_s, R, dim=0)
            for i, j in T.Parallel(32, 32):
                C_s[i, j] = A_s[i, j] * 2.0 - R[j]
            T.copy(C_s, C[by * 32, bx * 32])

    art = tilelang_tt.compile(main, out_idx=[2])
    code = art.sources["compute.cpp"]
    assert "unary_bcast<BroadcastType::ROW>(" in code and "add_tiles_bcast" not in code
    a, b = rand((64, 64), "float32", 15), rand((64, 64), "float32", 16)
    col_max = b
    expected = np.empty((64, 64), np.float32)
    for r in range(0, 64, 32):
        for c in range(0, 64, 32):
            m = col_max[r:r + 32, c:c + 32].max(axis=0)
            expected[r:r + 32, c:c + 32] = a[r:r + 32, c:c + 32] * np.float32(2.0) - m[None, :]
    np.testing.assert_array_equal(art(a, b), expected)


def test_parallel_transposed_copy_of_rank3_tensors():
    """``Y[b, j, i] = X[b, i, j]``: the last two dims of a batched tensor swapped."""

    @T.prim_func
    def main(X: T.Tensor((2, 64, 96), "bfloat16"), Y: T.Tensor((2, 96, 64), "bfloat16")):
        with T.Kernel(3, 2, 2) as (bx, by, bz):
            for i, j in T.Parallel(32, 32):
                Y[bz, bx * 32 + j, by * 32 + i] = X[bz, by * 32 + i, bx * 32 + j]

    art = tilelang_tt.compile(main, out_idx=[1])
    x = rand((2, 64, 96), "bfloat16", 7)
    np.testing.assert_array_equal(art(x), x.transpose(0, 2, 1))


def test_parallel_transposed_head_slices():
    """A ``[seq, heads, dim]`` tensor's head slice (dims 0 and 2, the head index between them)
    written transposed into ``[heads, dim, seq]``: ``Y[h, d, s] = X[s, h, d]``."""

    @T.prim_func
    def main(X: T.Tensor((64, 2, 96), "bfloat16"), Y: T.Tensor((2, 96, 64), "bfloat16")):
        with T.Kernel(3, 2, 2) as (bx, by, h):
            for i, j in T.Parallel(32, 32):
                Y[h, bx * 32 + j, by * 32 + i] = X[by * 32 + i, h, bx * 32 + j]

    art = tilelang_tt.compile(main, out_idx=[1])
    x = rand((64, 2, 96), "bfloat16", 15)
    np.testing.assert_array_equal(art(x), x.transpose(1, 2, 0))


@pytest.mark.parametrize("form", ["parallel", "T.transpose"])
def test_gemm_result_written_transposed(form):
    """The accumulator read transposed after the K loop, C = (A @ B).T: in a T.Parallel
    epilogue, or by T.transpose into a shared block copied out."""
    M, N, K, bm, bn, bk = 128, 64, 96, 64, 32, 32

    @T.prim_func
    def main(A: T.Tensor((M, K), "bfloat16"), B: T.Tensor((K, N), "bfloat16"),
             C: T.Tensor((N, M), "bfloat16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm)) as (bx, by):
            A_shared = T.alloc_shared((bm, bk), "bfloat16")
            B_shared = T.alloc_shared((bk, bn), "bfloat16")
            C_local = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], A_shared)
                T.copy(B[k * bk, bx * bn], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            if form == "parallel":
                for i, j in T.Parallel(bm, bn):
                    C[bx * bn + j, by * bm + i] = C_local[i, j]
            else:
                C_shared = T.alloc_shared((bn, bm), "bfloat16")
                T.transpose(C_local, C_shared)
                T.copy(C_shared, C[bx * bn, by * bm])

    art = tilelang_tt.compile(main, out_idx=[2])
    a, b = rand((M, K), "bfloat16", 8), rand((K, N), "bfloat16", 9)
    assert_matmul(np.ascontiguousarray(art(a, b).T), a, b, art)


def test_diagonal_access_is_still_rejected():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "bfloat16"), B: T.Tensor((64, 64), "bfloat16")):
        with T.Kernel(2, 2) as (bx, by):
            for i, j in T.Parallel(32, 32):
                B[by * 32 + i, bx * 32 + j] = A[by * 32 + i, bx * 32 + i]

    with pytest.raises(TTUnsupportedError) as info:
        tilelang_tt.compile(main)
    assert "strided or diagonal" in str(info.value) and "A" in str(info.value)


# --- T.gemm(transpose_A=True): TileLang's testing/python/kernel/test_tilelang_kernel_gemm.py --
def matmul(M, N, K, block_M, block_N, block_K, trans_A, trans_B, in_dtype, out_dtype,
           accum_dtype, num_stages, threads=128):
    A_shape = (K, M) if trans_A else (M, K)
    B_shape = (N, K) if trans_B else (K, N)
    A_shared_shape = (block_K, block_M) if trans_A else (block_M, block_K)
    B_shared_shape = (block_N, block_K) if trans_B else (block_K, block_N)

    @T.prim_func
    def main(A: T.Tensor(A_shape, in_dtype), B: T.Tensor(B_shape, in_dtype),
             C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared(A_shared_shape, in_dtype)
            B_shared = T.alloc_shared(B_shared_shape, in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                if trans_A:
                    T.copy(A[k * block_K, by * block_M], A_shared)
                else:
                    T.copy(A[by * block_M, k * block_K], A_shared)
                if trans_B:
                    T.copy(B[bx * block_N, k * block_K], B_shared)
                else:
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local, trans_A, trans_B)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


GEMMS_TA = [
    # (M, N, K, block_M, block_N, block_K, trans_B, in, out, accum): every size and dtype set
    # once, transpose_B (B's tile order, matmul_init's flag: not dtype-specific) with and without
    (128, 192, 256, 64, 64, 64, False, "bfloat16", "bfloat16", "float32"),
    (128, 128, 128, 64, 64, 32, True, "bfloat16", "bfloat16", "bfloat16"),
    (64, 96, 128, 32, 32, 64, False, "float32", "float32", "float32"),
    (256, 256, 64, 128, 128, 32, True, "bfloat16", "bfloat16", "float32"),  # sub-blocks, spills
    (64, 64, 128, 32, 32, 64, True, "float16", "float16", "float32"),  # TileLang's default dtype
]


@pytest.mark.parametrize("case", GEMMS_TA, ids=lambda c: "x".join(map(str, c[:6])) +
                         f"-tB{int(c[6])}-{c[7]}-acc_{c[9]}")
def test_gemm_transpose_a(case):
    M, N, K, bm, bn, bk, trans_B, in_dtype, out_dtype, accum = case
    art = tilelang_tt.compile(matmul(M, N, K, bm, bn, bk, True, trans_B, in_dtype, out_dtype,
                                     accum, 2), out_idx=[2])
    code = art.sources["compute.cpp"]
    assert "transpose_tile(A_shared_cb" in code
    assert f"matmul_init(A_shared_T_0_cb, B_shared_cb, {int(trans_B)})" in code
    if accum == "bfloat16" and in_dtype == "bfloat16":
        assert not compute_config(art)["fp32_dest_acc_en"]  # DST accumulates in bf16
    a = rand((K, M), in_dtype, 10)
    b = rand((N, K) if trans_B else (K, N), in_dtype, 11)
    c = art(a, b)
    assert c.shape == (M, N)
    assert_matmul(c, np.ascontiguousarray(a.T), b, art, transpose_b=trans_B)


def test_gemm_transpose_a_operand_reused_as_b():
    """The same shared block as A (transposed) and as B: ``C = a.T @ a``."""

    @T.prim_func
    def main(A: T.Tensor((64, 64), "bfloat16"), C: T.Tensor((64, 64), "bfloat16")):
        with T.Kernel(1, 1) as (bx, by):
            a = T.alloc_shared((64, 64), "bfloat16")
            c = T.alloc_fragment((64, 64), "float32")
            T.clear(c)
            T.copy(A[0, 0], a)
            T.gemm(a, a, c, transpose_A=True)
            T.copy(c, C[0, 0])

    art = tilelang_tt.compile(main, out_idx=[1])
    x = rand((64, 64), "bfloat16", 12)
    assert_matmul(art(x), np.ascontiguousarray(x.T), x, art)


def test_gemm_transpose_a_of_a_non_block_is_an_error():
    @T.prim_func
    def main(A: T.Tensor((2, 64, 64), "bfloat16"), C: T.Tensor((64, 64), "bfloat16")):
        with T.Kernel(1, 1) as (bx, by):
            a = T.alloc_shared((2, 64, 64), "bfloat16")
            b = T.alloc_shared((64, 64), "bfloat16")
            c = T.alloc_fragment((64, 64), "float32")
            T.clear(c)
            T.copy(A, a)
            T.copy(A[0, 0:64, 0:64], b)
            T.gemm(a, b, c, transpose_A=True)
            T.copy(c, C[0, 0])

    with pytest.raises(TTCompileError) as info:
        tilelang_tt.compile(main)
    assert "transpose_A" in str(info.value) and "a" in str(info.value)
