"""Scalar programs: a launch of single-threaded scalar code (TileLang's language tests:
``T.alloc_var`` locals, ``while`` loops, stepped ``range`` loops, element swaps) runs on the
reader's RISC-V core, every tensor it touches a scalar tensor of 32-bit words
(docs/SUPPORT.md "Scalar programs").  Every kernel runs on the emulator and is compared with
numpy."""

import numpy as np
import pytest

pytest.importorskip("tilelang_tt.runtime.mockbuild", reason="emulator driver not installed")

import tilelang_tt as tilelang
import tilelang_tt.language as T
from tilelang_tt import TTUnsupportedError


@T.prim_func
def while_sum(A: T.Tensor((1,), T.int32)):
    with T.Kernel(1) as _:
        i = T.alloc_var(T.int32, 0)
        s = T.alloc_var(T.int32, 0)
        while i < 10:
            s += i
            i += 1
        A[0] = s


@T.prim_func
def stepped(A: T.Tensor((20,), T.int32), B: T.Tensor((10,), T.int32)):
    with T.Kernel(1) as _:
        for i in range(0, 20, 2):  # every other element; the others keep their values
            A[i] = i * 3 - 7
        for i in range(10, 0, -1):
            B[10 - i] = i


@T.prim_func
def swap(A: T.Tensor((2,), T.float32)):
    with T.Kernel(1, threads=1) as _:
        a = T.alloc_var(T.float32, A[0])
        b = T.alloc_var(T.float32, A[1])
        a, b = b, a
        A[0], A[1] = a, b


