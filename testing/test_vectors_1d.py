"""1-D tensors and the vectors of row reductions (TileLang's layernorm statistics).

A row reduction (``T.reduce_*(x, r, dim=1)``) makes a column vector: one tile per 32 rows, the
values in column 0.  A 1-D tensor is a row vector in DRAM (one row of tiles, values in row 0).
Copying one to the other (``T.copy(r, Out[by * bm])``, ``Out[by * bm + i] = r[i]``, and the
reverse for inputs read per row) transposes each tile (``transpose_tile``).  Every kernel runs
on the emulator and is compared with numpy."""

import os
import subprocess

import numpy as np
import pytest

import layer_norm
import tilelang_tt
from helpers import BF16, as_f32, kernel_from_source, matmul_reference, rand, src_operand, ulp
from tilelang_tt import ops

REDUCE_KERNEL = """
import tilelang_tt.language as T

@T.prim_func
def k(X: T.Tensor(({M}, {N}), "{dtype}"), R: T.Tensor(({M},), "{dtype}")):
    with T.Kernel(T.ceildiv({M}, {bm}), threads=128) as by:
        X_s = T.alloc_shared(({bm}, {N}), "{dtype}")
        r = T.alloc_fragment(({bm},), "{dtype}")
        T.copy(X[by * {bm}, 0], X_s)
        T.{reduce}(X_s, r, dim=1)
        {write}
"""
WRITES = {
    "copy": "T.copy(r, R[by * {bm}])",
    "parallel": "for i in T.Parallel({bm}):\n            R[by * {bm} + i] = r[i]",
    "expression": "for i in T.Parallel({bm}):\n            R[by * {bm} + i] = r[i] * 0.5",
}


def reduce_kernel(tmp_path, M, N, bm, dtype, reduce, form):
    write = WRITES[form].format(bm=bm)
    src = REDUCE_KERNEL.format(M=M, N=N, bm=bm, dtype=dtype, reduce=reduce, write=write)
    return kernel_from_source(tmp_path, src)


# every reduction in both dtypes and through both writes (the write does not depend on the
# reduction, nor the reduction on the write)
@pytest.mark.parametrize("dtype,reduce,form", [
    ("bfloat16", "reduce_max", "copy"), ("float32", "reduce_max", "parallel"),
    ("float32", "reduce_min", "copy"), ("bfloat16", "reduce_min", "parallel"),
    ("bfloat16", "reduce_absmax", "copy"), ("float32", "reduce_absmax", "parallel")])
def test_row_max_to_a_1d_tensor_is_exact(tmp_path, dtype, reduce, form):
    """max / min / absmax take no rounding; the transposes move values exactly, so each result
    is the row's extreme of the operands as the unpacker reads them (bfloat16 exactly; float32
    max / min on the vector engine from a 32-bit DST, exactly, where the matrix engine would
    read TF32)."""
    M, N, bm = 128, 96, 64
    art = tilelang_tt.compile(reduce_kernel(tmp_path, M, N, bm, dtype, reduce, form), out_idx=-1)
    code = art.sources["compute.cpp"]
    assert "ReduceDim::REDUCE_ROW" in code and code.count("transpose_tile(") == 1
    x = rand((M, N), dtype, 11)
    xs = x if dtype == "float32" else src_operand(x, fp32_dst=True)
    want = {"reduce_max": xs.max(axis=1), "reduce_min": xs.min(axis=1),
            "reduce_absmax": np.abs(xs).max(axis=1)}[reduce]
    np.testing.assert_array_equal(as_f32(art(x)), want.astype(np.float32))


