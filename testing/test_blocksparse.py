"""Branches on tensor elements: TileLang's block-sparse GEMM (examples/blocksparse_gemm), whose
K loop skips the steps a mask tensor turns off (``if BlockMask[by, bx, k]:``).  The mask is a
DRAM buffer of 32-bit words; the reader reads each element and hands it to the compute kernel
through a circular buffer, so both take the same branch (docs/SUPPORT.md "Branches on tensor
elements")."""

import numpy as np
import pytest

import tilelang_tt as tilelang
import tilelang_tt.language as T
from helpers import as_f32, assert_matmul, rand
from tilelang_tt import TTUnsupportedError


@tilelang.jit(out_idx=[-1])
def blocksparse_matmul(M, N, K, block_M, block_N, block_K, num_stages=2, dtype="float16",
                       accum_dtype="float32", mask_dtype="bool"):
    block_mask_shape = (M // block_M, N // block_N, K // block_K)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             BlockMask: T.Tensor(block_mask_shape, mask_dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            C_shared = T.alloc_shared((block_M, block_N), dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                if BlockMask[by, bx, k]:
                    T.copy(A[by * block_M, k * block_K], A_shared)
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                    T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C_shared)
            T.copy(C_shared, C[by * block_M, bx * block_N])

    return main


def check_blocksparse(c, a, b, mask, block_M, block_N, block_K, kernel):
    """Each output block within the matrix engine's bound of the sum of its taken K steps."""
    for i in range(mask.shape[0]):
        for j in range(mask.shape[1]):
            rows = slice(i * block_M, (i + 1) * block_M)
            cols = slice(j * block_N, (j + 1) * block_N)
            a_ij = as_f32(a[rows]).copy()
            for k in range(mask.shape[2]):
                if not mask[i, j, k]:
                    a_ij[:, k * block_K:(k + 1) * block_K] = 0
            assert_matmul(np.asarray(c)[rows, cols], a_ij.astype(np.asarray(a).dtype),
                          b[:, cols], kernel)


def masks(shape, seed):
    rng = np.random.default_rng(seed)
    random = rng.random(shape) > 0.5
    rows_off = random.copy()
    rows_off[0] = False  # a whole row of output blocks computes nothing: zeros
    return {"random": random, "all": np.ones(shape, bool), "rows_off": rows_off,
            "none": np.zeros(shape, bool)}


# 64x64 blocks: the fp32 accumulator (4 tiles) stays in DST; 128x128: it spills to a partials
# CB and every taken K step reloads it.  Each dtype once (the mask reads do not depend on it);
# 2 x 2 output blocks of 8 K steps.
@pytest.mark.parametrize("block, dtype", [((64, 64, 32), "float16"), ((128, 128, 32), "bfloat16")],
                         ids=["dst-float16", "spilled-bfloat16"])
