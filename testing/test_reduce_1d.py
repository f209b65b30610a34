"""1-D block buffers reduced to one value (TileLang's `T.reduce_max(x_frag, out_frag, dim=0)`
of an `[N]` fragment into a `(1,)` one, test_tilelang_language_reduce_maxmin_nan.py and
issue 1690): a 1-D buffer is a row vector, so its full reduction is the row reduction of the
`[1, N]` view (REDUCE_ROW), the value at element (0, 0) of the destination's one tile; the
padding of an N that is not a multiple of 32 is masked to the op's identity (A0.5.1).  The
result is copied to a `(1,)` tensor or read as `s[0]` in a following `T.Parallel` (a scalar
broadcast, `unary_bcast<SCALAR>`).  Every kernel runs on the emulator against numpy."""

import inspect

import ml_dtypes
import numpy as np
import pytest

import tilelang_tt as tilelang
import tilelang_tt.language as T
from tilelang_tt.errors import TTLayoutError

RNG = np.random.default_rng(7)
TOL = dict(rtol=1e-2, atol=1e-2)
REDUCE = {"sum": T.reduce_sum, "max": T.reduce_max, "min": T.reduce_min,
          "abssum": T.reduce_abssum, "absmax": T.reduce_absmax}
NUMPY = {"sum": np.sum, "max": np.max, "min": np.min,
         "abssum": lambda a: np.abs(a).sum(), "absmax": lambda a: np.abs(a).max()}


def _negative(n):
    # negative values: a zero padding would be a wrong max (and a wrong min's sign)
    return (-np.abs(RNG.standard_normal(n)) - 0.25).astype("float32")


def reduce_vector(length, op, dtype="float32", dim=0):
    """reduce_maxmin_nan's kernel: a (length,) fragment reduced into a (1,) one."""
    reduce_fn = REDUCE[op]

    @T.prim_func
    def kernel(a: T.Tensor((length,), dtype), out: T.Tensor((1,), dtype)):
        with T.Kernel(1, threads=32):
            frag = T.alloc_fragment((length,), dtype)
            out_frag = T.alloc_fragment((1,), dtype)
            T.copy(a, frag)
            reduce_fn(frag, out_frag, dim=dim)
            T.copy(out_frag, out)

    return kernel


def softmax_1d(length, dtype="float32"):
    """Softmax of one vector: its max and its sum broadcast in 1-D T.Parallel loops."""

    @T.prim_func
    def kernel(a: T.Tensor((length,), dtype), out: T.Tensor((length,), dtype)):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((length,), dtype)
            e = T.alloc_fragment((length,), dtype)
            m = T.alloc_fragment((1,), dtype)
            s = T.alloc_fragment((1,), dtype)
            T.copy(a, x)
            T.reduce_max(x, m, dim=0)
            for i in T.Parallel(length):
                e[i] = T.exp(x[i] - m[0])
            T.reduce_sum(e, s, dim=0)
            for i in T.Parallel(length):
                out[i] = e[i] / s[0]

    return kernel


def scale_by_total(rows, length, dtype="float32"):
    """A 2-D block divided by the sum of a 1-D one (`s[0]` broadcast over both loops)."""

    @T.prim_func
    def kernel(w: T.Tensor((length,), dtype), x: T.Tensor((rows, length), dtype),
               out: T.Tensor((rows, length), dtype)):
        with T.Kernel(1, threads=128):
            w_frag = T.alloc_fragment((length,), dtype)
            x_frag = T.alloc_fragment((rows, length), dtype)
            total = T.alloc_fragment((1,), dtype)
            T.copy(w, w_frag)
            T.copy(x, x_frag)
            T.reduce_sum(w_frag, total, dim=0)
            for i, j in T.Parallel(rows, length):
                out[i, j] = x_frag[i, j] / total[0] + 1.0

    return kernel


# every op twice; the padded lengths (16, 100) with each op (each masks its padding to its own
# identity, or keeps the zeros); whole tiles: 64 (the max kernel test_nan_follows_the_matrix_
# engine_order runs too; 256 in test_softmax_of_a_vector) and 1024
@pytest.mark.parametrize("op, length", [("max", 16), ("min", 100), ("sum", 100), ("max", 64),
                                        ("sum", 1024), ("min", 1024)])
def test_reduce_vector(op, length):
    a = _negative(length)
    out = tilelang.compile(reduce_vector(length, op), out_idx=-1)(a)
    assert out.shape == (1,)
    np.testing.assert_allclose(out[0], NUMPY[op](a), **TOL)


