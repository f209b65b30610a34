"""Each emulated compute op, on one tile (hand-written program in programs/unit_op), against the
numpy model of the Tensix arithmetic (testing/tensix_model.py): matrix-engine ops bit for bit,
vector-engine functions within the accuracy of their LLK algorithm.

The numerics modelled (docs/MOCK.md "Numerics"): bf16 operands enter the source registers
exactly, fp32 ones truncated to TF32 (32-bit DST) or bf16 (16-bit DST) unless unpacked straight
to DST; the multiplier takes 5 x 7 mantissa bits per fidelity phase; sums round half away from
zero; the packer rounds a 32-bit DST to bf16 half away from zero.
"""

import math
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tensix_model as tm
from helpers import assert_within_ulps, ulp
from tilelang_tt.runtime import mockbuild

PROGRAM = Path(__file__).resolve().parent / "programs" / "unit_op"
BF16 = ml_dtypes.bfloat16
FIDELITIES = ["LoFi", "HiFi2", "HiFi3", "HiFi4"]


@pytest.fixture(scope="module")
def exe():
    return mockbuild.build_host(PROGRAM / "main.cpp", PROGRAM)


def bf16(x):
    return np.asarray(x, dtype=np.float32).astype(BF16).astype(np.float32)


def run(exe, tmp_path, defines, a, b, in_fmt="bf16", out_fmt="bf16", fp32_acc=False,
        to_dest=False):
    dt = np.float32 if in_fmt == "f32" else BF16
    pa, pb, pc = tmp_path / "a.bin", tmp_path / "b.bin", tmp_path / "c.bin"
    np.asarray(a, dtype=np.float32).astype(dt).tofile(pa)
    np.asarray(b, dtype=np.float32).astype(dt).tofile(pb)
    spec = ";".join(f"{k}={v}" for k, v in defines.items())
    mockbuild.run_host(exe, [spec, in_fmt, out_fmt, str(int(fp32_acc)), str(int(to_dest)),
                             str(pa), str(pb), str(pc)])
    out_dt = np.float32 if out_fmt == "f32" else BF16
    return np.fromfile(pc, dtype=out_dt).astype(np.float32).reshape(32, 32)


def inputs(seed=0, positive=False):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((32, 32)).astype(np.float32)
    b = rng.standard_normal((32, 32)).astype(np.float32)
    if positive:
        a, b = np.abs(a) + 0.5, np.abs(b) + 0.5
    return bf16(a), bf16(b)


def src(x, in_fmt, fp32_acc):
    """The model's source-register bits of an input as the program writes it to L1."""
    x = np.asarray(x, dtype=np.float32)
    return tm.unpack(x.astype(BF16) if in_fmt == "bf16" else x, fp32_acc)


def packed(d, out_fmt, fp32_acc):
    return (tm.pack_bf16(d, fp32_acc) if out_fmt == "bf16" else tm.pack_fp32(d, fp32_acc)).astype(np.float32)


@pytest.mark.parametrize("fidelity", FIDELITIES)
@pytest.mark.parametrize("fp32_acc", [True, False], ids=["fp32dst", "16bitdst"])
def test_matmul_bit_exact(exe, tmp_path, fidelity, fp32_acc):
    a, b = inputs(1)
    c = run(exe, tmp_path, {"OP_MATMUL": 1, "TRANSPOSE": 0, "FIDELITY": fidelity}, a, b,
            out_fmt="f32", fp32_acc=fp32_acc)
    d = tm.matmul_tile(np.zeros((32, 32), np.int64), src(a, "bf16", fp32_acc),
                       src(b, "bf16", fp32_acc), fidelity, fp32_acc)
    np.testing.assert_array_equal(c, packed(d, "f32", fp32_acc))
    if not fp32_acc:
        assert np.array_equal(c, bf16(c))  # a 16-bit DST holds bf16


