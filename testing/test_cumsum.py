"""T.cumsum on Tensix: the vector engine's column scan (``cumsum_tile``), TileLang's scan kernels.

The kernels are those of TileLang's testing/python/language/test_tilelang_language_scan.py
(shared and fragment blocks, ``dim`` 0 and 1, 1-D blocks, ``dst=``, several blocks per grid).
Every one runs on the emulator and is compared with numpy.

Bounds: ``cumsum_tile`` adds each element to its column's running float32 total, top to bottom,
one SFPADD (fp32, rounded to nearest even) per element, carrying the totals from tile to tile;
the compiler runs it with a 32-bit DST and moves float32 data (copies, transposes, packs)
exactly.  So a float32 result is *bit for bit* numpy's sequential float32 ``cumsum`` (which
adds in the same order; for ``reverse=True``, of the flipped block: the flips are exact
moves) - a far tighter check than TileLang's ``atol=rtol=1e-3``, which every test also checks
against the float64 sums.  bfloat16
inputs are summed in float32 the same way and rounded once by the packer (half away from zero):
bit for bit ``pack_round_bf16(cumsum(float32(x)))``.  With a 16-bit DST (``tt.fp32_dest_acc_en
= False``) each stored sum is truncated to bfloat16 while the running total stays float32.
"""

import re

import numpy as np
import pytest

import tilelang_tt
import tilelang_tt.language as T
from helpers import BF16, as_f32, compute_config, pack_round_bf16, rand
from tilelang_tt import TTCompileError, TTRuntimeError, TTUnsupportedError

HERE = __file__


def cumsum_smem_test(M, N, block_M, block_N, dim=0, reverse=False, dtype="float32"):
    @T.prim_func
    def cumsum(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), dtype)
            T.copy(A[by * block_M, bx * block_N], A_shared)
            T.cumsum(src=A_shared, dim=dim, reverse=reverse)
            T.copy(A_shared, B[by * block_M, bx * block_N])

    return cumsum


def cumsum_fragment_test(M, N, block_M, block_N, dim=0, reverse=False, dtype="float32"):
    @T.prim_func
    def cumsum(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), dtype)
            A_fragment = T.alloc_fragment((block_M, block_N), dtype)
            T.copy(A[by * block_M, bx * block_N], A_shared)
            T.copy(A_shared, A_fragment)
            T.cumsum(src=A_fragment, dim=dim, reverse=reverse)
            T.copy(A_fragment, B[by * block_M, bx * block_N])

    return cumsum


def cumsum_out_of_place_test(M, N, block_M, block_N, dim=0, reverse=False, dtype="float32"):
    @T.prim_func
    def cumsum(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=256) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), dtype)
            B_shared = T.alloc_shared((block_M, block_N), dtype)
            T.copy(A[by * block_M, bx * block_N], A_shared)
            T.cumsum(src=A_shared, dst=B_shared, dim=dim, reverse=reverse)
            T.copy(B_shared, B[by * block_M, bx * block_N])

    return cumsum


def cumsum_smem_test_1d(N, block_N, reverse=False, dtype="float32"):
    @T.prim_func
    def cumsum(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=block_N) as bx:
            A_shared = T.alloc_shared((block_N,), dtype)
            T.copy(A[bx * block_N], A_shared)
            T.cumsum(src=A_shared, dim=0, reverse=reverse)
            T.copy(A_shared, B[bx * block_N])

    return cumsum


def cumsum_fragment_test_1d(N, block_N, reverse=False, dtype="float32"):
    @T.prim_func
    def cumsum(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=block_N) as bx:
            A_shared = T.alloc_shared((block_N,), dtype)
            A_fragment = T.alloc_fragment((block_N,), dtype)
            T.copy(A[bx * block_N], A_shared)
            T.copy(A_shared, A_fragment)
            T.cumsum(src=A_fragment, dim=0, reverse=reverse)
            T.copy(A_fragment, B[bx * block_N])

    return cumsum


def blockwise_cumsum(a, block, dim, reverse=False):
    """numpy's sequential float32 cumsum of every block (TileLang's reference, per block);
    ``reverse``: of the block flipped along ``dim``, flipped back.  A last block may be cut
    short by the tensor's end (TileLang's tail cases)."""
    a = np.asarray(a)
    out = np.empty_like(a)
    if a.ndim == 1:
        block, dim = (1, block[0]), 1
        return blockwise_cumsum(a[None, :], block, dim, reverse)[0]
    bm, bn = block
    for i in range(0, a.shape[0], bm):
        for j in range(0, a.shape[1], bn):
            blk = a[i:i + bm, j:j + bn]
            if reverse:
                blk = np.flip(blk, dim)
            blk = np.cumsum(blk, axis=dim, dtype=a.dtype)
            out[i:i + bm, j:j + bn] = np.flip(blk, dim) if reverse else blk
    return out


