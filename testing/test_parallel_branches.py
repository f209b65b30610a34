"""Data-dependent ``if`` statements in ``T.Parallel`` bodies (TileLang issue 8): each store
under a condition becomes a select of the stored value and the element's old value
(if-conversion in A0.1.0.1, ``passes/frontend/if_convert.py``; docs/SUPPORT.md "Branches in
T.Parallel").  Every kernel runs on the emulator against numpy.  The kernels that take a
dtype run on one each, float32 and bfloat16 taken in turn: if-conversion does not look at the
dtype (T.if_then_else selects of elements run in test_ops.py)."""

import numpy as np
import pytest

import tilelang_tt
import tilelang_tt as tilelang
import tilelang_tt.language as T
from tilelang_tt import TTCompileError

import ml_dtypes


def _inputs(rng, shape, dtype, n=1):
    """``n`` random arrays of ``dtype`` (numpy's float32 or ml_dtypes' bfloat16)."""
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float32
    return [rng.standard_normal(shape).astype(np_dtype) for _ in range(n)]


def _f32(x):
    return np.asarray(x).astype(np.float32)


def scale_positive(M, N, block_M=32, block_N=32, dtype=T.float32):
    # the kernel: a fragment cleared, then scaled where the element is positive
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_N), dtype)
            B_l = T.alloc_fragment((block_M, block_N), dtype)
            T.copy(A[by * block_M, bx * block_N], A_s)
            T.clear(B_l)
            for i, j in T.Parallel(block_M, block_N):
                if A_s[i, j] > 0.0:
                    B_l[i, j] = A_s[i, j] * 2.0
            T.copy(B_l, B[by * block_M, bx * block_N])

    return main


@pytest.mark.parametrize("dtype", ["bfloat16"])  # float32: a select into a cleared fragment
def test_store_under_a_data_condition(dtype):   # in test_condition_of_a_branch_storing_what_...
    kernel = tilelang.compile(scale_positive(64, 96, dtype=dtype), out_idx=[1])
    (a,) = _inputs(np.random.default_rng(0), (64, 96), dtype)
    out = _f32(kernel(a))
    a = _f32(a)
    np.testing.assert_array_equal(out, np.where(a > 0, a * 2, 0))


@tilelang.jit(out_idx=[1])
def threshold_if_else(M, N, thr, block_M=32, block_N=32, dtype=T.float32):
    # if / else storing straight to a tensor, the condition on a tensor element read in the
    # same nest: the two stores to B are one select (B is never read back)
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                if A[by * block_M + i, bx * block_N + j] > thr:
                    B[by * block_M + i, bx * block_N + j] = A[by * block_M + i, bx * block_N + j] * 2.0
                else:
                    B[by * block_M + i, bx * block_N + j] = -A[by * block_M + i, bx * block_N + j]

    return main


def test_if_else_into_a_tensor_on_its_own_elements():
    kernel = threshold_if_else(64, 64, 0.25)
    a = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    np.testing.assert_allclose(kernel(a), np.where(a > 0.25, a * 2, -a), rtol=1e-6, atol=1e-6)


@tilelang.jit(out_idx=[1])
def clamp_chain(M, N, block=32, dtype=T.float32):
    # if / elif / else into a tensor: one store of nested selects
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            A_s = T.alloc_shared((block, block), dtype)
            T.copy(A[by * block, bx * block], A_s)
            for i, j in T.Parallel(block, block):
                if A_s[i, j] > 1.0:
                    B[by * block + i, bx * block + j] = 1.0
                elif A_s[i, j] > 0.0:
                    B[by * block + i, bx * block + j] = A_s[i, j]
                else:
                    B[by * block + i, bx * block + j] = A_s[i, j] * 0.5

    return main


@pytest.mark.parametrize("dtype", ["float32"])
def test_if_elif_else_into_a_tensor(dtype):
    kernel = clamp_chain(64, 64, dtype=dtype)
    (a,) = _inputs(np.random.default_rng(7), (64, 64), dtype)
    out = _f32(kernel(a))
    a = _f32(a)
    np.testing.assert_array_equal(out, np.where(a > 1, 1.0, np.where(a > 0, a, a * 0.5)))


