"""Every foundation kernel runs on the emulator and matches numpy."""

import numpy as np
import pytest

pytest.importorskip("tilelang_tt.runtime.mockbuild", reason="emulator driver not installed")

import kernels
import tilelang_tt.language as T
import tilelang_tt
import tensix_model as tm
from helpers import (BF16, as_f32, parallel_outputs_kernel, assert_matmul, assert_within_ulps, compute_config,
                     matmul_reference, pack_round_bf16, rand, ulp)
from tilelang_tt.runtime.tensors import TTCallArgumentError


def gemm_ref(a, b, transpose_b=False):
    b32 = as_f32(b)
    return as_f32(a) @ (b32.T if transpose_b else b32)


def check_gemm(c, a, b, art, *, transpose_b=False, epilogue=None, lipschitz=1.0, extra_rel=0.0,
               extra_ulps=1.0):
    """c against a @ b within the matrix engine's bound at the kernel's fidelity and DST mode
    (helpers.matmul_reference); with an epilogue f (|f(x) - f(y)| <= lipschitz |x - y|), its
    rounding is bounded by extra_ulps of the output format plus extra_rel of the magnitudes."""
    if epilogue is None:
        assert_matmul(c, a, b, art, transpose_b=transpose_b)
        return
    cfg = compute_config(art)
    ref, atol = matmul_reference(a, b, cfg["math_fidelity"], cfg["fp32_dest_acc_en"], "float32",
                                 transpose_b)
    res = epilogue(ref)
    out = "bfloat16" if np.asarray(c).dtype == BF16 else "float32"
    tol = lipschitz * atol + extra_rel * (np.abs(ref) + np.abs(res)) + extra_ulps * ulp(np.abs(res) + atol, out)
    err = np.abs(as_f32(c).astype(np.float64) - res)
    assert (err <= tol).all(), f"{(err > tol).sum()} elements beyond the bound, worst excess {(err - tol).max():.3g}"


def fpu_add(a, b, art, subtract=False):
    """a + b (or a - b) of bf16 blocks on the matrix engine (ELWADD), packed to bf16, bit for bit."""
    fp32 = compute_config(art)["fp32_dest_acc_en"]
    d = tm.eltwise_add(tm.unpack(a, fp32), tm.unpack(b, fp32), fp32, subtract)
    return tm.pack_bf16(d, fp32)


def test_gemm_seed():
    # the seed design: 128x128 blocks (16 tiles, more than DST holds) on 4 cores, 8 K steps
    # through a 3-stage pipeline (rectangular grids and smaller blocks: the GEMMs below and
    # test_fuzz_gemm.py; more GEMM blocks than cores: test_multicast.py)
    M, N, K, bm, bn, bk, st = 256, 256, 256, 128, 128, 32, 3
    art = tilelang_tt.compile(kernels.matmul(M, N, K, bm, bn, bk, num_stages=st), out_idx=-1)
    a, b = rand((M, K), "bfloat16", 1), rand((K, N), "bfloat16", 2)
    c = art(a, b)
    assert c.dtype == BF16 and c.shape == (M, N)
    assert compute_config(art)["math_fidelity"] == "HiFi4"  # TT-Metalium's ComputeConfig default
    check_gemm(c, a, b, art)
    assert art.last_run_stats is not None


def test_gemm_tilelang_idiom_transpose_b():
    # 128x64 blocks on a 2x2 grid, 6 K steps (two-tile K steps with transpose_B: the
    # spills test below; a 3-stage transpose_B pipeline: test_fuzz_gemm.py)
    M, N, K, bm, bn, bk, st = 256, 128, 192, 128, 64, 32, 2
    art = tilelang_tt.compile(kernels.matmul_nt(M, N, K, bm, bn, bk, num_stages=st), out_idx=[2])
    a, b = rand((M, K), "bfloat16", 3), rand((N, K), "bfloat16", 4)
    check_gemm(art(a, b), a, b, art, transpose_b=True)


def test_gemm_bf16_accumulator():
    art = tilelang_tt.compile(kernels.matmul(128, 128, 256, 64, 64, 64, accum_dtype="bfloat16"),
                              out_idx=-1)
    a, b = rand((128, 256), "bfloat16", 5), rand((256, 128), "bfloat16", 6)
    # DST holds bf16: every accumulation step rounds, so the error grows with K
    assert not compute_config(art)["fp32_dest_acc_en"]
    check_gemm(art(a, b), a, b, art)


def test_gemm_float32_output():
    art = tilelang_tt.compile(kernels.matmul(64, 64, 128, 64, 64, 32, dtype="float32"),
                              out_idx=-1)
    a, b = rand((64, 128), "float32", 7), rand((128, 64), "float32", 8)
    # fp32 operands pass through the FPU's TF32 source registers (truncated), at HiFi4
    assert compute_config(art)["math_fidelity"] == "HiFi4"
    check_gemm(art(a, b), a, b, art)


ADDS = [  # both forms, both dtypes; the bf16 shared form: the bf16 case of
    # test_elementwise_add_through_fragment; more blocks than cores: test_blackhole_mock_run
    ("shared", "float32", 128, 128, 64, 64),
    ("global", "bfloat16", 256, 256, 128, 128),
]


@pytest.mark.parametrize("case", ADDS, ids=lambda c: "-".join(map(str, c)))
def test_elementwise_add(case):
    form, dtype, M, N, bm, bn = case
    factory = kernels.elementwise_add_shared if form == "shared" else kernels.elementwise_add
    art = tilelang_tt.compile(factory(M, N, bm, bn, dtype), out_idx=-1)
    a, b = rand((M, N), dtype, 10), rand((M, N), dtype, 11)
    c = art(a, b)
    if dtype == "bfloat16":  # ELWADD: the Tensix rounding, bit for bit, within one ulp of exact
        assert "add_tiles(" in art.sources["compute.cpp"]
        expected = fpu_add(a, b, art)
        assert_within_ulps(c, as_f32(a).astype(np.float64) + as_f32(b), 1)
    else:  # fp32 through the vector engine: one IEEE rounding
        expected = as_f32(a) + as_f32(b)
    assert c.dtype == expected.dtype
    np.testing.assert_array_equal(as_f32(c), as_f32(expected))


