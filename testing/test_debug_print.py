"""T.print and T.device_assert: TT-Metalium's DPRINT and ASSERT in the reader kernel, shown by
the emulator (docs/SUPPORT.md "Debug printing and device asserts")."""

import numpy as np
import pytest

import tilelang_tt as tilelang
import tilelang_tt.language as T
from helpers import BF16, assert_matmul
from tilelang_tt.errors import TTRuntimeError, TTUnsupportedError

M, N, BM, BN = 64, 64, 32, 32


def copy_with_prints():
    @T.prim_func
    def main(A: T.Tensor((M, N), T.bfloat16), B: T.Tensor((M, N), T.bfloat16)):
        with T.Kernel(N // BN, M // BM) as (bx, by):
            s = T.alloc_shared((BM, BN), T.bfloat16)
            T.copy(A[by * BM, bx * BN], s)
            T.print(bx + by * 2, msg="block {id}")
            if bx == 0 and by == 1:
                T.print(msg="only here")
                T.print(bx == 0)
            v = T.alloc_var(T.int32)
            v = by * 10 - 5
            for i in T.serial(2):
                T.print(v - i)
            T.copy(s, B[by * BM, bx * BN])

    return main


def _lines(out):
    """The DPRINT lines of a run, without the print server's core prefix."""
    return [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("0:(x=")]


def test_prints_show_on_stdout_and_leave_results(capfd, monkeypatch):
    monkeypatch.delenv("TT_METAL_DPRINT_CORES", raising=False)
    art = tilelang.compile(copy_with_prints(), out_idx=-1)
    src = art.get_kernel_source()
    assert '#include "api/debug/dprint.h"' in src and src.count("DPRINT(") == 4
    assert art.plan["debug"] == ["dprint"]
    a = np.random.default_rng(0).standard_normal((M, N)).astype(BF16)
    b = art(a)
    np.testing.assert_array_equal(np.asarray(b), a)  # prints change nothing
    out = capfd.readouterr().out
    assert out == art.last_run_output
    want = []
    for by in range(2):
        for bx in range(2):
            blk = f"BlockIdx=({bx}, {by}, 0)"
            want.append(f"msg='block {{id}}' {blk}: dtype=int32 value={bx + by * 2}")
            if (bx, by) == (0, 1):
                want += [f"msg='only here' {blk}", f"msg='expr<bx == 0>' {blk}: dtype=bool value=true"]
            want += [f"msg='expr<v - i>' {blk}: dtype=int32 value={by * 10 - 5 - i}" for i in range(2)]
    assert sorted(_lines(out)) == sorted(want)
    # every block's lines come from the core running it, in program order there
    by_core = {}
    for line in out.splitlines():
        core, text = line.split(": ", 1)
        by_core.setdefault(core, []).append(text)
    assert all(":NC" in c for c in by_core) and sum(map(len, by_core.values())) == len(want)

    # the user's choice of cores stands
    monkeypatch.setenv("TT_METAL_DPRINT_CORES", "0,0")
    art(a)
    out = capfd.readouterr().out
    assert out and all(line.startswith("0:(x=0,y=0):") for line in out.splitlines())


def test_print_refusals():
    def kernel(body):
        @T.prim_func
        def main(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32)):
            with T.Kernel(N // BN, M // BM) as (bx, by):
                s = T.alloc_shared((BM, BN), T.float32)
                T.copy(A[by * BM, bx * BN], s)
                body(s, bx)
                T.copy(s, B[by * BM, bx * BN])

        return main

    cases = [(lambda s, bx: T.print(s), "printing a buffer is not supported yet"),
             (lambda s, bx: T.print(T.float32(1.5) * bx), "floating-point value"),
             (lambda s, bx: T.print(T.Cast("int64", bx)), "int64 value"),
             (lambda s, bx: T.device_assert(s[0, 0] > 0), "reads an element of s")]
    for body, words in cases:
        with pytest.raises(TTUnsupportedError, match=words):
            tilelang.compile(kernel(body))
    with pytest.raises(TTUnsupportedError, match=r"T.Parallel loop variable \(i\)"):
        @T.prim_func
        def in_parallel(A: T.Tensor((M, N), T.float32)):
            with T.Kernel(1) as bx:
                s = T.alloc_shared((BM, BN), T.float32)
                for i, j in T.Parallel(BM, BN):
                    T.print(i)
                    s[i, j] = 0


def test_print_in_a_gemm_k_loop(capfd):
    """A print under a branch in a pipelined K loop: the reader's copy of the branch prints, the
    compute kernel's GEMM (and every CB's protocol) is as without it."""
    @T.prim_func
    def gemm(A: T.Tensor((M, 64), T.bfloat16), B: T.Tensor((64, N), T.bfloat16),
             C: T.Tensor((M, N), T.float32)):
        with T.Kernel(N // BN, M // BM) as (bx, by):
            a = T.alloc_shared((BM, 32), T.bfloat16)
            b = T.alloc_shared((32, BN), T.bfloat16)
            c = T.alloc_fragment((BM, BN), T.float32)
            T.clear(c)
            for k in T.Pipelined(2, num_stages=2):
                T.copy(A[by * BM, k * 32], a)
                T.copy(B[k * 32, bx * BN], b)
                if k == 1 and bx == by:
                    T.print(k, msg="k step")
                T.gemm(a, b, c)
            T.copy(c, C[by * BM, bx * BN])

    art = tilelang.compile(gemm, out_idx=-1)
    rng = np.random.default_rng(2)
    a = rng.standard_normal((M, 64)).astype(BF16)
    b = rng.standard_normal((64, N)).astype(BF16)
    c = art(a, b)
    assert_matmul(c, a, b, art)
    lines = _lines(capfd.readouterr().out)
    assert sorted(lines) == [f"msg='k step' BlockIdx=({i}, {i}, 0): dtype=int32 value=1"
                             for i in range(2)]


def assert_kernel(limit):
    @T.prim_func
    def main(A: T.Tensor((M, N), T.bfloat16), B: T.Tensor((M, N), T.bfloat16)):
        with T.Kernel(N // BN, M // BM) as (bx, by):
            s = T.alloc_shared((BM, BN), T.bfloat16)
            T.copy(A[by * BM, bx * BN], s)
            T.device_assert(bx - 1 >= -1)  # signed: holds for bx = 0
            T.device_assert(bx + by < limit, "block out of range")
            T.copy(s, B[by * BM, bx * BN])

    return main


def test_device_assert():
    a = np.random.default_rng(1).standard_normal((M, N)).astype(BF16)
    art = tilelang.compile(assert_kernel(3), out_idx=-1)
    assert '#include "api/debug/assert.h"' in art.get_kernel_source()
    np.testing.assert_array_equal(np.asarray(art(a)), a)
    art = tilelang.compile(assert_kernel(2), out_idx=-1)
    with pytest.raises(TTRuntimeError) as err:
        art(a)
    text = str(err.value)
    # block (1, 1) runs on the fourth core (x = 3): the error names core, kernel and assert
    assert "core (3,0) reader.cpp (reader kernel)" in text
    assert "T.device_assert(bx + by < 2): block out of range" in text
