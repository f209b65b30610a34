"""The vector-engine (SFPU) math functions of TileLang's ``testing/python/math`` tests and kernels
such as rotary embeddings: ``T.sin``, ``T.cos``, ``T.tan``, ``T.atan``, ``T.sinh``, ``T.cosh``,
``T.asin``, ``T.acos``, ``T.asinh``, ``T.acosh``, ``T.atanh``, ``T.log1p``, ``T.erf``,
``T.atan2`` (``atan2_binary_tile``), ``T.pow`` (a constant exponent: ``power_tile``; a tensor: ``power_binary_tile``) and
``T.fmod`` by a constant, in ``T.Parallel`` bodies of fragments, float32 and bfloat16, run on the
emulator against numpy at the accuracy of the SDK's algorithm (docs/MOCK.md "Numerics")."""

import math

import ml_dtypes
import numpy as np
import pytest

import tilelang_tt as tilelang
import tilelang_tt.language as T
from tilelang_tt import TTUnsupportedError

M = N = 64


def unary(fn, dtype, block_M=32, block_N=32):
    # TileLang's testing/python/math/test_math_fast_math.py single-argument kernel
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                B[by * block_M + i, bx * block_N + j] = fn(A[by * block_M + i, bx * block_N + j])

    return main


def unary4(fns, dtype, block_M=32, block_N=32):
    # four single-argument functions in one T.Parallel body, each with its own input and output
    # (each lowers to its own init and tile call: one kernel checks four functions)
    f0, f1, f2, f3 = fns

    @T.prim_func
    def main(A0: T.Tensor((M, N), dtype), A1: T.Tensor((M, N), dtype),
             A2: T.Tensor((M, N), dtype), A3: T.Tensor((M, N), dtype),
             B0: T.Tensor((M, N), dtype), B1: T.Tensor((M, N), dtype),
             B2: T.Tensor((M, N), dtype), B3: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                B0[by * block_M + i, bx * block_N + j] = f0(A0[by * block_M + i, bx * block_N + j])
                B1[by * block_M + i, bx * block_N + j] = f1(A1[by * block_M + i, bx * block_N + j])
                B2[by * block_M + i, bx * block_N + j] = f2(A2[by * block_M + i, bx * block_N + j])
                B3[by * block_M + i, bx * block_N + j] = f3(A3[by * block_M + i, bx * block_N + j])

    return main


def compile_functions(fns, dtype):
    """One kernel for a group of 1 or 4 single-argument functions; returns (kernel, run) where
    run(inputs) gives the list of outputs."""
    if len(fns) == 1:
        kernel = tilelang.compile(unary(fns[0], dtype), out_idx=[1])
        return kernel, lambda xs: [kernel(*xs)]
    kernel = tilelang.compile(unary4(fns, dtype), out_idx=[4, 5, 6, 7])
    return kernel, lambda xs: list(kernel(*xs))


def binary(fn, dtype, block_M=32, block_N=32):
    # the same file's two-argument kernel
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                C[by * block_M + i, bx * block_N + j] = fn(
                    A[by * block_M + i, bx * block_N + j], B[by * block_M + i, bx * block_N + j])

    return main


def as_dtype(x, dtype):
    return np.asarray(x, np.float32).astype(ml_dtypes.bfloat16 if dtype == "bfloat16"
                                            else np.float32)


def f64(x):
    return np.asarray(x).astype(np.float64)


# name: (numpy reference, input range, fp32 (rtol, atol), bf16 (rtol, atol)). float32: the fp32
# DST algorithms are within about an ulp (erf: the LLK's BF16-accurate rational); bfloat16: the
# 16-bit DST algorithms round to BF16 (one ulp 2^-8 relative) after a few ulps of their own
FUNCTIONS = {
    "sin": (np.sin, 100.0, (1e-6, 2e-7), (8e-3, 4e-3)),
    "cos": (np.cos, 100.0, (1e-6, 2e-7), (8e-3, 4e-3)),
    "tan": (np.tan, 10.0, (1e-6, 1e-7), (8e-3, 1e-3)),
    "atan": (np.arctan, 50.0, (1e-6, 1e-7), (8e-3, 1e-3)),
    "sinh": (np.sinh, 10.0, (1e-6, 1e-7), (8e-3, 1e-3)),
    "cosh": (np.cosh, 10.0, (1e-6, 1e-7), (8e-3, 1e-3)),
    "erf": (np.vectorize(math.erf), 4.0, (8e-3, 4e-3), (8e-3, 4e-3)),
    "asin": (np.arcsin, 1.0, (1e-6, 1e-7), (8e-3, 1e-3)),
    "acos": (np.arccos, 1.0, (1e-6, 1e-7), (8e-3, 1e-3)),
    # asinh, acosh, atanh store their log1p argument to DST: a 16-bit DST truncates it to BF16
    "asinh": (np.arcsinh, 100.0, (1e-6, 1e-7), (1.6e-2, 1e-3)),
    "acosh": (np.arccosh, 100.0, (1e-6, 1e-7), (1.6e-2, 1e-3)),
    "atanh": (np.arctanh, 0.999, (1e-6, 1e-7), (1.6e-2, 1e-3)),
    "log1p": (np.log1p, 0.99, (1e-6, 1e-7), (8e-3, 1e-3)),
}


# the functions in kernels of four (the last alone): every function in both dtypes
GROUPS = [["sin", "cos", "tan", "atan"], ["sinh", "cosh", "erf", "asin"],
          ["acos", "asinh", "acosh", "atanh"], ["log1p"]]
assert sorted(sum(GROUPS, [])) == sorted(FUNCTIONS)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("names", GROUPS, ids="-".join)
def test_function_matches_numpy(names, dtype):
    kernel, run = compile_functions([getattr(T, name) for name in names], dtype)
    inputs = []
    for name in names:
        span = FUNCTIONS[name][1]
        rng = np.random.default_rng(3)
        a = rng.uniform(-span, span, (M, N)).astype(np.float32)
        a[0, :6] = [0.0, -0.0, 1e-3, -1e-3, 0.5, -span]  # small arguments keep their sign
        if name == "acosh":  # its domain: [1, inf)
            a = np.abs(a) + 1.0
        inputs.append(as_dtype(a, dtype))
    src = kernel.get_kernel_source()
    for name, a, got in zip(names, inputs, run(inputs)):
        ref, span, fp32_tol, bf16_tol = FUNCTIONS[name]
        rtol, atol = fp32_tol if dtype == "float32" else bf16_tol
        with np.errstate(divide="ignore"):  # atanh(+-1) of bfloat16-rounded +-0.999: +-inf
            want = ref(f64(a))
        np.testing.assert_allclose(f64(got), want, rtol=rtol, atol=atol, err_msg=name)
        assert np.array_equal(np.signbit(f64(got)[0, 2:4]), [False, True]) or \
            name in ("cos", "cosh", "acos", "acosh"), name
        assert f"{name}_tile" in src, name


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_rotary_embedding(dtype):
    # the rotary-embedding pattern: x * cos(theta) - y * sin(theta), angles up to 100 rad
    @T.prim_func
    def rope(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype),
             Th: T.Tensor((M, N), dtype), O: T.Tensor((M, N), dtype)):
        with T.Kernel(N // 32, M // 32, threads=128) as (bx, by):
            for i, j in T.Parallel(32, 32):
                r, c = by * 32 + i, bx * 32 + j
                O[r, c] = X[r, c] * T.cos(Th[r, c]) - Y[r, c] * T.sin(Th[r, c])

    kernel = tilelang.compile(rope, out_idx=[3])
    rng = np.random.default_rng(4)
    x, y = (as_dtype(rng.standard_normal((M, N)), dtype) for _ in range(2))
    th = as_dtype(rng.uniform(0, 100, (M, N)), dtype)
    want = f64(x) * np.cos(f64(th)) - f64(y) * np.sin(f64(th))
    tol = 1e-5 if dtype == "float32" else 3e-2
    np.testing.assert_allclose(f64(kernel(x, y, th)), want, rtol=tol, atol=tol)


# four exponents in one kernel per dtype; together every exponent (integer, fractional,
# negative, zero) and each of integer and fractional in both dtypes
EXPONENTS = {"float32": [2.0, 3.0, 0.5, -1.5], "bfloat16": [0.0, 3.0, 0.5, -1.5]}


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_pow_by_a_constant(dtype):
    exponents = EXPONENTS[dtype]
    kernel, run = compile_functions([lambda x, e=e: T.pow(x, e) for e in exponents], dtype)
    inputs = []
    for exponent in exponents:
        rng = np.random.default_rng(5)
        if float(exponent).is_integer():  # a negative base takes an integer power's sign
            a = rng.uniform(-4, 4, (M, N))
        else:
            a = rng.uniform(0.1, 4, (M, N))
        inputs.append(as_dtype(a, dtype))
    tol = 1e-6 if dtype == "float32" else 8e-3
    for exponent, a, got in zip(exponents, inputs, run(inputs)):
        np.testing.assert_allclose(f64(got), np.power(f64(a), exponent), rtol=tol, atol=1e-30,
                                   err_msg=str(exponent))
    src = kernel.get_kernel_source()
    assert "power_tile_init();" in src and "power_tile(" in src


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_pow_of_two_tensors(dtype):
    # test_math_fast_math's pow inputs: |a| + 0.1, b clamped to [-3, 3]
    kernel = tilelang.compile(binary(T.pow, dtype), out_idx=[2])
    rng = np.random.default_rng(6)
    a = as_dtype(np.abs(rng.standard_normal((M, N))) + 0.1, dtype)
    b = as_dtype(np.clip(rng.standard_normal((M, N)), -3, 3), dtype)
    tol = 1e-6 if dtype == "float32" else 8e-3
    np.testing.assert_allclose(f64(kernel(a, b)), np.power(f64(a), f64(b)), rtol=tol)
    assert "power_binary_tile(" in kernel.get_kernel_source()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("divisor", [1.5, -0.3, 7.0])
def test_fmod_by_a_constant(divisor, dtype):
    kernel = tilelang.compile(unary(lambda x: T.fmod(x, divisor), dtype), out_idx=[1])
    rng = np.random.default_rng(7)
    a = as_dtype(rng.uniform(-50, 50, (M, N)), dtype)
    got = f64(kernel(a))
    want = np.fmod(f64(a), np.float64(np.float32(divisor)))
    if dtype == "float32":  # truncated quotient, one exact multiply-add: within an ulp of |x|
        np.testing.assert_allclose(got, want, rtol=0, atol=4e-6)
    else:  # the remainder is rounded to bfloat16
        np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-6)
    assert np.all(np.signbit(got[got != 0]) == np.signbit(f64(a)[got != 0]))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_fmod_of_two_tensors(dtype):
    # test_math_fast_math's fmod inputs: b = |b| + 0.1
    kernel = tilelang.compile(binary(T.fmod, dtype), out_idx=[2])
    rng = np.random.default_rng(8)
    a = as_dtype(rng.standard_normal((M, N)) * 10, dtype)
    b = as_dtype(np.abs(rng.standard_normal((M, N))) + 0.1, dtype)
    got, want = f64(kernel(a, b)), np.fmod(f64(a), f64(b))
    # the quotient from a 2-step reciprocal and trunc, corrected by |b| when the remainder is
    # out of range: within a few ulps of |a|
    np.testing.assert_allclose(got, want, rtol=0, atol=1.2e-4 if dtype == "float32" else 0.02)
    assert "fmod_binary_tile(" in kernel.get_kernel_source()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_atan2_of_two_tensors(dtype):
    kernel = tilelang.compile(binary(T.atan2, dtype), out_idx=[2])
    rng = np.random.default_rng(11)
    y = rng.standard_normal((M, N)) * 5
    x = rng.standard_normal((M, N)) * 5
    y[0, :6], x[0, :6] = [0.0, 1.0, -1.0, 2.0, -3.0, 0.0], [0.0, 1.0, -1.0, -2.0, 0.0, -4.0]
    y, x = as_dtype(y, dtype), as_dtype(x, dtype)
    tol = (1e-6, 2e-7) if dtype == "float32" else (8e-3, 1e-3)
    np.testing.assert_allclose(f64(kernel(y, x)), np.arctan2(f64(y), f64(x)), rtol=tol[0],
                               atol=tol[1])
    assert "atan2_binary_tile(" in kernel.get_kernel_source()


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_pow_of_a_constant_base(dtype):
    # c ** x: rpow_tile with the base's float32 bits
    kernel = tilelang.compile(unary(lambda x: T.pow(2.5, x), dtype), out_idx=[1])
    a = as_dtype(np.random.default_rng(10).uniform(-6, 6, (M, N)), dtype)
    tol = 1e-6 if dtype == "float32" else 8e-3
    np.testing.assert_allclose(f64(kernel(a)), np.power(np.float64(2.5), f64(a)), rtol=tol)
    assert "rpow_tile(" in kernel.get_kernel_source()


