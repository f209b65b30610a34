"""Compile options (TileLang's ``pass_configs``): math fidelity and DST accumulation mode reach the
ComputeConfig, the emulator computes with them, bad values are clear errors."""

import numpy as np
import pytest

import kernels
import tilelang_tt
from helpers import BF16, as_f32, assert_matmul, compute_config, rand


def gemm(accum="float32", **opts):
    return tilelang_tt.compile(kernels.matmul(64, 64, 128, 64, 64, 32, accum_dtype=accum),
                               out_idx=-1, pass_configs=opts or None)


def test_defaults_follow_tt_metalium():
    assert compute_config(gemm())["math_fidelity"] == "HiFi2"  # bf16 matmul: ttnn's default
    fp32 = tilelang_tt.compile(kernels.matmul(64, 64, 64, 64, 64, 32, dtype="float32"), out_idx=-1)
    assert compute_config(fp32)["math_fidelity"] == "HiFi4"
    add = tilelang_tt.compile(kernels.elementwise_add(64, 64), out_idx=-1)
    assert compute_config(add)["math_fidelity"] == "HiFi4"
    assert compute_config(add)["fp32_dest_acc_en"] is False


@pytest.mark.parametrize("fidelity", ["LoFi", "HiFi4"])
def test_fidelity_is_computed_with(fidelity):
    art = gemm(**{"tt.math_fidelity": fidelity})
    assert compute_config(art)["math_fidelity"] == fidelity
    assert f"MathFidelity::{fidelity}" in art.sources["main.cpp"]
    a, b = rand((64, 128), "bfloat16", 1), rand((128, 64), "bfloat16", 2)
    c = art(a, b)
    assert_matmul(c, a, b, art)
    err = np.abs(as_f32(c) - as_f32(a) @ as_f32(b)).mean()
    # LoFi drops mantissa bits of both operands: visibly less precise than HiFi4
    assert (err > 2e-2) if fidelity == "LoFi" else (err < 2e-2)


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