@pytest.mark.parametrize("op", ["abssum", "absmax"])
def test_reduce_vector_abs(op):
    a = RNG.standard_normal(100).astype("float32")
    out = tilelang.compile(reduce_vector(100, op), out_idx=-1)(a)
    np.testing.assert_allclose(out[0], NUMPY[op](a), **TOL)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_reduce_vector_default_dim_16bit(dtype):
    # reduce_maxmin_nan's form: 64 values, no dim (-1, the one dim), 16-bit dtypes
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
    a = _negative(64).astype(np_dtype)
    out = tilelang.compile(reduce_vector(64, "max", dtype, dim=-1), out_idx=-1)(a)
    assert out[0] == a.max()  # the max of 16-bit values is exact


@pytest.mark.parametrize("length", [100, 256])
def test_softmax_of_a_vector(length):
    a = RNG.standard_normal(length).astype("float32")
    out = tilelang.compile(softmax_1d(length), out_idx=-1)(a)
    e = np.exp(a - a.max())
    np.testing.assert_allclose(out, e / e.sum(), **TOL)


@pytest.mark.parametrize("length", [64, 100])
def test_total_broadcast_over_a_block(length):
    w = RNG.uniform(0.5, 1.5, length).astype("float32")
    x = RNG.standard_normal((32, length)).astype("float32")
    out = tilelang.compile(scale_by_total(32, length), out_idx=-1)(w, x)
    np.testing.assert_allclose(out, x / w.sum() + 1.0, **TOL)


def test_padding_masked_only_where_not_already_the_identity():
    def masks(func):
        (f,) = tilelang.lower(func, stop_after="A0.5.1").functions.values()
        return str(f).count("tt_index_mask")

    assert masks(reduce_vector(100, "max")) == 1  # -inf in the 28 padded elements
    assert masks(reduce_vector(100, "sum")) == 0  # the tensor's zero padding
    assert masks(reduce_vector(256, "max")) == 0  # whole tiles: nothing padded


def test_nan_follows_the_matrix_engine_order():
    # TileLang's default (nan_propagate=False) ignores NaN on CUDA.  GMPOOL orders values by
    # their bits (docs/MOCK.md "Numerics"): a positive NaN is above +inf, so reduce_max gives
    # NaN (infinity after a 16-bit pack), and reduce_min (-max(-x)) ignores it
    a = np.arange(64, dtype="float32")
    a[7] = np.float32("nan")  # 0x7FC00000, as torch's float("nan")
    assert np.isnan(tilelang.compile(reduce_vector(64, "max"), out_idx=-1)(a)[0])
    assert tilelang.compile(reduce_vector(64, "min"), out_idx=-1)(a)[0] == 0.0
    b = a.astype(ml_dtypes.bfloat16)
    assert np.isinf(np.float32(tilelang.compile(reduce_vector(64, "max", "bfloat16"),
                                                out_idx=-1)(b)[0]))


def reduce_into_seeded(length, dtype="float32"):
    """reduce_maxmin_nan's clear=False kernel, the seed written by T.fill."""

    @T.prim_func
    def kernel(a: T.Tensor((length,), dtype), out: T.Tensor((1,), dtype)):
        with T.Kernel(1, threads=32):
            frag = T.alloc_fragment((length,), dtype)
            out_frag = T.alloc_fragment((1,), dtype)
            T.copy(a, frag)
            T.fill(out_frag, -1.0)
            T.reduce_max(frag, out_frag, clear=False)
            T.copy(out_frag, out)

    return kernel


def test_reduce_vector_clear_false():
    kernel = tilelang.compile(reduce_into_seeded(100), out_idx=-1)
    for shift in (-2.0, 2.0):  # the seed wins, the values win
        a = (-np.abs(RNG.standard_normal(100)) + shift).astype("float32")
        np.testing.assert_allclose(kernel(a)[0], max(-1.0, a.max()), **TOL)


def total_of_row_maxima(rows, cols):
    """A row reduction's column vector reduced to one value (REDUCE_COL of its tiles)."""

    @T.prim_func
    def kernel(x: T.Tensor((rows, cols), "float32"), out: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=128):
            x_frag = T.alloc_fragment((rows, cols), "float32")
            r = T.alloc_fragment((rows,), "float32")
            t = T.alloc_fragment((1,), "float32")
            T.copy(x, x_frag)
            T.reduce_max(x_frag, r, dim=1)
            T.reduce_sum(r, t, dim=0)
            T.copy(t, out)

    return kernel


@pytest.mark.parametrize("rows", [64, 48])
def test_column_vector_reduced_to_one_value(rows):
    x = RNG.standard_normal((rows, 64)).astype("float32")
    out = tilelang.compile(total_of_row_maxima(rows, 64), out_idx=-1)(x)
    np.testing.assert_allclose(out[0], x.max(1).sum(), **TOL)