def test_blocksparse_gemm(block, dtype):
    bm, bn, bk = block
    M, N, K = 2 * bm, 2 * bn, 256
    kernel = blocksparse_matmul(M, N, K, bm, bn, bk, dtype=dtype)
    tensors = {t["name"]: t for t in kernel.plan["tensors"]}
    assert tensors["BlockMask"]["scalars"] and tensors["BlockMask"]["page_bytes"] == 64
    cbs = {c["name"]: c for c in kernel.plan["circular_buffers"]}
    assert cbs["BlockMask_value"]["producer"] == "reader"
    assert cbs["BlockMask_value"]["consumer"] == "compute"
    assert "read_tile_value(BlockMask_value_cb" in kernel.sources["compute.cpp"]
    a, b = rand((M, K), dtype, 1), rand((K, N), dtype, 2)
    for name, mask in masks((M // bm, N // bn, K // bk), 3).items():
        c = kernel(a, b, mask)
        check_blocksparse(c, a, b, mask, bm, bn, bk, kernel)
        if name == "none":
            assert not as_f32(c).any()
        if name == "rows_off":
            assert not as_f32(c)[:bm].any()


# a 32-bit and a signed 8-bit mask (an unsigned 8-bit one: test_blocksparse_attention.py's
# uint8 mask, and bool here)
@pytest.mark.parametrize("mask_dtype", ["int32", "int8"])
def test_blocksparse_gemm_integer_masks(mask_dtype):
    M, N, K, bm, bn, bk = 128, 128, 256, 64, 64, 32
    kernel = blocksparse_matmul(M, N, K, bm, bn, bk, dtype="bfloat16", mask_dtype=mask_dtype)
    rng = np.random.default_rng(5)
    values = rng.integers(0, 3, (M // bm, N // bn, K // bk))
    if mask_dtype != "uint8":
        values = values * rng.choice([-1, 1], values.shape)  # negative values are taken too
    mask = values.astype(mask_dtype)
    a, b = rand((M, K), "bfloat16", 6), rand((K, N), "bfloat16", 7)
    c = kernel(a, b, mask)
    check_blocksparse(c, a, b, mask != 0, bm, bn, bk, kernel)


def test_mask_and_index_condition():
    """A condition combining a tensor element, a comparison of it and the loop variable."""
    M, N, K, bm, bn, bk = 128, 128, 256, 64, 64, 32

    @T.prim_func
    def main(A: T.Tensor((M, K), "bfloat16"), B: T.Tensor((K, N), "bfloat16"),
             Steps: T.Tensor((M // bm, N // bn), "int32"), C: T.Tensor((M, N), "bfloat16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_shared = T.alloc_shared((bm, bk), "bfloat16")
            B_shared = T.alloc_shared((bk, bn), "bfloat16")
            C_local = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_local)
            for k in T.Pipelined(K // bk, num_stages=2):
                if k < Steps[by, bx] and Steps[by, bx] > 1:
                    T.copy(A[by * bm, k * bk], A_shared)
                    T.copy(B[k * bk, bx * bn], B_shared)
                    T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * bm, bx * bn])

    kernel = tilelang.compile(main, out_idx=[-1])
    # one value CB per element read, however often the condition names it
    assert [c["name"] for c in kernel.plan["circular_buffers"]].count("Steps_value") == 1
    steps = np.array([[8, 1], [-3, 5]], np.int32)
    a, b = rand((M, K), "bfloat16", 8), rand((K, N), "bfloat16", 9)
    c = kernel(a, b, steps)
    mask = np.zeros((2, 2, K // bk), bool)
    for i in range(2):
        for j in range(2):
            mask[i, j, :max(steps[i, j], 0)] = steps[i, j] > 1
    check_blocksparse(c, a, b, mask, bm, bn, bk, kernel)


def _refused(func, *needles):
    with pytest.raises(TTUnsupportedError) as info:
        tilelang.compile(func, out_idx=[-1])
    text = str(info.value)
    for n in needles:
        assert n in text, text
    return text


def test_refuses_element_as_store_index():
    """An element placing a block *read* is read by the reader before it (a gather:
    testing/test_grouped_gemm.py); one placing a store, unbounded, is refused."""
    @T.prim_func
    def main(A: T.Tensor((128, 64), "bfloat16"), Idx: T.Tensor((4,), "int32"),
             C: T.Tensor((128, 64), "bfloat16")):
        with T.Kernel(4, threads=128) as bx:
            S = T.alloc_shared((32, 64), "bfloat16")
            T.copy(A[bx * 32, 0], S)
            T.copy(S, C[Idx[bx] * 32, 0])

    _refused(main, "Idx", "test_blocksparse.py")


def test_element_as_parallel_extent():
    """A serial loop's extent may read an element (testing/test_element_extents.py); a
    T.Parallel extent reading one is a guard of the rows (A0.1.0.1), whose mask the reader
    computes from the element (docs/SUPPORT.md "Rows off a tile boundary": masks reading
    the lengths)."""
    @T.prim_func
    def main(A: T.Tensor((128, 64), "bfloat16"), Lens: T.Tensor((4,), "int32"),
             C: T.Tensor((32, 64), "bfloat16")):
        with T.Kernel(1, threads=128) as bx:
            Acc = T.alloc_fragment((32, 64), "float32")
            T.clear(Acc)
            for i, j in T.Parallel(T.min(Lens[bx], 32), 64):
                Acc[i, j] = A[i, j]
            T.copy(Acc, C[0, 0])

    kernel = tilelang.compile(main, out_idx=[-1])
    a = rand((128, 64), "bfloat16", 1)
    for n in (0, 5, 40):
        c = as_f32(kernel(a, np.array([n, 0, 0, 0], np.int32)))
        want = np.zeros((32, 64))
        want[:min(n, 32)] = as_f32(a)[:min(n, 32)]
        np.testing.assert_array_equal(c, want)


def test_refuses_element_in_parallel():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "bfloat16"), Flags: T.Tensor((64,), "int32"),
             C: T.Tensor((64, 64), "bfloat16")):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            for i, j in T.Parallel(32, 32):
                C[by * 32 + i, bx * 32 + j] = T.if_then_else(
                    Flags[by * 32 + i] > 0, A[by * 32 + i, bx * 32 + j], 0)

    _refused(main, "tensor Flags (int32) is read as blocks", "test_blocksparse.py")


@pytest.mark.parametrize("flags_dtype", ["bool", "int32"])
def test_branch_with_writer_work(flags_dtype):
    """``if Flags[bx]:`` around a copy in, an elementwise op and a copy out: the reader, the
    compute kernel and the writer all take the branch (the writer gets the element through a
    CB of its own)."""
    M, N, bm = 128, 64, 32

    @T.prim_func
    def main(A: T.Tensor((M, N), "bfloat16"), Flags: T.Tensor((M // bm,), flags_dtype),
             C: T.Tensor((M, N), "bfloat16")):
        with T.Kernel(M // bm, threads=128) as bx:
            S = T.alloc_shared((bm, N), "bfloat16")
            D = T.alloc_shared((bm, N), "bfloat16")
            if Flags[bx]:
                T.copy(A[bx * bm, 0], S)
                for i, j in T.Parallel(bm, N):
                    D[i, j] = S[i, j] + S[i, j]
                T.copy(D, C[bx * bm, 0])

    kernel = tilelang.compile(main, out_idx=[-1])
    cbs = {c["name"]: c for c in kernel.plan["circular_buffers"]}
    assert (cbs["Flags_value_w"]["producer"], cbs["Flags_value_w"]["consumer"]) == \
        ("reader", "writer")
    a = rand((M, N), "bfloat16", 10)
    flags = np.array([1, 0, 1, 1]).astype(flags_dtype)
    c = as_f32(kernel(a, flags))
    taken = np.repeat(flags != 0, bm)
    # rows of blocks not taken are never written (TileLang's T.empty output: undefined there)
    np.testing.assert_array_equal(c[taken], 2 * as_f32(a)[taken])


def test_tilelang_utils_tensor():
    """What examples/blocksparse_gemm imports from tilelang.utils.tensor."""
    from tilelang_tt.utils.tensor import TensorSupplyType, get_tensor_supply, torch_assert_close

    assert TensorSupplyType is tilelang.TensorSupplyType and callable(torch_assert_close)

    class Param:  # TileLang's KernelParam: a shape and a dtype
        shape, dtype = (4, 8), "float16"

    x = np.asarray(get_tensor_supply(TensorSupplyType.Uniform)(Param()))
    assert x.shape == (4, 8) and x.dtype == np.float16 and (np.abs(x) <= 1).all() and x.any()
    ints = np.asarray(get_tensor_supply()(np.zeros((3, 5), np.int32)))  # Integer by default
    assert ints.dtype == np.int32 and set(np.unique(ints)) <= set(range(-2, 3))
    with pytest.raises(TTUnsupportedError, match="tilelang.utils.tensor.map_torch_type"):
        from tilelang_tt.utils.tensor import map_torch_type
        map_torch_type("float16")


@tilelang.jit(out_idx=[-1])
def checkerboard_matmul(M, N, K, block_M, block_N, block_K, dtype="bfloat16",
                        accum_dtype="float32"):
    """A K step taken by a condition of indices alone: before, a spilled accumulator took its
    first and last step from `k == 0` / `k == last` and deadlocked when those were skipped."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                if (bx + by + k) % 3 == 1:
                    T.copy(A[by * block_M, k * block_K], A_shared)
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                    T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


@pytest.mark.parametrize("accum_dtype", ["float32", "bfloat16"])
def test_index_condition_spilled_accumulator(accum_dtype):
    M, N, K, bm, bn, bk = 256, 256, 256, 128, 128, 32
    kernel = checkerboard_matmul(M, N, K, bm, bn, bk, accum_dtype=accum_dtype)
    (plan,) = kernel.plan["kernels"]["compute"]["dst_plan"]
    assert plan["conditional"] and plan["spill_cb"] >= 0
    a, b = rand((M, K), "bfloat16", 11), rand((K, N), "bfloat16", 12)
    c = kernel(a, b)
    mask = np.array([[[(j + i + k) % 3 == 1 for k in range(K // bk)] for j in range(N // bn)]
                     for i in range(M // bm)])
    if accum_dtype == "float32":
        check_blocksparse(c, a, b, mask, bm, bn, bk, kernel)
    else:  # bfloat16 partials round after every taken step: compare with that
        ref = np.zeros((M, N), np.float32)
        for i in range(M // bm):
            for j in range(N // bn):
                rows, cols = slice(i * bm, (i + 1) * bm), slice(j * bn, (j + 1) * bn)
                for k in np.flatnonzero(mask[i, j]):
                    ks = slice(k * bk, (k + 1) * bk)
                    ref[rows, cols] += as_f32(a)[rows, ks] @ as_f32(b)[ks, cols]
        np.testing.assert_allclose(as_f32(c), ref, rtol=2e-2, atol=2e-2 * np.abs(ref).max())
