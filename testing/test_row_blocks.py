"""Blocks of fewer than 32 rows (A0.0 CoarsenRowBlocksTT): TileLang's norm and
online-softmax kernels with ``blk_m = 1`` (examples/row_blocks.py, written as TileLang's
examples write them) run on the emulator and match numpy within TileLang's own tolerances;
the one-row kernel becomes the 32-row kernel; kernels whose rows mix, or whose grid does not
cover a multiple of 32 rows while tensors have rows past them, get a TTLayoutError naming the buffer or op and the line."""

import ml_dtypes
import numpy as np
import pytest
import tvm_ffi

import row_blocks as RB
import tilelang_tt
import tilelang_tt.language as T
from tilelang_tt import attrs
from helpers import assert_matmul
from tilelang_tt.errors import TTLayoutError, TTResourceError

RNG = np.random.default_rng(7)


def _allclose(actual, expected, rtol=1e-2, atol=1e-2):
    """TileLang's check for these kernels (assert_allclose(rtol=0.01, atol=0.01))."""
    np.testing.assert_allclose(np.asarray(actual).astype(np.float32), expected, rtol=rtol,
                               atol=atol)


def _lowered(func, stop_after):
    (f,) = tilelang_tt.lower(func, stop_after=stop_after).functions.values()
    return f


# ---- TileLang's kernels with one-row blocks, on the emulator ----------------------------------
def test_rms_norm_one_row_blocks():
    kernel = RB.rms_norm.compile(M=64, N=256, blk_m=1)
    a = RNG.standard_normal((64, 256)).astype(np.float32)
    _allclose(kernel(a), RB.rms_norm_reference(a))
    assert kernel.plan["grid"] == [2, 1, 1]  # 64 one-row blocks run as 2 blocks of 32 rows


@pytest.mark.parametrize("blk_m", [1, 4])
def test_rms_norm_splitk_small_row_blocks(blk_m):
    kernel = RB.rms_norm_splitk.compile(M=96, N=256, blk_m=blk_m, blk_k=128)  # 2 k blocks
    a = RNG.standard_normal((96, 256)).astype(np.float32)
    _allclose(kernel(a), RB.rms_norm_reference(a))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_layernorm_forward_one_row_blocks(dtype):
    """Y, and the float32 statistics written element by element from a T.Parallel(blk_m)
    (``Mean[bx * blk_m + i] = mean_row[i]``) to 1-D outputs."""
    np_dtype = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}[dtype]
    kernel = RB.layernorm_fwd(64, 256, in_dtype=dtype, out_dtype=dtype)
    x = (RNG.standard_normal((64, 256)) * 2 + 0.5).astype(np_dtype)
    g, b = RNG.standard_normal(256).astype(np_dtype), RNG.standard_normal(256).astype(np_dtype)
    y, mean, rstd = kernel(x, g, b)
    y_ref, mean_ref, rstd_ref = RB.layernorm_reference(x, g, b)
    _allclose(y, y_ref)
    _allclose(mean, mean_ref, rtol=1e-3, atol=1e-3)
    _allclose(rstd, rstd_ref, rtol=1e-3, atol=1e-3)


def test_online_softmax_one_row_blocks_float16():
    """float16 input, the running log-sum-exp carried by a T.Pipelined loop."""
    x = (RNG.standard_normal((64, 256)) * 2).astype(np.float16)  # 2 pipelined column blocks
    _allclose(RB.softmax_kernel(x, BLOCK_N=128), RB.softmax_reference(x))