def test_fill_outputs_in_place_and_convert_floats():
    art = tilelang_tt.compile(kernels.elementwise_add(64, 64))
    a = np.random.default_rng(0).standard_normal((64, 64))  # float64: rounded to bf16 (RNE)
    b = np.ones((64, 64), dtype=np.float32)
    c = np.zeros((64, 64), dtype=BF16)
    out = art(a, b, c)
    assert out is c
    expected = fpu_add(a.astype(BF16), b.astype(BF16), art)
    np.testing.assert_array_equal(as_f32(c), as_f32(expected))


def test_argument_errors():
    art = tilelang_tt.compile(kernels.elementwise_add(64, 64), out_idx=-1)
    ok = np.zeros((64, 64), dtype=BF16)
    with pytest.raises(TTCallArgumentError, match=r"A: expected shape \(64, 64\), got \(32, 64\)"):
        art(np.zeros((32, 64), dtype=BF16), ok)
    with pytest.raises(TTCallArgumentError, match="expected bfloat16"):
        art(np.zeros((64, 64), dtype=np.int32), ok)
    with pytest.raises(TTCallArgumentError, match="kernel takes 3 tensors"):
        art(ok)


def test_run_stats_count_traffic():
    # the kernel of the two tests above (one program)
    art = tilelang_tt.compile(kernels.elementwise_add(64, 64), out_idx=-1)
    art(rand((64, 64), "bfloat16"), rand((64, 64), "bfloat16"))
    stats = art.last_run_stats
    total = stats["total"]
    pages = 2 * 2  # 64x64 = 2x2 tiles per tensor
    assert total["dram_bytes_read"] == 2 * pages * 2048
    assert total["dram_bytes_written"] == pages * 2048
    assert len(stats["cores"]) == len(art.plan["cores"])


def test_blackhole_mock_run():
    art = tilelang_tt.compile(kernels.elementwise_add(32 * 10, 32 * 14),
                              target="tenstorrent/blackhole", out_idx=-1)
    assert len(art.plan["cores"]) == 130
    a, b = rand((320, 448), "bfloat16", 1), rand((320, 448), "bfloat16", 2)
    np.testing.assert_array_equal(as_f32(art(a, b)), as_f32(fpu_add(a, b, art)))


def test_gemm_single_k_step_with_subblocks():
    # 128x128 output block (16 tiles) > DST, K in one step: sub-blocks pack straight out
    art = tilelang_tt.compile(kernels.matmul(128, 256, 32, 128, 128, 32), out_idx=-1)
    a, b = rand((128, 32), "bfloat16", 12), rand((32, 256), "bfloat16", 13)
    check_gemm(art(a, b), a, b, art)


def test_gemm_transpose_b_multi_tile_k_with_spills():
    # one 128x128 block (16 tiles, more than DST holds), 4 K steps of two tiles
    art = tilelang_tt.compile(kernels.matmul_nt(128, 128, 256, 128, 128, 64), out_idx=-1)
    a, b = rand((128, 256), "bfloat16", 14), rand((128, 256), "bfloat16", 15)
    check_gemm(art(a, b), a, b, art, transpose_b=True)