@pytest.mark.parametrize("reduce", ["reduce_sum", "reduce_max"])
def test_batch_is_a_scheduling_hint(tmp_path, reduce):
    """TileLang's ``batch=`` groups a GPU's AllReduce calls; it does not change the result, so
    the kernel is the one without it (``batch < 1`` is refused, as TileLang does, naming the line)."""
    M, N, bm = 64, 64, 32
    plain = tilelang_tt.compile(reduce_kernel(tmp_path, M, N, bm, "float32", reduce, "copy"),
                                out_idx=-1)
    src = REDUCE_KERNEL.format(M=M, N=N, bm=bm, dtype="float32", reduce=reduce,
                               write=WRITES["copy"].format(bm=bm))
    batched = tilelang_tt.compile(kernel_from_source(
        tmp_path, src.replace("dim=1)", "dim=1, batch=4)")), out_idx=-1)
    assert batched.sources == plain.sources
    x = rand((M, N), "float32", 13)
    np.testing.assert_array_equal(as_f32(batched(x)), as_f32(plain(x)))
    with pytest.raises(tilelang_tt.TTCompileError, match=r"batch must be >= 1, got 0(.|\n)*:10:"):
        kernel_from_source(tmp_path, src.replace("dim=1)", "dim=1, batch=0)"))

# each write once; the expression (one more rounding at the pack, dtype-specific) in both dtypes
@pytest.mark.parametrize("dtype,form", [("bfloat16", "copy"), ("float32", "parallel"),
                                        ("bfloat16", "expression"), ("float32", "expression")])
def test_row_sums_to_a_1d_tensor(tmp_path, dtype, form):
    """A row sum is the matrix engine's product with a column of ones (REDUCE_ROW runs as MVMUL
    with the scaler in SrcA): within the model's bound of ``x @ 1`` (testing/helpers.py)."""
    M, N, bm = 96, 128, 32
    art = tilelang_tt.compile(reduce_kernel(tmp_path, M, N, bm, dtype, "reduce_sum", form),
                              out_idx=-1)
    cfg = art.plan["kernels"]["compute"]["config"]
    x = rand((M, N), dtype, 12)
    ref, atol = matmul_reference(x, np.ones((N, 1), np.float32), cfg["math_fidelity"],
                                 cfg["fp32_dest_acc_en"], dtype)
    ref, atol = ref[:, 0], atol[:, 0]
    if form == "expression":  # `r[i] * 0.5`: exact, then one more rounding at the pack
        ref, atol = ref * 0.5, atol * 0.5 + ulp(ref * 0.5, dtype)
    err = np.abs(as_f32(art(x)).astype(np.float64) - ref)
    assert (err <= atol).all(), (err - atol).max()


def test_float32_vectors_transpose_exactly(tmp_path):
    """A float32 CB that only transpose_tile reads is unpacked straight to DST and transposed
    there (the SDK's transpose_tile with UnpackToDestFp32): no TF32 truncation.  ``a`` is read
    into a column vector (an elementwise op with a row sum makes it one) and written back out:
    two transposes, bit for bit."""
    src = """
import tilelang_tt.language as T

@T.prim_func
def k(X: T.Tensor((64, 64), "float32"), a: T.Tensor((64,), "float32"),
      c: T.Tensor((64,), "float32")):
    with T.Kernel(2) as bx:
        X_s = T.alloc_shared((32, 64), "float32")
        r = T.alloc_fragment((32,), "float32")
        v = T.alloc_fragment((32,), "float32")
        w = T.alloc_fragment((32,), "float32")
        T.copy(X[bx * 32, 0], X_s)
        T.reduce_sum(X_s, r, dim=1)
        T.copy(a[bx * 32], v)
        for i in T.Parallel(32):
            w[i] = v[i] + r[i]
        T.copy(w, c[bx * 32])
"""
    art = tilelang_tt.compile(kernel_from_source(tmp_path, src), out_idx=-1)
    assert art.sources["compute.cpp"].count("transpose_tile(") == 2
    a = (1.0 + np.arange(64, dtype=np.float32) * 2.0 ** -20).astype(np.float32)  # > TF32 bits
    np.testing.assert_array_equal(art(np.zeros((64, 64), np.float32), a), a)
    x = rand((64, 64), "float32", 18)  # the row sums within the model's bound (as below)
    cfg = art.plan["kernels"]["compute"]["config"]
    ref, atol = matmul_reference(x, np.ones((64, 1), np.float32), cfg["math_fidelity"],
                                 cfg["fp32_dest_acc_en"], "float32")
    want = a.astype(np.float64) + ref[:, 0]
    err = np.abs(art(x, a).astype(np.float64) - want)
    assert (err <= atol[:, 0] + ulp(want, "float32")).all()


