"""Row blocks too wide for L1 (A0.1.4 StreamWideRowsTT): TileLang's rms_norm, layernorm
forward and online softmax at 8192 columns (examples/row_blocks.py, as TileLang's examples
write them) run on the emulator in column chunks and match numpy within TileLang's
tolerances; at sizes that fit L1 the pass changes nothing; kernels whose wide buffers cannot
be recomputed chunk by chunk get a TTResourceError naming the buffer and line."""

import ml_dtypes
import numpy as np
import pytest
import tvm
import tvm_ffi
from tvm import tirx

import row_blocks as RB
import tilelang_tt
import tilelang_tt.language as T
from tilelang_tt import attrs
from tilelang_tt.errors import TTCompileError, TTResourceError
from tilelang_tt.passes import pipeline
from tilelang_tt.passes.common import collect, run_pass, to_py

RNG = np.random.default_rng(11)


def _allclose(actual, expected, rtol=1e-2, atol=1e-2):
    """TileLang's check for these kernels (assert_allclose(rtol=0.01, atol=0.01))."""
    np.testing.assert_allclose(np.asarray(actual).astype(np.float32), expected, rtol=rtol,
                               atol=atol)


def _lowered(func, stop_after, pass_configs=None):
    (f,) = tilelang_tt.lower(func, stop_after=stop_after,
                             pass_configs=pass_configs).functions.values()
    return f


def _chunk_loops(f):
    return [lp for lp in collect(f.body, tirx.For)
            if lp.kind == tirx.ForKind.SERIAL and lp.loop_var.name == "col_chunk"]


# ---- TileLang's kernels at 8192 columns, on the emulator --------------------------------------
@pytest.mark.parametrize("M", [64, 256])
def test_rms_norm_8192_columns(M):
    """32 rows x 8192 float32 columns are 1 MiB a buffer: two passes of 8 chunks of 1024."""
    kernel = RB.rms_norm.compile(M=M, N=8192, blk_m=1)
    a = RNG.standard_normal((M, 8192)).astype(np.float32)
    _allclose(kernel(a), RB.rms_norm_reference(a))


def test_rms_norm_forced_chunks():
    """``tt.stream_cols`` streams a kernel that fits (1024 columns in chunks of 256); 2048
    float32 columns (A_local twice, A_pow_local: 1.5 MB of circular buffers) stream on
    their own."""
    a = (RNG.standard_normal((96, 1024)) * 3).astype(np.float32)
    forced = tilelang_tt.compile(RB.rms_norm.get_tir(M=96, N=1024, blk_m=1),
                                 pass_configs={"tt.stream_cols": 256})
    _allclose(forced(a), RB.rms_norm_reference(a))
    assert to_py(_lowered(RB.rms_norm.get_tir(M=96, N=1024, blk_m=1), "A0.1.4", {
        "tt.stream_cols": 256}).attrs[attrs.COL_STREAM])["chunk"] == 256
    a = (RNG.standard_normal((96, 2048)) * 3).astype(np.float32)
    kernel = RB.rms_norm.compile(M=96, N=2048, blk_m=1)
    _allclose(kernel(a), RB.rms_norm_reference(a))


def test_layernorm_forward_8192_columns():
    """bf16 X, gamma and beta (column vectors re-read per chunk), float32 Mean / Rstd."""
    D = 8192
    kernel = RB.layernorm_fwd(32, D)
    x = (RNG.standard_normal((32, D)) * 2 + 0.5).astype(ml_dtypes.bfloat16)
    g = RNG.standard_normal(D).astype(ml_dtypes.bfloat16)
    b = RNG.standard_normal(D).astype(ml_dtypes.bfloat16)
    y, mean, rstd = kernel(x, g, b)
    y_ref, mean_ref, rstd_ref = RB.layernorm_reference(x, g, b)
    _allclose(y, y_ref)
    _allclose(mean, mean_ref, rtol=1e-3, atol=1e-3)
    _allclose(rstd, rstd_ref, rtol=1e-3, atol=1e-3)


def test_online_softmax_8192_columns_float16():
    """TileLang's default BLOCK_N = N = 8192: the running max and the sum of exponentials
    are accumulated over chunks inside the T.Pipelined loop (two passes), the output in a
    third."""
    x = (RNG.standard_normal((32, 8192)) * 2).astype(np.float16)
    _allclose(RB.softmax_kernel(x, BLOCK_N=8192), RB.softmax_reference(x))