def test_if_elif_else_is_one_store_of_nested_selects():
    f = tilelang_tt.lower(clamp_chain.get_tir(64, 64), stop_after="A0.1.0.1")["main"]
    stores = [line.strip() for line in f.script().splitlines() if line.strip().startswith("B[")]
    assert len(stores) == 1 and stores[0].count("T.if_then_else") == 2, stores
    assert "if_then_else(A_s[i, j] > T.float32(1.0), T.float32(1.0), T.if_then_else(A_s[i, j] > " \
        "T.float32(0.0), A_s[i, j], A_s[i, j] * T.float32(0.5)))" in stores[0], stores


@tilelang.jit(out_idx=[2, 3])
def nested_two_buffers(M, N, block=32, dtype=T.float32):
    # nested ifs, several stores per arm, conditions on two buffers mixed with indices
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype),
             C: T.Tensor((M, N), dtype), D: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            A_s = T.alloc_shared((block, block), dtype)
            B_s = T.alloc_shared((block, block), dtype)
            C_l = T.alloc_fragment((block, block), dtype)
            D_l = T.alloc_fragment((block, block), dtype)
            T.copy(A[by * block, bx * block], A_s)
            T.copy(B[by * block, bx * block], B_s)
            for i, j in T.Parallel(block, block):
                if A_s[i, j] > B_s[i, j] and i <= j:
                    C_l[i, j] = A_s[i, j]
                    D_l[i, j] = B_s[i, j] * 2.0
                else:
                    if A_s[i, j] < 0.0 or j < 4:
                        C_l[i, j] = 0.0
                    else:
                        C_l[i, j] = B_s[i, j]
                    D_l[i, j] = 1.0
            T.copy(C_l, C[by * block, bx * block])
            T.copy(D_l, D[by * block, bx * block])

    return main


def _nested_ref(a, b, block=32):
    i, j = np.meshgrid(np.arange(a.shape[0]) % block, np.arange(a.shape[1]) % block,
                       indexing="ij")
    c1 = (a > b) & (i <= j)
    c2 = (a < 0) | (j < 4)
    c = np.where(c1, a, np.where(c2, 0, b))
    d = np.where(c1, b * 2, 1.0)
    return c, d


@pytest.mark.parametrize("dtype", ["bfloat16"])
def test_nested_branches_on_two_buffers(dtype):
    kernel = nested_two_buffers(64, 64, dtype=dtype)
    a, b = _inputs(np.random.default_rng(2), (64, 64), dtype, 2)
    c, d = kernel(a, b)
    rc, rd = _nested_ref(_f32(a), _f32(b))
    np.testing.assert_array_equal(_f32(c), rc)
    np.testing.assert_array_equal(_f32(d), rd)


@tilelang.jit(out_idx=[1])
def leaky_relu_1d(N, block=256, dtype=T.float32):
    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            x_s = T.alloc_shared((block,), dtype)
            y_l = T.alloc_fragment((block,), dtype)
            T.copy(X[bx * block], x_s)
            for i in T.Parallel(block):
                if x_s[i] > 0.0:
                    y_l[i] = x_s[i]
                else:
                    y_l[i] = x_s[i] * 0.125
            T.copy(y_l, Y[bx * block])

    return main


@pytest.mark.parametrize("dtype", ["float32"])
def test_1d_if_else_into_a_fragment_never_written(dtype):
    kernel = leaky_relu_1d(512, dtype=dtype)
    (x,) = _inputs(np.random.default_rng(3), (512,), dtype)
    out = _f32(kernel(x))
    x = _f32(x)
    np.testing.assert_array_equal(out, np.where(x > 0, x, x * 0.125))