def test_batched_elementwise_with_three_grid_dims():
    import tilelang_tt.language as T

    B, M, N = 3, 64, 96

    @T.prim_func
    def sub3(X: T.Tensor((B, M, N), "float32"), Y: T.Tensor((B, M, N), "float32"),
             Z: T.Tensor((B, M, N), "float32")):
        with T.Kernel(N // 32, M // 32, B) as (bx, by, bz):
            for i, j in T.Parallel(32, 32):
                Z[bz, by * 32 + i, bx * 32 + j] = X[bz, by * 32 + i, bx * 32 + j] - Y[bz, by * 32 + i, bx * 32 + j]

    art = tilelang_tt.compile(sub3, out_idx=-1)
    x, y = rand((B, M, N), "float32", 16), rand((B, M, N), "float32", 17)
    np.testing.assert_array_equal(art(x, y), x - y)


def test_gemm_with_bias_epilogue_through_shared_buffers():
    """Compute -> compute: the accumulator is packed into a shared buffer that an elementwise
    add then consumes together with a bias block read from DRAM."""
    import tilelang_tt.language as T

    M = N = 128
    K, bm, bn, bk = 64, 64, 64, 32

    @T.prim_func
    def gemm_bias(A: T.Tensor((M, K), "bfloat16"), B: T.Tensor((K, N), "bfloat16"),
                  Bias: T.Tensor((M, N), "bfloat16"), C: T.Tensor((M, N), "bfloat16")):
        with T.Kernel(N // bn, M // bm) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "bfloat16")
            B_s = T.alloc_shared((bk, bn), "bfloat16")
            acc = T.alloc_fragment((bm, bn), "float32")
            C_s = T.alloc_shared((bm, bn), "bfloat16")
            bias_s = T.alloc_shared((bm, bn), "bfloat16")
            out_s = T.alloc_shared((bm, bn), "bfloat16")
            T.clear(acc)
            for k in T.Pipelined(K // bk, num_stages=2):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C_s)
            T.copy(Bias[by * bm, bx * bn], bias_s)
            for i, j in T.Parallel(bm, bn):
                out_s[i, j] = C_s[i, j] + bias_s[i, j]
            T.copy(out_s, C[by * bm, bx * bn])

    art = tilelang_tt.compile(gemm_bias, out_idx=-1)
    roles = {c["name"]: c["role"] for c in art.plan["circular_buffers"]}
    assert roles["C_s"] == "intermediate" and roles["bias_s"] == "input"
    a, b, bias = rand((M, K), "bfloat16", 18), rand((K, N), "bfloat16", 19), rand((M, N), "bfloat16", 20)
    # the accumulator packs to bf16 (one rounding), then ELWADD + bias (one more)
    check_gemm(art(a, b, bias), a, b, art, epilogue=lambda r: r + as_f32(bias), extra_rel=2 ** -7)


def test_copy_only_kernel_with_block_dependent_loop():
    """Reader -> writer with no compute (a passthrough CB), and a loop whose trip count depends
    on the block index."""
    import tilelang_tt.language as T

    @T.prim_func
    def tri_copy(A: T.Tensor((64, 128), "bfloat16"), B: T.Tensor((64, 128), "bfloat16")):
        with T.Kernel(1, 2) as (bx, by):
            s = T.alloc_shared((32, 32), "bfloat16")
            for j in T.serial(by + 3):  # row block 0 copies 3 column tiles, row block 1 four
                T.copy(A[by * 32, j * 32], s)
                T.copy(s, B[by * 32, j * 32])

    art = tilelang_tt.compile(tri_copy)
    assert {c["role"] for c in art.plan["circular_buffers"]} == {"passthrough"}
    a = rand((64, 128), "bfloat16", 21)
    b = np.zeros((64, 128), dtype=BF16)
    art(a, b)
    expected = np.zeros((64, 128), dtype=np.float32)
    expected[:32, :96] = as_f32(a)[:32, :96]
    expected[32:, :] = as_f32(a)[32:, :]
    np.testing.assert_array_equal(as_f32(b), expected)


@pytest.mark.parametrize("case", [
    ("bfloat16", "bfloat16", 128, 96, 32, 32),
    ("float32", "float32", 64, 128, 64, 64),
    ("float32", "bfloat16", 96, 64, 32, 32),  # the copy out of the fragment casts (pack rounds)
    ("bfloat16", "float32", 64, 64, 64, 32),  # widening: exact
], ids=lambda c: "-".join(map(str, c)))
def test_elementwise_add_through_fragment(case):
    in_dtype, out_dtype, M, N, bm, bn = case
    art = tilelang_tt.compile(
        kernels.elementwise_add_fragment(M, N, bm, bn, in_dtype, out_dtype), out_idx=-1)
    roles = {c["name"]: c["role"] for c in art.plan["circular_buffers"]}
    assert roles["C_shared"] == "output"
    if in_dtype in (out_dtype, "float32"):  # forwarded: the add writes C_shared directly
        assert "C_local" not in roles
        assert art.sources["compute.cpp"].count("pack_tile(") == 1
    else:  # a widening copy stays (C_local rounds to bf16 first): compute -> compute
        assert roles["C_local"] == "intermediate"
    a, b = rand((M, N), in_dtype, 21), rand((M, N), in_dtype, 22)
    c = art(a, b)
    if in_dtype == "bfloat16":  # ELWADD, packed to bf16 (then widened exactly)
        exact = fpu_add(a, b, art)
    else:  # the vector engine's fp32 add; a bf16 output rounds half away from zero
        exact = as_f32(a) + as_f32(b)
        exact = pack_round_bf16(exact) if out_dtype == "bfloat16" else exact
    expected = exact.astype(BF16 if out_dtype == "bfloat16" else np.float32)
    assert c.dtype == expected.dtype
    np.testing.assert_array_equal(as_f32(c), as_f32(expected))


def test_parallel_copy_between_shared_buffers():
    import tilelang_tt.language as T

    @T.prim_func
    def copy2(A: T.Tensor((64, 64), "bfloat16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, 2) as (bx, by):
            A_s = T.alloc_shared((32, 32), "bfloat16")
            C_s = T.alloc_shared((32, 32), "float32")
            T.copy(A[by * 32, bx * 32], A_s)
            for i, j in T.Parallel(32, 32):
                C_s[i, j] = A_s[i, j]
            T.copy(C_s, C[by * 32, bx * 32])

    art = tilelang_tt.compile(copy2, out_idx=-1)
    assert "copy_tile(A_s_cb" in art.sources["compute.cpp"]
    a = rand((64, 64), "bfloat16", 23)
    np.testing.assert_array_equal(art(a), as_f32(a))


UNARY = {  # name: (TileLang element expression of {A} (any sign) or {P} (positive), reference)
    "exp": ("T.exp({A})", np.exp),
    "log": ("T.log({P})", np.log),
    "sqrt": ("T.sqrt({P})", np.sqrt),
    "rsqrt": ("T.rsqrt({P})", lambda x: 1 / np.sqrt(x)),
    "sigmoid": ("T.sigmoid({A})", lambda x: 1 / (1 + np.exp(-x))),
    "tanh": ("T.tanh({A})", np.tanh),
    "abs": ("T.abs({A})", np.abs),
    "relu": ("T.max({A}, 0.0)", lambda x: np.maximum(x, 0)),
    "negative": ("-{A}", np.negative),
    "recip": ("1.0 / {P}", lambda x: 1 / x),
}


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_sfpu_unary_in_parallel(tmp_path, dtype):
    """Every unary function, each in its own T.Parallel nest (one output each) of one kernel."""
    names = sorted(UNARY)
    art = parallel_outputs_kernel(tmp_path, dtype, ["A", "P"], {f"C_{n}": UNARY[n][0] for n in names},
                                  64, 96, 32, 32)
    a = rand((64, 96), dtype, 24)
    p = (np.abs(as_f32(a)) + 0.25).astype(a.dtype)
    outs = art(a, p)
    for name, c in zip(names, outs):
        expr, ref_fn = UNARY[name]
        assert f"{name}_tile(" in art.sources["compute.cpp"], name
        ref = ref_fn(as_f32(p if "{P}" in expr else a).astype(np.float64))
        c = as_f32(c)
        if dtype == "bfloat16":  # the LLK's fp32 algorithm (about an fp32 ulp), packed to bf16
            assert_within_ulps(c, ref, 1)
        else:
            np.testing.assert_allclose(c, ref, rtol=2e-6, atol=1e-7, err_msg=name)


EXPRESSIONS = {  # name: (TileLang element expression of {X0}, {X1}, {X2}, numpy reference)
    "exp_of_difference_scaled": ("T.exp({X0} - {X1}) * 0.5 + 1.0",
                                 lambda a, b, c: np.exp(a - b) * 0.5 + 1.0),
    "sigmoid_gate": ("{X0} * T.sigmoid({X1})", lambda a, b, c: a * (1 / (1 + np.exp(-b)))),
    "three_operands": ("({X0} + {X1}) * {X2} - {X0}", lambda a, b, c: (a + b) * c - a),
    "constants_on_the_left": ("2.0 - 3.0 / (T.abs({X0}) + 1.0)",
                              lambda a, b, c: 2.0 - 3.0 / (np.abs(a) + 1.0)),
    "square_and_relu": ("T.max({X0} * {X0} - 0.5, 0.0)", lambda a, b, c: np.maximum(a * a - 0.5, 0)),
    "quotient": ("{X0} / (T.abs({X1}) + 0.5)", lambda a, b, c: a / (np.abs(b) + 0.5)),
}


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_fused_elementwise_expressions(tmp_path, dtype):
    """Every expression fuses into one DST pass of its nest (one pack, no intermediate
    buffers); each is its own nest and output of one kernel."""
    names = sorted(EXPRESSIONS)
    exprs = {f"C_{n}": EXPRESSIONS[n][0] for n in names}
    art = parallel_outputs_kernel(tmp_path, dtype, ["X0", "X1", "X2"], exprs, 64, 128, 32, 64)
    code = art.sources["compute.cpp"]
    assert code.count("pack_tile(") == len(names) and "tile_regs_acquire" in code
    # one buffer per output and one per input each nest reads: no intermediate buffers
    reads = sum(len({n for n in ("X0", "X1", "X2") if "{" + n + "}" in e}) for e in exprs.values())
    assert len(art.plan["circular_buffers"]) == reads + len(names)
    xs = [rand((64, 128), dtype, 30 + k) for k in range(3)]
    outs = art(*xs)
    for name, c in zip(names, outs):
        expr, ref_fn = EXPRESSIONS[name]
        used = [x for n, x in zip(("X0", "X1", "X2"), xs) if "{" + n + "}" in expr]
        ref = ref_fn(*[as_f32(x).astype(np.float64) for x in xs])
        c = as_f32(c)
        if dtype == "bfloat16":  # computed in fp32 from the bf16 inputs, packed to bf16 once
            scale = sum(np.abs(as_f32(x)) for x in used) ** 2 + 1
            assert_within_ulps(c, ref, 1, atol=2 ** -18 * scale)
        else:
            np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-6, err_msg=name)


def test_fused_expression_in_tilelang_fragment_form():
    @T.prim_func
    def gelu_ish(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32"),
                 C: T.Tensor((64, 64), "bfloat16")):
        with T.Kernel(2, 2) as (bx, by):
            A_s = T.alloc_shared((32, 32), "float32")
            B_s = T.alloc_shared((32, 32), "float32")
            C_l = T.alloc_fragment((32, 32), "float32")
            C_s = T.alloc_shared((32, 32), "bfloat16")
            T.copy(A[by * 32, bx * 32], A_s)
            T.copy(B[by * 32, bx * 32], B_s)
            for i, j in T.Parallel(32, 32):
                C_l[i, j] = A_s[i, j] * T.sigmoid(A_s[i, j] * 1.702) + B_s[i, j]
            T.copy(C_l, C_s)
            T.copy(C_s, C[by * 32, bx * 32])

    art = tilelang_tt.compile(gelu_ish, out_idx=-1)
    a, b = rand((64, 64), "float32", 40), rand((64, 64), "float32", 41)
    ref = (a * (1 / (1 + np.exp(-a * np.float32(1.702)))) + b).astype(BF16)
    np.testing.assert_allclose(as_f32(art(a, b)), as_f32(ref), rtol=2 ** -8)


def test_parallel_copy_between_global_tensors_is_a_passthrough():
    art = tilelang_tt.compile(kernels.elementwise_unary(lambda x: x, 96, 64, 32, 32), out_idx=-1)
    (cb,) = art.plan["circular_buffers"]
    assert cb["role"] == "passthrough"
    assert "tile_regs_acquire" not in art.sources["compute.cpp"]
    a = rand((96, 64), "bfloat16", 42)
    np.testing.assert_array_equal(as_f32(art(a)), as_f32(a))


def softmax_ref(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("dtype,M,N,bm", [("bfloat16", 96, 128, 32), ("float32", 64, 256, 64)])
def test_softmax_rows(dtype, M, N, bm):
    art = tilelang_tt.compile(kernels.softmax(M, N, bm, dtype), out_idx=-1)
    code = art.sources["compute.cpp"]
    # float32's max on the vector engine (X is still read as TF32 there: the broadcast
    # subtraction reads it through SrcA, so its CB is not unpacked straight to DST)
    assert ("sfpu_reduce<PoolType::MAX, DataFormat::Float32, ReduceDim::REDUCE_ROW>"
            if dtype == "float32" else "reduce_tile<PoolType::MAX, ReduceDim::REDUCE_ROW>") in code
    assert "sub_tiles_bcast_cols" in code and "mul_tiles_bcast_cols" in code
    x = rand((M, N), dtype, 50, scale=2.0)
    y = as_f32(art(x))
    # bf16: E is stored in bf16; fp32: the matrix engine reads fp32 operands as TF32
    np.testing.assert_allclose(y, softmax_ref(as_f32(x).astype(np.float64)),
                               atol=4e-3 if dtype == "bfloat16" else 2e-3, rtol=2e-2)
    np.testing.assert_allclose(y.sum(axis=1), 1.0, atol=2e-2)


ROW_REDUCE = {"sum": "T.reduce_sum", "max": "T.reduce_max", "min": "T.reduce_min",
              "abssum": "T.reduce_abssum", "absmax": "T.reduce_absmax"}
ROW_COMBINE = {"sub": "{x} - {r}", "add": "{x} + {r}", "mul": "{x} * {r}", "div": "{x} / {r}",
               "rsub": "{r} - {x}"}


ROW_CASES = [("sum", "sub"), ("max", "sub"), ("max", "rsub"), ("sum", "div"), ("max", "mul"),
             ("sum", "add"), ("min", "sub"), ("abssum", "sub"), ("absmax", "div")]


def test_row_reduction_broadcast(tmp_path):
    """``Y = X combine reduce_<kind>(X, dim=1)[i]`` (the body of kernels.row_reduce_broadcast:
    one reduction, one column broadcast), one such block pipeline and output per case in one
    kernel; the abs reductions read an input of mixed signs."""
    from helpers import kernel_from_source

    M, N, cases = 64, 96, ROW_CASES
    params, body = [], []
    for k, (kind, combine) in enumerate(cases):
        src = "S" if kind.startswith("abs") else "X"
        params.append(f'Y{k}: T.Tensor(({M}, {N}), "float32")')
        body.append(f"""
        X_s{k} = T.alloc_shared((32, {N}), "float32")
        R{k} = T.alloc_fragment((32,), "float32")
        Y_s{k} = T.alloc_shared((32, {N}), "float32")
        T.copy({src}[bx * 32, 0], X_s{k})
        {ROW_REDUCE[kind]}(X_s{k}, R{k}, dim=1)
        for i, j in T.Parallel(32, {N}):
            Y_s{k}[i, j] = {ROW_COMBINE[combine].format(x=f"X_s{k}[i, j]", r=f"R{k}[i]")}
        T.copy(Y_s{k}, Y{k}[bx * 32, 0])""")
    text = (f'import tilelang_tt.language as T\n\n@T.prim_func\n'
            f'def k(X: T.Tensor(({M}, {N}), "float32"), S: T.Tensor(({M}, {N}), "float32"), '
            f'{", ".join(params)}):\n    with T.Kernel({M // 32}) as bx:' + "".join(body) + "\n")
    art = tilelang_tt.compile(kernel_from_source(tmp_path, text),
                              out_idx=list(range(2, 2 + len(cases))))
    x = np.abs(rand((M, N), "float32", 51)) + 0.5  # positive: sums stay away from zero
    signed = x * np.where(rand((M, N), "float32", 52) > 0, 1, -1).astype(np.float32)
    for (kind, combine), y in zip(cases, art(x, signed)):
        xk = signed if kind.startswith("abs") else x
        ax = np.abs(xk) if kind.startswith("abs") else xk
        r = {"sum": ax.sum, "max": ax.max, "min": ax.min}[kind.removeprefix("abs")](
            axis=1, keepdims=True).astype(np.float64)
        ref = {"sub": xk - r, "add": xk + r, "mul": xk * r, "div": xk / r, "rsub": r - xk}[combine]
        np.testing.assert_allclose(as_f32(y), ref, rtol=3e-3, atol=1e-3 * np.abs(ref).max(),
                                   err_msg=f"{kind}-{combine}")


def test_fill_and_clear_block_buffers():
    @T.prim_func
    def affine(A: T.Tensor((64, 96), "float32"), C: T.Tensor((64, 96), "float32")):
        with T.Kernel(3, 2) as (bx, by):
            A_s = T.alloc_shared((32, 32), "float32")
            S = T.alloc_shared((32, 32), "float32")
            Z = T.alloc_fragment((32, 32), "float32")
            C_s = T.alloc_shared((32, 32), "float32")
            T.copy(A[by * 32, bx * 32], A_s)
            T.fill(S, 2.5)
            T.clear(Z)
            for i, j in T.Parallel(32, 32):
                C_s[i, j] = A_s[i, j] * S[i, j] - Z[i, j]
            T.copy(C_s, C[by * 32, bx * 32])

    art = tilelang_tt.compile(affine, out_idx=-1)
    assert "fill_tile(" in art.sources["compute.cpp"]
    a = rand((64, 96), "float32", 60)
    np.testing.assert_array_equal(art(a), a * np.float32(2.5))


def test_filled_fragment_written_out():
    @T.prim_func
    def const(C: T.Tensor((64, 64), "bfloat16")):
        with T.Kernel(2, 2) as (bx, by):
            c = T.alloc_fragment((32, 32), "bfloat16")
            T.fill(c, 1.5)
            T.copy(c, C[by * 32, bx * 32])

    art = tilelang_tt.compile(const, out_idx=-1)
    np.testing.assert_array_equal(as_f32(art()), np.full((64, 64), 1.5, np.float32))


def test_copies_between_dtypes_convert_on_compute():
    """Global and shared dtypes may differ: DRAM pages keep the tensor's dtype and a compute
    copy converts (fp32 operands of a bf16 GEMM, a bf16 block written to an fp32 tensor)."""

    @T.prim_func
    def mixed(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32"),
              C: T.Tensor((64, 64), "float32"), D: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, 2) as (bx, by):
            A_s = T.alloc_shared((32, 64), "bfloat16")
            B_s = T.alloc_shared((64, 32), "bfloat16")
            acc = T.alloc_fragment((32, 32), "float32")
            A_blk = T.alloc_shared((32, 32), "bfloat16")
            T.copy(A[by * 32, 0], A_s)
            T.copy(B[0, bx * 32], B_s)
            T.gemm(A_s, B_s, acc, clear_accum=True)
            T.copy(acc, C[by * 32, bx * 32])
            T.copy(A[by * 32, bx * 32], A_blk)
            T.copy(A_blk, D[by * 32, bx * 32])

    art = tilelang_tt.compile(mixed, out_idx=[2, 3])
    names = {c["name"] for c in art.plan["circular_buffers"]}
    assert {"A_s_in_float32", "B_s_in_float32", "A_blk_in_float32", "A_blk_out_float32"} <= names
    a, b = rand((64, 64), "float32", 61), rand((64, 64), "float32", 62)
    c, d = art(a, b)
    # fp32 -> bf16 by a compute copy: unpacked to DST exactly, packed half away from zero
    a16, b16 = pack_round_bf16(a), pack_round_bf16(b)
    check_gemm(c, a16, b16, art)
    np.testing.assert_array_equal(d, as_f32(a16))


@pytest.mark.parametrize("dtype", ["bfloat16"])  # float32 row statistics: test_layernorm_rows
def test_rmsnorm_rows(dtype):
    M, N = 64, 128
    art = tilelang_tt.compile(kernels.rmsnorm(M, N, 32, dtype), out_idx=-1)
    assert "rsqrt_tile(" in art.sources["compute.cpp"]  # the row statistic's expression
    x = rand((M, N), dtype, 70)
    xf = as_f32(x).astype(np.float64)
    ref = xf / np.sqrt((xf * xf).mean(axis=1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(as_f32(art(x)), ref, rtol=1e-2 if dtype == "bfloat16" else 2e-3,
                               atol=1e-2 if dtype == "bfloat16" else 2e-3)


# float32 (TF32 matrix-engine operands): test_l1_alias.py's test_layernorm_intermediates_share_l1
# runs this kernel at N = 256 with the same reference and tolerance
@pytest.mark.parametrize("dtype", ["bfloat16"])
def test_layernorm_rows(dtype):
    M, N = 64, 128
    art = tilelang_tt.compile(kernels.layernorm(M, N, 32, dtype), out_idx=-1)
    x = (rand((M, N), "float32", 71) * 3 + 1).astype(BF16 if dtype == "bfloat16" else np.float32)
    xf = as_f32(x).astype(np.float64)
    ref = (xf - xf.mean(axis=1, keepdims=True)) / np.sqrt(xf.var(axis=1, keepdims=True) + 1e-5)
    # bf16: every intermediate block is stored in bf16; fp32: TF32 matrix-engine operands
    tol = 3e-2 if dtype == "bfloat16" else 5e-3
    np.testing.assert_allclose(as_f32(art(x)), ref, atol=tol, rtol=tol)


def test_in_place_updates_get_new_versions():
    @T.prim_func
    def bump(X: T.Tensor((64, 64), "float32"), Y: T.Tensor((64, 64), "float32")):
        with T.Kernel(2) as bx:
            X_s = T.alloc_shared((32, 64), "float32")
            E = T.alloc_fragment((32, 64), "float32")
            T.copy(X[bx * 32, 0], X_s)
            for i, j in T.Parallel(32, 64):
                X_s[i, j] = X_s[i, j] + 1.0
            for i, j in T.Parallel(32, 64):
                E[i, j] = X_s[i, j] * 2.0
            for i, j in T.Parallel(32, 64):
                E[i, j] = E[i, j] - X_s[i, j]
            T.copy(E, Y[bx * 32, 0])

    art = tilelang_tt.compile(bump, out_idx=-1)
    x = rand((64, 64), "float32", 80)
    np.testing.assert_array_equal(art(x), (x + 1) * 2 - (x + 1))


# float32 operands: the fp32 GEMM epilogues of test_gemm_with_a_1d_bias_and_relu and
# test_gemm_epilogue_reading_the_accumulator_twice
@pytest.mark.parametrize("dtype", ["bfloat16"])
def test_gemm_epilogue_in_place_on_the_accumulator(dtype):
    """TileLang's GEMM + activation idiom: the epilogue updates the (fp32) accumulator
    fragment in place after the K loop, with a bias block of the operands' dtype; it reads a
    packed copy and writes a new block buffer."""
    M = N = K = 128

    @T.prim_func
    def gemm_relu(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
                  Bias: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(N // 64, M // 64) as (bx, by):
            A_s = T.alloc_shared((64, 32), dtype)
            B_s = T.alloc_shared((32, 64), dtype)
            bias_s = T.alloc_shared((64, 64), dtype)
            C_local = T.alloc_fragment((64, 64), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(K // 32, num_stages=2):
                T.copy(A[by * 64, ko * 32], A_s)
                T.copy(B[ko * 32, bx * 64], B_s)
                T.gemm(A_s, B_s, C_local)
            T.copy(Bias[by * 64, bx * 64], bias_s)
            for i, j in T.Parallel(64, 64):
                C_local[i, j] = T.max(C_local[i, j] * 0.5 + bias_s[i, j], 0.0)
            T.copy(C_local, C[by * 64, bx * 64])

    art = tilelang_tt.compile(gemm_relu, out_idx=-1)
    a, b = rand((M, K), dtype, 81), rand((K, N), dtype, 82)
    bias = rand((M, N), dtype, 83)
    check_gemm(art(a, b, bias), a, b, art, epilogue=lambda r: np.maximum(r * 0.5 + as_f32(bias), 0),
               lipschitz=0.5, extra_rel=2 ** -9, extra_ulps=1.5)


def test_gemm_epilogue_reading_the_accumulator_twice():
    @T.prim_func
    def gemm_sq(A: T.Tensor((64, 64), "float32"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, 1) as (bx, by):
            A_s = T.alloc_shared((64, 64), "float32")
            acc = T.alloc_fragment((64, 64), "float32")
            T.copy(A[0, 0], A_s)
            T.gemm(A_s, A_s, acc, clear_accum=True)
            for i, j in T.Parallel(64, 64):
                acc[i, j] = acc[i, j] * acc[i, j]
            T.copy(acc, C[0, 0])

    art = tilelang_tt.compile(gemm_sq, out_idx=-1)
    assert art.sources["compute.cpp"].count("pack_tile(") == 2  # one pack of acc, one result
    a = rand((64, 64), "float32", 84, scale=0.5)
    p = as_f32(a).astype(np.float64) @ as_f32(a)
    np.testing.assert_allclose(art(a), p * p, rtol=1e-2, atol=1e-2 * np.abs(p * p).max())


COLUMN_CASES = [  # (reduction, expression of X_s and the column vector C, reference, broadcast)
    ("T.reduce_max", "T.exp(X_s[i, j] - C[j])", lambda x, c: np.exp(x - c), "_tiles_bcast_rows("),
    ("T.reduce_sum", "X_s[i, j] / C[j]", lambda x, c: x / c, "_tiles_bcast_rows("),
    # the scaled vector is a leaf of a block expression: broadcast into DST by the unpacker
    ("T.reduce_sum", "X_s[i, j] * 2.0 - C[j] * 0.5", lambda x, c: x * 2 - c * 0.5,
     "unary_bcast<BroadcastType::ROW>("),
]

COLUMN_CASE = """
        X_s{k} = T.alloc_shared((128, 32), "{dtype}")
        C{k} = T.alloc_fragment((32,), "{dtype}")
        Y_s{k} = T.alloc_shared((128, 32), "{dtype}")
        T.copy(X[0, bx * 32], X_s{k})
        {reduce}(X_s{k}, C{k}, dim=0)
        for i, j in T.Parallel(128, 32):
            Y_s{k}[i, j] = {expr}
        T.copy(Y_s{k}, Y{k}[0, bx * 32])"""


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_column_reductions_and_row_broadcasts(tmp_path, dtype):
    """A column reduction of a block, then the vector broadcast down the rows of an
    expression: each case its own block pipeline and output of one kernel."""
    from helpers import kernel_from_source

    outs = ", ".join(f'Y{k}: T.Tensor((128, 96), "{dtype}")' for k in range(len(COLUMN_CASES)))
    body = "".join(COLUMN_CASE.format(k=k, dtype=dtype, reduce=reduce,
                                      expr=expr.replace("X_s", f"X_s{k}").replace("C[", f"C{k}["))
                   for k, (reduce, expr, _, _) in enumerate(COLUMN_CASES))
    text = (f'import tilelang_tt.language as T\n\n@T.prim_func\n'
            f'def k(X: T.Tensor((128, 96), "{dtype}"), {outs}):\n'
            f'    with T.Kernel(3) as bx:{body}\n')
    art = tilelang_tt.compile(kernel_from_source(tmp_path, text),
                              out_idx=list(range(1, 1 + len(COLUMN_CASES))))
    assert "ReduceDim::REDUCE_COL" in art.sources["compute.cpp"]
    x = (np.abs(rand((128, 96), "float32", 90)) + 0.5).astype(BF16 if dtype == "bfloat16"
                                                               else np.float32)
    xf = as_f32(x).astype(np.float64)
    tol = 2e-2 if dtype == "bfloat16" else 3e-3
    for (reduce, expr, ref, bcast), y in zip(COLUMN_CASES, art(x)):
        assert bcast in art.sources["compute.cpp"]
        c = (xf.max if reduce == "T.reduce_max" else xf.sum)(axis=0, keepdims=True)
        expected = ref(xf, c)
        np.testing.assert_allclose(as_f32(y), expected, rtol=tol, atol=tol * np.abs(expected).max(),
                                   err_msg=expr)


# a bf16 bias block and bf16 operands: test_gemm_epilogue_in_place_on_the_accumulator and
# test_gemm_with_bias_epilogue_through_shared_buffers; bf16 1-D vectors: test_vectors_1d.py
@pytest.mark.parametrize("dtype", ["float32"])
def test_gemm_with_a_1d_bias_and_relu(dtype):
    """TileLang's GEMM epilogue with a bias vector: a 1-D tensor is a row vector in DRAM,
    broadcast down the columns of the accumulator block."""
    M = N = K = 128

    @T.prim_func
    def gemm_bias_relu(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
                       Bias: T.Tensor((N,), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(N // 64, M // 64) as (bx, by):
            A_s = T.alloc_shared((64, 32), dtype)
            B_s = T.alloc_shared((32, 64), dtype)
            C_local = T.alloc_fragment((64, 64), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(K // 32, num_stages=2):
                T.copy(A[by * 64, ko * 32], A_s)
                T.copy(B[ko * 32, bx * 64], B_s)
                T.gemm(A_s, B_s, C_local)
            for i, j in T.Parallel(64, 64):
                C_local[i, j] = T.max(C_local[i, j] + Bias[bx * 64 + j], 0.0)
            T.copy(C_local, C[by * 64, bx * 64])

    art = tilelang_tt.compile(gemm_bias_relu, out_idx=-1)
    assert "_tiles_bcast_rows(" in art.sources["compute.cpp"]
    a, b, bias = rand((M, K), dtype, 91), rand((K, N), dtype, 92), rand((N,), dtype, 93)
    # the bias add runs on the matrix engine (a TF32 / bf16 operand, one ELWADD rounding)
    check_gemm(art(a, b, bias), a, b, art, epilogue=lambda r: np.maximum(r + as_f32(bias), 0),
               extra_rel=2 ** -9, extra_ulps=1.5)


def test_column_sums_written_to_a_1d_tensor():
    @T.prim_func
    def colsum(X: T.Tensor((128, 96), "float32"), S: T.Tensor((96,), "float32")):
        with T.Kernel(3) as bx:
            X_s = T.alloc_shared((128, 32), "float32")
            s = T.alloc_shared((32,), "float32")
            T.copy(X[0, bx * 32], X_s)
            T.reduce_sum(X_s, s, dim=0)
            T.copy(s, S[bx * 32])

    art = tilelang_tt.compile(colsum, out_idx=-1)
    x = rand((128, 96), "float32", 94)
    out = art(x)
    assert out.shape == (96,)
    # the matrix engine reads fp32 as TF32; DST and the result keep fp32
    np.testing.assert_allclose(out, x.astype(np.float64).sum(axis=0), atol=2e-2, rtol=2e-3)


def test_copy_between_global_tensors():
    """T.copy(global -> global) moves through one staged block; dtypes may differ."""

    @T.prim_func
    def move(A: T.Tensor((64, 96), "float32"), C: T.Tensor((64, 96), "bfloat16")):
        with T.Kernel(3, 2) as (bx, by):
            T.copy(A[by * 32:(by + 1) * 32, bx * 32:(bx + 1) * 32],
                   C[by * 32:(by + 1) * 32, bx * 32:(bx + 1) * 32])

    art = tilelang_tt.compile(move, out_idx=-1)
    a = rand((64, 96), "float32", 95)
    # through DST (fp32) and the packer, which rounds to bf16 half away from zero
    np.testing.assert_array_equal(as_f32(art(a)), as_f32(pack_round_bf16(a)))


def test_elementwise_prologue_inside_the_k_loop():
    """An operand converted and scaled inside the K loop (a dequantisation-style prologue):
    the accumulator leaves DST between K steps (the spill path) so the prologue can use it."""
    M = N = K = 128

    @T.prim_func
    def scaled_gemm(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "bfloat16"),
                    C: T.Tensor((M, N), "bfloat16")):
        with T.Kernel(N // 64, M // 64) as (bx, by):
            A_s = T.alloc_shared((64, 32), "float32")
            A_q = T.alloc_shared((64, 32), "bfloat16")
            B_s = T.alloc_shared((32, 64), "bfloat16")
            C_local = T.alloc_fragment((64, 64), "float32")
            T.clear(C_local)
            for ko in T.Pipelined(K // 32, num_stages=2):
                T.copy(A[by * 64, ko * 32], A_s)
                for i, j in T.Parallel(64, 32):
                    A_q[i, j] = A_s[i, j] * 0.5
                T.copy(B[ko * 32, bx * 64], B_s)
                T.gemm(A_q, B_s, C_local)
            T.copy(C_local, C[by * 64, bx * 64])

    art = tilelang_tt.compile(scaled_gemm, out_idx=-1)
    assert "C_local_partials" in {c["name"] for c in art.plan["circular_buffers"]}
    a, b = rand((M, K), "float32", 96), rand((K, N), "bfloat16", 97)
    a_q = pack_round_bf16(a * np.float32(0.5))  # the prologue's result, packed to bf16
    check_gemm(art(a, b), a_q, b, art)


def test_engine_init_joins_the_paths_of_a_branch():
    """A `mul` under `if bx == 0` followed by an unconditional `mul`: the init before the
    branch's op does not hold on the path that skips the branch, so the second op gets its
    own (D4 joins both paths)."""

    @T.prim_func
    def branchy(A: T.Tensor((64, 64), "bfloat16"), B: T.Tensor((64, 64), "bfloat16"),
                C: T.Tensor((64, 64), "bfloat16"), D: T.Tensor((64, 64), "bfloat16")):
        with T.Kernel(2, 2) as (bx, by):
            A_s = T.alloc_shared((32, 32), "bfloat16")
            B_s = T.alloc_shared((32, 32), "bfloat16")
            M_s = T.alloc_shared((32, 32), "bfloat16")
            C_s = T.alloc_shared((32, 32), "bfloat16")
            T.copy(A[by * 32, bx * 32], A_s)
            T.copy(B[by * 32, bx * 32], B_s)
            if bx == 0:
                for i, j in T.Parallel(32, 32):
                    M_s[i, j] = A_s[i, j] * B_s[i, j]
                T.copy(M_s, D[by * 32, bx * 32])
            for i, j in T.Parallel(32, 32):
                C_s[i, j] = A_s[i, j] * B_s[i, j]
            T.copy(C_s, C[by * 32, bx * 32])

    art = tilelang_tt.compile(branchy, out_idx=[2, 3])
    assert art.sources["compute.cpp"].count("mul_init(") == 2
    a, b = rand((64, 64), "bfloat16", 98), rand((64, 64), "bfloat16", 99)
    c, d = art(a, b)
    cfg = compute_config(art)  # ELWMUL at the kernel's fidelity, bit for bit
    fp32 = cfg["fp32_dest_acc_en"]
    ref = as_f32(tm.pack_bf16(tm.eltwise_mul(np.zeros(a.shape, np.int64), tm.unpack(a, fp32),
                                             tm.unpack(b, fp32), cfg["math_fidelity"], fp32),
                              fp32))
    np.testing.assert_array_equal(as_f32(c), ref)
    np.testing.assert_array_equal(as_f32(d)[:, :32], ref[:, :32])  # the blocks with bx == 0


def test_multiplying_by_one_and_tilelang_index_bindings():
    """`s = s * 1.0` folds to a copy of s onto itself (dropped); TileLang's own elementwise
    example binds `start_y = by * block_M` before its T.Parallel nest and copies at it."""

    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, 2) as (bx, by):
            s = T.alloc_shared((32, 32), "float32")
            start_y = by * 32
            start_x = bx * 32
            T.copy(A[start_y, start_x], s)
            for i, j in T.Parallel(32, 32):
                s[i, j] = s[i, j] * 1.0
            T.copy(s, C[start_y, start_x])

    art = tilelang_tt.compile(k, out_idx=-1)
    a = rand((64, 64), "float32", 100)
    np.testing.assert_array_equal(art(a), a)


def test_alloc_var_assigned_in_straight_line_code():
    """TileLang's `x = T.alloc_var(dtype)` then `x = value` (a store, not a rebinding) and
    `x += value`: each assignment is a new value, reads see the latest; a loop of constant
    extent that only assigns scalars is unrolled into such assignments (a float carried across
    the iterations of another loop and read in a T.Parallel body is a one-element block)."""

    @T.prim_func
    def k(A: T.Tensor((64, 32), "float32"), B: T.Tensor((64, 32), "float32")):
        with T.Kernel(2, threads=128) as bx:
            row = T.alloc_var(T.int32)
            row = bx * 32
            scale = T.alloc_var(T.float32, 2.0)
            scale += 1.0
            scale = scale * 0.5
            scale = T.max(scale, 1.25)  # a variable as a T.* function's operand
            s = T.alloc_shared((32, 32), "float32")
            T.copy(A[row, 0], s)
            for i, j in T.Parallel(32, 32):
                s[i, j] = s[i, j] * scale
            T.copy(s, B[row, 0])

    art = tilelang_tt.compile(k, out_idx=-1)
    a = rand((64, 32), "float32", 7)
    np.testing.assert_array_equal(art(a), a * np.float32(1.5))

    @T.prim_func
    def carried(A: T.Tensor((32, 32), "float32"), B: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, threads=128) as bx:
            total = T.alloc_var(T.float32, 0.0)
            for k in T.serial(4):
                total += 1.0
            s = T.alloc_shared((32, 32), "float32")
            T.copy(A[0, 0], s)
            for i, j in T.Parallel(32, 32):
                s[i, j] = s[i, j] * total
            T.copy(s, B[0, 0])

    # a loop of constant extent that only assigns scalars is unrolled (A0.1): total = 4
    a = rand((32, 32), "float32", 8)
    np.testing.assert_array_equal(tilelang_tt.compile(carried, out_idx=-1)(a), a * np.float32(4))