COLUMN_INPUT_KERNEL = """
import tilelang_tt.language as T

@T.prim_func
def k(X: T.Tensor((96, 64), "{dtype}"), b: T.Tensor((96,), "{dtype}"),
      Y: T.Tensor((96, 64), "{dtype}"), B2: T.Tensor((96,), "{dtype}")):
    with T.Kernel(3) as by:
        X_s = T.alloc_shared((32, 64), "{dtype}")
        b_s = T.alloc_shared((32,), "{dtype}")
        Y_s = T.alloc_shared((32, 64), "{dtype}")
        T.copy(X[by * 32, 0], X_s)
        T.copy(b[by * 32], b_s)
        for i, j in T.Parallel(32, 64):
            Y_s[i, j] = X_s[i, j] + b_s[i]
        T.copy(Y_s, Y[by * 32, 0])
        T.copy(b_s, B2[by * 32])
"""

DIRECT_KERNEL = """
import tilelang_tt.language as T

@T.prim_func
def k(X: T.Tensor((96, 64), "{dtype}"), b: T.Tensor((96,), "{dtype}"),
      Y: T.Tensor((96, 64), "{dtype}")):
    with T.Kernel(2, 3) as (bx, by):
        for i, j in T.Parallel(32, 32):
            Y[by * 32 + i, bx * 32 + j] = X[by * 32 + i, bx * 32 + j] + b[by * 32 + i]
"""


def _bcast_add_bound(x, b, dtype):
    """The matrix engine's add of two source-register operands: the smaller one aligned to the
    larger's exponent at 11 significant bits, then rounded to the output (docs/MOCK.md)."""
    xs, bs = src_operand(x, True), src_operand(b, True)[:, None]
    exact = xs + bs
    return exact, 2.0 ** -10 * np.maximum(np.abs(xs), np.abs(bs)) + ulp(exact, dtype)


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_1d_input_used_per_row(tmp_path, dtype):
    """A 1-D tensor copied into a fragment used as R[i]: read as a row vector, transposed into
    a column vector, broadcast along the rows; copied back out (transposed again) unchanged."""
    art = tilelang_tt.compile(kernel_from_source(tmp_path, COLUMN_INPUT_KERNEL.format(dtype=dtype)),
                              out_idx=[-2, -1])
    assert art.sources["compute.cpp"].count("transpose_tile(") == 2
    x, b = rand((96, 64), dtype, 13), rand((96,), dtype, 14)
    y, b2 = art(x, b)
    exact, bound = _bcast_add_bound(x, b, dtype)
    assert (np.abs(as_f32(y) - exact) <= bound).all()
    # bf16 moves exactly; fp32 b_s is a matrix-engine operand, read as TF32 (as on hardware)
    np.testing.assert_array_equal(as_f32(b2), src_operand(b, True).astype(np.float32))


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_1d_tensor_read_per_row_in_parallel(tmp_path, dtype):
    """``b[by * 32 + i]`` in a T.Parallel nest: the tensor is staged as a column vector."""
    art = tilelang_tt.compile(kernel_from_source(tmp_path, DIRECT_KERNEL.format(dtype=dtype)),
                              out_idx=-1)
    assert "add_tiles_bcast_cols(" in art.sources["compute.cpp"]
    x, b = rand((96, 64), dtype, 15), rand((96,), dtype, 16)
    exact, bound = _bcast_add_bound(x, b, dtype)
    assert (np.abs(as_f32(art(x, b)) - exact) <= bound).all()


def test_row_vector_copies_need_no_transpose(tmp_path):
    """A vector that only moves between 1-D tensors is a row vector, as the tensors are."""
    src = """
import tilelang_tt.language as T

@T.prim_func
def k(a: T.Tensor((128,), "float32"), c: T.Tensor((128,), "float32")):
    with T.Kernel(2) as bx:
        v = T.alloc_fragment((64,), "float32")
        w = T.alloc_fragment((64,), "float32")
        T.copy(a[bx * 64], v)
        for i in T.Parallel(64):
            w[i] = v[i] * 2.0 + 1.0
        T.copy(w, c[bx * 64])
"""
    art = tilelang_tt.compile(kernel_from_source(tmp_path, src), out_idx=-1)
    assert "transpose_tile(" not in art.sources["compute.cpp"]
    a = rand((128,), "float32", 17)
    np.testing.assert_allclose(art(a), a * 2 + 1, rtol=1e-6, atol=1e-6)