@tilelang.jit
def relu_in_place(N, block=256, dtype=T.float32):
    # a 1-D tensor updated where its own element is negative: the others keep their value
    @T.prim_func
    def main(A: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                if A[bx * block + i] < 0.0:
                    A[bx * block + i] = 0.0

    return main


def test_1d_tensor_updated_in_place_under_its_own_condition():
    kernel = relu_in_place(512)
    a = np.random.default_rng(4).standard_normal(512).astype(np.float32)
    ref = np.maximum(a, 0)
    kernel(a)
    np.testing.assert_array_equal(a, ref)


@tilelang.jit(out_idx=[1])
def zeros_then_where(M, N, block=32, dtype=T.float32):
    # TileLang's "zeros, then the selected elements": B's old value is the earlier nest's
    # 0.0, forwarded (the kernel does not read back the tensor it wrote)
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            for i, j in T.Parallel(block, block):
                B[by * block + i, bx * block + j] = -1.0
            for i, j in T.Parallel(block, block):
                if A[by * block + i, bx * block + j] >= 0.5:
                    B[by * block + i, bx * block + j] = A[by * block + i, bx * block + j] + 1.0

    return main


def test_old_value_of_a_tensor_forwarded_from_the_earlier_nest():
    kernel = zeros_then_where(64, 64)
    a = np.random.default_rng(5).standard_normal((64, 64)).astype(np.float32)
    np.testing.assert_allclose(kernel(a), np.where(a >= 0.5, a + 1, -1.0), rtol=1e-6)


@tilelang.jit(out_idx=[1])
def positive_prefix(max_len=512, dtype=T.float32):
    # a branch in a nest of a dynamic extent (TileLang's test_parallel_dynamic_extent with a
    # data condition): the extent's mask and the branch's condition conjoined
    @T.prim_func
    def main(A: T.Tensor((max_len,), dtype), B: T.Tensor((max_len,), dtype),
             valid_len: T.int32):
        with T.Kernel(1, threads=128) as _:
            for i in T.Parallel(max_len):
                B[i] = 0.0
            span = T.min(valid_len, max_len)
            for i in T.Parallel(span):
                if A[i] > 0.0:
                    B[i] = A[i] - 1.0
                else:
                    B[i] = A[i] * 2.0

    return main


def test_branch_in_a_nest_of_a_dynamic_extent():
    kernel = positive_prefix()  # compiled once, run at two extents
    a = np.random.default_rng(6).standard_normal(512).astype(np.float32)
    for valid_len in (13, 512):
        ref = np.zeros_like(a)
        ref[:valid_len] = np.where(a > 0, a - 1, a * 2)[:valid_len]
        np.testing.assert_allclose(kernel(a, valid_len), ref, rtol=1e-6, atol=1e-6)


# ---- lowering: what the branch becomes -------------------------------------------------------
def test_branch_into_a_cleared_fragment_is_one_select_reading_it():
    f = tilelang_tt.lower(scale_positive(64, 64), stop_after="A0.1.0.1")["main"]
    text = f.script()
    assert "T.if_then_else(A_s[i, j] > T.float32(0.0), A_s[i, j] * T.float32(2.0), B_l[i, j])" \
        in text, text


def condition_overwritten(M=64, N=64, block=32, dtype=T.float32):
    # the branch stores to the buffer its condition reads, then stores again under it: the
    # condition is computed into a block first (if_cond), as it was where the branch was
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            A_s = T.alloc_shared((block, block), dtype)
            B_l = T.alloc_fragment((block, block), dtype)
            T.copy(A[by * block, bx * block], A_s)
            T.clear(B_l)
            for i, j in T.Parallel(block, block):
                if A_s[i, j] > 0:
                    A_s[i, j] = 0.0
                    B_l[i, j] = 1.0
                else:
                    B_l[i, j] = A_s[i, j]
            for i, j in T.Parallel(block, block):
                B_l[i, j] = B_l[i, j] + A_s[i, j]
            T.copy(B_l, B[by * block, bx * block])

    return main


def test_condition_of_a_branch_storing_what_it_reads_is_computed_first():
    f = tilelang_tt.lower(condition_overwritten(), stop_after="A0.1.0.1")["main"]
    assert "if_cond_0[i, j] = T.if_then_else(A_s[i, j] > T.float32(0.0), T.bfloat16(1.0), " \
        "T.bfloat16(0.0))" in f.script()
    kernel = tilelang.compile(condition_overwritten(), out_idx=[1])
    a = np.random.default_rng(8).standard_normal((64, 64)).astype(np.float32)
    np.testing.assert_array_equal(kernel(a), np.where(a > 0, 1.0, a + a))


# ---- refused ---------------------------------------------------------------------------------
def condition_overwritten_dynamic(N=256, dtype=T.float32):
    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype), n: T.int32):
        with T.Kernel(1, threads=128) as _:
            x_s = T.alloc_shared((N,), dtype)
            y_l = T.alloc_fragment((N,), dtype)
            T.copy(X[0], x_s)
            T.clear(y_l)
            for i in T.Parallel(T.min(n, N)):
                if x_s[i] > 0:
                    x_s[i] = 0.0
                    y_l[i] = 1.0
            T.copy(y_l, Y[0])

    return main