def test_matmul_transpose_and_fp32_operands(exe, tmp_path):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((32, 32)).astype(np.float32)
    b = rng.standard_normal((32, 32)).astype(np.float32)
    c = run(exe, tmp_path, {"OP_MATMUL": 1, "TRANSPOSE": 1, "FIDELITY": "HiFi3"}, a, b,
            in_fmt="f32", out_fmt="f32", fp32_acc=True)
    d = tm.matmul_tile(np.zeros((32, 32), np.int64), src(a, "f32", True), src(b, "f32", True).T,
                       "HiFi3", True)
    np.testing.assert_array_equal(c, packed(d, "f32", True))


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
@pytest.mark.parametrize("fp32_acc", [False, True], ids=["16bitdst", "fp32dst"])
def test_eltwise_binary_bit_exact(exe, tmp_path, op, fp32_acc):
    a, b = inputs(3)
    fid = "HiFi2" if op == "mul" else "HiFi4"
    c = run(exe, tmp_path, {"OP_BINARY": 1, "OP_INIT": f"{op}_init", "OP_CALL": f"{op}_tiles",
                            "FIDELITY": fid}, a, b, fp32_acc=fp32_acc)
    ua, ub = src(a, "bf16", fp32_acc), src(b, "bf16", fp32_acc)
    if op == "mul":
        d = tm.eltwise_mul(np.zeros_like(ua), ua, ub, fid, fp32_acc)
    else:
        d = tm.eltwise_add(ua, ub, fp32_acc, subtract=op == "sub")
    np.testing.assert_array_equal(c, packed(d, "bf16", fp32_acc))
    if op != "mul":  # the double rounding stays within one bf16 ulp of the exact result
        assert_within_ulps(c, a.astype(np.float64) + (b if op == "add" else -b), 1)


def test_bf16_add_rounds_ties_away_from_zero(exe, tmp_path):
    # 1 + 2^-8 is halfway between two bf16 numbers: nearest-even gives 1, the FPU 1 + 2^-7
    a = np.full((32, 32), 1.0, dtype=np.float32)
    b = np.full((32, 32), 2.0 ** -8, dtype=np.float32)
    c = run(exe, tmp_path, {"OP_BINARY": 1, "OP_INIT": "add_init", "OP_CALL": "add_tiles"}, a, b)
    assert c[0, 0] == 1.0 + 2.0 ** -7


def test_mul_tiles_matches_hardware_report(exe, tmp_path):
    # tt-metal issue #16448 (Wormhole, bf16, 16-bit DST, HiFi4): -3.640625 * 0.298828125 gives
    # -1.09375 and -3.640625 * 0.30078125 gives -1.1015625 (nearest would be the other neighbour)
    a = np.full((32, 32), -3.640625, dtype=np.float32)
    b = np.full((32, 32), 0.298828125, dtype=np.float32)
    b[1] = 0.30078125
    c = run(exe, tmp_path, {"OP_BINARY": 1, "OP_INIT": "mul_init", "OP_CALL": "mul_tiles",
                            "FIDELITY": "HiFi4"}, a, b)
    assert c[0, 0] == -1.09375 and c[1, 0] == -1.1015625


def test_fpu_truncates_fp32_operands(exe, tmp_path):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((32, 32)).astype(np.float32)
    b = rng.standard_normal((32, 32)).astype(np.float32)
    for fp32_acc, out in ((True, "f32"), (False, "bf16")):  # TF32 or bf16, never rounded
        c = run(exe, tmp_path, {"OP_BINARY": 1, "OP_INIT": "add_init", "OP_CALL": "add_tiles"},
                a, b, in_fmt="f32", out_fmt=out, fp32_acc=fp32_acc)
        d = tm.eltwise_add(src(a, "f32", fp32_acc), src(b, "f32", fp32_acc), fp32_acc)
        np.testing.assert_array_equal(c, packed(d, out, fp32_acc))


@pytest.mark.parametrize("bcast", ["ROW", "COL", "SCALAR"])
def test_bcast(exe, tmp_path, bcast):
    a, b = inputs(6)
    init = {"ROW": "add_bcast_rows_init", "COL": "add_bcast_cols_init",
            "SCALAR": "add_bcast_scalar_init"}[bcast]
    c = run(exe, tmp_path, {"OP_BCAST": 1, "OP_INIT": init, "OP_CALL": "add_tiles_bcast",
                            "BCAST": f"BroadcastType::{bcast}"}, a, b)
    bb = {"ROW": np.broadcast_to(b[0:1, :], b.shape), "COL": np.broadcast_to(b[:, 0:1], b.shape),
          "SCALAR": np.full_like(b, b[0, 0])}[bcast]
    d = tm.eltwise_add(src(a, "bf16", False), src(bb, "bf16", False), False)
    np.testing.assert_array_equal(c, packed(d, "bf16", False))


