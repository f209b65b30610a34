"""``T.get_thread_binding`` read only to choose which threads run a whole tile operation
(TileLang's test_tilelang_language_mask_op.py idiom): ``if tx < 128: T.copy(...)``.

A Tensix block is one program, so an arm of an ``if`` of thread indices and constants around
tile operations runs when some thread index in ``[0, threads)`` takes it and is dropped when
none does (A0.000 ResolveThreadConditionsTT); every other use of a thread index is refused at
its line (docs/SUPPORT.md "Thread indices").  Kernels run on the emulator against numpy.
"""

import numpy as np
import pytest
import tvm
import tvm_ffi

import tilelang_tt as tilelang
import tilelang_tt.language as T
from tilelang_tt.errors import TTUnsupportedError
from tilelang_tt.passes import pipeline
from tilelang_tt.passes.common import run_pass, tt_calls
from tilelang_tt.compiler import lower

M, N, BM, BN = 64, 64, 32, 32
HERE = __file__


def mask_parallel(cond, dtype="float16"):
    """TileLang's copy_mask_parallel(_range) in our words: the block staged under a thread
    condition by a T.Parallel nest, then copied out."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=256) as (bx, by):
            s = T.alloc_shared((BM, BN), dtype)
            tx = T.get_thread_binding(0)
            if cond(tx):
                for i, k in T.Parallel(BM, BN):
                    s[i, k] = A[by * BM + i, bx * BN + k]
            T.copy(s, B[by * BM, bx * BN])

    return main


def mask_copy(cond, dtype="float16"):
    """TileLang's copy_mask_copy(_range): the same with T.copy under the condition."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=256) as (bx, by):
            s = T.alloc_shared((BM, BN), dtype)
            tx = T.get_thread_binding(0)
            if cond(tx):
                T.copy(A[by * BM, bx * BN], s)
            T.copy(s, B[by * BM, bx * BN])

    return main


