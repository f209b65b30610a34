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
                T.print(by, msg="two\nlines")  # a newline: two DPRINT lines
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
    assert '#include "api/debug/dprint.h"' in src and src.count("DPRINT(") == 5
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
                want += [f"msg='only here' {blk}", f"msg='expr<bx == 0>' {blk}: dtype=bool value=true",
                         "msg='two", f"lines' {blk}: dtype=int32 value=1"]
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

    cases = [(lambda s, bx: T.print(s[0:16, 0:16]), "a block prints whole"),
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


def _element_lines(out, head):
    """{index: value} of a block print's lines starting with ``head``."""
    got = {}
    for line in _lines(out):
        if line.startswith(head):
            index, value = line[len(head):].split(", dtype=")
            got[int(index)] = value
    return got


def test_print_shared_block_conditionally(capfd):
    """T.print(shared) on one block: 1024 lines in row-major order (faces mapped back), the
    values of the block, the results unchanged."""
    @T.prim_func
    def main(A: T.Tensor((M, N), T.bfloat16), B: T.Tensor((M, N), T.bfloat16)):
        with T.Kernel(N // BN, M // BM) as (bx, by):
            s = T.alloc_shared((BM, BN), T.bfloat16)
            T.copy(A[by * BM, bx * BN], s)
            if bx == 1 and by == 0:
                T.print(s)
            T.copy(s, B[by * BM, bx * BN])

    art = tilelang.compile(main, out_idx=-1)
    a = np.random.default_rng(3).standard_normal((M, N)).astype(BF16)
    np.testing.assert_array_equal(np.asarray(art(a)), a)
    out = capfd.readouterr().out
    lines = _lines(out)
    assert len(lines) == BM * BN
    head = "msg='buffer<s, bfloat16>' BlockIdx=(1, 0, 0): buffer=s, index="
    assert all(line.startswith(head) for line in lines)
    assert [int(line[len(head):].split(",")[0]) for line in lines] == list(range(BM * BN))
    block = a[0:BM, BN:2 * BN].astype(np.float32).ravel()
    got = _element_lines(out, head)
    assert [got[i] for i in range(BM * BN)] == [f"bfloat16 value={v:f}" for v in block]


def test_print_float16_block(capfd):
    """float16 (DPRINT has no half type: the writer converts each value to a float), specials
    included."""
    @T.prim_func
    def main(A: T.Tensor((32, 32), T.float16), B: T.Tensor((32, 32), T.float16)):
        with T.Kernel(1) as bx:
            s = T.alloc_shared((32, 32), T.float16)
            T.copy(A, s)
            T.print(s, msg="h")
            T.copy(s, B)

    art = tilelang.compile(main, out_idx=-1)
    a = (np.random.default_rng(5).standard_normal((32, 32)) * 100).astype(np.float16)
    a[0, :7] = [np.inf, -np.inf, 6e-8, -3e-6, 0.0, 65504, np.nan]
    b = np.asarray(art(a))
    np.testing.assert_array_equal(b, a)
    got = _element_lines(capfd.readouterr().out, "msg='h' BlockIdx=(0, 0, 0): buffer=s, index=")
    assert [got[i] for i in range(32 * 32)] == \
        [f"float16 value={float(v):f}" for v in a.ravel()]


def test_print_fragment_after_compute(capfd):
    """A computed float32 fragment and a GEMM accumulator, printed before they are stored."""
    @T.prim_func
    def main(A: T.Tensor((32, 64), T.float32), B: T.Tensor((64, 32), T.bfloat16),
             C: T.Tensor((32, 64), T.float32), D: T.Tensor((32, 32), T.float32)):
        with T.Kernel(1) as bx:
            f = T.alloc_fragment((32, 64), T.float32)
            a = T.alloc_shared((32, 64), T.bfloat16)
            b = T.alloc_shared((64, 32), T.bfloat16)
            d = T.alloc_fragment((32, 32), T.float32)
            T.copy(A, f)
            for i, j in T.Parallel(32, 64):
                f[i, j] = f[i, j] * 2.0 + 1.0
            T.print(f, msg="f")
            T.copy(f, C)
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, d, clear_accum=True)
            T.print(d, msg="d")
            T.copy(d, D)

    art = tilelang.compile(main, out_idx=[2, 3])
    rng = np.random.default_rng(4)
    a = rng.standard_normal((32, 64)).astype(np.float32)
    b = rng.standard_normal((64, 32)).astype(BF16)
    c, d = (np.asarray(x) for x in art(a, b))
    np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)
    out = capfd.readouterr().out
    got = _element_lines(out, "msg='f' BlockIdx=(0, 0, 0): buffer=f, index=")
    assert [got[i] for i in range(32 * 64)] == [f"float32 value={v:f}" for v in c.ravel()]
    got = _element_lines(out, "msg='d' BlockIdx=(0, 0, 0): buffer=d, index=")
    assert [got[i] for i in range(32 * 32)] == [f"float32 value={v:f}" for v in d.ravel()]


def test_print_block_refusals():
    def kernel(body, dtype=T.float32, shape=(BM, BN)):
        @T.prim_func
        def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), T.float32)):
            with T.Kernel(N // BN, M // BM) as (bx, by):
                s = T.alloc_shared(shape, dtype)
                T.copy(A[by * BM, bx * BN], s)
                body(s, B, bx, by)

        return main

    def after(s, B, bx, by):
        T.copy(s, B[by * BM, bx * BN])
        T.print(s)  # no store of s follows

    def before(s, B, bx, by):
        T.print(s)
        T.copy(s, B[by * BM, bx * BN])

    def written_between(s, B, bx, by):
        T.print(s)
        T.fill(s, 1.0)
        T.copy(s, B[by * BM, bx * BN])

    def newline(s, B, bx, by):
        T.print(s, msg="a\nb")
        T.copy(s, B[by * BM, bx * BN])

    cases = [(after, T.float32, "not stored to a tensor after"),
             (newline, T.float32, "msg holds a newline"),
             (written_between, T.float32, "written after the print and before"),
             (before, T.bfloat16, "converted to float32"),
             (before, T.int32, "int32 elements cannot be printed")]
    for body, dtype, words in cases:
        with pytest.raises(TTUnsupportedError, match=words):
            tilelang.compile(kernel(body, dtype))

    @T.prim_func
    def in_loop(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32)):
        with T.Kernel(N // BN, M // BM) as (bx, by):
            s = T.alloc_shared((BM, BN), T.float32)
            T.copy(A[by * BM, bx * BN], s)
            for k in T.serial(2):
                T.print(s)
            T.copy(s, B[by * BM, bx * BN])

    @T.prim_func
    def copy_in_branch(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32)):
        with T.Kernel(N // BN, M // BM) as (bx, by):
            s = T.alloc_shared((BM, BN), T.float32)
            T.copy(A[by * BM, bx * BN], s)
            T.print(s)
            if bx == 0:
                T.copy(s, B[by * BM, bx * BN])

    for func, words in ((in_loop, "in a loop that the T.copy"),
                        (copy_in_branch, "under a branch the print is not under")):
        with pytest.raises(TTUnsupportedError, match=words):
            tilelang.compile(func)
