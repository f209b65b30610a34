"""A serial loop over a block's rows (A0.0.1 SerialRowsToBlockTT): TileLang's layernorm
backward (examples/row_blocks.py ``layernorm_bwd``, as examples/norm/layernorm.py writes it:
``blk_m = 32`` rows walked one at a time with one-row buffers, scalar ``Mean[row]`` reads and
``dgamma_acc[j] += ...`` summed over the rows) runs on the emulator and matches numpy within
TileLang's tolerance; after A0.0.1 it is the kernel written with 32-row blocks; loops whose rows
interact otherwise get a TTLayoutError naming the buffer and the line."""

import ml_dtypes
import numpy as np
import pytest
import tvm_ffi

import row_blocks as RB
import tilelang_tt
import tilelang_tt.language as T
from tilelang_tt import attrs
from tilelang_tt.errors import TTLayoutError

RNG = np.random.default_rng(11)


def _allclose(actual, expected, rtol=1e-2, atol=1e-2):
    np.testing.assert_allclose(np.asarray(actual).astype(np.float32), expected, rtol=rtol,
                               atol=atol)


def _inputs(N, D):
    x = (RNG.standard_normal((N, D)) * 2 + 0.5).astype(ml_dtypes.bfloat16)
    dy = RNG.standard_normal((N, D)).astype(ml_dtypes.bfloat16)
    g = RNG.standard_normal(D).astype(ml_dtypes.bfloat16)
    _, mean, rstd = RB.layernorm_reference(x, g, g)
    return dy, x, g, mean.astype(np.float32), rstd.astype(np.float32)


# ---- TileLang's layernorm backward on the emulator --------------------------------------------
@pytest.mark.parametrize("N,D", [(96, 384)])  # 3 blocks added into dgamma / dbeta
def test_layernorm_backward(N, D):
    """dx per row; dgamma / dbeta summed over every row of every block (the blocks' sums
    added into the outputs by T.atomic_add, which start at zero as TileLang's caller makes
    them)."""
    dy, x, g, mean, rstd = _inputs(N, D)
    kernel = RB.layernorm_bwd(N, D)
    dgamma, dbeta = np.zeros(D, np.float32), np.zeros(D, np.float32)
    dx = kernel(dy, x, g, mean, rstd, dgamma, dbeta)
    _check_backward((dy, x, g, mean, rstd), dx, dgamma, dbeta)
    assert kernel.plan["grid"][0] == N // 32 or kernel.plan["grid"][0] == 1


def _check_backward(inputs, dx, dgamma, dbeta):
    dx_ref, dgamma_ref, dbeta_ref = RB.layernorm_bwd_reference(*inputs)
    _allclose(dx, dx_ref)
    # sums of N bf16-derived terms, regrouped (column sums of each 32-row block): TileLang's
    # tolerance relative to the sums' scale
    scale = np.abs(dgamma_ref).max()
    _allclose(dgamma / scale, dgamma_ref / scale)
    _allclose(dbeta, dbeta_ref)


def test_layernorm_backward_streamed_by_columns():
    """Rows too wide for L1 (forced here: ``tt.stream_cols = 64`` of 128 columns; TileLang's
    8192 columns stream on their own): the two row sums in a first pass over the column chunks,
    dx and the column sums (dim=0) in a second; DGamma / DBeta, which A0.1.1 holds as whole
    blocks across the serial block loop, are read, added to and written back chunk by chunk
    between tt.rmw_acquire / tt.rmw_release. Matches numpy as the unstreamed kernel does."""
    N, D = 64, 128
    func = RB.layernorm_bwd.get_tir(N, D)
    options = {"tt.stream_cols": 64}
    (f,) = tilelang_tt.lower(func, stop_after="A0.1.4", pass_configs=options).functions.values()
    record = tilelang_tt.passes.common.to_py(f.attrs[attrs.COL_STREAM])
    assert record == {"cols": D, "chunk": 64, "phases": [2]}, record
    text = f.script()
    assert text.count("T.tt.rmw_acquire()") == 2 and text.count("T.tt.rmw_release()") == 2
    assert "DGamma[a0 + col_chunk * 64]" in text, text  # the held block, a chunk at a time
    dy, x, g, mean, rstd = _inputs(N, D)
    kernel = tilelang_tt.compile(func, out_idx=[-3], pass_configs=options)
    dgamma, dbeta = np.zeros(D, np.float32), np.zeros(D, np.float32)
    dx = kernel(dy, x, g, mean, rstd, dgamma, dbeta)
    _check_backward((dy, x, g, mean, rstd), dx, dgamma, dbeta)


# ---- what the pass makes of it ------------------------------------------------------------------
def _lowered(func, stop_after):
    (f,) = tilelang_tt.lower(func, stop_after=stop_after).functions.values()
    return f