@T.prim_func
def local_matrix(A: T.Tensor((6,), T.int32)):
    with T.Kernel(1) as _:
        m = T.alloc_local((2, 3), T.int32)
        for i, j in T.grid(2, 3):
            m[i, j] = i * 10 + j
        for k in T.serial(6):
            A[k] = m[k % 2, k // 2] + m[1, 2]


@T.prim_func
def gather(A: T.Tensor((40,), T.int32), Idx: T.Tensor((3,), T.int32)):
    with T.Kernel(1) as _:
        A[Idx[0]] = A[Idx[1]] + A[Idx[2] + 1] * 2  # element indices read from a tensor


@T.prim_func
def carried(X: T.Tensor((40,), T.float32), Out: T.Tensor((3,), T.float32),
            N: T.Tensor((2,), T.int32)):
    with T.Kernel(1) as _:
        acc = T.alloc_var(T.float32, 0.0)
        big = T.alloc_var(T.int32, 0)
        for k in T.serial(40):
            acc = acc * 0.5 + X[k]
            if X[k] > 0:
                big += 1
        Out[1] = acc
        N[0] = big
        N[1] = (big - 50) // 7  # floor division of a negative value


def probe(flag):
    @T.prim_func
    def main(A: T.Tensor((2,), T.int32)):
        with T.Kernel(1):
            if flag:
                v = A[0]
            else:
                v = A[1]
            if flag:
                A[1] = v + 1
            else:
                A[0] = v + 1

    return main


def test_scalar_programs_run():
    a = np.full((1,), -5, np.int32)
    tilelang.compile(while_sum)(a)
    assert a[0] == sum(range(10))

    A = np.arange(100, 120, dtype=np.int32)
    B = np.zeros(10, np.int32)
    tilelang.compile(stepped)(A, B)
    ref = np.arange(100, 120, dtype=np.int32)
    ref[0::2] = np.arange(0, 20, 2) * 3 - 7
    np.testing.assert_array_equal(A, ref)
    np.testing.assert_array_equal(B, np.arange(10, 0, -1))

    d = np.array([1.5, -2.25], np.float32)
    tilelang.compile(swap)(d)
    np.testing.assert_array_equal(d, [-2.25, 1.5])

    rng = np.random.default_rng(0)
    x = rng.standard_normal(40).astype(np.float32)
    out = np.full(3, 9.0, np.float32)
    n = np.zeros(2, np.int32)
    tilelang.compile(carried)(x, out, n)
    acc = np.float32(0)
    for v in x:
        acc = np.float32(acc * np.float32(0.5) + v)
    np.testing.assert_allclose(out[1], acc, rtol=1e-6)
    assert out[0] == 9.0 and out[2] == 9.0  # the page's other words kept
    big = int((x > 0).sum())
    np.testing.assert_array_equal(n, [big, (big - 50) // 7])

    g = np.arange(40, dtype=np.int32) * 3
    idx = np.array([37, 5, 20], np.int32)
    ref = g.copy()
    ref[37] = g[5] + g[21] * 2
    tilelang.compile(gather)(g, idx)
    np.testing.assert_array_equal(g, ref)

    m = np.zeros(6, np.int32)
    tilelang.compile(local_matrix)(m)
    np.testing.assert_array_equal(m, [(k % 2) * 10 + k // 2 + 12 for k in range(6)])

    A = np.array([10, 20], np.int32)
    tilelang.compile(probe(True))(A)
    np.testing.assert_array_equal(A, [10, 11])
    tilelang.compile(probe(False))(A)
    np.testing.assert_array_equal(A, [12, 11])


@T.prim_func
def per_block(A: T.Tensor((20,), T.int32), B: T.Tensor((3,), T.int32)):
    with T.Kernel(5, 2) as (bx, by):  # one page shared by the blocks: run on one core
        A[by * 10 + bx * 2] = bx * 100 + by
        if bx == 0 and by == 0:
            B[0] = B[5]  # outside the tensor: reads 0 (TileLang's safe access)
            B[7] = 1  # dropped
            B[-1] = 2  # dropped


def test_scalar_program_blocks_and_bounds():
    A = np.full(20, -1, np.int32)
    B = np.array([5, 6, 7], np.int32)
    k = tilelang.compile(per_block)
    k(A, B)
    ref = np.full(20, -1, np.int32)
    for by in range(2):
        for bx in range(5):
            ref[by * 10 + bx * 2] = bx * 100 + by
    np.testing.assert_array_equal(A, ref)
    np.testing.assert_array_equal(B, [0, 6, 7])


def half_ops(dtype):
    @T.prim_func
    def main(A: T.Tensor((4,), dtype), B: T.Tensor((4,), dtype)):
        with T.Kernel(1) as _:
            acc = T.alloc_var(dtype, A[0])
            for k in T.serial(1, 4):
                acc = acc * A[k] + A[k]  # rounded to the dtype after every operation
            B[0] = acc
            B[1] = A[1] / A[2]
            B[3] = T.Cast(dtype, T.Cast("float32", A[3]) * 3.0)

    return main


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_scalar_program_16bit_floats(dtype):
    import ml_dtypes
    npt = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
    a = np.array([1.1, 2.3, -0.7, 3.3e-3], np.float32).astype(npt)
    b = np.full(4, 7, npt)
    tilelang.compile(half_ops(dtype))(a, b)
    acc = a[0]
    for k in range(1, 4):
        acc = npt(npt(acc * a[k]) + a[k])
    ref = np.array([acc, npt(a[1] / a[2]), 7, npt(np.float32(a[3]) * np.float32(3.0))], npt)
    np.testing.assert_array_equal(b.astype(np.float32), ref.astype(np.float32))


def persistent_visit(mb, nb, sm_num):
    @T.prim_func
    def main(Visited: T.Tensor((mb, nb), T.int32)):
        with T.Kernel(sm_num, threads=1) as block_id:
            for bx, by in T.Persistent([mb, nb], sm_num, block_id):  # TileLang issue 2433
                Visited[bx, by] += 1

    return main


def test_scalar_program_persistent_tiles():
    """A T.Persistent loop is the launch over its domain first (A0.00): every tile once."""
    v = np.zeros((4, 9), np.int32)
    tilelang.compile(persistent_visit(4, 9, 3))(v)
    np.testing.assert_array_equal(v, np.ones((4, 9), np.int32))


def test_scalar_program_refusals():

    @T.prim_func
    def small(A: T.Tensor((4,), T.int8)):
        with T.Kernel(1) as _:
            A[0] = A[1]
    with pytest.raises(TTUnsupportedError, match=r"tensor A \(dtype int8\)"):
        tilelang.compile(small)

    @T.prim_func
    def two_launches(A: T.Tensor((32, 32), "float32"), B: T.Tensor((32, 32), "float32"),
                     C: T.Tensor((2,), "float32")):
        with T.Kernel(1) as _:
            S = T.alloc_shared((32, 32), "float32")
            T.copy(A[0:32, 0:32], S)
            T.copy(S, B[0:32, 0:32])
        with T.Kernel(1) as _:  # a scalar program reading B's elements: words, not tiles
            C[0] = B[3, 5] + 1.0
    with pytest.raises(TTUnsupportedError, match=r"tensor B is used by launches .* different "
                                                 r"device layouts"):
        tilelang.compile(two_launches)


@tilelang.jit
def element_atomics(dtype):
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), Total: T.Tensor((1,), "float32"),
             Hi: T.Tensor((2,), dtype)):
        with T.Kernel(2, threads=32) as bx:
            tx = T.get_thread_binding()
            T.atomic_add(Total[0], A[bx * 32 + tx])
            T.atomic_max(Hi[0], 42.0)  # TileLang's issue 2758: a float literal into 16 bits
            T.atomic_min(Hi[1], A[bx * 32 + tx])

    return main


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_element_atomics_in_scalar_code(dtype):
    """Atomics on single elements in scalar code (per thread, two blocks): the blocks and
    threads run one after the other on one core, so each is its read-modify-write."""
    a = np.linspace(-3, 60, 64).astype(np.float32)
    total = np.array([1.5], np.float32)
    hi = np.array([-1e4, 1e4], np.dtype(dtype))
    element_atomics(dtype)(a, total, hi)
    want = np.float32(1.5)
    for x in a:  # block 0's threads in order, then block 1's
        want = np.float32(want + x)
    assert total[0] == want
    np.testing.assert_array_equal(hi.astype(np.float32), [42.0, a.min()])


@tilelang.jit
def one_element_tile_ops():
    # TileLang's test_tile_atomic_add_scalar, with a fill of a value and a dtype change
    @T.prim_func
    def main(A: T.Tensor((1,), "float32"), B: T.Tensor((1,), "float32"),
             C: T.Tensor((1,), "bfloat16")):
        with T.Kernel(1) as _:
            A_local = T.alloc_local([1], "float32")
            T.copy(A, A_local)
            T.clear(B)
            T.atomic_add(B, A_local)
            T.atomic_add(B, A_local)
            T.fill(C, 2.5)
            T.atomic_add(C, A_local)

    return main


def test_one_element_tile_operations_in_scalar_code():
    """T.copy / T.clear / T.fill of single elements in a launch of scalar code are its element
    stores (the launch stays a scalar program)."""
    import ml_dtypes

    a, b = np.array([3.25], np.float32), np.array([7.0], np.float32)
    c = np.zeros(1, ml_dtypes.bfloat16)
    one_element_tile_ops()(a, b, c)
    assert b[0] == 6.5 and float(c[0]) == 5.75