def reduce_local_to_var(op, length=8, dtype="float16", var=True):
    """TileLang's reduce test with per-thread storage: a `T.alloc_local` vector filled by a
    `T.serial` element loop, reduced into a `T.alloc_var` variable (or a `(1,)` local buffer)
    and stored to a tensor element (`B[0] = dst`)."""
    reduce_fn = REDUCE[op]

    @T.prim_func
    def main(A: T.Tensor((length,), dtype), B: T.Tensor((1,), dtype)):
        with T.Kernel(1, threads=1):
            src = T.alloc_local((length,), dtype)
            if var:
                dst = T.alloc_var(dtype)
            else:
                dst = T.alloc_local((1,), dtype)
            for i in T.serial(length):
                src[i] = A[i]
            reduce_fn(src, dst, dim=0)
            if var:
                B[0] = dst
            else:
                B[0] = dst[0]

    return main


@pytest.mark.parametrize("op, var", [("sum", True), ("max", False), ("min", True)])
def test_reduce_local_to_var(op, var):
    a = RNG.standard_normal(8).astype(np.float16)
    out = tilelang.compile(reduce_local_to_var(op, var=var), out_idx=-1)(a)
    assert out.shape == (1,)
    np.testing.assert_allclose(np.float32(out[0]), NUMPY[op](a.astype(np.float32)),
                               rtol=1e-2, atol=1e-2)


def center_by_var(length, dtype="float32"):
    """A variable holding a vector's maximum, read in a `T.Parallel` loop as `m`."""

    @T.prim_func
    def main(A: T.Tensor((length,), dtype), B: T.Tensor((length,), dtype)):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((length,), dtype)
            m = T.alloc_var(dtype)
            T.copy(A, x)
            T.reduce_max(x, m)
            for i in T.Parallel(length):
                B[i] = x[i] - m

    return main


@pytest.mark.parametrize("length", [64, 100])
def test_variable_reduction_read_in_parallel(length):
    a = RNG.standard_normal(length).astype("float32")
    out = tilelang.compile(center_by_var(length), out_idx=-1)(a)
    np.testing.assert_allclose(out, a - a.max(), **TOL)


def seeded_by_element_store(length, var):
    """The seed of a `clear=False` reduction stored as an element (`s[0] = 1.0`) or given as
    a variable's initial value (`T.alloc_var(dtype, 1.0)`): `T.fill` of the one-element
    block."""

    @T.prim_func
    def main(A: T.Tensor((length,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((length,), "float32")
            if var:
                s = T.alloc_var(T.float32, 1.0)
            else:
                s = T.alloc_fragment((1,), "float32")
                s[0] = 1.0
            T.copy(A, x)
            T.reduce_sum(x, s, clear=False)
            if var:
                B[0] = s
            else:
                B[0] = s[0]

    return main


@pytest.mark.parametrize("var", [True, False])
def test_reduction_seeded_by_element_store(var):
    a = RNG.standard_normal(100).astype("float32")
    out = tilelang.compile(seeded_by_element_store(100, var), out_idx=-1)(a)
    np.testing.assert_allclose(out[0], a.sum() + 1.0, **TOL)


# ---- refusals ----------------------------------------------------------------------------------
def reduce_into(length, out_len, dim=0):
    @T.prim_func
    def kernel(a: T.Tensor((length,), "float32"), out: T.Tensor((out_len,), "float32")):
        with T.Kernel(1, threads=32):
            frag = T.alloc_fragment((length,), "float32")
            out_frag = T.alloc_fragment((out_len,), "float32")
            T.copy(a, frag)
            T.reduce_sum(frag, out_frag, dim=dim)
            T.copy(out_frag, out)

    return kernel


def _line_of(func, text):
    src, first = inspect.getsourcelines(func)
    return first + next(i for i, line in enumerate(src) if text in line)


@pytest.mark.parametrize("length,out_len,dim,words", [
    (64, 2, 0, "must have shape [1]"),
    (64, 32, 0, "must have shape [1]"),
    (64, 1, 1, "dim=1 is not a dim"),
])
def test_refused(length, out_len, dim, words):
    with pytest.raises(TTLayoutError) as err:
        tilelang.compile(reduce_into(length, out_len, dim), out_idx=-1)
    msg = str(err.value)
    assert words in msg and "frag" in msg and "out_frag" in msg and "T.reduce_sum" in msg
    assert f":{_line_of(reduce_into, 'T.reduce_sum(frag')}" in msg
