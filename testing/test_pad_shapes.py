"""Tensors whose dims are not multiples of 32 (A0.3.1 PadTensorsTT): TileLang's kernels with
``T.ceildiv`` grids whose last blocks reach past the tensors run on the emulator and match
numpy.  The device holds each such tensor padded with zeros up to what the grid's blocks
cover; main.cpp pads the inputs and crops the outputs.  TileLang reads 0 out of bounds and
skips out-of-bounds stores (its LegalizeSafeMemoryAccess and T.copy lowering), so the zeros
compute what TileLang computes."""

import ml_dtypes
import numpy as np
import pytest
import tvm

import tilelang_tt
import tilelang_tt.language as T
from tilelang_tt import attrs
from tilelang_tt.errors import TTCompileError
from tilelang_tt.passes.common import to_py

RNG = np.random.default_rng(11)
ml_bf16 = ml_dtypes.bfloat16
HIFI4 = {"tt.math_fidelity": "HiFi4"}


def matmul(M, N, K, block_M, block_N, block_K, dtype="bfloat16", accum_dtype="float32",
           num_stages=2):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def elementwise_add(M, N, block_M, block_N, in_dtype="float32", out_dtype="float32"):
    @T.prim_func
    def elem_add(A: T.Tensor((M, N), in_dtype), B: T.Tensor((M, N), in_dtype),
                 C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), in_dtype)
            B_shared = T.alloc_shared((block_M, block_N), in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), out_dtype)
            T.copy(A[by * block_M, bx * block_N], A_shared)
            T.copy(B[by * block_M, bx * block_N], B_shared)
            for local_y, local_x in T.Parallel(block_M, block_N):
                C_local[local_y, local_x] = A_shared[local_y, local_x] + B_shared[local_y, local_x]
            T.copy(C_local, C[by * block_M, bx * block_N])

    return elem_add


def guarded_scale(M, N, block_M, block_N, dtype="float32"):
    """TileLang's bounds-guarded element accesses: ``if y < M and x < N``."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                if by * block_M + i < M and bx * block_N + j < N:
                    C[by * block_M + i, bx * block_N + j] = (
                        A[by * block_M + i, bx * block_N + j] * 2.0
                        + B[by * block_M + i, bx * block_N + j])

    return main


def row_reduce(M, N, block_M, block_N, kind="sum", dtype="float32"):
    """Per-row sum (or max) of A over ``T.ceildiv(N, block_N)`` column blocks, into 1-D S."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), S: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            A_shared = T.alloc_shared((block_M, block_N), dtype)
            acc = T.alloc_fragment((block_M,), dtype)
            if kind == "sum":
                T.clear(acc)
            else:
                T.fill(acc, -T.infinity(dtype))
            for k in T.Pipelined(T.ceildiv(N, block_N), num_stages=2):
                T.copy(A[bx * block_M, k * block_N], A_shared)
                if kind == "sum":
                    T.reduce_sum(A_shared, acc, dim=1, clear=False)
                else:
                    T.reduce_max(A_shared, acc, dim=1, clear=False)
            T.copy(acc, S[bx * block_M])

    return main


def _padded(art) -> dict:
    return {t["name"]: (list(t["shape"]), list(t["padded_shape"])) for t in art.plan["tensors"]}