def test_copy_and_transpose(exe, tmp_path):
    a, b = inputs(7)
    np.testing.assert_array_equal(run(exe, tmp_path, {"OP_COPY": 1}, a, b), a)
    np.testing.assert_array_equal(run(exe, tmp_path, {"OP_TRANSPOSE": 1}, a, b), a.T)


# Accuracy of each vector-engine function as the emulator models it (its LLK algorithm with
# SFPMAD rounding, docs/MOCK.md), in ulps of the DST format, over these input ranges. Precise
# mode stays within about an ulp; the approximate algorithms are checked by absolute error.
SFPU = {
    "exp": (np.exp, (-10, 10), 1, 1),
    "log": (np.log, (0.01, 100), 1, 1),
    "sqrt": (np.sqrt, (0.01, 100), 1, 1),
    "rsqrt": (lambda x: 1 / np.sqrt(x), (0.01, 100), 1, 1),
    "recip": (lambda x: 1 / x, (0.01, 100), 1, 1),
    "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), (-10, 10), 3, 1),
    "tanh": (np.tanh, (-5, 5), 3, 1),
    "relu": (lambda x: np.maximum(x, 0), (-5, 5), 0, 0),
    "abs": (np.abs, (-5, 5), 0, 0),
    "negative": (np.negative, (-5, 5), 0, 0),
    "square": (np.square, (-5, 5), 0.5, 1),
}


@pytest.mark.parametrize("op", sorted(SFPU))
@pytest.mark.parametrize("fp32_acc", [True, False], ids=["fp32dst", "16bitdst"])
def test_sfpu_unary(exe, tmp_path, op, fp32_acc):
    fn, (lo, hi), ulps_fp32, ulps_bf16 = SFPU[op]
    a = np.random.default_rng(8).uniform(lo, hi, (32, 32)).astype(np.float32)
    if fp32_acc:
        c = run(exe, tmp_path, {"OP_SFPU": 1, "OP_INIT": f"{op}_tile_init", "OP_CALL": f"{op}_tile"},
                a, a, in_fmt="f32", out_fmt="f32", fp32_acc=True, to_dest=True)
        assert_within_ulps(c, fn(a.astype(np.float64)), ulps_fp32, "float32", atol=1e-30)
    else:
        a = bf16(a)
        c = run(exe, tmp_path, {"OP_SFPU": 1, "OP_INIT": f"{op}_tile_init", "OP_CALL": f"{op}_tile"},
                a, a)
        assert_within_ulps(c, fn(a.astype(np.float64)), ulps_bf16, "bfloat16")


def test_sfpu_gelu_default_is_the_approximate_lut(exe, tmp_path):
    # gelu_tile's fast_and_approx defaults to true: a piecewise-linear LUT (ckernel_sfpu_gelu.h)
    a = np.random.default_rng(9).uniform(-4, 4, (32, 32)).astype(np.float32)
    c = run(exe, tmp_path, {"OP_SFPU": 1, "OP_INIT": "gelu_tile_init", "OP_CALL": "gelu_tile"},
            a, a, in_fmt="f32", out_fmt="f32", fp32_acc=True, to_dest=True)
    erf = np.vectorize(math.erf)
    exact = 0.5 * a * (1 + erf(a / np.sqrt(2)))
    err = np.abs(c - exact)
    assert err.max() < 0.03 and err.max() > 1e-3  # the LUT's error, not libm's


@pytest.mark.parametrize("op,fn", [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                                   ("div", np.divide)])
def test_sfpu_binary_fp32(exe, tmp_path, op, fn):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((32, 32)).astype(np.float32)
    b = (np.abs(rng.standard_normal((32, 32))) + 0.5).astype(np.float32)
    c = run(exe, tmp_path, {"OP_SFPU_BINARY": 1, "OP_INIT": f"{op}_binary_tile_init",
                            "OP_CALL": f"{op}_binary_tile"},
            a, b, in_fmt="f32", out_fmt="f32", fp32_acc=True, to_dest=True)
    # SFPADD / SFPMUL round once to nearest (as IEEE); div: one Newton-refined quotient
    expected = fn(a, b).astype(np.float64) if op != "div" else a.astype(np.float64) / b
    assert_within_ulps(c, expected, 0.5 if op != "div" else 1, "float32")


