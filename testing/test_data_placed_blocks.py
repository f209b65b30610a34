"""Blocks placed by tensor elements (TileLang's ``block_causal_attention_varlen.py``): a
mask whose condition divides a difference of elements (``(cu[b + 1] - cu[b]) // 2``: the
compiler cannot prove it non-negative, so the reader divides signed, flooring as TIR does),
and an unguarded store at rows ``cu[b] + bx * 32`` (blocks of one ``b`` are checked against
each other; blocks of different ``b`` meet or not by the offsets' values, which the compiler
cannot see).  On the emulator against numpy."""

import numpy as np
import pytest

pytest.importorskip("tilelang_tt.runtime.mockbuild", reason="emulator driver not installed")

import tilelang_tt as tilelang
import tilelang_tt.language as T
from tilelang_tt.errors import TTCompileError


def placed(batch, total, blocks):
    @T.prim_func
    def main(X: T.Tensor((total, 32), "float32"), Cu: T.Tensor((batch + 1,), "int32"),
             L: T.Tensor((batch,), "int32"), Out: T.Tensor((total, 32), "float32")):
        with T.Kernel(blocks, batch) as (bx, b):
            X_s = T.alloc_shared((32, 32), "float32")
            start = Cu[b]
            half = (Cu[b + 1] - start) // 2
            T.copy(X[start + bx * 32:start + bx * 32 + 32, :], X_s)
            for i, j in T.Parallel(32, 32):
                X_s[i, j] = T.if_then_else(i < L[b] // 3 + 5 and j < half, X_s[i, j], -1.0)
            T.copy(X_s, Out[start + bx * 32:start + bx * 32 + 32, :])

    return main


def test_signed_division_and_data_placed_stores():
    batch, blocks = 3, 2
    cu = np.array([0, 64, 160, 224], np.int32)
    lens = np.array([-7, 9, -1], np.int32)  # floor(-7 / 3) = -3, floor(-1 / 3) = -1
    x = np.random.default_rng(4).standard_normal((224, 32)).astype(np.float32)
    out = np.zeros((224, 32), np.float32)
    tilelang.compile(placed(batch, 224, blocks))(x, cu, lens, out)
    want = np.zeros((224, 32))  # rows 128 .. 159 no block stores
    i, j = np.meshgrid(np.arange(32), np.arange(32), indexing="ij")
    for b in range(batch):
        keep = (i < lens[b] // 3 + 5) & (j < (cu[b + 1] - cu[b]) // 2)
        for bx in range(blocks):
            r = cu[b] + bx * 32
            want[r:r + 32] = np.where(keep, x[r:r + 32], -1.0)
    np.testing.assert_array_equal(out, want)
    # blocks of one b whose rows meet are still a race
    with pytest.raises(TTCompileError, match="blocks race on tensor Out"):
        tilelang.compile(_overlapping(batch, 224, blocks))


def _overlapping(batch, total, blocks):
    @T.prim_func
    def main(X: T.Tensor((total, 32), "float32"), Cu: T.Tensor((batch + 1,), "int32"),
             Out: T.Tensor((total, 32), "float32")):
        with T.Kernel(blocks, batch) as (bx, b):
            X_s = T.alloc_shared((32, 32), "float32")
            T.copy(X[Cu[b] + bx * 32:Cu[b] + bx * 32 + 32, :], X_s)
            T.copy(X_s, Out[Cu[b] + bx * 16:Cu[b] + bx * 16 + 32, :])

    return main
