"""T.reshape / T.view on Tensix (tilelang_tt/passes/frontend/views.py, A0.00 ResolveViewsTT).

A tensor argument seen in another shape is laid out by the host in that shape (numpy's reshape
is free); a block buffer reshaped by merging or splitting leading dims keeps every 32x32 tile
and is re-indexed.  Reshapes that move elements across tiles and dtype-changing views are
refused with the op, the shapes and the line.  Every kernel that compiles runs on the emulator
and is compared with numpy."""

import numpy as np
import pytest

import tilelang_tt as tilelang
import tilelang_tt.language as T
from helpers import as_f32
from tilelang_tt.errors import TTAssertionError, TTUnsupportedError


def reshape_test(N, M, dtype):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N // M, M), dtype)):
        with T.Kernel(1) as _:
            A_reshaped = T.reshape(A, [N // M, M])
            T.copy(A_reshaped, B)

    return main


@pytest.mark.parametrize("N, M, dtype", [(1024, 32, "float32"), (2048, 64, "float16")])
def test_reshape_tensor_argument(N, M, dtype):
    """TileLang's test_reshape_smem: A (N,) read as (N // M, M); the host lays A out so."""
    kernel = tilelang.compile(reshape_test(N, M, dtype), out_idx=-1)
    a = np.random.default_rng(0).uniform(-1, 1, N).astype(dtype)
    b = kernel(a)
    assert b.shape == (N // M, M)
    np.testing.assert_array_equal(as_f32(b), a.reshape(N // M, M).astype(np.float32))
    kernel.get_profiler().assert_allclose(lambda A: A.reshape(N // M, M), atol=1e-2, rtol=1e-2)
