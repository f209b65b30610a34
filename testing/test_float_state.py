"""Float scalars carried across loop iterations in kernels with tile work (A0.1
ScalarsToBindTT with ``frontend/float_state.py``, docs/SUPPORT.md "Float scalars carried
across loops"): a float ``T.alloc_var`` assigned in loops, fed by tensor elements and by
``T.exp2`` / ``T.log2`` of itself, is a one-element block buffer on the compute kernel.  Each
kernel runs on the emulator against numpy."""

import numpy as np
import pytest

import tilelang_tt as tilelang
import tilelang_tt.language as T
from tilelang_tt import TTUnsupportedError


def lse_combine(batch, heads, num_split, dim, dtype=T.float16, accum_dtype=T.float32):
    """Split-K style combine of partial outputs weighted by their log-sum-exp (base 2), in the
    words of TileLang's split-KV decoding combines."""

    @T.prim_func
    def main(glse: T.Tensor([batch, heads, num_split], accum_dtype),
             Output_partial: T.Tensor([batch, heads, num_split, dim], dtype),
             Output: T.Tensor([batch, heads, dim], dtype)):
        with T.Kernel(heads, batch, threads=128) as (hid, bz):
            po_local = T.alloc_fragment([dim], dtype)
            o_accum_local = T.alloc_fragment([dim], accum_dtype)
            lse_local_split = T.alloc_var(accum_dtype)
            lse_logsum_local = T.alloc_var(accum_dtype)
            lse_max_local = T.alloc_var(accum_dtype)
            scale_local = T.alloc_var(accum_dtype)

            T.clear(lse_logsum_local)
            T.clear(o_accum_local)
            lse_max_local = -T.infinity(accum_dtype)
            for k in T.serial(num_split):
                lse_max_local = T.max(lse_max_local, glse[bz, hid, k])
            for k in T.Pipelined(num_split, num_stages=1):
                lse_local_split = glse[bz, hid, k]
                lse_logsum_local += T.exp2(lse_local_split - lse_max_local)
            lse_logsum_local = T.log2(lse_logsum_local) + lse_max_local
            for k in T.serial(num_split):
                for i in T.Parallel(dim):
                    po_local[i] = Output_partial[bz, hid, k, i]
                lse_local_split = glse[bz, hid, k]
                scale_local = T.exp2(lse_local_split - lse_logsum_local)
                for i in T.Parallel(dim):
                    o_accum_local[i] += po_local[i] * scale_local
            for i in T.Parallel(dim):
                Output[bz, hid, i] = o_accum_local[i]

    return main


def scaled_sum(dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((64, 64), dtype), G: T.Tensor((4,), T.float32),
             B: T.Tensor((64, 64), dtype)):
        with T.Kernel(2, threads=128) as bx:
            A_s = T.alloc_shared((32, 64), dtype)
            B_l = T.alloc_fragment((32, 64), dtype)
            w = T.alloc_var(T.float32)
            w = 1.0
            T.clear(B_l)
            for k in T.serial(4):
                if k % 2 == 0:
                    w = w * G[k]
                T.copy(A[bx * 32, 0], A_s)
                for i, j in T.Parallel(32, 64):
                    B_l[i, j] += A_s[i, j] * w
            T.copy(B_l, B[bx * 32, 0])

    return main


def test_float_state_lse_combine():
    batch, heads, num_split, dim = 2, 2, 3, 64
    kernel = tilelang.compile(lse_combine(batch, heads, num_split, dim), out_idx=[2])
    rng = np.random.default_rng(0)
    glse = (rng.standard_normal((batch, heads, num_split)) * 4).astype(np.float32)
    part = rng.standard_normal((batch, heads, num_split, dim)).astype(np.float16)
    out = kernel(glse, part)
    g = glse.astype(np.float64)
    m = g.max(-1, keepdims=True)
    lse = np.log2(np.exp2(g - m).sum(-1, keepdims=True)) + m
    ref = (part.astype(np.float64) * np.exp2(g - lse)[..., None]).sum(2)
    np.testing.assert_allclose(out.astype(np.float64), ref, atol=2e-3, rtol=2e-3)

    # a float scale multiplied by a tensor element in a branch of the loop: w = 2, 2, 6, 6
    kernel = tilelang.compile(scaled_sum(), out_idx=[2])
    a = rng.standard_normal((64, 64)).astype(np.float32)
    g = np.array([2.0, 5.0, 3.0, 7.0], np.float32)
    np.testing.assert_allclose(kernel(a, g), 16 * a, rtol=1e-5, atol=1e-5)


def test_float_state_refusals():
    # a float scalar carried across a loop and read outside a T.Parallel body (here the value
    # of a tile op) stays refused, naming it and the line
    @T.prim_func
    def fill_value(A: T.Tensor((64, 64), T.float32), B: T.Tensor((64, 64), T.float32)):
        with T.Kernel(2, threads=128) as bx:
            B_l = T.alloc_fragment((32, 64), T.float32)
            w = T.alloc_var(T.float32)
            w = 1.0
            for k in T.serial(2):
                w = w * A[bx, k]
            T.fill(B_l, w)
            T.copy(B_l, B[bx * 32, 0])

    with pytest.raises(TTUnsupportedError, match=r"T.fill\(B_l, w\)`: element read of w"):
        tilelang.compile(fill_value)

    # ... and so does one whose value is read where no block is (a tensor element store
    # outside T.Parallel), with the scalars feeding it
    @T.prim_func
    def element_store(A: T.Tensor((64, 64), T.float32), B: T.Tensor((64, 64), T.float32)):
        with T.Kernel(2, threads=128) as bx:
            A_s = T.alloc_shared((32, 64), T.float32)
            m = T.alloc_var(T.float32)
            w = T.alloc_var(T.float32)
            m = 0.0
            for k in T.serial(2):
                m = T.max(m, A[bx, k])
                w = m * 2.0
            T.copy(A[bx * 32, 0], A_s)
            T.copy(A_s, B[bx * 32, 0])
            B[bx, 0] = w

    with pytest.raises(TTUnsupportedError, match="scalar (w|m) is assigned inside a loop"):
        tilelang.compile(element_store)