def check(art, a, block, dim, dtype, reverse=False):
    got = as_f32(art(a))
    want = blockwise_cumsum(as_f32(a), block, dim, reverse)
    if dtype == "bfloat16":
        want = as_f32(pack_round_bf16(want))
    np.testing.assert_array_equal(got, want)
    # and within TileLang's own tolerance of the exact (float64) sums
    exact = blockwise_cumsum(as_f32(a).astype(np.float64), block, dim, reverse)
    np.testing.assert_allclose(got, exact, atol=1e-3 if dtype == "float32" else 0.1,
                               rtol=1e-3 if dtype == "float32" else 2e-2)


# every (dim, reverse) once (dim 0 forward also in the other tests), every shape once
@pytest.mark.parametrize("M, N, bm, bn, dim, reverse", [
    (128, 128, 64, 64, 1, False),
    (128, 128, 64, 64, 1, True),
    (192, 160, 64, 32, 0, False),
    (256, 64, 128, 64, 0, True),  # four tiles per column: carried over two DST rounds
])
def test_cumsum_smem(M, N, bm, bn, dim, reverse):
    art = tilelang_tt.compile(cumsum_smem_test(M, N, bm, bn, dim, reverse), out_idx=-1)
    code = art.sources["compute.cpp"]
    assert "cumsum_tile_init();" in code and "cumsum_tile(0, 1);" in code
    assert (code.count("transpose_tile(") == 2) == (dim == 1)
    assert (code.count("reshuffle_rows_tile(") == 2) == reverse
    check(art, rand((M, N), "float32", 1), (bm, bn), dim, "float32", reverse)


@pytest.mark.parametrize("dim, reverse", [(1, True)])
def test_cumsum_fragment(dim, reverse):
    art = tilelang_tt.compile(cumsum_fragment_test(128, 128, 64, 64, dim, reverse), out_idx=-1)
    check(art, rand((128, 128), "float32", 2), (64, 64), dim, "float32", reverse)


@pytest.mark.parametrize("dim, reverse", [(1, False), (0, True)])
def test_cumsum_out_of_place(dim, reverse):
    art = tilelang_tt.compile(cumsum_out_of_place_test(128, 96, 64, 32, dim, reverse),
                              out_idx=-1)
    check(art, rand((128, 96), "float32", 3), (64, 32), dim, "float32", reverse)


@pytest.mark.parametrize("scope, reverse", [("smem", False), ("fragment", True)])
def test_cumsum_1d(scope, reverse):
    """A 1-D block copied from a 1-D tensor is a row vector (values in row 0 of its tiles): its
    tiles are transposed, scanned down column 0 from tile to tile, and transposed back."""
    make = cumsum_smem_test_1d if scope == "smem" else cumsum_fragment_test_1d
    art = tilelang_tt.compile(make(512, 64, reverse), out_idx=-1)
    check(art, rand((512,), "float32", 4), (64,), 0, "float32", reverse)


@pytest.mark.parametrize("N, block_N, reverse", [(250, 64, True)])
def test_cumsum_1d_tail(N, block_N, reverse):
    """TileLang's region test: a grid of T.ceildiv blocks, the last one past the tensor's end
    (padded with zeros, which do not change the sums of the elements before them - nor, in
    reverse, after them: the padding is at the end)."""
    art = tilelang_tt.compile(cumsum_smem_test_1d(N, block_N, reverse), out_idx=-1)
    check(art, rand((N,), "float32", 9), (block_N,), 0, "float32", reverse)


@pytest.mark.parametrize("dim, reverse", [(1, True)])  # transposed, reversed, packed
def test_cumsum_bfloat16(dim, reverse):
    art = tilelang_tt.compile(cumsum_smem_test(128, 128, 64, 64, dim, reverse, "bfloat16"),
                              out_idx=-1)
    assert compute_config(art)["fp32_dest_acc_en"]  # the sums are stored to DST in float32
    check(art, rand((128, 128), "bfloat16", 5), (64, 64), dim, "bfloat16", reverse)