def arms(cond, threads=256):
    """A fill, then an ``if`` / ``else`` of a copy and a fill on thread indices: which arms
    run shows in B (A: the copy, 2: the else fill, 1: neither)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(N // BN, M // BM, threads=threads) as (bx, by):
            s = T.alloc_shared((BM, BN), "float32")
            tx, ty, tz = T.get_thread_bindings()
            T.fill(s, 1.0)
            if cond(tx, ty):
                T.copy(A[by * BM, bx * BN], s)
            else:
                T.fill(s, 2.0)
            T.copy(s, B[by * BM, bx * BN])

    return main


def _run(func, dtype="float16"):
    a = np.random.default_rng(0).standard_normal((M, N)).astype(dtype)
    b = np.zeros((M, N), dtype)
    tilelang.compile(func)(a, b)
    return a, b


def test_tile_operations_under_thread_conditions_run():
    # the frontend IR (tt.thread_index in it) prints and parses back; A0.000 agrees on both
    mod = pipeline.prepare(mask_copy(lambda tx: tx < 128), "tenstorrent")
    parsed = tvm.script.from_source(mod.script())
    assert tvm_ffi.structural_equal(parsed, mod)
    assert tvm_ffi.structural_equal(run_pass(pipeline.STAGES[0][1], parsed),
                                    run_pass(pipeline.STAGES[0][1], mod))
    for make in (mask_parallel, mask_copy):
        for cond in (lambda tx: tx < 128, lambda tx: T.And(tx >= 128, tx < 256)):
            func = make(cond)
            assert not tt_calls(lower(func, stop_after="A0.000")["main"].body)
            a, b = _run(func)
            np.testing.assert_array_equal(b, a)


def test_arms_no_thread_takes_are_dropped():
    # tx >= 256 with threads=256: no thread copies, every thread fills 2
    a, b = _run(arms(lambda tx, ty: tx >= 256), "float32")
    np.testing.assert_array_equal(b, np.full((M, N), 2.0, "float32"))
    # every thread (of the default 128) takes the copy; the else arm is dropped
    a, b = _run(arms(lambda tx, ty: tx < 128, threads=None), "float32")
    np.testing.assert_array_equal(b, a)
    # threads=(128, 2): some thread takes each arm, so both run, the copy first
    a, b = _run(arms(lambda tx, ty: T.And(ty == 1, tx < 64), threads=(128, 2)), "float32")
    np.testing.assert_array_equal(b, np.full((M, N), 2.0, "float32"))
    a, b = _run(arms(lambda tx, ty: ty >= 2, threads=(128, 2)), "float32")
    np.testing.assert_array_equal(b, np.full((M, N), 2.0, "float32"))


def _refused(func, match):
    with pytest.raises(TTUnsupportedError, match=match) as info:
        lower(func)
    assert HERE in str(info.value) and "SIMT per-thread work" in str(info.value)
    return str(info.value)


def test_other_thread_index_uses_are_refused_at_their_line():
    @T.prim_func
    def store_guard(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(N // BN, M // BM, threads=128) as (bx, by):
            s = T.alloc_shared((BM, BN), "float32")
            T.copy(A[by * BM, bx * BN], s)
            tx = T.get_thread_binding(0)
            if tx == 0:
                B[by * BM, bx * BN] = A[by * BM, bx * BN]
            T.copy(s, B[by * BM + 32, bx * BN])

    assert "if tx == 0:" in _refused(store_guard, "not whole tile operations")

    @T.prim_func
    def mixed(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(N // BN, M // BM, threads=128) as (bx, by):
            s = T.alloc_shared((BM, BN), "float32")
            tx = T.get_thread_binding(0)
            if tx < bx:
                T.copy(A[by * BM, bx * BN], s)
            T.copy(s, B[by * BM, bx * BN])

    assert "if tx < bx:" in _refused(mixed, "not thread indices or constants")

    @T.prim_func
    def element_index(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(N // BN, M // BM, threads=128) as (bx, by):
            s = T.alloc_shared((BM, BN), "float32")
            tx = T.get_thread_binding(0)
            T.copy(A[by * BM, bx * BN], s)
            for i in T.Parallel(BM):
                s[i, tx % BN] = 0.0
            T.copy(s, B[by * BM, bx * BN])

    assert "s[i, tx % BN] = 0.0" in _refused(element_index, "element index or a stored value")

    @T.prim_func
    def warp_region(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(N // BN, M // BM, threads=128) as (bx, by):
            s = T.alloc_shared((BM, BN), "float32")
            warp = T.get_thread_binding(0) // 32
            T.copy(A[warp * BM, bx * BN], s)
            T.copy(s, B[by * BM, bx * BN])

    assert "the thread index `warp`" in _refused(warp_region, "tile operation")


def test_print_under_thread_zero_prints_once_per_block(capfd):
    # TileLang's `if tx == 0: T.print(...)`: thread 0's one line; a block is one program here
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(N // BN, M // BM, threads=128) as (bx, by):
            s = T.alloc_shared((BM, BN), "float32")
            tx = T.get_thread_binding(0)
            T.copy(A[by * BM, bx * BN], s)
            if tx == 0:
                T.print(bx, msg="first thread")
            T.copy(s, B[by * BM, bx * BN])

    a = np.random.default_rng(3).standard_normal((M, N)).astype(np.float32)
    b = tilelang.compile(main, out_idx=[1])(a)
    np.testing.assert_array_equal(b, a)
    lines = [ln for ln in capfd.readouterr().out.splitlines() if "first thread" in ln]
    assert len(lines) == (N // BN) * (M // BM)


@tilelang.jit
def per_thread_select():
    # TileLang's test_tilelang_language_select: each thread moves its row through selects
    @T.prim_func
    def main(A: T.Tensor[(64, 8), T.float32], B: T.Tensor[(64, 8), T.float32]):
        with T.Kernel(1, threads=(32, 2)):
            tx = T.get_thread_binding(0)
            ty = T.get_thread_binding(1)
            row = ty * 32 + tx
            tmp = T.alloc_var(T.bfloat16)
            tmp = A[row, 3]
            B[row, 0] = T.Select(True, A[row, 0], 0.0)
            B[row, 1] = T.if_then_else(A[row, 1] > 0.5, A[row, 1] * 2.0, -1.0)
            B[row, 2] = T.Select(T.cast(A[row, 3], T.bfloat16) == tmp, A[row, 2],
                                 T.cast(tmp, T.float32))
            for i in T.serial(5):
                B[row, i + 3] = A[row, i + 3] + T.cast(row, T.float32)

    return main


def test_scalar_code_reading_thread_indices_runs_once_per_thread():
    """A launch of scalar code reading thread indices (no tile operation, no shared buffer)
    runs its body once per thread index (threads (32, 2): x innermost), the index a loop
    variable; T.if_then_else there is C++'s `c ? a : b`; a math function is refused by name."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 8)).astype(np.float32)
    b = np.zeros((64, 8), np.float32)
    per_thread_select()(a, b)
    want = a.copy()
    want[:, 1] = np.where(a[:, 1] > 0.5, a[:, 1] * 2, -1.0)
    want[:, 3:] += np.arange(64, dtype=np.float32)[:, None]
    np.testing.assert_array_equal(b, want)

    @T.prim_func
    def sine(A: T.Tensor((32,), "float32"), B: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding(0)
            B[tx] = T.sin(A[tx])

    with pytest.raises(TTUnsupportedError, match="`T.sin` in scalar code") as info:
        lower(sine)
    assert "B[tx] = T.sin(A[tx])" in str(info.value)


@tilelang.jit
def assumed():
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=32):
            T.assume(N % 4 == 0)
            tx = T.get_thread_binding()
            if tx < N:
                A[tx] = 1.0

    return main


def test_assume_is_checked_for_the_sizes_compiled():
    """TileLang's host-evaluable T.assume: the sizes are constants when a kernel is compiled
    (per call for symbolic ones), so a false assumption raises (a RuntimeError too, as
    TileLang's run-time check) with the condition as written; a true one is dropped."""
    kernel = assumed()
    a = np.zeros(8, np.float32)
    kernel(a)
    np.testing.assert_array_equal(a, 1.0)
    with pytest.raises(RuntimeError, match="Assume: N % 4 == 0") as info:
        kernel(np.zeros(6, np.float32))
    assert "T.assume(N % 4 == 0)" in str(info.value)  # its line


@tilelang.jit(out_idx=[-1])
def warp_info(threads):
    @T.prim_func
    def main(Out: T.Tensor((5, 96), T.int32)):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding(0)
            ty = T.get_thread_binding(1)
            t = ty * T.get_thread_extent(0) + tx
            Out[0, t] = T.get_lane_idx(16)
            Out[1, t] = T.get_warp_idx()
            Out[2, t] = T.get_warp_group_idx(8, 3)
            Out[3, t] = T.shuffle_elect(24)
            Out[4, t] = T.shuffle_elect(0)

    return main


def test_warp_information_per_thread():
    """Lanes, warps, warp groups and elected threads from the block-linear thread index
    (threads (48, 2)), as TileLang computes them."""
    out = warp_info((48, 2))()
    t = np.arange(96)
    np.testing.assert_array_equal(out, np.stack([t % 16, t // 32, t // 24, t % 24 == 0, t == 0]))