def test_fmod_of_a_constant_is_refused():
    # fmod(c, x): no SDK call takes a constant dividend; the message says what works
    with pytest.raises(TTUnsupportedError, match=r"T\.fmod \(of an expression and a constant "
                                                 r"or an expression\)"):
        tilelang.compile(unary(lambda x: T.fmod(2.0, x), "float32"), out_idx=[1])


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_functions_of_fragments(dtype):
    # TileLang's usual form: blocks copied into fragments, the function applied in T.Parallel
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(N // 32, M // 32, threads=128) as (bx, by):
            a = T.alloc_fragment((32, 32), dtype)
            b = T.alloc_fragment((32, 32), dtype)
            c = T.alloc_fragment((32, 32), dtype)
            T.copy(A[by * 32, bx * 32], a)
            T.copy(B[by * 32, bx * 32], b)
            for i, j in T.Parallel(32, 32):
                c[i, j] = T.pow(T.erf(a[i, j]) + 1.5, b[i, j]) + T.fmod(T.atan(a[i, j]) * 4.0, 1.25)
            T.copy(c, C[by * 32, bx * 32])

    kernel = tilelang.compile(main, out_idx=[2])
    rng = np.random.default_rng(9)
    a = as_dtype(rng.uniform(-3, 3, (M, N)), dtype)
    b = as_dtype(rng.uniform(-2, 2, (M, N)), dtype)
    erf = np.vectorize(math.erf)
    want = np.power(erf(f64(a)) + 1.5, f64(b)) + np.fmod(np.arctan(f64(a)) * 4.0, 1.25)
    # erf is BF16-accurate (3e-3 absolute) in either mode: up to 1.3% once raised to |b| <= 2
    tol = 2e-2 if dtype == "float32" else 5e-2
    np.testing.assert_allclose(f64(kernel(a, b)), want, rtol=tol, atol=tol)