# ---- what the pass makes of them ----------------------------------------------------------------
@pytest.mark.parametrize("rows", [1, 2, 8])
def test_b_row_blocks_become_the_32_row_kernel(rows):
    """TileLang's layernorm with blk_m = 1, 2 or 8 is, after A0.0, the kernel written with
    blk_m = 32 (structurally equal bodies), so it compiles to the same C++."""
    small = _lowered(RB.layernorm_fwd.get_tir(64, 128, blk_m=rows), "A0.0")
    big = _lowered(RB.layernorm_fwd.get_tir(64, 128, blk_m=32), "A0.0")
    assert tvm_ffi.structural_equal(small.body, big.body, map_free_vars=True)
    record = tilelang_tt.passes.common.to_py(small.attrs[attrs.ROW_COARSEN])
    assert record == [{"axis": "blockIdx.x", "rows": rows, "factor": 32 // rows}]
    assert attrs.ROW_COARSEN not in big.attrs


def test_kernels_with_whole_tile_blocks_are_left_alone():
    func = RB.layernorm_fwd.get_tir(64, 128, blk_m=32)
    after = _lowered(func, "A0.0")
    assert tvm_ffi.structural_equal(func.body, after.body)
    assert attrs.ROW_COARSEN not in after.attrs


def test_one_row_constant_index_is_the_row():
    """With one-row blocks, ``s[0]`` inside a T.Parallel(1, N) nest is the row's value (TileLang's
    layernorm backward writes ``sum_dx_hat[0]``): after coarsening it reads row i."""
    M, N = 64, 128

    @T.prim_func
    def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(M) as bx:
            x = T.alloc_shared((1, N), "float32")
            s = T.alloc_fragment((1,), "float32")
            y = T.alloc_shared((1, N), "float32")
            T.copy(X[bx, 0], x)
            T.reduce_max(x, s, dim=1)
            for i, j in T.Parallel(1, N):
                y[i, j] = x[i, j] - s[0]
            T.copy(y, Y[bx, 0])

    art = tilelang_tt.compile(k, out_idx=-1)
    x = RNG.integers(-8, 9, (M, N)).astype(np.float32)
    np.testing.assert_array_equal(art(x), x - x.max(1, keepdims=True))


def test_one_row_elementwise_on_a_2d_grid():
    """Rows of one along ``by``, 32-column blocks along ``bx``, tensors read and written in the
    T.Parallel nest itself: ``by`` is coarsened, ``bx`` left alone."""
    M, N = 64, 128

    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(N // 32, M, threads=128) as (bx, by):
            for i, j in T.Parallel(1, 32):
                C[by * 1 + i, bx * 32 + j] = A[by * 1 + i, bx * 32 + j] * 2.0 + 1.0

    (f,) = tilelang_tt.lower(k, stop_after="A0.0").functions.values()
    assert tilelang_tt.passes.common.to_py(f.attrs[attrs.ROW_COARSEN]) == [
        {"axis": "blockIdx.y", "rows": 1, "factor": 32}]
    art = tilelang_tt.compile(k, out_idx=-1)
    assert art.plan["grid"] == [4, 2, 1]
    a = RNG.standard_normal((M, N)).astype(np.float32)
    np.testing.assert_array_equal(art(a), a * 2 + 1)


def test_one_row_gemm_blocks():
    """A block's rows as the M rows of a T.gemm (``x @ W`` one row per block): 32 one-row
    blocks are one 32-row GEMM block; W, the B operand, is shared by every block."""
    M, K, N = 64, 64, 64

    @T.prim_func
    def k(X: T.Tensor((M, K), "bfloat16"), W: T.Tensor((K, N), "bfloat16"),
          Y: T.Tensor((M, N), "float32")):
        with T.Kernel(M) as bx:
            x_s = T.alloc_shared((1, K), "bfloat16")
            w_s = T.alloc_shared((K, N), "bfloat16")
            acc = T.alloc_fragment((1, N), "float32")
            T.copy(X[bx, 0], x_s)
            T.copy(W, w_s)
            T.gemm(x_s, w_s, acc, clear_accum=True)
            T.copy(acc, Y[bx, 0])

    art = tilelang_tt.compile(k, out_idx=-1)
    x = RNG.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    w = RNG.standard_normal((K, N)).astype(ml_dtypes.bfloat16)
    assert_matmul(art(x, w), x, w, art)


# ---- refused ----------------------------------------------------------------------------------
def _one_row(body_kind):
    M, N = 64, 128

    if body_kind == "column_sum":
        @T.prim_func
        def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((N,), "float32")):
            with T.Kernel(M) as bx:
                x = T.alloc_shared((1, N), "float32")
                c = T.alloc_fragment((N,), "float32")
                T.copy(X[bx, 0], x)
                T.reduce_sum(x, c, dim=0)
                T.copy(c, Y)
        return k
    if body_kind == "row_expression":
        @T.prim_func
        def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
            with T.Kernel(M // 2) as bx:
                x = T.alloc_shared((2, N), "float32")
                for i, j in T.Parallel(2, N):
                    x[i, j] = X[bx * 2 + i, j] * i
                T.copy(x, Y[bx * 2, 0])
        return k
    if body_kind == "constant_row":
        @T.prim_func
        def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
            with T.Kernel(M // 2) as bx:
                x = T.alloc_shared((2, N), "float32")
                y = T.alloc_shared((2, N), "float32")
                T.copy(X[bx * 2, 0], x)
                for i, j in T.Parallel(2, N):
                    y[i, j] = x[0, j]
                T.copy(y, Y[bx * 2, 0])
        return k
    if body_kind == "row_sum_by_store":  # TileLang's layernorm backward's dgamma_acc
        @T.prim_func
        def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
            with T.Kernel(M) as bx:
                x = T.alloc_shared((1, N), "float32")
                acc = T.alloc_fragment((N,), "float32")
                T.copy(X[bx, 0], x)
                T.clear(acc)
                for i, j in T.Parallel(1, N):
                    acc[j] += x[i, j]
                for i, j in T.Parallel(1, N):
                    x[i, j] = acc[j]
                T.copy(x, Y[bx, 0])
        return k
    if body_kind == "rows_not_multiple":  # 48 rows of 64: the last 32-row block would reach 16
        @T.prim_func
        def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
            with T.Kernel(48) as bx:
                x = T.alloc_shared((1, N), "float32")
                T.copy(X[bx, 0], x)
                T.copy(x, Y[bx, 0])
        return k
    raise KeyError(body_kind)


@pytest.mark.parametrize("kind,words", [
    ("column_sum", ["dimension 0 of x", "reduced by `tile.sum`",
                    "combines or tells apart the rows"]),
    ("row_expression", ["T.Parallel index i",
                        'used in the expression `X[bx * 2 + i, j] * T.Cast("float32", i)`']),
    ("constant_row", ["x is indexed by the constant 0", "one row for all"]),
    ("row_sum_by_store", ["the store to acc[...] does not depend on it", "write the same element"]),
    ("rows_not_multiple", ["48 rows, not a multiple of 32",
                           "X (dimension 0 of size 64) that no block of the grid touches"]),
])
def test_row_blocks_refused(kind, words):
    with pytest.raises(TTLayoutError) as err:
        tilelang_tt.lower(_one_row(kind), stop_after="A0.0")
    text = str(err.value)
    assert "test_row_blocks.py:" in text, text  # the user's line
    for w in words:
        assert w in text, text


def test_one_row_blocks_of_8192_columns_stream_their_columns():
    """TileLang's rms_norm at its own width: a 32-row block of 8192 float32 columns is 1 MiB
    a buffer, more than L1 holds; A0.1.4 computes it 1024 columns at a time
    (testing/test_wide_rows.py runs it on the emulator)."""
    (f,) = tilelang_tt.lower(RB.rms_norm.get_tir(M=64, N=8192, blk_m=1),
                             stop_after="A0.1.4").functions.values()
    assert tilelang_tt.passes.common.to_py(f.attrs[attrs.COL_STREAM])["chunk"] == 1024
