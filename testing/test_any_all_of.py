"""``T.any_of`` / ``T.all_of``: TileLang's block-sparse GEMM guarded by the OR (AND) of a mask
slice (testing/python/language/test_tilelang_language_any_of.py, in our idiom at small sizes).
The call is unrolled into one test per element (``M[.., 0] or M[.., 1] ..``), so the mask is
a scalar tensor read by element (docs/SUPPORT.md "Branches on tensor elements"); the mask
copied into a shared or local buffer by a serial loop is read from the tensor (A0.1.4.1)."""

import numpy as np
import pytest

import tilelang_tt as tilelang
import tilelang_tt.language as T
from helpers import as_f32, assert_matmul, rand
from tilelang_tt import TTArgumentError, TTUnsupportedError

M = N = 128
K = 128
BM, BN, BK = 64, 64, 32


def blocksparse(cd, dtype, form, op, mask_dtype="bool"):
    """``form``: "global" (``op(BlockMask[by, bx, k, :])``), "shared" / "local" (the slice
    copied element by element into a buffer first, then ``op(buffer)`` / ``op(buffer[0:cd])``),
    "fragment" (the slice copied by ``T.copy`` into a fragment, then ``op(fragment)``)."""
    shape = (M // BM, N // BN, K // BK, cd)
    test = T.any_of if op == "any" else T.all_of

    @T.prim_func
    def main_global(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
                    BlockMask: T.Tensor(shape, mask_dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=128) as (bx, by):
            A_shared = T.alloc_shared((BM, BK), dtype)
            B_shared = T.alloc_shared((BK, BN), dtype)
            C_local = T.alloc_fragment((BM, BN), "float32")
            C_shared = T.alloc_shared((BM, BN), dtype)
            T.use_swizzle(panel_size=10, enable=True)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, BK), num_stages=2):
                if test(BlockMask[by, bx, k, :]):
                    T.copy(A[by * BM, k * BK], A_shared)
                    T.copy(B[k * BK, bx * BN], B_shared)
                    T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C_shared)
            T.copy(C_shared, C[by * BM, bx * BN])

    @T.prim_func
    def main_shared(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
                    BlockMask: T.Tensor(shape, mask_dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=128) as (bx, by):
            A_shared = T.alloc_shared((BM, BK), dtype)
            B_shared = T.alloc_shared((BK, BN), dtype)
            C_local = T.alloc_fragment((BM, BN), "float32")
            block_mask_shared = T.alloc_shared(cd, mask_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, BK), num_stages=2):
                for i in T.serial(cd):
                    block_mask_shared[i] = BlockMask[by, bx, k, i]
                if test(block_mask_shared):
                    T.copy(A[by * BM, k * BK], A_shared)
                    T.copy(B[k * BK, bx * BN], B_shared)
                    T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * BM, bx * BN])

    @T.prim_func
    def main_local(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
                   BlockMask: T.Tensor(shape, mask_dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=128) as (bx, by):
            A_shared = T.alloc_shared((BM, BK), dtype)
            B_shared = T.alloc_shared((BK, BN), dtype)
            C_local = T.alloc_fragment((BM, BN), "float32")
            block_mask_local = T.alloc_local(cd, mask_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, BK), num_stages=2):
                for i in T.serial(cd):
                    block_mask_local[i] = BlockMask[by, bx, k, i]
                if test(block_mask_local[0:cd]):
                    T.copy(A[by * BM, k * BK], A_shared)
                    T.copy(B[k * BK, bx * BN], B_shared)
                    T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * BM, bx * BN])

    @T.prim_func
    def main_fragment(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
                      BlockMask: T.Tensor(shape, mask_dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=128) as (bx, by):
            A_shared = T.alloc_shared((BM, BK), dtype)
            B_shared = T.alloc_shared((BK, BN), dtype)
            C_local = T.alloc_fragment((BM, BN), "float32")
            block_mask = T.alloc_fragment((cd,), mask_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, BK), num_stages=2):
                T.copy(BlockMask[by, bx, k, :], block_mask)
                if test(block_mask):
                    T.copy(A[by * BM, k * BK], A_shared)
                    T.copy(B[k * BK, bx * BN], B_shared)
                    T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * BM, bx * BN])

    return {"global": main_global, "shared": main_shared, "local": main_local,
            "fragment": main_fragment}[form]


