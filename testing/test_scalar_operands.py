"""Tensor elements as scalar operands of ``T.Parallel`` expressions: TileLang's attention-sink
kernels read one value per head, ``sinks[i] = Sinks[by]``, and kernels scaled per tensor or per
block read ``x[i, j] * Scale[bx]`` / ``scale[0]``.  The element is staged into a ``[1]`` float32
fragment before the nest (A0.1.4.2), the reader puts its word at element (0, 0) of that
fragment's tile (the tensor crosses as float32 words, untiled) and the expression broadcasts it
(``unary_bcast<SCALAR>``) - docs/SUPPORT.md "Tensor elements as scalar operands".  Every kernel
runs on the emulator against numpy."""

import ml_dtypes
import numpy as np
import pytest

import tilelang_tt as tilelang
import tilelang_tt.language as T
import tvm
from tilelang_tt import TTUnsupportedError
from tilelang_tt.passes.common import collect
from tvm import tirx

RNG = np.random.default_rng(11)
NP = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16}


def _f32(a):
    return np.asarray(a).astype(np.float32)


def _tol(dtype):
    return dict(rtol=2e-2, atol=2e-2) if dtype != "float32" else dict(rtol=1e-2, atol=1e-2)


def scale_rows_by_head(heads, M, N, block_M, dtype):
    """Each block scales its rows by its head's factor and adds 1 (``Scale[by]``)."""

    @T.prim_func
    def main(X: T.Tensor((heads * M, N), dtype), Scale: T.Tensor((heads,), dtype),
             Y: T.Tensor((heads * M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), heads, threads=128) as (bx, by):
            X_shared = T.alloc_shared((block_M, N), dtype)
            Y_local = T.alloc_fragment((block_M, N), "float32")
            T.copy(X[by * M + bx * block_M, 0], X_shared)
            for i, j in T.Parallel(block_M, N):
                Y_local[i, j] = X_shared[i, j] * Scale[by] + 1.0
            T.copy(Y_local, Y[by * M + bx * block_M, 0])

    return main


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_element_at_a_block_index(dtype):
    heads, M, N = 3, 64, 64
    x = RNG.standard_normal((heads * M, N)).astype(NP[dtype])
    scale = RNG.uniform(-2, 2, heads).astype(NP[dtype])
    y = tilelang.compile(scale_rows_by_head(heads, M, N, 32, dtype), out_idx=-1)(x, scale)
    want = _f32(x).reshape(heads, M, N) * _f32(scale)[:, None, None] + 1.0
    np.testing.assert_allclose(_f32(y).reshape(heads, M, N), want, **_tol(dtype))


def dequant_per_tensor(M, N, block, dtype):
    """One scale for the whole tensor (``scale[0]``), a constant index."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), scale: T.Tensor((1,), "float32"),
             B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            A_local = T.alloc_fragment((block, block), dtype)
            T.copy(A[by * block, bx * block], A_local)
            for i, j in T.Parallel(block, block):
                B[by * block + i, bx * block + j] = A_local[i, j] / scale[0]

    return main


# the scale is float32 whatever the block's dtype: one dtype (float32 and bfloat16 scalar
# tensors are each read in test_element_at_a_block_index)
@pytest.mark.parametrize("dtype", ["bfloat16"])
def test_element_at_a_constant_index(dtype):
    M, N = 64, 96
    a = RNG.standard_normal((M, N)).astype(NP[dtype])
    scale = np.array([0.37], dtype=np.float32)
    b = tilelang.compile(dequant_per_tensor(M, N, 32, dtype), out_idx=-1)(a, scale)
    np.testing.assert_allclose(_f32(b), _f32(a) / 0.37, **_tol(dtype))


def two_scalar_tensors(M, N, block, dtype):
    """Two scalar tensors in one expression, at different block indices."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), RowScale: T.Tensor((M // block,), "float32"),
             ColBias: T.Tensor((N // block,), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(N // block, M // block, threads=128) as (bx, by):
            A_shared = T.alloc_shared((block, block), dtype)
            B_local = T.alloc_fragment((block, block), dtype)
            T.copy(A[by * block, bx * block], A_shared)
            for i, j in T.Parallel(block, block):
                B_local[i, j] = T.exp(A_shared[i, j] * RowScale[by] - ColBias[bx]) \
                    + RowScale[by]
            T.copy(B_local, B[by * block, bx * block])

    return main


# bfloat16: a float32 (RowScale) and a bfloat16 (ColBias) scalar tensor in one expression
@pytest.mark.parametrize("dtype", ["bfloat16"])
def test_two_scalar_tensors_in_one_expression(dtype):
    M, N, block = 64, 96, 32
    a = RNG.uniform(-1, 1, (M, N)).astype(NP[dtype])
    rs = RNG.uniform(0.5, 1.5, M // block).astype(np.float32)
    cb = RNG.uniform(-1, 1, N // block).astype(NP[dtype])
    b = tilelang.compile(two_scalar_tensors(M, N, block, dtype), out_idx=-1)(a, rs, cb)
    r = np.repeat(rs, block)[:, None]
    c = np.repeat(_f32(cb), block)[None, :]
    np.testing.assert_allclose(_f32(b), np.exp(_f32(a) * r - c) + r, **_tol(dtype))


def softmax_with_sink(heads, M, N, dtype):
    """Row softmax of each head's scores with one extra logit per head (the attention sink,
    ``sinks[i] = Sinks[by]``) in the normaliser."""

    @T.prim_func
    def main(S: T.Tensor((heads * M, N), dtype), Sinks: T.Tensor((heads,), dtype),
             P: T.Tensor((heads * M, N), dtype)):
        with T.Kernel(heads, threads=128) as by:
            s = T.alloc_fragment((M, N), "float32")
            sinks = T.alloc_fragment((M,), "float32")
            m = T.alloc_fragment((M,), "float32")
            total = T.alloc_fragment((M,), "float32")
            T.copy(S[by * M, 0], s)
            for i in T.Parallel(M):
                sinks[i] = Sinks[by]
            T.reduce_max(s, m, dim=1)
            for i in T.Parallel(M):
                m[i] = T.max(m[i], sinks[i])
            for i, j in T.Parallel(M, N):
                s[i, j] = T.exp(s[i, j] - m[i])
            T.reduce_sum(s, total, dim=1)
            for i in T.Parallel(M):
                total[i] += T.exp(sinks[i] - m[i])
            for i, j in T.Parallel(M, N):
                s[i, j] = s[i, j] / total[i]
            T.copy(s, P[by * M, 0])

    return main


def test_softmax_with_an_attention_sink():
    heads, M, N = 2, 32, 64
    s = RNG.standard_normal((heads * M, N)).astype(np.float32)
    sinks = np.array([3.0, -1.0], dtype=np.float32)  # one above the row maxima, one below
    p = tilelang.compile(softmax_with_sink(heads, M, N, "float32"), out_idx=-1)(s, sinks)
    x = s.reshape(heads, M, N)
    sk = sinks[:, None, None]
    m = np.maximum(x.max(-1, keepdims=True), sk)
    e = np.exp(x - m)
    want = e / (e.sum(-1, keepdims=True) + np.exp(sk - m))
    np.testing.assert_allclose(p.reshape(heads, M, N), want, rtol=1e-2, atol=1e-3)


def weighted_sum_of_blocks(K, M, N):
    """An element indexed by a serial loop's variable: acc += X_k * W[k]."""

    @T.prim_func
    def main(X: T.Tensor((K * M, N), "float32"), W: T.Tensor((K,), "float32"),
             Y: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128):
            X_shared = T.alloc_shared((M, N), "float32")
            acc = T.alloc_fragment((M, N), "float32")
            T.clear(acc)
            for k in T.serial(K):
                T.copy(X[k * M, 0], X_shared)
                for i, j in T.Parallel(M, N):
                    acc[i, j] += X_shared[i, j] * W[k]
            T.copy(acc, Y)

    return main


def test_element_at_a_serial_loop_index():
    K, M, N = 3, 32, 64
    x = RNG.standard_normal((K * M, N)).astype(np.float32)
    w = np.array([0.5, -2.0, 1.25], dtype=np.float32)
    y = tilelang.compile(weighted_sum_of_blocks(K, M, N), out_idx=-1)(x, w)
    want = (x.reshape(K, M, N) * w[:, None, None]).sum(0)
    np.testing.assert_allclose(y, want, rtol=1e-2, atol=1e-2)


def bound_element(heads, N):
    """``sink = Sinks[bx]`` bound outside the nest (the attention-sink backward's dsink)."""

    @T.prim_func
    def main(Sinks: T.Tensor((heads,), "float32"), X: T.Tensor((heads * N,), "float32"),
             Y: T.Tensor((heads * N,), "float32")):
        with T.Kernel(heads, threads=128) as bx:
            x = T.alloc_fragment((N,), "float32")
            y = T.alloc_fragment((N,), "float32")
            sink = Sinks[bx]
            T.copy(X[bx * N:(bx + 1) * N], x)
            for i in T.Parallel(N):
                y[i] = -T.exp2(sink * 1.44269504 - x[i])
            T.copy(y, Y[bx * N:(bx + 1) * N])

    return main


def test_element_bound_outside_the_nest():
    heads, N = 3, 64
    sinks = RNG.standard_normal(heads).astype(np.float32)
    x = RNG.standard_normal(heads * N).astype(np.float32)
    y = tilelang.compile(bound_element(heads, N), out_idx=-1)(sinks, x)
    want = -np.exp2(sinks[:, None] * 1.44269504 - x.reshape(heads, N))
    np.testing.assert_allclose(y.reshape(heads, N), want, rtol=1e-2, atol=1e-2)


def test_the_reader_places_the_element():
    # A0.1.4.2 stages the element, C1 reads it by its page and word: nothing is tiled
    func = scale_rows_by_head(3, 64, 64, 32, "float32")
    (f,) = tilelang.lower(func, stop_after="A0.1.4.2").functions.values()
    nests = collect(f.body, tirx.For, lambda x: x.kind == tirx.ForKind.PARALLEL)
    read = {str(ld.source.name) for n in nests for ld in collect(n, tvm.ir.TensorLoad)}
    assert "Scale" not in read and any(r.startswith("Scale_elem") for r in read)
    (f,) = tilelang.lower(func, stop_after="C1").functions.values()
    assert "tt.element_to_cb" in str(f)


def test_refuses_a_tensor_also_copied_as_blocks():
    @T.prim_func
    def main(X: T.Tensor((64, 64), "float32"), S: T.Tensor((64,), "float32"),
             Y: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, threads=128) as by:
            s = T.alloc_fragment((32,), "float32")
            x = T.alloc_fragment((32, 64), "float32")
            T.copy(S[by * 32:(by + 1) * 32], s)
            T.copy(X[by * 32, 0], x)
            for i, j in T.Parallel(32, 64):
                Y[by * 32 + i, j] = x[i, j] * s[i] + S[by]

    with pytest.raises(TTUnsupportedError) as err:
        tilelang.lower(main)
    msg = str(err.value)
    assert "tensor S is read as one element" in msg and "test_scalar_operands.py" in msg