# ---- what the pass makes of them ----------------------------------------------------------------
def test_phases_follow_the_reductions():
    """rms_norm: the sum of squares in pass 0, the scaled rows in pass 1 (A re-read);
    layernorm: both sums in pass 0; softmax: max, then sum, then (second loop) the output."""
    f = _lowered(RB.rms_norm.get_tir(M=64, N=8192, blk_m=1), "A0.1.4")
    assert to_py(f.attrs[attrs.COL_STREAM]) == {"cols": 8192, "chunk": 1024, "phases": [2]}
    assert [int(lp.extent) for lp in _chunk_loops(f)] == [8, 8]
    shapes = sorted([int(d) for d in a.buffer.shape] for a in collect(f.body, tirx.AllocBuffer))
    assert shapes == [[32], [32, 1024], [32, 1024]]
    f = _lowered(RB.layernorm_fwd.get_tir(64, 8192), "A0.1.4")
    assert to_py(f.attrs[attrs.COL_STREAM])["phases"] == [2]
    f = _lowered(RB.softmax_kernel.get_tir(M=64, N=8192, BLOCK_N=8192), "A0.1.4")
    assert to_py(f.attrs[attrs.COL_STREAM])["phases"] == [2, 1]


@pytest.mark.parametrize("make", [
    lambda: RB.rms_norm.get_tir(M=64, N=1024, blk_m=1),
    lambda: RB.layernorm_fwd.get_tir(64, 512),
    lambda: RB.softmax_kernel.get_tir(M=64, N=1024, BLOCK_N=256),
])
def test_kernels_that_fit_are_unchanged(make):
    """Below the L1 budget the pass returns its input: the code is today's."""
    mod = pipeline.prepare(make(), "tenstorrent")
    for tag, p in pipeline.STAGES:
        if tag == "A0.1.4":
            break
        mod = run_pass(p, mod)
    out = run_pass(dict(pipeline.STAGES)["A0.1.4"], mod)
    (before,), (after,) = mod.functions.values(), out.functions.values()
    assert tvm_ffi.structural_equal(before.body, after.body)
    assert attrs.COL_STREAM not in after.attrs


def test_streamed_ir_prints_and_parses_back():
    mod = pipeline.prepare(RB.layernorm_fwd.get_tir(64, 8192), "tenstorrent")
    for tag, p in pipeline.STAGES:
        mod = run_pass(p, mod)
        if tag == "A0.1.4":
            break
    assert tvm_ffi.structural_equal(tvm.script.from_source(mod.script()), mod)


# ---- refusals -------------------------------------------------------------------------------------
def test_gemm_on_a_wide_buffer_is_refused():
    M, N = 64, 16384

    @T.prim_func
    def k(X: T.Tensor((M, N), "bfloat16"), W: T.Tensor((N, 32), "bfloat16"),
          Y: T.Tensor((M, 32), "float32")):
        with T.Kernel(M // 32) as bx:
            x = T.alloc_shared((32, N), "bfloat16")
            w = T.alloc_shared((N, 32), "bfloat16")
            acc = T.alloc_fragment((32, 32), "float32")
            T.copy(X[bx * 32, 0], x)
            T.copy(W, w)
            T.gemm(x, w, acc, clear_accum=True)
            T.copy(acc, Y[bx * 32, 0])

    with pytest.raises(TTResourceError, match=r"`w` \[16384, 32\] is neither"):
        tilelang_tt.lower(k, stop_after="A0.1.4")


def _in_place(read_back):
    """x = A; A = 2 x (in place); s = rowsum(x); B = x * s - pass 1 re-reads A for x.  With
    ``read_back``, C = A (the doubled values) is also copied out after B."""
    M, N = 32, 8192

    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"),
          C: T.Tensor((M, N), "float32")):
        with T.Kernel(1) as bx:
            x = T.alloc_fragment((32, N), "float32")
            x2 = T.alloc_fragment((32, N), "float32")
            y = T.alloc_fragment((32, N), "float32")
            w = T.alloc_fragment((32, N), "float32")
            s = T.alloc_fragment((32,), "float32")
            T.copy(A[0, 0], x)
            for i, j in T.Parallel(32, N):
                x2[i, j] = x[i, j] * 2.0
            T.copy(x2, A[0, 0])
            T.reduce_sum(x, s, dim=1)
            for i, j in T.Parallel(32, N):
                y[i, j] = x[i, j] * s[i]
            T.copy(y, B[0, 0])
            if read_back:
                T.copy(A[0, 0], w)
                T.copy(w, C[0, 0])

    return k


def test_in_place_update_is_stored_in_the_last_pass():
    """A's new values are written in pass 1, after pass 1 has re-read its old ones (chunk by
    chunk), so x is recomputed from the old A."""
    k = _in_place(False)
    f = _lowered(k, "A0.1.4")
    assert to_py(f.attrs[attrs.COL_STREAM])["phases"] == [2]
    art = tilelang_tt.compile(k)
    a = RNG.integers(-4, 5, (32, 8192)).astype(np.float32) / 4
    b, c = np.zeros_like(a), np.zeros_like(a)
    art(a_dev := a.copy(), b, c)
    _allclose(b, a * a.sum(1, keepdims=True), rtol=1e-5, atol=1e-3)
    np.testing.assert_array_equal(a_dev, 2 * a)


