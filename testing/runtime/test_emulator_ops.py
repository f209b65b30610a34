"""Each emulated compute op, on one tile, against numpy (hand-written program in programs/unit_op).

The numerics modelled: bf16 operands are exact in fp32; fp32 operands are rounded to TF32 by the
FPU's source registers unless unpacked straight to DST; DST keeps fp32 with fp32_dest_acc_en and
bf16 (round-to-nearest-even) otherwise; packing rounds to the output CB's format.
"""

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tilelang_tt.runtime import mockbuild

PROGRAM = Path(__file__).resolve().parent / "programs" / "unit_op"
BF16 = ml_dtypes.bfloat16


@pytest.fixture(scope="module")
def exe():
    return mockbuild.build_host(PROGRAM / "main.cpp", PROGRAM)


def tf32(x):
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0xFFF + ((u >> 13) & 1)) & ~np.uint64(0x1FFF)
    return u.astype(np.uint32).view(np.float32)


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


@pytest.mark.parametrize("transpose", [0, 1])
def test_matmul(exe, tmp_path, transpose):
    a, b = inputs(1)
    c = run(exe, tmp_path, {"OP_MATMUL": 1, "TRANSPOSE": transpose}, a, b, out_fmt="f32",
            fp32_acc=True)
    ref = a @ (b.T if transpose else b)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)


def test_matmul_bf16_dst_rounds(exe, tmp_path):
    a, b = inputs(2)
    c = run(exe, tmp_path, {"OP_MATMUL": 1, "TRANSPOSE": 0}, a, b, out_fmt="f32")
    assert np.array_equal(c, bf16(c))  # a 16-bit DST holds bf16
    np.testing.assert_allclose(c, a @ b, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("op,fn", [("add", np.add), ("sub", np.subtract), ("mul", np.multiply)])
def test_eltwise_binary_bf16_exact(exe, tmp_path, op, fn):
    a, b = inputs(3)
    c = run(exe, tmp_path, {"OP_BINARY": 1, "OP_INIT": f"{op}_init", "OP_CALL": f"{op}_tiles"},
            a, b)
    np.testing.assert_array_equal(c, bf16(fn(a, b)))


def test_fpu_rounds_fp32_operands_to_tf32(exe, tmp_path):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((32, 32)).astype(np.float32)
    b = rng.standard_normal((32, 32)).astype(np.float32)
    c = run(exe, tmp_path, {"OP_BINARY": 1, "OP_INIT": "add_init", "OP_CALL": "add_tiles"},
            a, b, in_fmt="f32", out_fmt="f32", fp32_acc=True)
    np.testing.assert_array_equal(c, tf32(a) + tf32(b))
    assert not np.array_equal(c, a + b)


@pytest.mark.parametrize("op,fn", [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                                   ("div", np.divide)])
def test_sfpu_binary_fp32_exact(exe, tmp_path, op, fn):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((32, 32)).astype(np.float32)
    b = (np.abs(rng.standard_normal((32, 32))) + 0.5).astype(np.float32)
    c = run(exe, tmp_path, {"OP_SFPU_BINARY": 1, "OP_INIT": f"{op}_binary_tile_init",
                            "OP_CALL": f"{op}_binary_tile"},
            a, b, in_fmt="f32", out_fmt="f32", fp32_acc=True, to_dest=True)
    np.testing.assert_allclose(c, fn(a, b), rtol=2e-7)


@pytest.mark.parametrize("bcast,ref", [
    ("ROW", lambda a, b: a + b[0:1, :]), ("COL", lambda a, b: a + b[:, 0:1]),
    ("SCALAR", lambda a, b: a + b[0, 0])])
def test_bcast(exe, tmp_path, bcast, ref):
    a, b = inputs(6)
    init = {"ROW": "add_bcast_rows_init", "COL": "add_bcast_cols_init",
            "SCALAR": "add_bcast_scalar_init"}[bcast]
    c = run(exe, tmp_path, {"OP_BCAST": 1, "OP_INIT": init, "OP_CALL": "add_tiles_bcast",
                            "BCAST": f"BroadcastType::{bcast}"}, a, b)
    np.testing.assert_array_equal(c, bf16(ref(a, b)))


def test_copy_and_transpose(exe, tmp_path):
    a, b = inputs(7)
    np.testing.assert_array_equal(run(exe, tmp_path, {"OP_COPY": 1}, a, b), a)
    np.testing.assert_array_equal(run(exe, tmp_path, {"OP_TRANSPOSE": 1}, a, b), a.T)


SFPU = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "recip": lambda x: 1 / x, "relu": lambda x: np.maximum(x, 0), "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh, "abs": np.abs, "negative": np.negative, "square": np.square,
    "gelu": lambda x: 0.5 * x * (1 + np.vectorize(__import__("math").erf)(x / np.sqrt(2))),
}


@pytest.mark.parametrize("op", sorted(SFPU))
def test_sfpu_unary(exe, tmp_path, op):
    positive = op in ("log", "sqrt", "rsqrt", "recip")
    rng = np.random.default_rng(8)
    a = rng.standard_normal((32, 32)).astype(np.float32)
    if positive:
        a = np.abs(a) + 0.25
    c = run(exe, tmp_path, {"OP_SFPU": 1, "OP_INIT": f"{op}_tile_init", "OP_CALL": f"{op}_tile"},
            a, a, in_fmt="f32", out_fmt="f32", fp32_acc=True, to_dest=True)
    np.testing.assert_allclose(c, SFPU[op](a.astype(np.float64)), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("pool,dim", [("SUM", "REDUCE_ROW"), ("SUM", "REDUCE_COL"),
                                      ("MAX", "REDUCE_ROW"), ("SUM", "REDUCE_SCALAR")])
def test_reduce(exe, tmp_path, pool, dim):
    a, _ = inputs(9)
    a[3, :] = -np.abs(a[3, :]) - 1  # an all-negative row: MAX must not clip it at DST's zero
    a = bf16(a)
    scaler = np.full((32, 32), 0.5, dtype=np.float32)
    c = run(exe, tmp_path, {"OP_REDUCE": 1, "POOL": f"PoolType::{pool}", "DIM": f"ReduceDim::{dim}"}, a, scaler,
            out_fmt="f32", fp32_acc=True)
    f = (lambda x, axis: np.max(x * 0.5, axis=axis)) if pool == "MAX" else \
        (lambda x, axis: np.sum(x * 0.5, axis=axis))
    ref = np.zeros((32, 32), dtype=np.float32)
    if dim == "REDUCE_ROW":
        ref[:, 0] = f(a, 1)
    elif dim == "REDUCE_COL":
        ref[0, :] = f(a, 0)
    else:
        ref[0, 0] = f(a, None)
    np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-5)


def test_pack_rounds_to_nearest_even(exe, tmp_path):
    # values exactly halfway between two bf16 numbers round to the even one
    a = np.full((32, 32), 1.0, dtype=np.float32)
    b = np.full((32, 32), 2.0 ** -8, dtype=np.float32)  # 1 + 2^-8 is a bf16 tie
    b[0, :] = 3 * 2.0 ** -8  # 1 + 3*2^-8: tie between 1+2^-7 and 1+2^-6 -> 1+2^-6 (even)
    c = run(exe, tmp_path, {"OP_SFPU_BINARY": 1, "OP_INIT": "add_binary_tile_init",
                            "OP_CALL": "add_binary_tile"},
            a, b, in_fmt="f32", out_fmt="bf16", fp32_acc=True, to_dest=True)
    assert c[1, 1] == 1.0 and c[0, 0] == 1.0 + 2.0 ** -6


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
