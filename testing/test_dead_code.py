"""Computations whose results nothing reads (A0.3.0 DropDeadBlockWritesTT): TileLang compiles
a kernel that computes a block value it never uses (issue 1690's `T.reduce_max(tmp, tmp_max,
dim=0)` with `tmp_max` never read); here the statements computing it are dropped, each dead
buffer named with its lines in a `TTDeadCodeWarning`, and what the kernel does write runs on
the emulator against numpy."""

import warnings

import ml_dtypes
import numpy as np
import pytest

import tilelang_tt as tilelang
import tilelang_tt.language as T
from tilelang_tt import TTCompileError, TTDeadCodeWarning

RNG = np.random.default_rng(11)


def _compile_warned(func, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel = tilelang.compile(func, **kw)
    dead = [str(w.message) for w in caught if issubclass(w.category, TTDeadCodeWarning)]
    return kernel, dead


def test_issue_1690_unread_reduction_compiles_and_runs():
    """Issue 1690 as TileLang writes it: everything the kernel computes is dead, so it does
    nothing, and compiles (both buffers are named)."""

    @tilelang.jit()
    def unread_max(A):
        N = T.const("N")
        A: T.Tensor[[N], T.float32]
        with T.Kernel():
            tmp = T.alloc_fragment((N,), T.float32)
            tmp_max = T.alloc_fragment(1, T.float32)
            T.copy(A, tmp)
            T.reduce_max(tmp, tmp_max, dim=0)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel = unread_max.compile(N=16)
    dead = [str(w.message) for w in caught if issubclass(w.category, TTDeadCodeWarning)]
    assert any("tmp_max is written but never read" in m and "T.reduce_max(tmp, tmp_max" in m
               for m in dead), dead
    assert any("block buffer tmp is read only by statements dropped" in m
               and "T.copy(A, tmp)" in m for m in dead), dead
    assert "reduce" not in kernel.sources["compute.cpp"]
    a = RNG.standard_normal(16).astype(np.float32)
    before = a.copy()
    kernel(a)  # the empty program runs on the emulator and leaves its input alone
    np.testing.assert_array_equal(a, before)


def scale_with_dead_work(M, N, block_M, dtype="float32"):
    """B = A * 2, beside a row maximum, its exponentials and a running sum nothing reads."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            A_s = T.alloc_shared((block_M, N), dtype)
            B_f = T.alloc_fragment((block_M, N), dtype)
            m = T.alloc_fragment((block_M,), dtype)
            e = T.alloc_fragment((block_M, N), dtype)
            T.copy(A[bx * block_M, 0], A_s)
            T.reduce_max(A_s, m, dim=1)
            for i, j in T.Parallel(block_M, N):
                e[i, j] = T.exp(A_s[i, j] - m[i])
            for i, j in T.Parallel(block_M, N):
                B_f[i, j] = A_s[i, j] * 2.0
            T.copy(B_f, B[bx * block_M, 0])

    return main


def test_dead_reduction_and_expression_dropped_live_output_runs():
    kernel, dead = _compile_warned(scale_with_dead_work(64, 64, 32), out_idx=[1])
    assert any("block buffer e is written but never read" in m and "T.exp" in m
               for m in dead), dead
    assert any("block buffer m is read only by statements dropped" in m
               and "T.reduce_max(A_s, m, dim=1)" in m for m in dead), dead
    assert "reduce" not in kernel.sources["compute.cpp"]
    a = RNG.standard_normal((64, 64)).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a * 2.0, rtol=1e-2, atol=1e-2)


def sum_with_dead_accumulator(M, N, block_N, dtype="float32"):
    """Row sums over column blocks into `acc` (copied out), and a running maximum `mx` the
    loop carries from one block to the next and nobody reads: dead though it reads itself."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), S: T.Tensor((M,), dtype)):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, block_N), dtype)
            part = T.alloc_fragment((M,), dtype)
            acc = T.alloc_fragment((M,), dtype)
            mx = T.alloc_fragment((M,), dtype)
            T.clear(acc)
            T.fill(mx, -T.infinity(dtype))
            for k in T.Pipelined(N // block_N, num_stages=2):
                T.copy(A[0, k * block_N], A_s)
                T.reduce_sum(A_s, part, dim=1)
                for i in T.Parallel(M):
                    acc[i] = acc[i] + part[i]
                T.reduce_max(A_s, mx, dim=1, clear=False)
            T.copy(acc, S)

    return main


def test_loop_carried_value_nothing_reads_is_dead():
    kernel, dead = _compile_warned(sum_with_dead_accumulator(64, 128, 32), out_idx=[1])
    assert len(dead) == 1 and "block buffer mx is written but never read; dropped its 2 " \
        "writes" in dead[0], dead
    a = RNG.standard_normal((64, 128)).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a.sum(axis=1), rtol=2e-2, atol=5e-2)


def test_shared_buffer_filled_and_never_read_is_dropped():
    """A copy into a shared buffer nothing reads (was BuildTileDFGTT's "written but never
    read")."""

    @T.prim_func
    def main(A: T.Tensor((32, 32), "bfloat16"), B: T.Tensor((32, 32), "bfloat16")):
        with T.Kernel(1, 1) as (bx, by):
            s = T.alloc_shared((32, 32), "bfloat16")
            t = T.alloc_shared((32, 32), "bfloat16")
            T.copy(A[0, 0], s)
            T.copy(A[0, 0], t)
            T.copy(t, B[0, 0])

    kernel, dead = _compile_warned(main, out_idx=[1])
    assert len(dead) == 1 and "block buffer s is written but never read" in dead[0], dead
    assert "T.copy(A[0, 0], s)" in dead[0]
    a = RNG.standard_normal((32, 32)).astype(np.float32).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(kernel(a), a)


def test_kernel_without_dead_code_warns_nothing():
    @T.prim_func
    def live(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, threads=128) as bx:
            A_s = T.alloc_shared((32, 64), "float32")
            T.copy(A[bx * 32, 0], A_s)
            T.copy(A_s, B[bx * 32, 0])

    _, dead = _compile_warned(live, out_idx=[1])
    assert dead == []


def test_read_of_a_buffer_nothing_writes_is_still_an_error():
    """Dropping dead writes does not make a read of an unwritten block legal."""

    @T.prim_func
    def main(A: T.Tensor((32, 32), "float32"), B: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((32, 32), "float32")
            T.copy(s, B)

    with pytest.raises(TTCompileError, match="s is read but never written"):
        tilelang.compile(main, out_idx=[1])


def test_issue_1719_layout_6_value_read_and_discarded():
    """Issue 1719's sixth kernel: a one-element fragment set by an element store, reduced, and
    its result read on a line of its own (`tmp2[0]`, a value discarded): nothing is written,
    so it compiles to kernels that do nothing."""

    @tilelang.jit
    def discarded():
        with T.Kernel():
            tmp1 = T.alloc_fragment((1,), dtype=T.float32)
            tmp2 = T.alloc_fragment((1,), dtype=T.float32)
            tmp1[0] = 1
            T.reduce_sum(tmp1, tmp2)
            tmp2[0]

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernel = discarded.compile()
    dead = [str(w.message) for w in caught if issubclass(w.category, TTDeadCodeWarning)]
    assert any("tmp2 is written but never read" in m for m in dead), dead
    assert any("tmp1 is read only by statements dropped" in m and "tmp1[0] = 1" in m
               for m in dead), dead
    assert "reduce" not in kernel.sources["compute.cpp"]
