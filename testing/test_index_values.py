"""Index values as operands in ``T.Parallel`` (docs/SUPPORT.md "Index values as data").

An integer expression of the ``T.Parallel`` indices, block indices and loop variables used as a
value (``T.Cast("float32", by * 32 + i)``, or ``a + j`` of a float ``a``) is computed by the
reader kernel, as a mask is, into a block of float32 values the compute kernel reads as any
other operand; a value alone (or a choice between index values and constants by a condition of
indices) is written by the reader straight in the destination's dtype.  Every kernel runs on the
emulator against numpy.
"""

import numpy as np
import pytest

import tilelang_tt
import tilelang_tt.language as T
from helpers import BF16, as_f32, kernel_from_source
from tilelang_tt.errors import TTUnsupportedError

M = N = 64


def _positions():
    return np.arange(M)[:, None], np.arange(N)[None, :]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_iota_and_index_choice_written_by_the_reader(dtype):
    """``C = (row * N + col)`` alone and ``T.if_then_else(row >= col, col, -1.0)``: the reader
    writes both in the destination's dtype (bfloat16 / float16: float32 rounded to nearest
    even, so values above 256 / 2048 are inexact); the compute kernel only copies."""

    @T.prim_func
    def iota(C: T.Tensor((M, N), dtype), D: T.Tensor((M, N), dtype)):
        with T.Kernel(N // 32, M // 32) as (bx, by):
            for i, j in T.Parallel(32, 32):
                C[by * 32 + i, bx * 32 + j] = T.Cast(dtype, (by * 32 + i) * N + bx * 32 + j)
            for i, j in T.Parallel(32, 32):
                D[by * 32 + i, bx * 32 + j] = T.if_then_else(by * 32 + i >= bx * 32 + j,
                                                              bx * 32 + j, -1.0)

    art = tilelang_tt.compile(iota, out_idx=[0, 1])
    assert "([](int32_t v) -> uint32_t" in art.sources["reader.cpp"]
    assert "sfpu" not in art.sources["compute.cpp"].lower()
    c, d = (as_f32(x) for x in art())
    r, col = _positions()
    np_dtype = {"bfloat16": BF16, "float16": np.float16}.get(dtype, np.float32)
    want_c = (r * N + col).astype(np.float32).astype(np_dtype).astype(np.float32)
    want_d = np.where(r >= col, col, -1).astype(np.float32).astype(np_dtype).astype(np.float32)
    np.testing.assert_array_equal(c, want_c)
    np.testing.assert_array_equal(d, want_d)
    if dtype != "float32":
        assert not np.array_equal(c, (r * N + col).astype(np.float32))  # inexact above 256


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_alibi_bias_and_index_sum(dtype):
    """An ALiBi bias ``slope * (col - row)`` and a sum of several index terms (one value block:
    the terms are added as integers first) added to scores in a fragment."""
    slope = 0.0625

    @T.prim_func
    def alibi(S: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype),
              D: T.Tensor((M, N), dtype)):
        with T.Kernel(N // 32, M // 32) as (bx, by):
            s = T.alloc_fragment((32, 32), "float32")
            t = T.alloc_fragment((32, 32), "float32")
            T.copy(S[by * 32, bx * 32], s)
            T.copy(S[by * 32, bx * 32], t)
            for i, j in T.Parallel(32, 32):
                s[i, j] = s[i, j] + slope * T.Cast("float32", (bx * 32 + j) - (by * 32 + i))
            for i, j in T.Parallel(32, 32):
                t[i, j] = t[i, j] * 0.5 + (by * 32 + i) * 3 - bx * 32 - j
            T.copy(s, C[by * 32, bx * 32])
            T.copy(t, D[by * 32, bx * 32])

    art = tilelang_tt.compile(alibi, out_idx=[1, 2])
    # one value block per statement (t's three index terms are one)
    assert art.sources["reader.cpp"].count("([](int32_t v)") == 2
    rng = np.random.default_rng(3)
    s = rng.uniform(-1, 1, (M, N)).astype(np.float32)
    s_in = s.astype(BF16) if dtype == "bfloat16" else s
    c, d = (as_f32(x) for x in art(s_in))
    r, col = _positions()
    s32 = as_f32(s_in)
    tol = dict(rtol=1e-2, atol=2e-2) if dtype == "bfloat16" else dict(rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(c, s32 + slope * (col - r), **tol)
    np.testing.assert_allclose(d, s32 * 0.5 + r * 3 - col, **tol)


def test_index_value_dividing_a_negative_difference_floors():
    """``(j - i) // 4`` and ``(j - i) % 5`` as data: negative below the diagonal, divided
    signed by the reader and floored, as TIR's ``//`` and ``%``."""

    @T.prim_func
    def k(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(N // 32, M // 32) as (bx, by):
            s = T.alloc_fragment((32, 32), "float32")
            T.copy(A[by * 32, bx * 32], s)
            for i, j in T.Parallel(32, 32):
                s[i, j] = s[i, j] + T.Cast("float32", (bx * 32 + j - by * 32 - i) // 4) * 100.0 \
                    + T.Cast("float32", (j - i) % 5)
            T.copy(s, C[by * 32, bx * 32])

    a = np.random.default_rng(6).uniform(-1, 1, (M, N)).astype(np.float32)
    r, col = _positions()
    want = a + ((col - r) // 4) * 100.0 + ((col % 32 - r % 32) % 5)
    np.testing.assert_allclose(tilelang_tt.compile(k, out_idx=[1])(a), want, rtol=1e-6,
                               atol=1e-4)


def test_positions_through_cos_and_sin_and_a_masked_select(tmp_path):
    """Rotary-style ``T.cos(pos * freq[j])`` / ``T.sin`` of the row's position, ``pos * g[j]``
    exact for positions above 2^11, and an argmax
    idiom (TileLang's topk, into a float32 fragment): ``T.if_then_else(m[i] == a[i, j], j,
    -1.0)`` reduced by ``T.reduce_max``, mixing an index value with buffer values."""
    func = kernel_from_source(tmp_path, '''
import tilelang_tt.language as T

@T.prim_func
def k(A: T.Tensor((64, 64), "float32"), F: T.Tensor((64,), "float32"),
      G: T.Tensor((64,), "float32"), C: T.Tensor((64, 64), "float32"),
      D: T.Tensor((64, 64), "float32"), E: T.Tensor((64, 64), "float32"),
      I: T.Tensor((64,), "float32")):
    with T.Kernel(2, 2) as (bx, by):
        f = T.alloc_fragment((32,), "float32")
        c = T.alloc_fragment((32, 32), "float32")
        d = T.alloc_fragment((32, 32), "float32")
        g = T.alloc_fragment((32,), "float32")
        e = T.alloc_fragment((32, 32), "float32")
        T.copy(F[bx * 32], f)
        T.copy(G[bx * 32], g)
        for i, j in T.Parallel(32, 32):
            c[i, j] = T.cos(T.Cast("float32", by * 32 + i) * f[j])
        for i, j in T.Parallel(32, 32):
            d[i, j] = T.sin(T.Cast("float32", by * 32 + i) * f[j])
        for i, j in T.Parallel(32, 32):
            e[i, j] = T.Cast("float32", by * 32 + i + 5000) * g[j]
        T.copy(c, C[by * 32, bx * 32])
        T.copy(d, D[by * 32, bx * 32])
        T.copy(e, E[by * 32, bx * 32])
    with T.Kernel(2) as bx:
        a = T.alloc_fragment((32, 64), "float32")
        m = T.alloc_fragment((32,), "float32")
        idx = T.alloc_fragment((32, 64), "float32")
        best = T.alloc_fragment((32,), "float32")
        T.copy(A[bx * 32, 0], a)
        T.reduce_max(a, m, dim=1)
        for i, j in T.Parallel(32, 64):
            idx[i, j] = T.if_then_else(m[i] == a[i, j], T.Cast("float32", j), -1.0)
        T.reduce_max(idx, best, dim=1)
        T.copy(best, I[bx * 32])
''')
    art = tilelang_tt.compile(func, out_idx=[3, 4, 5, 6])
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, (M, N)).astype(np.float32)
    freq = (1.0 / 10000 ** (np.arange(N) % 32 / 32)).astype(np.float32) * 0.05
    g = (2.0 ** -(np.arange(N) % 8)).astype(np.float32)
    c, d, e, best = (as_f32(x) for x in art(a, freq, g))
    r, _ = _positions()
    np.testing.assert_allclose(c, np.cos(r * freq[None, :]), rtol=0, atol=2e-3)
    np.testing.assert_allclose(d, np.sin(r * freq[None, :]), rtol=0, atol=2e-3)
    # positions above 2^11 times a vector: exact (the value block is never a matrix-engine
    # broadcast's block side, whose SrcA would keep TF32)
    np.testing.assert_array_equal(e, (r + 5000) * g[None, :])
    np.testing.assert_array_equal(best, a.argmax(axis=1).astype(np.float32))


def test_index_values_refused_by_name(tmp_path):
    """Arithmetic on an integer buffer's index values (the device holds them as float32, which
    only selects, reduces by max / min and copies them exactly: testing/test_topk.py), an index
    value that divides a value that may be negative, and one built from a node the reader does
    not compute are refused, naming the statement."""
    src = '''
import tilelang_tt.language as T

@T.prim_func
def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "{dtype}")):
    with T.Kernel(2, 2) as (bx, by):
        s = T.alloc_fragment((32, 32), "{dtype}")
        for i, j in T.Parallel(32, 32):
            s[i, j] = {value}
        T.copy(s, B[by * 32, bx * 32])
'''
    cases = [
        ("int32", "T.if_then_else(A[by * 32 + i, bx * 32 + j] > 0, j, -1) * 2",
         r"`s\[i, j\] = .*`: s \(int32\) holds index values, which the device keeps in float32 "
         r"tiles .* is not an integer constant, an index value or a choice between them"),
        ("float32", "A[by * 32 + i, bx * 32 + j] + T.Cast('float32', T.shift_right(j, 1))",
         r"`s\[\.\.\.\] = \.\.\.`: the index value .* is computed from indices, but .* is not "
         r"integer arithmetic"),
    ]
    for dtype, value, error in cases:
        func = kernel_from_source(tmp_path, src.format(dtype=dtype, value=value))
        with pytest.raises(TTUnsupportedError, match=error):
            tilelang_tt.compile(func, out_idx=-1)