def test_in_place_tensor_read_again_is_refused():
    """As above, but A's new values are read back (into C) in pass 1 too: the store cannot
    move after pass 1's re-read of the old values."""
    with pytest.raises(TTResourceError, match=r"computed again in column pass 1.*overwritten"):
        tilelang_tt.lower(_in_place(True), stop_after="A0.1.4")


def test_wide_buffer_carried_across_iterations_is_refused():
    M, N = 32, 8192

    @T.prim_func
    def k(A: T.Tensor((4, M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1) as bx:
            x = T.alloc_fragment((32, N), "float32")
            acc = T.alloc_fragment((32, N), "float32")
            T.clear(acc)
            for b in T.serial(4):
                T.copy(A[b, 0, 0], x)
                for i, j in T.Parallel(32, N):
                    acc[i, j] += x[i, j]
            T.copy(acc, B[0, 0])

    with pytest.raises(TTResourceError, match=r"`acc` \(8192 columns\) is read here before"):
        tilelang_tt.lower(k, stop_after="A0.1.4")


def test_stream_cols_must_divide_the_width():
    with pytest.raises(TTResourceError, match="tt.stream_cols = 96"):
        _lowered(RB.rms_norm.get_tir(M=64, N=2048, blk_m=1), "A0.1.4",
                 pass_configs={"tt.stream_cols": 96})
    with pytest.raises(TTCompileError, match="integer >= 0"):
        _lowered(RB.rms_norm.get_tir(M=64, N=2048, blk_m=1), "A0.1.4",
                 pass_configs={"tt.stream_cols": "512"})


def test_column_index_in_values_and_tensor_stores():
    """The column variable outside the wide buffers' own indices (a mask `j < 5000`, a tensor
    store `B[i, j]` in the nest) is the tensor's column, `j + k * W`, in every chunk."""
    M, N = 32, 8192

    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1) as bx:
            x = T.alloc_fragment((32, N), "float32")
            xm = T.alloc_fragment((32, N), "float32")
            s = T.alloc_fragment((32,), "float32")
            T.copy(A[0, 0], x)
            for i, j in T.Parallel(32, N):
                xm[i, j] = T.if_then_else(j < 5000, x[i, j], 0.0)
            T.reduce_sum(xm, s, dim=1)
            for i, j in T.Parallel(32, N):
                B[i, j] = x[i, j] * s[i]

    art = tilelang_tt.compile(k, out_idx=-1)
    a = RNG.integers(-4, 5, (M, N)).astype(np.float32) / 4
    np.testing.assert_allclose(art(a), a * a[:, :5000].sum(1, keepdims=True), rtol=1e-5,
                               atol=1e-3)


def test_column_sums_and_held_atomic_stream_by_chunks():
    """A column sum (`dim=0`) of a block normalised by its row sums, and its `T.atomic_add`
    into `C` from two blocks (A0.1.1 holds `C`'s block across the serial block loop): the
    column sums per chunk, `C` read, added to and written back a chunk at a time between
    tt.rmw_acquire / tt.rmw_release; the scaler tiles of the reductions in the two chunk loops
    are produced and consumed within each loop (C3)."""
    M, N = 64, 256

    @T.prim_func
    def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32"),
          C: T.Tensor((N,), "float32")):
        with T.Kernel(M // 32) as bx:
            x = T.alloc_shared((32, N), "float32")
            y = T.alloc_fragment((32, N), "float32")
            s = T.alloc_fragment((32,), "float32")
            c = T.alloc_fragment((N,), "float32")
            T.copy(X[bx * 32, 0], x)
            T.reduce_sum(x, s, dim=1)
            for i, j in T.Parallel(32, N):
                y[i, j] = x[i, j] / s[i]
            T.reduce_sum(y, c, dim=0)
            T.copy(y, Y[bx * 32, 0])
            for j in T.Parallel(N):
                T.atomic_add(C[j], c[j])

    options = {"tt.stream_cols": 128}
    f = _lowered(k, "A0.1.4", pass_configs=options)
    assert to_py(f.attrs[attrs.COL_STREAM]) == {"cols": N, "chunk": 128, "phases": [2]}
    assert len(_chunk_loops(f)) == 2
    text = f.script()
    assert text.count("T.tt.rmw_acquire()") == 1 and "C[a0 + col_chunk * 128]" in text, text
    x = RNG.uniform(0.5, 2.0, (M, N)).astype(np.float32)
    c0 = RNG.uniform(-1, 1, N).astype(np.float32)  # the atomics add into C's initial values
    art = tilelang_tt.compile(k, out_idx=[1], pass_configs=options)
    c = c0.copy()
    y = art(x, c)
    y_ref = x / x.sum(1, keepdims=True)
    # float32 sums on the matrix engine and the SFPU's reciprocal: within 0.3% (the values
    # are about 1 / 256, so TileLang's atol = 1e-2 would say nothing)
    np.testing.assert_allclose(y, y_ref, rtol=1e-2, atol=1e-5)
    np.testing.assert_allclose(c - c0, y_ref.sum(0), rtol=1e-2, atol=1e-4)
