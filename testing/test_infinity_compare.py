"""Comparisons of elements with -inf / +inf (flash attention's check_inf, `scores_max[i] ==
-T.infinity(dtype)`): the SFPU compares `x - c` with zero, which is NaN for `x = c = -inf`, so
the compiler compares through the largest float32 instead. Every comparison against numpy."""

import numpy as np
import pytest

import tilelang_tt as tilelang
import tilelang_tt.language as T

OPS = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
       ">": np.greater, ">=": np.greater_equal}


@tilelang.jit(out_idx=[1])
def compare(op, sign, swap=False, M=32, N=32):
    inf = T.infinity(T.float32) if sign > 0 else -T.infinity(T.float32)

    def cond(x):
        a, b = (inf, x) if swap else (x, inf)
        return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]

    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            a_s = T.alloc_shared((M, N), T.float32)
            b_l = T.alloc_fragment((M, N), T.float32)
            T.copy(A[0, 0], a_s)
            for i, j in T.Parallel(M, N):
                b_l[i, j] = T.if_then_else(cond(a_s[i, j]), 1.0, 0.0)
            T.copy(b_l, B[0, 0])

    return main


VALUES = np.array([-np.inf, -np.finfo(np.float32).max, -1.0, 0.0, 1.0,
                   np.finfo(np.float32).max, np.inf], dtype=np.float32)


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("sign", [-1, 1])
@pytest.mark.parametrize("swap", [False, True])
def test_compare_with_infinity(op, sign, swap):
    a = np.resize(VALUES, (32, 32)).astype(np.float32)
    got = compare(op, sign, swap)(a)
    c = np.float32(np.inf * sign)
    ref = OPS[op](c, a) if swap else OPS[op](a, c)
    np.testing.assert_array_equal(got, ref.astype(np.float32))