@pytest.mark.parametrize("pool,dim", [("SUM", "REDUCE_ROW"), ("SUM", "REDUCE_COL"),
                                      ("MAX", "REDUCE_ROW"), ("SUM", "REDUCE_SCALAR")])
@pytest.mark.parametrize("fp32_acc", [True, False], ids=["fp32dst", "16bitdst"])
def test_reduce(exe, tmp_path, pool, dim, fp32_acc):
    a, _ = inputs(9)
    a[3, :] = -np.abs(a[3, :]) - 1  # an all-negative row: MAX must not clip it at DST's zero
    a = bf16(a)
    scale = 1.0 if pool == "MAX" else 0.5
    scaler = np.full((32, 32), scale, dtype=np.float32)
    c = run(exe, tmp_path, {"OP_REDUCE": 1, "POOL": f"PoolType::{pool}", "DIM": f"ReduceDim::{dim}"},
            a, scaler, out_fmt="f32", fp32_acc=fp32_acc)
    if pool == "MAX":
        ref = np.zeros((32, 32), dtype=np.float32)
        ref[:, 0] = a.max(axis=1)
        np.testing.assert_array_equal(c, ref)
        return
    d = tm.reduce_sum(np.zeros((32, 32), np.int64), src(a, "bf16", fp32_acc),
                      int(tm.bits(np.float32(scale))), dim, "HiFi4", fp32_acc)
    np.testing.assert_array_equal(c, packed(d, "f32", fp32_acc))


def test_reduce_max_needs_a_unit_scaler(exe, tmp_path):
    a, _ = inputs(10)
    with pytest.raises(mockbuild.MockRuntimeError, match="scaler tile must hold 1.0"):
        run(exe, tmp_path, {"OP_REDUCE": 1, "POOL": "PoolType::MAX", "DIM": "ReduceDim::REDUCE_ROW"}, a,
            np.full((32, 32), 0.5, dtype=np.float32), out_fmt="f32", fp32_acc=True)


def test_pack_rounds_fp32_dst_half_away_from_zero(exe, tmp_path):
    # tt-metal issue #17018: 1.0039063 (1 + 2^-8, a bf16 tie) packs to 1.0078125
    a = np.full((32, 32), 1.0, dtype=np.float32)
    b = np.full((32, 32), 2.0 ** -8, dtype=np.float32)
    b[0, :] = 3 * 2.0 ** -8  # 1 + 3*2^-8: tie between 1+2^-7 and 1+2^-6 -> away: 1+2^-6
    c = run(exe, tmp_path, {"OP_SFPU_BINARY": 1, "OP_INIT": "add_binary_tile_init",
                            "OP_CALL": "add_binary_tile"},
            a, b, in_fmt="f32", out_fmt="bf16", fp32_acc=True, to_dest=True)
    assert c[1, 1] == 1.0078125 and c[0, 0] == 1.0 + 2.0 ** -6


def test_unpack_to_dest_needs_fp32_dest(exe, tmp_path):
    a, b = inputs(10)
    with pytest.raises(mockbuild.MockRuntimeError, match="UnpackToDestFp32.*fp32_dest_acc_en"):
        run(exe, tmp_path, {"OP_COPY": 1}, a, b, in_fmt="f32", out_fmt="f32", fp32_acc=False,
            to_dest=True)


def test_wrong_init_is_named(exe, tmp_path):
    a, b = inputs(11)
    with pytest.raises(mockbuild.MockRuntimeError, match="call add_init"):
        run(exe, tmp_path, {"OP_BINARY": 1, "OP_INIT": "mul_init", "OP_CALL": "add_tiles"},
            a, b)


def test_ulp_helper():
    assert ulp(1.0) == 2.0 ** -7 and ulp(1.0, "float32") == 2.0 ** -23
