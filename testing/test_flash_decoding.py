"""TileLang's flash decoding as its ``examples/flash_decoding/example_mha_inference.py`` writes
it: a split launch writing per-split outputs and log2-sum-exps into ``T.alloc_global`` tensors
of rank 5 and 4, and a combine launch that copies the ``[num_split, block_M]`` region of the
log2-sum-exps into a fragment of fewer than 32 rows, reduces it over the splits
(``T.reduce_max(..., dim=0)``) and selects one split's row per ``T.Pipelined`` iteration
(``T.copy(lse_local[k, :], v)`` and ``v[i] = lse_local[k, i]``)."""

import numpy as np
import pytest

import tilelang_tt
import tilelang_tt.language as T
from helpers import as_f32
from tilelang_tt.errors import TTCompileError

pytest.importorskip("tilelang_tt.runtime.mockbuild", reason="emulator driver not installed")


def flashattn(batch, heads, seqlen_q, seqlen_kv, dim, block_M, block_N, num_split=4,
              dtype=T.float16):
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    accum_dtype = T.float32
    shape_q = [batch, seqlen_q, heads, dim]
    shape_kv = [batch, seqlen_kv, heads, dim]
    part_shape = [batch, seqlen_q, heads, num_split, dim]
    kv_slice = seqlen_kv // num_split

    @T.prim_func
    def main(Q: T.Tensor(shape_q, dtype), K: T.Tensor(shape_kv, dtype),
             V: T.Tensor(shape_kv, dtype), Output: T.Tensor(shape_q, dtype)):
        glse = T.alloc_global([batch, heads, num_split, seqlen_q], dtype)
        Output_partial = T.alloc_global(part_shape, dtype)
        with T.Kernel(T.ceildiv(seqlen_q, block_M), heads * batch, num_split,
                      threads=128) as (bx, by, bz):
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
            hid = by % heads
            bid = by // heads
            T.copy(Q[bid, bx * block_M:(bx + 1) * block_M, hid, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))
            for k in T.Pipelined(T.ceildiv(kv_slice, block_N), num_stages=2):
                T.copy(K[bid, kv_slice * bz + k * block_N:kv_slice * bz + (k + 1) * block_N,
                         hid, :], K_shared)
                T.clear(acc_s)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True)
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
                T.copy(V[bid, kv_slice * bz + k * block_N:kv_slice * bz + (k + 1) * block_N,
                         hid, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            for i in T.Parallel(block_M):
                logsum[i] = T.log2(logsum[i]) + scores_max[i] * scale
            T.copy(logsum, glse[bid, hid, bz, bx * block_M:(bx + 1) * block_M])
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output_partial[bid, bx * block_M:(bx + 1) * block_M, hid, bz, :])

        with T.Kernel(T.ceildiv(seqlen_q, block_M), heads, batch, threads=128) as (bx, by, bz):
            po_local = T.alloc_fragment([block_M, dim], dtype)
            o_accum_local = T.alloc_fragment([block_M, dim], accum_dtype)
            o_shared = T.alloc_shared([block_M, dim], dtype)
            lse_local = T.alloc_fragment([num_split, block_M], dtype)
            lse_local_split = T.alloc_fragment([block_M], accum_dtype)
            lse_logsum_local = T.alloc_fragment([block_M], accum_dtype)
            lse_max_local = T.alloc_fragment([block_M], accum_dtype)
            scale_local = T.alloc_fragment([block_M], accum_dtype)
            T.clear(lse_logsum_local)
            T.clear(o_accum_local)
            T.copy(glse[bz, by, :, bx * block_M:(bx + 1) * block_M], lse_local)
            T.reduce_max(lse_local, lse_max_local, dim=0, clear=True)
            for k in T.Pipelined(num_split):
                T.copy(lse_local[k, :], lse_local_split)
                for i in T.Parallel(block_M):
                    lse_logsum_local[i] += T.exp2(lse_local_split[i] - lse_max_local[i])
            for i in T.Parallel(block_M):
                lse_logsum_local[i] = T.log2(lse_logsum_local[i]) + lse_max_local[i]
            for k in T.Pipelined(num_split, num_stages=2):
                T.copy(Output_partial[bz, bx * block_M:(bx + 1) * block_M, by, k, :], po_local)
                for i in T.Parallel(block_M):
                    lse_local_split[i] = lse_local[k, i]
                for i in T.Parallel(block_M):
                    scale_local[i] = T.exp2(lse_local_split[i] - lse_logsum_local[i])
                for i, j in T.Parallel(block_M, dim):
                    o_accum_local[i, j] += po_local[i, j] * scale_local[i]
            T.copy(o_accum_local, o_shared)
            T.copy(o_shared, Output[bz, bx * block_M:(bx + 1) * block_M, by, :])

    return main


def ref_program(q, k, v):
    """softmax(Q K^T / sqrt(dim)) V over BSHD tensors, in float32."""
    qf, kf, vf = (np.asarray(x).astype(np.float32) for x in (q, k, v))
    s = np.einsum("bqhd,bkhd->bhqk", qf, kf) / np.sqrt(qf.shape[-1])
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return np.einsum("bhqk,bkhd->bqhd", p, vf)


# 128-row query blocks over two K / V steps per split (a 64-row block over one step is the
# saved project test_sdkcheck_flash_decoding_projects checks)
@pytest.mark.parametrize("batch, heads, seqlen_q, seqlen_kv, dim, block_M, block_N", [
    (1, 2, 128, 512, 64, 128, 64),
])
def test_example_mha_inference(batch, heads, seqlen_q, seqlen_kv, dim, block_M, block_N):
    kernel = tilelang_tt.compile(
        flashattn(batch, heads, seqlen_q, seqlen_kv, dim, block_M, block_N), out_idx=[3])
    rng = np.random.default_rng(0)
    q = rng.standard_normal((batch, seqlen_q, heads, dim)).astype(np.float16)
    k = rng.standard_normal((batch, seqlen_kv, heads, dim)).astype(np.float16)
    v = rng.standard_normal((batch, seqlen_kv, heads, dim)).astype(np.float16)
    out = as_f32(kernel(q, k, v))
    ref = ref_program(q, k, v)
    np.testing.assert_allclose(out, ref, rtol=1e-2, atol=1e-2)
    # the first split's keys alone give other rows: the combine weighed every split
    first = ref_program(q, k[:, :seqlen_kv // 4], v[:, :seqlen_kv // 4])
    assert np.abs(first - ref).max() > 0.1


# ---- fragments of fewer than 32 rows on their own ----------------------------------------------

def reduce_rows(batch, n, L, W, op, clear, dtype="float16"):
    """A [n, W] region of a [batch, n, L] tensor copied into a fragment of n rows, reduced over
    its rows (dim=0) into a vector of W."""

    @T.prim_func
    def main(X: T.Tensor([batch, n, L], dtype), Out: T.Tensor([batch * L], "float32")):
        with T.Kernel(T.ceildiv(L, W), batch) as (bx, by):
            s = T.alloc_fragment([n, W], dtype)
            r = T.alloc_fragment([W], "float32")
            T.copy(X[by, :, bx * W:(bx + 1) * W], s)
            if not clear:
                T.fill(r, 1.5)
            if op == "max":
                T.reduce_max(s, r, dim=0, clear=clear)
            elif op == "min":
                T.reduce_min(s, r, dim=0, clear=clear)
            elif op == "sum":
                T.reduce_sum(s, r, dim=0, clear=clear)
            else:
                T.reduce_absmax(s, r, dim=0, clear=clear)
            T.copy(r, Out[by * L + bx * W])

    return main


# every op, both clear modes and 2, 3, 4 and 8 rows, each at least once; every identity a clear
# fills with (inf for min; 0 for absmax, as for sum; -inf for max in the example's combine)
@pytest.mark.parametrize("op, clear, n", [("min", True, 8), ("absmax", True, 2),
                                          ("max", False, 4), ("sum", False, 3)])
def test_reduce_over_fewer_than_32_rows(op, clear, n):
    batch, L, W = 2, 128, 64
    kernel = tilelang_tt.compile(reduce_rows(batch, n, L, W, op, clear), out_idx=[1])
    x = np.random.default_rng(1).standard_normal((batch, n, L)).astype(np.float16)
    out = as_f32(kernel(x)).reshape(batch, L)
    xf = x.astype(np.float32)
    ref = {"max": xf.max(1), "min": xf.min(1), "sum": xf.sum(1),
           "absmax": np.abs(xf).max(1)}[op]
    if not clear:
        ref = {"max": np.maximum(ref, 1.5), "sum": ref + 1.5}[op]
    np.testing.assert_allclose(out, ref, rtol=1e-2, atol=1e-2)
    if op in ("max", "min", "absmax"):  # exact: each value is one of the rows'
        np.testing.assert_array_equal(out, ref)


def select_rows(batch, n, L, W, dtype="float16"):
    """Rows of a fragment of n rows selected by a loop index: by ``T.copy(s[k, :], v)``, by
    ``v[i] = s[k, i]`` and inside an expression, folded in row order."""

    @T.prim_func
    def main(X: T.Tensor([batch, n, L], dtype), Y: T.Tensor([batch * L], "float32")):
        with T.Kernel(T.ceildiv(L, W), batch) as (bx, by):
            s = T.alloc_fragment([n, W], dtype)
            v = T.alloc_fragment([W], "float32")
            acc = T.alloc_fragment([W], "float32")
            T.copy(X[by, :, bx * W:(bx + 1) * W], s)
            T.clear(acc)
            for k in T.Pipelined(n, num_stages=2):
                T.copy(s[k, :], v)
                for i in T.Parallel(W):
                    acc[i] = acc[i] * 2.0 + v[i]
            for k in T.serial(n):
                for i in T.Parallel(W):
                    v[i] = s[k, i]
                for i in T.Parallel(W):
                    acc[i] = acc[i] * 0.5 + v[i] * 3.0 - T.abs(s[k, i])
            T.copy(acc, Y[by * L + bx * W])

    return main


# 5 rows (an odd count in the two-stage T.Pipelined); 4 rows are the example's combine launch
# (num_split=4, both forms of the selection) in test_example_mha_inference
@pytest.mark.parametrize("n", [5])
def test_rows_of_fewer_than_32_selected_by_a_loop_index(n):
    batch, L, W = 2, 64, 32
    kernel = tilelang_tt.compile(select_rows(batch, n, L, W), out_idx=[1])
    x = np.random.default_rng(2).standard_normal((batch, n, L)).astype(np.float16)
    xf = x.astype(np.float32)
    acc = np.zeros((batch, L), np.float32)
    for k in range(n):
        acc = acc * 2.0 + xf[:, k]
    for k in range(n):
        acc = acc * 0.5 + xf[:, k] * 3.0 - np.abs(xf[:, k])
    out = as_f32(kernel(x)).reshape(batch, L)
    np.testing.assert_allclose(out, acc, rtol=1e-2, atol=1e-2)


# ---- refusals ----------------------------------------------------------------------------------

def short_fragment_kernel(case, n=4, L=64, W=32):
    dtype = "float32" if case == "dtype" else "float16"

    @T.prim_func
    def main(X: T.Tensor([n, L], "float16"), Y: T.Tensor([L], dtype)):
        with T.Kernel(T.ceildiv(L, W)) as bx:
            s = T.alloc_fragment([n, W], dtype)
            r = T.alloc_fragment([W], dtype)
            if case in ("computed", "computed_row"):
                for k, i in T.Parallel(n, W):
                    s[k, i] = X[k, bx * W + i] * 2.0
            else:
                T.copy(X[:, bx * W:(bx + 1) * W], s)
            if case == "computed_row":
                T.copy(s[1, :], r)
            else:
                T.reduce_sum(s, r, dim=0)
            T.copy(r, Y[bx * W])

    return main


@pytest.mark.parametrize("case, scale", [("computed", 2.0), ("dtype", 1.0)])
def test_fewer_than_32_rows_reduced_as_padded_tiles(case, scale):
    """A short buffer that is not a tensor copy (computed, or copied from a tensor of another
    dtype) and that no op reads by one row: A0.5.1 holds it as 32-row tiles and masks the padded rows out of the
    dim=0 sum."""
    x = np.random.default_rng(3).uniform(-1, 1, (4, 64)).astype(np.float16)
    y = tilelang_tt.compile(short_fragment_kernel(case), out_idx=[1])(x)
    np.testing.assert_allclose(y, (x.astype(np.float32) * scale).sum(0), rtol=1e-2, atol=1e-2)


def test_fewer_than_32_rows_read_by_row_refused():
    with pytest.raises(TTCompileError) as err:
        tilelang_tt.compile(short_fragment_kernel("computed_row"), out_idx=[1])
    text = str(err.value)
    assert type(err.value).__name__ == "TTLayoutError"
    assert "block buffer s has shape [4, 32]" in text and "a T.Parallel store writes it" in text
    assert "test_flash_decoding.py:" in text  # names the line


# ---- the real SDK ------------------------------------------------------------------------------

from test_sdk_host_twin import sdk, sdkcheck  # noqa: E402,F401  (the sdkcheck fixture)
from tilelang_tt.codegen.cmake import mock_dir  # noqa: E402


def test_sdkcheck_flash_decoding_projects(sdk, tmp_path, monkeypatch):  # noqa: F811
    """The saved projects of the example's kernel (its combine launch selects a short
    fragment's rows by the loop index, both ways): main.cpp compiles and links against
    TT-Metalium 0.81.1, every kernel compiles cleanly.  (The other projects of this file, as
    every project the suite saves, are checked by CI's .ci/sdkcheck_projects.py.)"""
    save = tmp_path / "saved"
    monkeypatch.setenv("TILELANG_TT_SAVE_PROJECTS", str(save))
    tilelang_tt.compile(flashattn(1, 2, 64, 256, 64, 64, 64), out_idx=[3])
    proc = sdkcheck("--host-include", mock_dir() / "include", save)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = proc.stdout
    assert " 0 error(s)" in text and " 0 warning(s)" in text, text
    # one host program and two launches' kernels
    assert "3 project(s)" in text and text.count("host@link") == 1, text
    assert text.count("compute@TRISC1/MATH") == 2, text
