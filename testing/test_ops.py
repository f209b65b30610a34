"""Elementwise operations of T.Parallel bodies beyond + - * / and the SFPU functions:
T.exp2, T.log2, two-operand T.max / T.min (tensor-tensor and tensor-constant), T.clamp, and
comparisons selecting with T.if_then_else or Python's conditional expression.  Each kernel runs
on the emulator and is compared with numpy."""

import numpy as np
import pytest

import kernels
import tilelang_tt
import tilelang_tt.language as T
from helpers import as_f32, assert_within_ulps, rand
from tilelang_tt.errors import TTUnsupportedError

NEG_INF = -float("inf")

# name: (inputs, TileLang element expression, numpy reference, calls in compute.cpp, exact)
OPS = {
    "exp2": (1, lambda a: T.exp2(a), np.exp2, ["exp_tile(", "mul_unary_tile("], False),
    "log2": (1, lambda a: T.log2(T.abs(a) + 0.5), lambda a: np.log2(np.abs(a) + 0.5),
             ["log_tile(", "mul_unary_tile("], False),
    "max_of_two": (2, lambda a, b: T.max(a, b), np.maximum, ["binary_max_tile("], True),
    "min_of_two": (2, lambda a, b: T.min(a, b), np.minimum, ["binary_min_tile("], True),
    "max_with_constant": (1, lambda a: T.max(a, -0.25), lambda a: np.maximum(a, -0.25),
                          ["unary_max_tile("], True),
    "min_constant_first": (1, lambda a: T.min(0.5, a), lambda a: np.minimum(0.5, a),
                           ["unary_min_tile("], True),
    "clamp": (1, lambda a: T.clamp(a, -0.5, 0.75), lambda a: np.clip(a, -0.5, 0.75),
              ["unary_max_tile(", "unary_min_tile("], True),
    "if_then_else_elements": (2, lambda a, b: T.if_then_else(a > b, a, b),
                              lambda a, b: np.where(a > b, a, b), ["gtz_tile(", "where_tile<"],
                              True),
    "leaky_select": (1, lambda a: T.if_then_else(a >= 0.0, a, a * 0.5),
                     lambda a: np.where(a >= 0, a, a * 0.5), ["gez_tile("], False),
    "mask_to_minus_infinity": (2, lambda a, b: T.if_then_else(a <= b, a, NEG_INF),
                               lambda a, b: np.where(a <= b, a, -np.inf),
                               ["lez_tile(", "fill_tile_bitcast("], True),
    "equality_and_inequality": (2, lambda a, b: T.if_then_else(a == b, 1.0, 0.0)
                                + T.if_then_else(a != 0.0, 2.0, 0.0),
                                lambda a, b: (a == b) * 1.0 + (a != 0) * 2.0,
                                ["eqz_tile(", "nez_tile("], True),
    "less_than_selects_expressions": (2, lambda a, b: T.if_then_else(a < 0.0, T.exp(a), b * 2.0),
                                      lambda a, b: np.where(a < 0, np.exp(a), b * 2),
                                      ["ltz_tile(", "exp_tile("], False),
}


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_elementwise_operation(name, dtype):
    n, expr, ref_fn, calls, exact = OPS[name]
    art = tilelang_tt.compile(kernels.elementwise_expr(expr, n, 64, 128, 32, 64, dtype), out_idx=-1)
    code = art.sources["compute.cpp"]
    for c in calls:
        assert c in code, c
    assert len(art.plan["circular_buffers"]) == n + 1  # one fused pass, no intermediate buffers
    xs = [rand((64, 128), dtype, 50 + k) for k in range(n)]
    if name == "equality_and_inequality":  # equal elements and zeros in both
        xs[1] = np.where(np.arange(128) % 3 == 0, xs[0], xs[1]).astype(xs[1].dtype)
        xs[0] = np.where(np.arange(128) % 5 == 0, 0, xs[0]).astype(xs[0].dtype)
    c = as_f32(art(*xs))
    ref = ref_fn(*[as_f32(x).astype(np.float64) for x in xs])
    if exact:  # selections and comparisons: no rounding beyond the output's dtype
        want = ref.astype(np.float32)
        if dtype == "bfloat16":
            want = as_f32(want.astype(xs[0].dtype))
        np.testing.assert_array_equal(c, want)
    elif dtype == "bfloat16":  # computed in fp32 from the bf16 inputs, packed to bf16 once
        assert_within_ulps(c, ref, 2, atol=2 ** -18)
    else:
        np.testing.assert_allclose(c, ref, rtol=2e-6, atol=1e-6)