def random_mask(cd, seed, mask_dtype):
    """Per K step one of: every element false, every element true, some true (at least one
    true and one false), each kind at least once."""
    rng = np.random.default_rng(seed)
    steps = (M // BM, N // BN, K // BK)
    kind = rng.integers(0, 3, steps)
    kind.flat[:3] = [0, 1, 2]
    mask = np.zeros(steps + (cd,), bool)
    for idx in np.ndindex(steps):
        if kind[idx] == 1:
            mask[idx] = True
        elif kind[idx] == 2:
            row = rng.random(cd) > 0.5
            row[0], row[-1] = False, True
            mask[idx] = rng.permutation(row)
    if mask_dtype == "bool":
        return mask
    # nonzero is true, negative values too
    return (mask * rng.choice([-3, 1, 2], mask.shape)).astype(mask_dtype)


CASES = [  # form, op, dtype, condition_dim, mask dtype
    ("global", "any", "float16", 2, "bool"),
    ("global", "all", "bfloat16", 3, "bool"),
    ("shared", "any", "bfloat16", 4, "bool"),
    ("local", "all", "float16", 2, "int8"),
    ("fragment", "all", "bfloat16", 3, "uint8"),
]


@pytest.mark.parametrize("form,op,dtype,cd,mask_dtype", CASES,
                         ids=["-".join(map(str, c)) for c in CASES])
def test_any_all_of_blocksparse_gemm(form, op, dtype, cd, mask_dtype):
    kernel = tilelang.compile(blocksparse(cd, dtype, form, op, mask_dtype), out_idx=[-1])
    # the mask is a scalar tensor; the shared / local buffer is gone
    tensors = {t["name"]: t for t in kernel.plan["tensors"]}
    assert tensors["BlockMask"]["scalars"]
    names = [c["name"] for c in kernel.plan["circular_buffers"]]
    assert names.count("BlockMask_value") == cd, names
    assert not any("block_mask" in n for n in names), names
    a, b = rand((M, K), dtype, 1), rand((K, N), dtype, 2)
    mask = random_mask(cd, 3, mask_dtype)
    taken = (mask != 0).any(-1) if op == "any" else (mask != 0).all(-1)
    assert taken.any() and not taken.all()
    c = kernel(a, b, mask)
    for i in range(M // BM):
        for j in range(N // BN):
            rows, cols = slice(i * BM, (i + 1) * BM), slice(j * BN, (j + 1) * BN)
            a_ij = as_f32(a[rows]).copy()
            for k in range(K // BK):
                if not taken[i, j, k]:
                    a_ij[:, k * BK:(k + 1) * BK] = 0
            assert_matmul(np.asarray(c)[rows, cols], a_ij.astype(np.asarray(a).dtype),
                          b[:, cols], kernel)
            if not taken[i, j].any():
                assert not as_f32(c)[rows, cols].any()


def test_any_of_refusals():
    n = T.dynamic("n")

    with pytest.raises(TTUnsupportedError) as info:
        @T.prim_func
        def symbolic(Mask: T.Tensor((4, n), "bool"), C: T.Tensor((128, 64), "float32")):
            with T.Kernel(4, threads=128) as bx:
                S = T.alloc_fragment((32, 64), "float32")
                T.fill(S, 1)
                if T.any_of(Mask[bx, :]):
                    T.copy(S, C[bx * 32, 0])
    text = str(info.value)
    assert "T.any_of(Mask[...])" in text and "n" in text and "not a constant" in text, text
    assert "test_any_all_of.py" in text, text

    with pytest.raises(TTArgumentError, match=r"T.all_of\(Mask\[...\]\).*single element"):
        @T.prim_func
        def element(Mask: T.Tensor((4, 4), "bool"), C: T.Tensor((128, 64), "float32")):
            with T.Kernel(4, threads=128) as bx:
                S = T.alloc_fragment((32, 64), "float32")
                T.fill(S, 1)
                if T.all_of(Mask[bx, 0]):
                    T.copy(S, C[bx * 32, 0])

    # condition_dim 1: a one-element local buffer filled by a loop of one iteration is a
    # scalar assigned once when A0.1 unrolls the loop (it was refused as assigned in a loop):
    # the condition reads the mask element itself, as the global slice's does (run above)
    kernel = tilelang.compile(blocksparse(1, "bfloat16", "local", "any"), out_idx=[-1])
    assert {t["name"]: t for t in kernel.plan["tensors"]}["BlockMask"]["scalars"]
    names = [c["name"] for c in kernel.plan["circular_buffers"]]
    assert names.count("BlockMask_value") == 1 and not any("block_mask" in n for n in names)