def _block_kernel(N, D, in_dtype="bfloat16"):
    """The backward written with 32-row blocks: what A0.0.1 makes of TileLang's."""
    accum_dtype = "float"

    @T.prim_func
    def main(DY: T.Tensor((N, D), in_dtype), X: T.Tensor((N, D), in_dtype),
             gamma: T.Tensor((D,), in_dtype), Mean: T.Tensor((N,), accum_dtype),
             Rstd: T.Tensor((N,), accum_dtype), DX: T.Tensor((N, D), in_dtype),
             DGamma: T.Tensor((D,), accum_dtype), DBeta: T.Tensor((D,), accum_dtype)):
        with T.Kernel(N // 32, threads=256) as bx:
            DY_smem = T.alloc_shared((32, D), in_dtype)
            X_smem = T.alloc_shared((32, D), in_dtype)
            G_smem = T.alloc_shared((D,), in_dtype)
            DX_smem = T.alloc_shared((32, D), in_dtype)
            x_hat = T.alloc_fragment((32, D), accum_dtype)
            dx_hat = T.alloc_fragment((32, D), accum_dtype)
            dx_hat_x_hat = T.alloc_fragment((32, D), accum_dtype)
            sum_dx_hat = T.alloc_fragment((32,), accum_dtype)
            sum_dx_hat_x_hat = T.alloc_fragment((32,), accum_dtype)
            dgamma_acc = T.alloc_fragment((D,), accum_dtype)
            dbeta_acc = T.alloc_fragment((D,), accum_dtype)
            T.copy(gamma, G_smem)
            T.clear(dgamma_acc)
            T.clear(dbeta_acc)
            inv_D = T.float32(1.0) / T.Cast(accum_dtype, D)
            m_v = T.alloc_fragment((32,), accum_dtype)
            r_v = T.alloc_fragment((32,), accum_dtype)
            T.copy(DY[bx * 32, 0], DY_smem)
            T.copy(X[bx * 32, 0], X_smem)
            T.copy(Mean[bx * 32], m_v)
            T.copy(Rstd[bx * 32], r_v)
            for i, j in T.Parallel(32, D):
                xv = T.Cast(accum_dtype, X_smem[i, j])
                dy_v = T.Cast(accum_dtype, DY_smem[i, j])
                g_v = T.Cast(accum_dtype, G_smem[j])
                x_hat[i, j] = (xv - m_v[i]) * r_v[i]
                dx_hat[i, j] = dy_v * g_v
                dx_hat_x_hat[i, j] = dx_hat[i, j] * x_hat[i, j]
            T.reduce_sum(dx_hat, sum_dx_hat, dim=1)
            T.reduce_sum(dx_hat_x_hat, sum_dx_hat_x_hat, dim=1)
            dgamma_acc_terms = T.alloc_fragment((32, D), accum_dtype)
            dbeta_acc_terms = T.alloc_fragment((32, D), accum_dtype)
            for i, j in T.Parallel(32, D):
                c1 = sum_dx_hat_x_hat[i] * inv_D
                c2 = sum_dx_hat[i] * inv_D
                dx_v = r_v[i] * (dx_hat[i, j] - c2 - x_hat[i, j] * c1)
                DX_smem[i, j] = T.Cast(in_dtype, dx_v)
                dy_v = T.Cast(accum_dtype, DY_smem[i, j])
                dgamma_acc_terms[i, j] = dy_v * x_hat[i, j]
                dbeta_acc_terms[i, j] = dy_v
            T.reduce_sum(dgamma_acc_terms, dgamma_acc, dim=0, clear=False)
            T.reduce_sum(dbeta_acc_terms, dbeta_acc, dim=0, clear=False)
            T.copy(DX_smem, DX[bx * 32, 0])
            for j in T.Parallel(D):
                T.atomic_add(DGamma[j], dgamma_acc[j], memory_order="relaxed")
                T.atomic_add(DBeta[j], dbeta_acc[j], memory_order="relaxed")
    return main


def test_row_walk_becomes_the_32_row_kernel():
    """After A0.1 (both kernels' scalar assignments bound alike) the walked kernel is the
    32-row one, so it generates the same C++."""
    walked = _lowered(RB.layernorm_bwd.get_tir(64, 128), "A0.1")
    block = _lowered(_block_kernel(64, 128), "A0.1")
    assert tvm_ffi.structural_equal(walked.body, block.body, map_free_vars=True), walked.script()
    record = tilelang_tt.passes.common.to_py(walked.attrs[attrs.SERIAL_ROWS])
    assert record == [{"axis": "blockIdx.x", "rows": 32}]
    assert attrs.SERIAL_ROWS not in block.attrs


def test_kernels_without_row_walks_are_left_alone():
    func = _block_kernel(64, 128)
    after = _lowered(func, "A0.0.1")
    assert tvm_ffi.structural_equal(func.body, after.body)
    assert attrs.SERIAL_ROWS not in after.attrs


# ---- refused ----------------------------------------------------------------------------------
def _walk(kind):
    M, N = 64, 128

    if kind == "carried_row":  # the one-row buffer keeps the previous row's values
        @T.prim_func
        def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
            with T.Kernel(M // 32) as bx:
                x = T.alloc_shared((1, N), "float32")
                T.clear(x)
                for r in T.serial(32):
                    for i, j in T.Parallel(1, N):
                        x[i, j] = x[i, j] + X[bx * 32 + r, j]
                    T.copy(x, Y[bx * 32 + r, 0])
        return k
    if kind == "rows_reduced":  # a reduction over a one-row buffer's rows
        @T.prim_func
        def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M // 32, N), "float32")):
            with T.Kernel(M // 32) as bx:
                x = T.alloc_shared((1, N), "float32")
                c = T.alloc_fragment((N,), "float32")
                for r in T.serial(32):
                    T.copy(X[bx * 32 + r, 0], x)
                    T.reduce_sum(x, c, dim=0)
                    T.copy(c, Y[bx, 0])
        return k
    if kind == "scalar_in_tile_op":  # a per-row scalar used outside a T.Parallel nest
        @T.prim_func
        def k(X: T.Tensor((M, N), "float32"), S: T.Tensor((M,), "float32"),
              Y: T.Tensor((M, N), "float32")):
            with T.Kernel(M // 32) as bx:
                x = T.alloc_shared((1, N), "float32")
                for r in T.serial(32):
                    s = S[bx * 32 + r]
                    T.fill(x, s)
                    T.copy(x, Y[bx * 32 + r, 0])
        return k
    if kind == "row_scratch":  # a per-row temporary with no row dimension
        @T.prim_func
        def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
            with T.Kernel(M // 32) as bx:
                x = T.alloc_shared((1, N), "float32")
                t = T.alloc_fragment((N,), "float32")
                for r in T.serial(32):
                    T.copy(X[bx * 32 + r, 0], x)
                    for j in T.Parallel(N):
                        t[j] = x[0, j] * 2.0
                    for i, j in T.Parallel(1, N):
                        x[i, j] = t[j]
                    T.copy(x, Y[bx * 32 + r, 0])
        return k
    raise KeyError(kind)


@pytest.mark.parametrize("kind,words", [
    ("carried_row", ["one-row buffer x is read before the iteration writes it"]),
    ("rows_reduced", ["reduces x over its rows", "the rows meet"]),
    ("scalar_in_tile_op", ["the per-row scalar s is used outside a T.Parallel nest"]),
    ("row_scratch", ["t (shape [128]) is written in every iteration",
                     "neither a one-row buffer"]),
])
def test_row_walks_refused(kind, words):
    with pytest.raises(TTLayoutError) as err:
        tilelang_tt.lower(_walk(kind), stop_after="A0.0.1")
    text = str(err.value)
    assert "test_serial_rows.py:" in text, text  # the user's line
    assert "a serial loop over the rows of a block" in text, text
    for w in words:
        assert w in text, text


def test_row_walk_of_48_rows_refused():
    """A walk over 48 rows would make blocks of a tile and a half: refused, saying what to
    change (a walk over fewer than 32 rows is A0.0's: its blocks' rows are not whole)."""
    M, N = 96, 128

    @T.prim_func
    def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(M // 48) as bx:
            x = T.alloc_shared((1, N), "float32")
            for r in T.serial(48):
                T.copy(X[bx * 48 + r, 0], x)
                T.copy(x, Y[bx * 48 + r, 0])

    with pytest.raises(TTLayoutError) as err:
        tilelang_tt.lower(k, stop_after="A0.0.1")
    assert "walks 48 rows, not a multiple of 32" in str(err.value)
    assert "test_serial_rows.py:" in str(err.value)


def test_row_walk_max_fold_on_the_emulator():
    """A running column max over the rows (``m[j] = T.max(m[j], x[i, j])``) and a per-row scale
    read as a scalar: the max is exact, the rows scaled apart."""
    M, N = 64, 64

    @T.prim_func
    def k(X: T.Tensor((M, N), "float32"), S: T.Tensor((M,), "float32"),
          Y: T.Tensor((M, N), "float32"), C: T.Tensor((M // 32 * N,), "float32")):
        with T.Kernel(M // 32) as bx:
            x = T.alloc_shared((1, N), "float32")
            y = T.alloc_shared((1, N), "float32")
            m = T.alloc_fragment((N,), "float32")
            T.fill(m, -T.infinity("float32"))
            for r in T.serial(32):
                T.copy(X[bx * 32 + r, 0], x)
                s = S[bx * 32 + r]
                for i, j in T.Parallel(1, N):
                    y[i, j] = x[i, j] * s
                    m[j] = T.max(m[j], x[i, j])
                T.copy(y, Y[bx * 32 + r, 0])
            T.copy(m, C[bx * N])

    art = tilelang_tt.compile(k, out_idx=[-2, -1])
    x = RNG.integers(-8, 9, (M, N)).astype(np.float32)
    s = RNG.integers(1, 4, M).astype(np.float32)
    y, c = art(x, s)
    np.testing.assert_array_equal(y, x * s[:, None])
    np.testing.assert_array_equal(c, x.reshape(M // 32, 32, N).max(1).reshape(-1))