def test_lowered_copy_out_is_one_transpose_per_tile():
    """After C2.1 each statistic leaves the compute kernel through one transposing expression
    into a row-vector CB of the tensor's dtype; A0.4's copy for the writer is forwarded away."""
    mod = tilelang_tt.lower(layer_norm.layer_norm_fwd.get_tir(64, 128, blk_m=64), stop_after="C2")
    body = mod["main"].body
    from tvm import tirx

    from tilelang_tt.passes.common import collect, tt_calls
    from tilelang_tt.passes.frontend.eltwise_expr import is_copy, leaf

    eltwise = [ops.named(c) for c in tt_calls(body, "tt.eltwise")]
    transposes = [e for e in eltwise if leaf(e.expr) == ("load_t", 0)]
    assert len(transposes) == 2
    vector_copies = [e for e in eltwise if is_copy(e.expr) and int(e.ntiles) == 2]
    assert not vector_copies
    allocs = {b.var: b.value for b in collect(body, tirx.Bind)
              if ops.tt_op_name(b.value) == "tt.alloc_cb"}
    for e in transposes:
        out = allocs[e.out]  # a row vector of 2 tiles, float32 as the tensor
        assert (int(out.args[1]), int(out.args[2])) == (1, 2) and out.args[4].value == "float32"


@pytest.mark.parametrize("N,D,blk_m,dtype", [(64, 256, 32, "bfloat16"), (128, 128, 64, "float32"),
                                             (96, 512, 32, "float16")])
def test_layer_norm_with_statistics(N, D, blk_m, dtype):
    """TileLang's layernorm forward (examples/layer_norm.py): Y at TileLang's own tolerance
    (rtol = atol = 1e-2); the float32 statistics within 1e-3 (operands the matrix engine reads
    as TF32)."""
    kernel = layer_norm.layer_norm_fwd(N, D, blk_m=blk_m, in_dtype=dtype, out_dtype=dtype)
    np_dtype = {"bfloat16": BF16, "float16": np.float16, "float32": np.float32}[dtype]
    x = (rand((N, D), "float32", 21) * 2 + 0.5).astype(np_dtype)
    g, b = rand((D,), dtype, 22), rand((D,), dtype, 23)
    y, mean, rstd = kernel(x, g, b)
    y_ref, mean_ref, rstd_ref = layer_norm.reference(x, g, b)
    np.testing.assert_allclose(as_f32(y), y_ref, rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(mean, mean_ref, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(rstd, rstd_ref, rtol=1e-3, atol=1e-3)


def test_layer_norm_project_compiles_against_the_sdk(tmp_path):
    """The generated layernorm project (transpose_tile included) compiles against TT-Metalium
    0.81.1 and its main.cpp links against the SDK's libtt_metal.so (sdkcheck)."""
    import sdk_twin

    script = sdk_twin.SDKCHECK_DIR / "sdkcheck.sh"
    if not script.exists():
        if os.environ.get("TT_REQUIRE_SDKCHECK") == "1":
            pytest.fail(f"TT_REQUIRE_SDKCHECK=1 but sdkcheck is missing at {script}")
        pytest.skip(f"sdkcheck not found at {script}")
    art = tilelang_tt.compile(layer_norm.layer_norm_fwd.get_tir(64, 128), out_idx=[-3, -2, -1])
    project = art.save(tmp_path / "layer_norm")
    include = tilelang_tt.codegen.cmake.mock_dir() / "include"
    proc = subprocess.run(["bash", str(script), "--host-include", str(include), str(project)],
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    if "SDK/toolchain-environment" in out and proc.returncode != 0 and \
            os.environ.get("TT_REQUIRE_SDKCHECK") != "1":
        pytest.skip(f"sdkcheck environment: {out[-300:]}")
    assert proc.returncode == 0 and "0 error(s)" in out, out
