"""Dependencies through global memory (VerifyTileProgramTT): a kernel that reads what
it writes, or blocks that touch what other blocks write, compile only when the order is
guaranteed; otherwise a clear error names the tensor and both source lines."""

import numpy as np
import pytest

import tilelang_tt
import tilelang_tt.language as T
from helpers import rand
from tilelang_tt import TTCompileError, TTUnsupportedError

HERE = __file__


def lower_error(func, exc):
    with pytest.raises(exc) as info:
        tilelang_tt.lower(func, stop_after="VerifyTileProgramTT")
    assert info.type is exc
    return str(info.value)


def test_reading_back_what_the_block_wrote_is_rejected():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), C: T.Tensor((64, 64), "float32"),
          D: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, 2) as (bx, by):
            s = T.alloc_shared((32, 32), "float32")
            t = T.alloc_shared((32, 32), "float32")
            T.copy(A[by * 32, bx * 32], s)
            T.copy(s, C[by * 32, bx * 32])
            T.copy(C[by * 32, bx * 32], t)
            for i, j in T.Parallel(32, 32):
                D[by * 32 + i, bx * 32 + j] = t[i, j] + 1.0

    msg = lower_error(k, TTUnsupportedError)
    assert "tensor C is written at" in msg and "read back at" in msg
    assert f"{HERE}:" in msg and "T.copy(s, C[by * 32, bx * 32])" in msg
    assert "T.copy(C[by * 32, bx * 32], t)" in msg


def test_reading_back_through_parallel_statements_names_both_lines():
    @T.prim_func
    def k(C: T.Tensor((64, 64), "float32"), D: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, 2) as (bx, by):
            for i, j in T.Parallel(32, 32):
                C[by * 32 + i, bx * 32 + j] = D[by * 32 + i, bx * 32 + j] + 1.0
            for i, j in T.Parallel(32, 32):
                D[by * 32 + i, bx * 32 + j] = C[by * 32 + i, bx * 32 + j] * 2.0

    msg = lower_error(k, TTUnsupportedError)
    assert "C[by * 32 + i, bx * 32 + j] = D" in msg and "D[by * 32 + i, bx * 32 + j] = C" in msg


def test_write_in_one_iteration_read_in_the_next_is_rejected():
    @T.prim_func
    def k(C: T.Tensor((64, 128), "float32")):
        with T.Kernel(2) as by:
            s = T.alloc_shared((32, 32), "float32")
            t = T.alloc_shared((32, 32), "float32")
            for kk in T.serial(3):
                T.copy(C[by * 32, kk * 32], s)
                for i, j in T.Parallel(32, 32):
                    t[i, j] = s[i, j] * 2.0
                T.copy(t, C[by * 32, kk * 32 + 32])

    assert "read back at" in lower_error(k, TTUnsupportedError)


def test_overwriting_what_was_read_without_depending_on_it_is_rejected():
    @T.prim_func
    def k(C: T.Tensor((64, 64), "float32"), D: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, 2) as (bx, by):
            s = T.alloc_shared((32, 32), "float32")
            f = T.alloc_shared((32, 32), "float32")
            T.copy(C[by * 32, bx * 32], s)
            T.fill(f, 0.0)
            T.copy(f, C[by * 32, bx * 32])
            T.copy(s, D[by * 32, bx * 32])

    msg = lower_error(k, TTUnsupportedError)
    assert "tensor C is read at" in msg and "overwritten at" in msg and "T.copy(f, C" in msg


def test_block_reading_what_another_block_writes_is_rejected():
    @T.prim_func
    def k(C: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, 2) as (bx, by):
            s = T.alloc_shared((32, 32), "float32")
            T.copy(C[by * 32, (1 - bx) * 32], s)
            T.copy(s, C[by * 32, bx * 32])

    msg = lower_error(k, TTCompileError)
    assert "blocks race on tensor C" in msg and "differ in bx" in msg
    assert "T.copy(C[by * 32, (1 - bx) * 32], s)" in msg and "T.copy(s, C[by * 32, bx * 32])" in msg


def test_blocks_writing_the_same_elements_are_rejected():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, 2) as (bx, by):
            s = T.alloc_shared((32, 32), "float32")
            T.copy(A[by * 32, bx * 32], s)
            T.copy(s, C[by * 32, 0])

    msg = lower_error(k, TTCompileError)
    assert "blocks that differ only in bx write the same elements" in msg


def test_large_grid_decided_symbolically():
    """4096 blocks: the regions are separated by the analyzer, not block by block."""
    @T.prim_func
    def k(C: T.Tensor((2048, 2048), "bfloat16")):
        with T.Kernel(64, 64) as (bx, by):
            for i, j in T.Parallel(32, 32):
                C[by * 32 + i, bx * 32 + j] = C[by * 32 + i, bx * 32 + j] * 2.0

    tilelang_tt.lower(k, stop_after="VerifyTileProgramTT")

    @T.prim_func
    def shifted(C: T.Tensor((2048, 2048), "bfloat16")):
        with T.Kernel(63, 64) as (bx, by):
            for i, j in T.Parallel(32, 64):
                C[by * 32 + i, bx * 32 + j] = C[by * 32 + i, bx * 32 + j] * 2.0

    assert "differ in bx" in lower_error(shifted, TTCompileError)


def test_flattened_block_rows_decided_symbolically():
    """Flash attention's output rows `(bz * heads + by) * seq + bx * 32` over 128 blocks: two
    blocks first differing in bz (or by, or bx) are far enough apart; one row too many per
    (bz, by) makes neighbouring heads overlap, and that is still a race."""
    def kernel(seq):
        @T.prim_func
        def k(Q: T.Tensor((2 * 8 * 256, 64), "float32"), O: T.Tensor((2 * 8 * 256, 64), "float32")):
            with T.Kernel(seq // 32, 8, 2) as (bx, by, bz):
                s = T.alloc_shared((32, 64), "float32")
                T.copy(Q[(bz * 8 + by) * 256 + bx * 32, 0], s)
                T.copy(s, O[(bz * 8 + by) * 256 + bx * 32, 0])
        return k

    tilelang_tt.lower(kernel(256), stop_after="VerifyTileProgramTT")
    assert "blocks race on tensor O" in lower_error(kernel(288), TTCompileError)


def test_in_place_update_of_a_tensor_runs():
    @T.prim_func
    def k(C: T.Tensor((64, 128), "float32")):
        with T.Kernel(2) as by:
            s = T.alloc_shared((32, 32), "float32")
            t = T.alloc_shared((32, 32), "float32")
            for kk in T.serial(4):
                T.copy(C[by * 32, kk * 32], s)
                for i, j in T.Parallel(32, 32):
                    t[i, j] = s[i, j] * 2.0 + 1.0
                T.copy(t, C[by * 32, kk * 32])

    art = tilelang_tt.compile(k)
    c = rand((64, 128), "float32", 7)
    expected = c * 2 + 1
    art(c)
    np.testing.assert_array_equal(c, expected)

    @T.prim_func
    def bump(C: T.Tensor((64, 64), "bfloat16")):
        with T.Kernel(2, 2) as (bx, by):
            for i, j in T.Parallel(32, 32):
                C[by * 32 + i, bx * 32 + j] = C[by * 32 + i, bx * 32 + j] * 2.0

    art = tilelang_tt.compile(bump)
    c = rand((64, 64), "bfloat16", 8)
    expected = c.astype(np.float32) * 2
    art(c)
    np.testing.assert_array_equal(c.astype(np.float32), expected)
