"""Compile options (TileLang's ``pass_configs``): math fidelity and DST accumulation mode reach the
ComputeConfig, the emulator computes with them, bad values are clear errors."""

import numpy as np
import pytest

import kernels
import tilelang_tt
import tilelang_tt.language as T
from helpers import BF16, as_f32, assert_matmul, compute_config, rand


def gemm(accum="float32", **opts):
    return tilelang_tt.compile(kernels.matmul(64, 64, 128, 64, 64, 32, accum_dtype=accum),
                               out_idx=-1, pass_configs=opts or None)


def test_defaults_follow_tt_metalium():
    # HiFi4 for every kernel: TT-Metalium's ComputeConfig default (HiFi2 is ttnn's bf16 default)
    art = gemm()
    assert compute_config(art)["math_fidelity"] == "HiFi4"
    assert "MathFidelity::HiFi4" in art.sources["main.cpp"]
    fp32 = tilelang_tt.compile(kernels.matmul(64, 64, 64, 64, 64, 32, dtype="float32"), out_idx=-1)
    assert compute_config(fp32)["math_fidelity"] == "HiFi4"
    add = tilelang_tt.compile(kernels.elementwise_add(64, 64), out_idx=-1)
    assert compute_config(add)["math_fidelity"] == "HiFi4"
    assert compute_config(add)["fp32_dest_acc_en"] is False


@pytest.mark.parametrize("fidelity", ["LoFi", "HiFi2", "HiFi4"])
def test_fidelity_is_computed_with(fidelity):
    art = gemm(**{"tt.math_fidelity": fidelity})
    assert compute_config(art)["math_fidelity"] == fidelity
    assert f"MathFidelity::{fidelity}" in art.sources["main.cpp"]
    a, b = rand((64, 128), "bfloat16", 1), rand((128, 64), "bfloat16", 2)
    c = art(a, b)
    assert_matmul(c, a, b, art)
    err = np.abs(as_f32(c) - as_f32(a) @ as_f32(b)).mean()
    # LoFi drops mantissa bits of both operands, HiFi2 SrcB's (a's) low bits: each visibly less
    # precise than the next (HiFi4's error is the bf16 output's rounding)
    low, high = {"LoFi": (1e-1, 1.0), "HiFi2": (2e-2, 1e-1), "HiFi4": (0.0, 2e-2)}[fidelity]
    assert low < err < high


def test_16_bit_dst_with_a_bf16_accumulator():
    art = gemm(accum="bfloat16", **{"tt.fp32_dest_acc_en": False, "tt.math_fidelity": "HiFi4"})
    assert compute_config(art)["fp32_dest_acc_en"] is False
    a, b = rand((64, 128), "bfloat16", 3), rand((128, 64), "bfloat16", 4)
    c = art(a, b)
    assert c.dtype == BF16
    assert_matmul(c, a, b, art)


def test_16_bit_dst_cannot_hold_a_float32_accumulator():
    with pytest.raises(tilelang_tt.TTCompileError,
                       match=r"tt.fp32_dest_acc_en'\] = False, but the float32 accumulator "
                             r"'C_local' needs the 32-bit DST"):
        gemm(**{"tt.fp32_dest_acc_en": False})


@pytest.mark.parametrize("opts,message", [
    ({"tt.math_fidelity": "HiFi5"}, r"must be one of \['LoFi', 'HiFi2', 'HiFi3', 'HiFi4'\], got 'HiFi5'"),
    ({"tt.math_fidelity": 4}, "must be one of"),
    ({"tt.fp32_dest_acc_en": 1}, "must be True or False, got 1"),
    ({"tt.fidelity": "LoFi"}, r"unknown option 'tt.fidelity'; the Tenstorrent options are"),
])
def test_bad_options_are_named(opts, message):
    with pytest.raises(tilelang_tt.TTCompileError, match=message):
        gemm(**opts)


def test_other_namespaces_are_ignored():
    art = tilelang_tt.compile(kernels.elementwise_add(64, 64), out_idx=-1,
                              pass_configs={"tl.disable_warp_specialized": True})
    assert compute_config(art)["math_fidelity"] == "HiFi4"


# ---- the default fidelity in TileLang's own GEMM test (testing/python/kernel/
# test_tilelang_kernel_gemm.py, test_gemm_bf16bf16f32_nn: bf16 operands, float32 accumulator and
# output, 512x1024x768, blocks 128x128x32, inputs uniform in [-1, 1), rtol = atol = 1e-2) --------
def tilelang_matmul(M, N, K, block_M, block_N, block_K, in_dtype, out_dtype, accum_dtype,
                    num_stages=0, threads=128):
    @T.prim_func
    def main(A: T.Tensor((M, K), in_dtype), B: T.Tensor((K, N), in_dtype),
             C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), in_dtype)
            B_shared = T.alloc_shared((block_K, block_N), in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def test_default_fidelity_meets_tilelangs_bf16_gemm_tolerance():
    """At the default (HiFi4) TileLang's bf16 GEMM test passes rtol = atol = 1e-2 in every
    element; at HiFi2 (the opt-in, SrcB's low mantissa bits dropped) it does not."""
    M, N, K = 512, 1024, 768
    program = tilelang_matmul(M, N, K, 128, 128, 32, "bfloat16", "float32", "float32")
    rng = np.random.default_rng(0)
    a, b = [rng.uniform(-1.0, 1.0, shape).astype(np.float32).astype(BF16)
            for shape in ((M, K), (K, N))]
    ref = as_f32(a).astype(np.float64) @ as_f32(b).astype(np.float64)
    missed = {}
    for opts in (None, {"tt.math_fidelity": "HiFi2"}):
        kernel = tilelang_tt.compile(program, out_idx=[2], pass_configs=opts)
        fidelity = compute_config(kernel)["math_fidelity"]  # the plan's ComputeConfig
        assert fidelity == ("HiFi2" if opts else "HiFi4")
        assert f"MathFidelity::{fidelity}" in kernel.sources["main.cpp"]
        c = as_f32(kernel(a, b)).astype(np.float64)
        missed[fidelity] = (~np.isclose(c, ref, rtol=1e-2, atol=1e-2)).mean()
    assert missed["HiFi4"] == 0.0, missed
    assert missed["HiFi2"] > 0.01, missed  # 9.7% of these elements (max error 0.18; HiFi4 0.008)