# ---- GEMMs -------------------------------------------------------------------------------------
@pytest.mark.parametrize("M,N,K,block_M,block_N,block_K", [
    # TileLang's test_pad_aligned_* (there 512 - 8, 1024 - 32, 768 - 24): dims multiples of 8,
    # N a multiple of 32 but not of block_N, two blocks each way
    (256 - 8, 512 - 32, 256 - 24, 128, 256, 32),
    # as TileLang's test_pad_* (there 512 - 9, 1024 - 7, 768 - 5): nothing a multiple of 32
    (100, 70, 50, 64, 64, 32),
])
def test_gemm_bf16_padded(M, N, K, block_M, block_N, block_K):
    art = tilelang_tt.compile(matmul(M, N, K, block_M, block_N, block_K), out_idx=[2],
                              pass_configs=HIFI4)
    a = RNG.standard_normal((M, K)).astype(np.float32)
    b = RNG.standard_normal((K, N)).astype(np.float32)
    c = art(a, b)
    assert c.shape == (M, N)
    # the operands as the device holds them (bf16), the product exact in fp32, one bf16 rounding
    ref = a.astype(ml_bf16).astype(np.float32) @ b.astype(ml_bf16).astype(np.float32)
    np.testing.assert_allclose(np.asarray(c, np.float32), ref, rtol=1e-2, atol=2e-2 * np.sqrt(K))
    gm, gn = -(-M // block_M), -(-N // block_N)
    assert _padded(art) == {
        "A": ([M, K], [gm * block_M, -(-K // block_K) * block_K]),
        "B": ([K, N], [-(-K // block_K) * block_K, gn * block_N]),
        "C": ([M, N], [gm * block_M, gn * block_N])}


def test_gemm_float32_padded():
    """float32 operands (the matrix engine reads them as TF32), float32 out, M past 512."""
    M, N, K = 512 + 19, 64 + 17, 64 + 15
    art = tilelang_tt.compile(matmul(M, N, K, 128, 64, 32, dtype="float32"), out_idx=[2],
                              pass_configs=HIFI4)
    a = RNG.standard_normal((M, K)).astype(np.float32)
    b = RNG.standard_normal((K, N)).astype(np.float32)
    c = art(a, b)
    np.testing.assert_allclose(c, a @ b, rtol=1e-2, atol=5e-2)


# ---- elementwise, guards, reductions, in place -------------------------------------------------
def test_elementwise_add_padded():
    M, N = 503, 531
    art = tilelang_tt.compile(elementwise_add(M, N, 64, 128), out_idx=[2])
    a, b = (RNG.standard_normal((M, N)).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(art(a, b), a + b, rtol=1e-6, atol=1e-6)
    assert _padded(art)["C"] == ([M, N], [512, 640])


def test_bounds_guard_on_stores_is_dropped():
    """``if y < M and x < N: C[y, x] = ...`` fails only past C's end, where the padding
    lands and is cropped: the guard goes (A0.1.0) and the kernel runs."""
    M, N = 45, 77
    func = guarded_scale(M, N, 32, 64)
    (f,) = tilelang_tt.lower(func, stop_after="A0.1.0").functions.values()
    assert not tilelang_tt.passes.common.collect(f.body, tvm.tirx.IfThenElse)
    art = tilelang_tt.compile(func, out_idx=[2])
    a, b = (RNG.standard_normal((M, N)).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(art(a, b), a * 2 + b, rtol=1e-6, atol=1e-6)
    assert _padded(art)["A"] == ([M, N], [64, 128])


def test_row_sum_padded():
    """Rows and columns padded; the padded columns' zeros add nothing; S (1-D, 200) is
    stored as row vectors padded to 224 values."""
    M, N = 200, 300
    art = tilelang_tt.compile(row_reduce(M, N, 32, 64), out_idx=[1])
    a = RNG.standard_normal((M, N)).astype(np.float32)
    # reduce_tile reads float32 as TF32 (10 mantissa bits): an error of ~2^-11 per element
    np.testing.assert_allclose(art(a), a.sum(axis=1), rtol=1e-3, atol=2e-3 * np.sqrt(N))
    assert _padded(art)["S"] == ([M], [224])


def test_row_max_reads_the_zeros_as_tilelang_does():
    """TileLang's T.copy reads 0 past the tensor, and reduce_max takes those zeros in: a row
    of negative values whose last block reaches past the tensor has max 0 in TileLang too.
    The other rows (random, with positive values) have their own max."""
    M, N = 64, 100  # 2 column blocks of 64: the second reaches 28 columns past the tensor
    art = tilelang_tt.compile(row_reduce(M, N, 32, 64, kind="max"), out_idx=[1])
    a = RNG.standard_normal((M, N)).astype(np.float32)
    a[::2] = -np.abs(a[::2]) - 1.0  # every other row negative
    expected = a.max(axis=1)
    assert (expected[1::2] > 0).all()
    expected[::2] = 0.0
    out = art(a)
    np.testing.assert_array_equal(out[::2], np.zeros(M // 2, np.float32))
    # reduce_tile reads float32 as TF32 (10 mantissa bits)
    np.testing.assert_allclose(out, expected, rtol=2e-3)


def test_inout_keeps_values_the_kernel_does_not_write():
    """An output that is also an input keeps, outside what the kernel writes, the values it
    came with: here the kernel updates the first 40 rows of Y (one block of 32 and part of a
    second) and leaves the other 30.  Y is padded on the way in, cropped on the way out and
    updated in the caller's array."""
    M, N, rows = 70, 50, 40

    @T.prim_func
    def first_rows(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, 32), T.ceildiv(rows, 32), threads=128) as (bx, by):
            X_shared = T.alloc_shared((32, 32), "float32")
            Y_shared = T.alloc_shared((32, 32), "float32")
            Y_local = T.alloc_fragment((32, 32), "float32")
            T.copy(X[by * 32, bx * 32], X_shared)
            T.copy(Y[by * 32, bx * 32], Y_shared)
            for i, j in T.Parallel(32, 32):
                Y_local[i, j] = Y_shared[i, j] - X_shared[i, j]
            T.copy(Y_local, Y[by * 32, bx * 32])

    art = tilelang_tt.compile(first_rows)
    assert [t["role"] for t in art.plan["tensors"]] == ["input", "inout"]
    x = RNG.standard_normal((M, N)).astype(np.float32)
    y = RNG.standard_normal((M, N)).astype(np.float32)
    expected = y.copy()
    expected[:64] -= x[:64]  # the blocks cover 64 rows, all inside Y
    art(x, y)
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)
    assert _padded(art)["Y"] == ([M, N], [96, 64])


# ---- one-row blocks over a number of rows that is not a multiple of 32 -------------------------
def test_one_row_blocks_over_100_rows():
    """TileLang's rms_norm with blk_m = 1 over 100 rows: A0.0 runs the 100 one-row blocks as 4
    blocks of 32 rows, the last reaching 28 rows past the tensors (padded, cropped)."""
    import row_blocks as RB

    kernel = RB.rms_norm.compile(M=100, N=256, blk_m=1)
    a = RNG.standard_normal((100, 256)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(kernel(a), np.float32), RB.rms_norm_reference(a),
                               rtol=1e-2, atol=1e-2)
    assert kernel.plan["grid"] == [4, 1, 1]
    assert _padded(kernel)["A"] == ([100, 256], [128, 256])


def elementwise_copy_rows(M, out_rows, N):
    """C (out_rows x N) = A (M x N) read past its end, TileLang's default safe value 0."""
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((out_rows, N), "float32")):
        with T.Kernel(T.ceildiv(N, 32), T.ceildiv(out_rows, 32), threads=128) as (bx, by):
            for i, j in T.Parallel(32, 32):
                C[by * 32 + i, bx * 32 + j] = A[by * 32 + i, bx * 32 + j]

    return main


# ---- refused -----------------------------------------------------------------------------------
def guarded_fragment(M, N, block):
    """The guard protects a store to a block buffer, whose value the copy out then uses."""
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            C_local = T.alloc_fragment((block, block), "float32")
            T.clear(C_local)
            for i, j in T.Parallel(block, block):
                if by * block + i < M:
                    C_local[i, j] = A[by * block + i, bx * block + j]
            T.copy(C_local, C[by * block, bx * block])

    return main


def guarded_inside(M, N, block, rows):
    """A guard false on rows inside the tensor (rows ``rows`` .. M - 1)."""
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            for i, j in T.Parallel(block, block):
                if by * block + i < rows and bx * block + j < N:
                    C[by * block + i, bx * block + j] = A[by * block + i, bx * block + j]

    return main


def safe_value(M, N, block, value, out_rows=None, dtype="float32"):
    """TileLang's ``test_tilelang_copy_oob_safe_value``: blocks read past A's end (and C may
    have more rows than A)."""
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), C: T.Tensor((out_rows or M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(out_rows or M, block), threads=128) as (bx, by):
            T.annotate_safe_value({A: value})
            A_shared = T.alloc_shared((block, block), dtype)
            T.copy(A[by * block, bx * block], A_shared)
            T.copy(A_shared, C[by * block, bx * block])

    return main


def shifted_read(M, N, block, shift):
    """Rows read ``shift`` before the block's own, before A's start for the first block
    (TileLang's ``test_tilelang_language_annotate_safe_value`` reads 10 before: rows off a tile
    boundary, gathered row by row, test_unaligned_rows.py)."""
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block, block), "float32")
            for i, j in T.Parallel(block, block):
                A_shared[i, j] = A[by * block + i - shift, bx * block + j]
            for i, j in T.Parallel(block, block):
                B[by * block + i, bx * block + j] = A_shared[i, j]

    return main


@pytest.mark.parametrize("make,rows", [(lambda: guarded_inside(50, 64, 32, 40), 40),
                                       (lambda: guarded_fragment(50, 64, 32), 50)])
def test_guard_failing_inside_the_tensor_is_a_select(make, rows):
    """A guard false on rows inside the tensor (``if row < 40`` over 50 rows), or guarding a
    store to a block buffer, is not dropped but if-converted (A0.1.0.1): the elements where it
    fails keep their old value (C's zeros as allocated; the cleared fragment's zeros)."""
    kernel = tilelang_tt.compile(make(), out_idx=[1])
    a = RNG.standard_normal((50, 64)).astype(np.float32)
    ref = a.copy()
    ref[rows:] = 0
    np.testing.assert_array_equal(kernel(a), ref)


@pytest.mark.parametrize("make,words", [
    (lambda: shifted_read(64, 64, 32, 32),
     ["tensor A (shape [64, 64]) is accessed from `by * 32 - 32`", "can be negative",
      "padded only past its end"]),
])
def test_padding_that_would_change_the_result_is_refused(make, words):
    with pytest.raises(TTCompileError) as err:
        tilelang_tt.compile(make())
    text = str(err.value)
    for w in words:
        assert w in text, text


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_safe_value_fills_the_padding(dtype):
    """``T.annotate_safe_value({A: -99})``: A's rows past its end read -99, as in TileLang
    (C has 64 rows, A 50: C's last 14 rows are A's padding)."""
    art = tilelang_tt.compile(safe_value(50, 40, 32, -99.0, out_rows=64, dtype=dtype),
                              out_idx=[1])
    assert art.plan["tensors"][0]["pad_value"] == -99.0
    a = RNG.standard_normal((50, 40)).astype(np.float32)
    if dtype == "bfloat16":
        a = a.astype(ml_bf16).astype(np.float32)  # exact in bf16: the copy moves bits
    expected = np.full((64, 40), -99.0, np.float32)
    expected[:50] = a
    np.testing.assert_array_equal(np.asarray(art(a), np.float32), expected)
    if dtype != "float32":
        return  # the float32 kernels below do not depend on this test's dtype: checked once
    for value in (0.0, None):  # TileLang's default: 0
        func = safe_value(50, 40, 32, value, out_rows=64) if value is not None else \
            elementwise_copy_rows(50, 64, 40)
        out = tilelang_tt.compile(func, out_idx=[1])(a)
        expected[50:] = 0.0
        np.testing.assert_array_equal(out, expected)


def test_padded_kernel_stages_from_parsed_ir():
    """Every stage's input, printed and parsed back, gives the same output (``tt.padded``
    and the padded parameters included), and A0.3.1 records what it padded."""
    import tvm_ffi
    from tilelang_tt.passes import pipeline
    from tilelang_tt.passes.common import run_pass

    mod = pipeline.prepare(safe_value(50, 40, 32, -99.0, out_rows=64), "tenstorrent")
    for tag, p in pipeline.STAGES:
        parsed = tvm.script.from_source(mod.script())
        out_parsed = run_pass(p, parsed)
        mod = run_pass(p, mod)
        assert tvm_ffi.structural_equal(out_parsed, mod), tag
        if tag == "A0.3.1":
            (f,) = mod.functions.values()
            assert to_py(f.attrs[attrs.PADDED]) == [
                {"param": 0, "logical": [50, 40], "padded": [64, 64], "fill": -99.0},
                {"param": 1, "logical": [64, 40], "padded": [64, 64], "fill": 0.0}]


def test_gemm_guarded_epilogue():
    """TileLang's GEMM whose epilogue stores element by element under a bounds guard, with a
    bias read straight from a tensor: the guard goes, C and Bias are padded."""
    M, N, K, bm, bn, bk = 90, 100, 70, 64, 64, 32

    @T.prim_func
    def main(A: T.Tensor((M, K), "bfloat16"), B: T.Tensor((K, N), "bfloat16"),
             Bias: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_shared = T.alloc_shared((bm, bk), "bfloat16")
            B_shared = T.alloc_shared((bk, bn), "bfloat16")
            C_local = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], A_shared)
                T.copy(B[k * bk, bx * bn], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            for i, j in T.Parallel(bm, bn):
                if by * bm + i < M and bx * bn + j < N:
                    C[by * bm + i, bx * bn + j] = T.max(
                        C_local[i, j] + Bias[by * bm + i, bx * bn + j], 0.0)

    art = tilelang_tt.compile(main, out_idx=[3], pass_configs=HIFI4)
    a = RNG.standard_normal((M, K)).astype(ml_bf16)
    b = RNG.standard_normal((K, N)).astype(ml_bf16)
    bias = RNG.standard_normal((M, N)).astype(np.float32)
    ref = np.maximum(a.astype(np.float32) @ b.astype(np.float32) + bias, 0)
    np.testing.assert_allclose(art(a, b, bias), ref, rtol=1e-2, atol=2e-2)
    assert _padded(art)["Bias"] == ([M, N], [128, 128])


@pytest.mark.parametrize("is_causal", [True, False])
def test_flash_attention_seq_not_a_block_multiple(is_causal):
    """examples/flash_attention.py at seq_len 100 in 64-row blocks (the causal loop's extent
    depends on bx).  Causal: the keys past 100 are masked for every real query, so the result
    is exact attention.  Not causal: TileLang's blocks read keys 100..127 as zeros, whose score
    0 takes part in the softmax (their values are 0): that is what both compute."""
    import flash_attention as FA

    S, D = 100, 64
    art = tilelang_tt.compile(FA.flashattn(1, 1, S, D, is_causal, 64, 64), out_idx=-1,
                              pass_configs=HIFI4)
    q, k, v = (RNG.standard_normal((S, D)).astype(ml_bf16) for _ in range(3))
    out = np.asarray(art(q, k, v), np.float32)
    if is_causal:
        ref = FA.reference(q, k, v, 1, 1, S, D, True)
    else:
        qf = q.astype(np.float32)
        kp, vp = (np.zeros((128, D), np.float32) for _ in range(2))
        kp[:S], vp[:S] = k.astype(np.float32), v.astype(np.float32)
        s = qf @ kp.T / np.sqrt(D)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        ref = (p / p.sum(axis=-1, keepdims=True)) @ vp
    np.testing.assert_allclose(out, ref, rtol=1e-2, atol=1e-2)
    assert _padded(art)["K"] == ([S, D], [128, D])