def test_cumsum_16bit_dst_truncates_each_stored_sum():
    """With a 16-bit DST, SFPSTORE truncates each running sum to bfloat16; the running total
    carried in the SFPU register stays float32, so later rows are not affected by earlier
    truncations (the row reversals move bfloat16 values exactly; a forward scan makes the same
    stores, not reordered)."""
    reverse = True
    art = tilelang_tt.compile(cumsum_smem_test(128, 64, 64, 64, 0, reverse, "bfloat16"),
                              out_idx=-1, pass_configs={"tt.fp32_dest_acc_en": False})
    assert not compute_config(art)["fp32_dest_acc_en"]
    a = rand((128, 64), "bfloat16", 6)
    got = as_f32(art(a))
    sums = blockwise_cumsum(as_f32(a), (64, 64), 0, reverse)
    want = (sums.view(np.uint32) & 0xFFFF0000).view(np.float32)
    np.testing.assert_array_equal(got, want)
    assert not np.array_equal(got, as_f32(pack_round_bf16(sums)))  # the mode is observable


def test_cumsum_column_vector_of_a_row_reduction():
    """A 1-D fragment a row reduction made is a column vector (values in column 0): scanned
    down its tiles directly."""
    @T.prim_func
    def k(X: T.Tensor((128, 64), "float32"), R: T.Tensor((128,), "float32")):
        with T.Kernel(2, threads=128) as by:
            X_s = T.alloc_shared((64, 64), "float32")
            r = T.alloc_fragment((64,), "float32")
            T.copy(X[by * 64, 0], X_s)
            T.reduce_max(X_s, r, dim=1)
            T.cumsum(r)
            T.copy(r, R[by * 64])

    art = tilelang_tt.compile(k, out_idx=-1)
    code = art.sources["compute.cpp"]
    assert code.count("cumsum_tile(") == 2  # one column of two tiles: first, then carried
    x = rand((128, 64), "float32", 7)
    got = as_f32(art(x))
    # a float32 max is exact (the vector engine's sfpu_reduce)
    np.testing.assert_array_equal(got, blockwise_cumsum(x.max(axis=1), (64,), 0))


def scan_picked_as_a_value(op, dim, reverse):
    """TileLang's scan tests pick the scan as a value inside the kernel."""
    @T.prim_func
    def main(A: T.Tensor((64, 96), "float32"), B: T.Tensor((64, 96), "float32")):
        with T.Kernel(1, threads=128):
            A_shared = T.alloc_shared((64, 96), "float32")
            T.copy(A, A_shared)
            scan = T.cumsum if op == "cumsum" else T.cummax
            scan(src=A_shared, dim=dim, reverse=reverse)
            T.copy(A_shared, B)

    return main


def test_scan_picked_as_a_value():
    dim, reverse = 1, False
    art = tilelang_tt.compile(scan_picked_as_a_value("cumsum", dim, reverse), out_idx=-1)
    check(art, rand((64, 96), "float32", 11), (64, 96), dim, "float32", reverse)
    with pytest.raises(TTUnsupportedError, match="T.cummax is not supported"):
        scan_picked_as_a_value("cummax", dim, reverse)


