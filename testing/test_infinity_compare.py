"""Comparisons of elements with -inf / +inf (flash attention's check_inf, `scores_max[i] ==
-T.infinity(dtype)`): the SFPU compares `x - c` with zero, which is NaN for `x = c = -inf`, so
the compiler compares through the largest float32 instead. Every comparison against numpy."""

import numpy as np
import pytest

import tilelang_tt as tilelang
import tilelang_tt.language as T

OPS = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
       ">": np.greater, ">=": np.greater_equal}


@tilelang.jit(out_idx=[1, 2, 3, 4, 5, 6])
def compare(sign, swap=False, M=32, N=32):
    """Every comparison of OPS, in its order, into one output each (one kernel per sign and
    side)."""
    inf = T.infinity(T.float32) if sign > 0 else -T.infinity(T.float32)

    def cond(op, x):
        a, b = (inf, x) if swap else (x, inf)
        return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]

    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), EQ: T.Tensor((M, N), T.float32),
             NE: T.Tensor((M, N), T.float32), LT: T.Tensor((M, N), T.float32),
             LE: T.Tensor((M, N), T.float32), GT: T.Tensor((M, N), T.float32),
             GE: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            a_s = T.alloc_shared((M, N), T.float32)
            eq_l = T.alloc_fragment((M, N), T.float32)
            ne_l = T.alloc_fragment((M, N), T.float32)
            lt_l = T.alloc_fragment((M, N), T.float32)
            le_l = T.alloc_fragment((M, N), T.float32)
            gt_l = T.alloc_fragment((M, N), T.float32)
            ge_l = T.alloc_fragment((M, N), T.float32)
            T.copy(A[0, 0], a_s)
            for i, j in T.Parallel(M, N):
                eq_l[i, j] = T.if_then_else(cond("==", a_s[i, j]), 1.0, 0.0)
            for i, j in T.Parallel(M, N):
                ne_l[i, j] = T.if_then_else(cond("!=", a_s[i, j]), 1.0, 0.0)
            for i, j in T.Parallel(M, N):
                lt_l[i, j] = T.if_then_else(cond("<", a_s[i, j]), 1.0, 0.0)
            for i, j in T.Parallel(M, N):
                le_l[i, j] = T.if_then_else(cond("<=", a_s[i, j]), 1.0, 0.0)
            for i, j in T.Parallel(M, N):
                gt_l[i, j] = T.if_then_else(cond(">", a_s[i, j]), 1.0, 0.0)
            for i, j in T.Parallel(M, N):
                ge_l[i, j] = T.if_then_else(cond(">=", a_s[i, j]), 1.0, 0.0)
            T.copy(eq_l, EQ[0, 0])
            T.copy(ne_l, NE[0, 0])
            T.copy(lt_l, LT[0, 0])
            T.copy(le_l, LE[0, 0])
            T.copy(gt_l, GT[0, 0])
            T.copy(ge_l, GE[0, 0])

    return main


VALUES = np.array([-np.inf, -np.finfo(np.float32).max, -1.0, 0.0, 1.0,
                   np.finfo(np.float32).max, np.inf], dtype=np.float32)


@pytest.mark.parametrize("sign", [-1, 1])
@pytest.mark.parametrize("swap", [False, True])
def test_compare_with_infinity(sign, swap):
    a = np.resize(VALUES, (32, 32)).astype(np.float32)
    outs = compare(sign, swap)(a)
    assert len(outs) == len(OPS)
    c = np.float32(np.inf * sign)
    for (op, fn), got in zip(OPS.items(), outs):
        ref = fn(c, a) if swap else fn(a, c)
        np.testing.assert_array_equal(got, ref.astype(np.float32), err_msg=op)