def test_condition_overwritten_in_a_nest_of_a_dynamic_extent_is_refused():
    func = condition_overwritten_dynamic()  # `n` not specialised: a run-time extent
    with pytest.raises(TTCompileError, match=r"condition `x_s\[i\] > .*reads x_s, which the "
                                             r"branch stores to \(line \d+\) before its store "
                                             r"to y_l") as e:
        tilelang_tt.lower(func, stop_after="A0.1.0.1")
    assert "branch on `c[i, j] > 0`" in str(e.value)


def loop_in_branch(M=64, N=64, block=32, dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            A_s = T.alloc_shared((block, block), dtype)
            B_l = T.alloc_fragment((block, block), dtype)
            T.copy(A[by * block, bx * block], A_s)
            T.clear(B_l)
            for i in T.Parallel(block):
                if A_s[i, 0] > 0:
                    for j in T.serial(block):
                        B_l[i, j] = A_s[i, j]
            T.copy(B_l, B[by * block, bx * block])

    return main


def test_loop_in_a_branch_arm_is_refused():
    with pytest.raises(TTCompileError, match=r"a branch arm holds .*for j in T.serial") as e:
        tilelang_tt.lower(loop_in_branch(), stop_after="A0.1.0.1")
    assert "test_parallel_branches.py:" in str(e.value)


def copy_then_branch(M=64, N=64, block=32, dtype=T.float32):
    # B written by a copy of a block changed afterwards: its old value is gone
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            A_s = T.alloc_shared((block, block), dtype)
            T.copy(A[by * block, bx * block], A_s)
            T.copy(A_s, B[by * block, bx * block])
            for i, j in T.Parallel(block, block):
                A_s[i, j] = A_s[i, j] * 3.0
            for i, j in T.Parallel(block, block):
                if A_s[i, j] > 1.0:
                    B[by * block + i, bx * block + j] = A_s[i, j]

    return main


def test_branch_into_a_tensor_written_before_in_another_way_is_refused():
    with pytest.raises(TTCompileError, match=r"stores to tensor B under a condition \(an `if` in "
                                             r"its body\).*earlier statement \(line \d+\) wrote"):
        tilelang_tt.lower(copy_then_branch(), stop_after="A0.1.0.1")


def select_in_a_loop(M=64, N=64, block=32, dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=128) as (bx, by):
            for s in T.serial(3):
                for i, j in T.Parallel(block, block):
                    if A[by * block + i, bx * block + j] > 0.5:
                        B[by * block + i, bx * block + j] = A[by * block + i, bx * block + j] + 1.0

    return main


def test_branch_into_a_tensor_the_loop_stored_before_is_refused():
    # each iteration keeps B's elements where the condition fails: it would read back what the
    # previous iteration stored
    with pytest.raises(TTCompileError, match=r"tensor B under a condition keeps B's element.*"
                                             r"every iteration of `for s in T.serial\(3\)`") as e:
        tilelang_tt.lower(select_in_a_loop(), stop_after="A0.1.0.1")
    assert "select into a fragment inside the loop" in str(e.value)