def test_cumsum_of_a_gemm_accumulator():
    """A scan of a T.gemm accumulator (chunked linear-attention style: prefix sums of a
    product) reads it packed into a block and writes a new block."""
    @T.prim_func
    def k(A: T.Tensor((64, 64), "bfloat16"), B: T.Tensor((64, 64), "bfloat16"),
          C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as _:
            A_s = T.alloc_shared((64, 64), "bfloat16")
            B_s = T.alloc_shared((64, 64), "bfloat16")
            acc = T.alloc_fragment((64, 64), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, acc, clear_accum=True)
            T.cumsum(acc, dim=0)
            T.copy(acc, C)

    art = tilelang_tt.compile(k, out_idx=-1)
    rng = np.random.default_rng(10)
    # small integers: the product and every prefix sum are exact in any precision used here
    a, b = (rng.integers(-3, 4, (64, 64)).astype(np.float32).astype(BF16) for _ in range(2))
    want = np.cumsum(as_f32(a) @ as_f32(b), axis=0)
    np.testing.assert_array_equal(as_f32(art(a, b)), want)


def test_emulator_refuses_row_indices_outside_l1():
    """reshuffle_rows_tile reads its 32 row indices from L1 (at idx_addr + 16): an address
    outside the core's L1 is refused, naming the call."""
    from tilelang_tt import Artifact

    art = tilelang_tt.compile(cumsum_smem_test(64, 32, 64, 32, 0, True), out_idx=-1)
    src = art.sources["compute.cpp"]
    assert src.count(", 0) - 16u);") == 2
    sources = dict(art.sources)
    sources["compute.cpp"] = src.replace(", 0) - 16u);", ", 0) - 4194304u);", 1)
    faulty = Artifact(sources=sources, plan=art.plan, module=art.module, out_idx=art.out_idx)
    with pytest.raises(TTRuntimeError) as info:
        faulty(rand((64, 32), "float32", 8))
    msg = str(info.value)
    assert "reshuffle_rows_tile(0, " in msg and "not in this core's L1" in msg
    # the row order's address is that of a tile the kernel waited for
    sources["compute.cpp"] = src.replace("_cb, 0) - 16u);", "_cb, 1) - 16u);", 1)
    faulty = Artifact(sources=sources, plan=art.plan, module=art.module, out_idx=art.out_idx)
    with pytest.raises(TTRuntimeError) as info:
        faulty(rand((64, 32), "float32", 8))
    msg = str(info.value)
    assert "get_tile_address(" in msg and "cb_wait_front guaranteed 1 page(s)" in msg


def test_cummax_is_refused_naming_the_line():
    with pytest.raises(TTUnsupportedError) as info:
        @T.prim_func
        def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
            with T.Kernel(1) as _:
                A_shared = T.alloc_shared((64, 64), "float32")
                T.copy(A, A_shared)
                T.cummax(src=A_shared, dim=0)
                T.copy(A_shared, B)
    msg = str(info.value)
    assert "T.cummax" in msg and "no running-maximum" in msg and f"{HERE}:" in msg


def test_cumsum_of_part_of_a_block():
    """TileLang's strided-region scans (``big[0:M, 0:N]`` of a wider block): a tile-aligned
    part is a block of its own (A0.1.0.0), the other part only filled (dead)."""
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1) as _:
            big = T.alloc_shared((64, 128), "float32")
            T.fill(big, 0.0)
            T.copy(A, big[0:64, 0:64])
            T.cumsum(src=big[0:64, 0:64], dim=0)
            T.copy(big[0:64, 0:64], B)

    with pytest.warns(Warning, match="big_c64_128 is written but never read"):
        kernel = tilelang_tt.compile(k, out_idx=-1)
    a = np.random.default_rng(3).standard_normal((64, 64)).astype(np.float32)
    np.testing.assert_array_equal(kernel(a), np.cumsum(a, axis=0))


def test_cumsum_dim_out_of_range_is_refused():
    with pytest.raises(TTCompileError) as info:
        @T.prim_func
        def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
            with T.Kernel(1) as _:
                A_shared = T.alloc_shared((64, 64), "float32")
                T.copy(A, A_shared)
                T.cumsum(src=A_shared, dim=2)
                T.copy(A_shared, B)
    assert "dim 2 is out of bounds" in str(info.value) and f"{HERE}:" in str(info.value)


def test_emulator_refuses_another_sfpu_op_between_the_calls_of_one_column():
    """The running totals live in SFPU registers: an SFPU op between two cumsum_tile calls of
    one column loses them; the emulator names the core, kernel and call."""
    from tilelang_tt import Artifact

    art = tilelang_tt.compile(cumsum_smem_test(64, 32, 64, 32, 0), out_idx=-1)
    src = art.sources["compute.cpp"]
    old = "cumsum_tile(0, 1);"
    assert old in src and "cumsum_tile(1, 0);" in src
    sources = dict(art.sources)
    sources["compute.cpp"] = src.replace(
        '#include "api/compute/cumsum.h"',
        '#include "api/compute/cumsum.h"\n#include "api/compute/eltwise_unary/fill.h"').replace(
        old, old + " fill_tile_init(); fill_tile(2, 0.0f); cumsum_tile_init();")
    faulty = Artifact(sources=sources, plan=art.plan, module=art.module, out_idx=art.out_idx)
    with pytest.raises(TTRuntimeError) as info:
        faulty(rand((64, 32), "float32", 8))
    msg = str(info.value)
    assert "cumsum_tile(1, 0)" in msg and "running column totals are gone" in msg
    assert "compute.cpp" in msg and re.search(r"core \(?\d+\s*,\s*\d+\)?", msg)