def test_exp2_scaled_difference_in_tilelang_form():
    """Flash attention's `T.exp2(s * scale - m * scale)` on fragments, written in TileLang's
    idiom (block copies in and out, the expression on fragments)."""
    scale = 1.44269504 / 8

    @T.prim_func
    def scaled_exp2(S: T.Tensor((64, 64), "float32"), M: T.Tensor((64, 64), "float32"),
                    P: T.Tensor((64, 64), "bfloat16")):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            s_frag = T.alloc_fragment((32, 32), "float32")
            m_frag = T.alloc_fragment((32, 32), "float32")
            p_frag = T.alloc_fragment((32, 32), "bfloat16")
            T.copy(S[by * 32, bx * 32], s_frag)
            T.copy(M[by * 32, bx * 32], m_frag)
            for i, j in T.Parallel(32, 32):
                p_frag[i, j] = T.exp2(s_frag[i, j] * scale - m_frag[i, j] * scale)
            T.copy(p_frag, P[by * 32, bx * 32])

    art = tilelang_tt.compile(scaled_exp2, out_idx=-1)
    s, m = rand((64, 64), "float32", 60), rand((64, 64), "float32", 61)
    ref = np.exp2(s.astype(np.float64) * scale - m.astype(np.float64) * scale)
    assert_within_ulps(as_f32(art(s, m)), ref, 2)


def test_python_conditional_expression(tmp_path):
    """`x if cond else y` in a kernel is TVMScript's if_then_else."""
    from helpers import kernel_from_source

    func = kernel_from_source(tmp_path, '''
import tilelang_tt.language as T

@T.prim_func
def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
    with T.Kernel(2, 2) as (bx, by):
        S = T.alloc_fragment((32, 32), "float32")
        R = T.alloc_fragment((32, 32), "float32")
        T.copy(A[by * 32, bx * 32], S)
        for i, j in T.Parallel(32, 32):
            R[i, j] = S[i, j] if S[i, j] > 0.25 else S[i, j] * S[i, j]
        T.copy(R, B[by * 32, bx * 32])
''')
    art = tilelang_tt.compile(func, out_idx=-1)
    assert "where_tile<DataFormat::Float32>(" in art.sources["compute.cpp"]
    a = rand((64, 64), "float32", 62)
    np.testing.assert_allclose(art(a), np.where(a > 0.25, a, a * a), rtol=1e-6)


def test_multi_statement_parallel_body():
    """Several assignments in one T.Parallel body (TileLang's online softmax / layernorm
    style): each runs as its own elementwise op, in order."""

    @T.prim_func
    def two_outputs(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32"),
                    C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, 2) as (bx, by):
            S = T.alloc_fragment((32, 64), "float32")
            P = T.alloc_fragment((32, 64), "float32")
            Q = T.alloc_fragment((32, 64), "float32")
            T.copy(A[by * 32, 0], S)
            for i, j in T.Parallel(32, 64):
                P[i, j] = T.exp2(S[i, j])
                Q[i, j] = T.max(P[i, j] * 2.0, S[i, j])
            T.copy(P, B[by * 32, 0])
            T.copy(Q, C[by * 32, 0])

    art = tilelang_tt.compile(two_outputs, out_idx=[1, 2])
    a = rand((64, 64), "float32", 63)
    p, q = art(a)
    np.testing.assert_allclose(p, np.exp2(a), rtol=2e-6)
    np.testing.assert_allclose(q, np.maximum(p * 2, a), rtol=1e-6)


def test_multi_statement_body_reading_another_element_is_refused(tmp_path):
    from helpers import kernel_from_source

    func = kernel_from_source(tmp_path, '''
import tilelang_tt.language as T

@T.prim_func
def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
    with T.Kernel(2, 2) as (bx, by):
        S = T.alloc_fragment((32, 32), "float32")
        P = T.alloc_fragment((32, 32), "float32")
        Q = T.alloc_fragment((32, 32), "float32")
        T.copy(A[by * 32, bx * 32], S)
        for i, j in T.Parallel(32, 32):
            P[i, j] = S[i, j] * 2.0
            Q[i, j] = P[j, i]
        T.copy(Q, B[by * 32, bx * 32])
''')
    with pytest.raises(TTUnsupportedError, match=r"P is written at \[i, j\] and accessed at \[j, i\]"):
        tilelang_tt.compile(func, out_idx=-1)


def test_one_dimensional_parallel_on_row_vectors():
    """`for i in T.Parallel(BM)` over the 1-D results of a dim=1 reduction (online softmax's
    rescale factor), then broadcast along the rows."""

    @T.prim_func
    def rescale(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, 2) as (bx, by):
            S = T.alloc_fragment((32, 64), "float32")
            m = T.alloc_fragment((32,), "float32")
            e = T.alloc_fragment((32,), "float32")
            O = T.alloc_fragment((32, 64), "float32")
            T.copy(A[by * 32, 0], S)
            T.reduce_max(S, m, dim=1)
            for i in T.Parallel(32):
                e[i] = T.exp2(T.min(m[i], 1.0) * 0.5)
            for i, j in T.Parallel(32, 64):
                O[i, j] = S[i, j] - e[i]
            T.copy(O, B[by * 32, 0])

    art = tilelang_tt.compile(rescale, out_idx=-1)
    a = rand((64, 64), "float32", 64)
    e = np.exp2(np.minimum(a.max(1, keepdims=True), 1.0) * 0.5)
    # the matrix engine's broadcast reads fp32 operands as TF32 (10 mantissa bits)
    assert np.all(np.abs(art(a) - (a - e)) <= 2 ** -9 * (np.abs(a) + e))
