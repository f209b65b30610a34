"""float16 (IEEE half, TT-Metalium's Float16 format) tensors and blocks: TileLang's GEMM in its
default dtype, elementwise kernels bit for bit against the Tensix model, conversions to and from
bfloat16 / float32, and the 32-bit DST that float16 data needs in the emulator."""

import numpy as np
import pytest

import kernels
import tensix_model as tm
import tilelang_tt
import tilelang_tt as tilelang
import tilelang_tt.language as T
from helpers import (
    as_f32, assert_matmul, compute_config, pack_round_bf16, pack_round_fp16, rand, ulp,
)
from tilelang_tt import TTCompileError


@tilelang.jit(out_idx=[-1])
def matmul(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float"):
    # TileLang's quickstart GEMM, float16 in, float32 accumulation, float16 out

    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm


@pytest.mark.parametrize("shape", [(64, 64, 128, 32, 32, 32), (128, 96, 64, 64, 32, 32)],
                         ids=lambda s: "x".join(map(str, s)))
def test_float16_gemm(shape):
    M, N, K = shape[:3]
    kernel = matmul(*shape)
    cbs = {c["name"]: c["data_format"] for c in kernel.plan["circular_buffers"]}
    assert cbs["A_shared"] == cbs["B_shared"] == "Float16"
    cfg = compute_config(kernel)
    assert cfg["math_fidelity"] == "HiFi4" and cfg["fp32_dest_acc_en"]
    a, b = rand((M, K), "float16", 1), rand((K, N), "float16", 2)
    c = kernel(a, b)
    assert c.dtype == np.float16
    assert_matmul(c, a, b, kernel)
    ref = as_f32(a) @ as_f32(b)
    np.testing.assert_allclose(as_f32(c), ref, rtol=1e-2, atol=1e-2 * np.abs(ref).max())


def test_float16_gemm_lofi_is_coarser():
    shape = (64, 64, 128, 32, 32, 32)
    func = matmul.get_tir(*shape)
    lofi = tilelang_tt.compile(func, out_idx=[-1], pass_configs={"tt.math_fidelity": "LoFi"})
    a, b = rand((64, 128), "float16", 3), rand((128, 64), "float16", 4)
    exact = as_f32(a).astype(np.float64) @ as_f32(b).astype(np.float64)
    c_lofi = lofi(a, b)
    assert_matmul(c_lofi, a, b, lofi)
    c_hifi = matmul(*shape)(a, b)
    err = lambda c: np.abs(as_f32(c) - exact).mean()  # noqa: E731
    assert err(c_lofi) > 4 * err(c_hifi)


def elementwise(M, N, block_M, block_N, dtype, subtract=False):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                y, x = by * block_M + i, bx * block_N + j
                if subtract:
                    C[y, x] = A[y, x] - B[y, x]
                else:
                    C[y, x] = A[y, x] + B[y, x]

    return main


def fpu_add_fp16(a, b, subtract=False):
    """a +/- b of float16 blocks on the matrix engine (32-bit DST), packed to float16."""
    return tm.pack_fp16(tm.eltwise_add(tm.unpack(a, True), tm.unpack(b, True), True, subtract))


@pytest.mark.parametrize("op", ["add", "sub"])
def test_float16_elementwise_bit_exact(op):
    M, N = 64, 96
    art = tilelang_tt.compile(elementwise(M, N, 32, 32, "float16", subtract=(op == "sub")),
                              out_idx=-1)
    assert compute_config(art)["fp32_dest_acc_en"]
    a = rand((M, N), "float16", 5, scale=100.0)
    b = rand((M, N), "float16", 6, scale=100.0)
    c = art(a, b)
    expected = fpu_add_fp16(a, b, subtract=(op == "sub"))
    np.testing.assert_array_equal(c.view(np.uint16), expected.view(np.uint16))
    # ELWADD aligns the smaller operand to the larger's 10-bit mantissa (rounding half up), then
    # the packer rounds: within half an ulp of the larger operand plus half an ulp of the result
    exact = as_f32(a).astype(np.float64) + (1 if op == "add" else -1) * as_f32(b)
    bound = 0.5 * ulp(np.maximum(np.abs(as_f32(a)), np.abs(as_f32(b))), "float16") + \
        0.5 * ulp(exact, "float16")
    assert (np.abs(as_f32(c) - exact) <= bound).all()


def test_float16_to_bfloat16_and_float32_to_float16():
    # float16 inputs, bfloat16 output: the float16 sum (C_local) copied through DST and packed
    # to bf16 (half away from zero)
    art = tilelang_tt.compile(
        kernels.elementwise_add_fragment(64, 64, 32, 32, "float16", "bfloat16"), out_idx=-1)
    roles = {c["name"]: c["role"] for c in art.plan["circular_buffers"]}
    assert roles["C_local"] == "intermediate"
    a, b = rand((64, 64), "float16", 7), rand((64, 64), "float16", 8)
    c = art(a, b)
    np.testing.assert_array_equal(as_f32(c), as_f32(pack_round_bf16(fpu_add_fp16(a, b))))
    # float32 inputs, float16 output
    art = tilelang_tt.compile(
        kernels.elementwise_add_fragment(64, 64, 32, 32, "float32", "float16"), out_idx=-1)
    x, y = rand((64, 64), "float32", 9, scale=1e3), rand((64, 64), "float32", 10, scale=1e3)
    z = art(x, y)
    assert z.dtype == np.float16
    np.testing.assert_array_equal(z.view(np.uint16), pack_round_fp16(x + y).view(np.uint16))


def test_float16_needs_the_32bit_dst():
    with pytest.raises(TTCompileError, match="float16 CB"):
        tilelang_tt.compile(kernels.elementwise_add(64, 64, dtype="float16"),
                            pass_configs={"tt.fp32_dest_acc_en": False})
