"""Blocks of fewer than 32 columns (A0.0 CoarsenRowBlocksTT, its column case): kernels written
as TileLang's tests write them with ``block_N = 16`` or 2-D blocks of 16x16 / 8x8 (elementwise,
``T.copy``, atomics, a GEMM's N) run on the emulator and match numpy; the kernel becomes the one
written with 32-column blocks; kernels whose columns meet, or whose grid does not cover whole
tiles while a tensor has columns past it, get a TTLayoutError naming the buffer or op and the
line."""

import ml_dtypes
import numpy as np
import pytest
import tvm_ffi

import kernels
import tilelang_tt as tilelang
import tilelang_tt.language as T
from tilelang_tt import attrs
from tilelang_tt.errors import TTLayoutError
from tilelang_tt.passes.common import to_py

RNG = np.random.default_rng(11)


def _lowered(func):
    (f,) = tilelang.lower(func, stop_after="A0.0").functions.values()
    return f


# ---- TileLang's kernel shapes, as its tests write them ----------------------------------------
def elementwise_add(M, N, block_M, block_N, in_dtype="float32", out_dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, N), in_dtype), B: T.Tensor((M, N), in_dtype),
             C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), in_dtype)
            B_shared = T.alloc_shared((block_M, block_N), in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), out_dtype)
            T.copy(A[by * block_M, bx * block_N], A_shared)
            T.copy(B[by * block_M, bx * block_N], B_shared)
            for i, j in T.Parallel(block_M, block_N):
                C_local[i, j] = A_shared[i, j] + B_shared[i, j]
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def tilelang_copy(M, N, block_M, block_N, dtype="float16"):
    """TileLang's testing/python/language/test_tilelang_language_copy.py kernel."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            T.copy(
                A[by * block_M:(by + 1) * block_M, bx * block_N:(bx + 1) * block_N],
                B[by * block_M:(by + 1) * block_M, bx * block_N:(bx + 1) * block_N],
            )

    return main


def copy_with_parallel(M, N, block_M, block_N, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                B[by * block_M + i, bx * block_N + j] = A[by * block_M + i, bx * block_N + j]

    return main


def atomic_program(K, M, N, block_M, block_N, op="add", dtype="float32"):
    """TileLang's atomic_add_program / atomic_max_program (test_tilelang_language_atomic.py)."""
    atomic = {"add": T.atomic_add, "max": T.atomic_max, "min": T.atomic_min}[op]

    @T.prim_func
    def main(A: T.Tensor((K, M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), K, threads=32) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_N), dtype)
            T.copy(A[bz, bx * block_M:(bx + 1) * block_M, by * block_N:(by + 1) * block_N],
                   A_shared)
            for i, j in T.Parallel(block_M, block_N):
                atomic(B[bx * block_M + i, by * block_N + j], A_shared[i, j])

    return main


def atomic_different_memory_orders_program(M, N, block_M, block_N, dtype="float32"):
    """TileLang's kernel of that name: indices bound to locals and guarded in the T.Parallel
    body."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype),
             C: T.Tensor((M, N), dtype), D: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), threads=32) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                idx_i = bx * block_M + i
                idx_j = by * block_N + j
                if idx_i < M and idx_j < N:
                    val = A[idx_i, idx_j]
                    T.atomic_add(B[idx_i, idx_j], val, memory_order="release")
                    T.atomic_max(C[idx_i, idx_j], val, memory_order="relaxed")
                    T.atomic_min(D[idx_i, idx_j], val, memory_order="relaxed")

    return main


def atomic_load_store_program(M, N, block_M, block_N, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), T.ceildiv(N, block_N), threads=32) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                idx_i = bx * block_M + i
                idx_j = by * block_N + j
                if idx_i < M and idx_j < N:
                    val = T.atomic_load(A[idx_i, idx_j])
                    T.atomic_store(B[idx_i, idx_j], val)

    return main


def matmul(M, N, K, block_M, block_N, block_K, dtype="bfloat16", accum_dtype="float32",
           trans_B=False):
    B_shape = (N, K) if trans_B else (K, N)
    B_shared_shape = (block_N, block_K) if trans_B else (block_K, block_N)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor(B_shape, dtype),
             C: T.Tensor((M, N), accum_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared(B_shared_shape, dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                if trans_B:
                    T.copy(B[bx * block_N, ko * block_K], B_shared)
                else:
                    T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=trans_B)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


# ---- on the emulator ------------------------------------------------------------------------
# (8, 8) and (32, 16) become the very kernel (16, 16) becomes, that of 32x32 blocks
# (test_small_blocks_become_the_32_wide_kernel)
@pytest.mark.parametrize("block_M,block_N", [(16, 16), (64, 8)])
def test_elementwise_add_small_blocks(block_M, block_N):
    M, N = 64, 128
    kernel = tilelang.compile(elementwise_add(M, N, block_M, block_N), out_idx=[2])
    a = RNG.standard_normal((M, N)).astype(np.float32)
    b = RNG.standard_normal((M, N)).astype(np.float32)
    np.testing.assert_allclose(kernel(a, b), a + b, rtol=1e-6, atol=1e-6)
    # 32-column (and 32-row, or the kernel's own block_M >= 32) blocks
    assert kernel.plan["grid"] == [N // 32, M // max(block_M, 32), 1]


@pytest.mark.parametrize("M,N,block_M,block_N", [(64, 48, 32, 16), (64, 64, 16, 16)])
def test_tilelang_elementwise_example_small_blocks(M, N, block_M, block_N):
    """TileLang's elementwise example form (``start_x = bx * block_N``, ``x = start_x +
    local_x``, T.Parallel over the tensors), bfloat16."""
    kernel = tilelang.compile(kernels.elementwise_add(M, N, block_M, block_N), out_idx=[2])
    a = RNG.standard_normal((M, N)).astype(ml_dtypes.bfloat16)
    b = RNG.standard_normal((M, N)).astype(ml_dtypes.bfloat16)
    np.testing.assert_allclose(kernel(a, b).astype(np.float32),
                               a.astype(np.float32) + b.astype(np.float32), rtol=1e-2, atol=1e-2)
    assert kernel.plan["grid"] == [-(-N // 32), M // 32, 1]


@pytest.mark.parametrize("block_N", [16, 8])
def test_tilelang_copy_block_n_16(block_N):
    M, N = 64, 96
    kernel = tilelang.compile(tilelang_copy(M, N, 32, block_N), out_idx=[1])
    a = RNG.standard_normal((M, N)).astype(np.float16)
    np.testing.assert_array_equal(kernel(a), a)
    assert kernel.plan["grid"] == [N // 32, M // 32, 1]


def test_copy_with_parallel_16x16():
    M, N = 64, 64
    kernel = tilelang.compile(copy_with_parallel(M, N, 16, 16), out_idx=[1])
    a = RNG.standard_normal((M, N)).astype(np.float16)
    np.testing.assert_array_equal(kernel(a), a)


@pytest.mark.parametrize("block,op", [(16, "add"), (8, "max")])
def test_atomic_small_blocks(block, op):
    """TileLang's atomic_add (its 16x16 test_atomic_memory_order sizes) and atomic_max: every
    bz adds (or maxes) its slice of A into B (atomic_min, the same path with another kind:
    test_atomic_guarded_small_blocks)."""
    K, M, N = 4, 64, 64
    kernel = tilelang.compile(atomic_program(K, M, N, block, block, op))
    a = RNG.standard_normal((K, M, N)).astype(np.float32)
    start = {"add": 0.0, "max": -np.inf, "min": np.inf}[op]
    b = np.full((M, N), 0.0 if op == "add" else start, np.float32)
    if op != "add":
        b = RNG.standard_normal((M, N)).astype(np.float32)
    expected = {"add": b + a.sum(0), "max": np.maximum(b, a.max(0)),
                "min": np.minimum(b, a.min(0))}[op]
    kernel(a, b)
    np.testing.assert_allclose(b, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("M,block", [(32, 8), (48, 16)])
def test_atomic_guarded_small_blocks(M, block):
    """TileLang's atomic_different_memory_orders (8x8 blocks in its test) and atomic_load_store
    (16x16): ``idx_i = bx * block_M + i`` is seen through, the guard ``idx_i < M`` stays a
    guard on the tensor index (``bx * 32 + i < M``); 48 = 3 blocks of 16 reaches only into the
    padding."""
    a = RNG.standard_normal((M, M)).astype(np.float32)
    b, c, d = (np.zeros((M, M), np.float32) for _ in range(3))
    tilelang.compile(atomic_different_memory_orders_program(M, M, block, block))(a, b, c, d)
    np.testing.assert_allclose(b, a, rtol=1e-6)
    np.testing.assert_allclose(c, np.maximum(a, 0))
    np.testing.assert_allclose(d, np.minimum(a, 0))
    out = np.zeros((M, M), np.float32)
    tilelang.compile(atomic_load_store_program(M, M, block, block))(a, out)
    np.testing.assert_array_equal(out, a)


@pytest.mark.parametrize("block_M,block_K,trans_B", [(64, 64, False), (32, 32, True)])
def test_gemm_block_n_16(block_M, block_K, trans_B):
    """A GEMM's N blocks of 16: each column of C is A times that column of B, so two blocks of
    16 columns are one block of 32 (B's N columns and C's columns coarsened together; with
    transpose_B, B's N is its first dimension)."""
    M, N, K = 64, 128, 128
    kernel = tilelang.compile(matmul(M, N, K, block_M, 16, block_K, trans_B=trans_B),
                              out_idx=[2])
    a = RNG.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = RNG.standard_normal((N, K) if trans_B else (K, N)).astype(ml_dtypes.bfloat16)
    ref = a.astype(np.float32) @ (b.T if trans_B else b).astype(np.float32)
    np.testing.assert_allclose(kernel(a, b), ref, rtol=2e-2, atol=2e-1)
    assert kernel.plan["grid"] == [N // 32, M // block_M, 1]


def test_grid_reaching_past_the_columns_runs():
    """48 columns in blocks of 16: the last 32-column block reaches only past the tensors'
    ends (padded with zeros, cropped by the host)."""
    M, N = 32, 48
    kernel = tilelang.compile(elementwise_add(M, N, 32, 16), out_idx=[2])
    a = RNG.standard_normal((M, N)).astype(np.float32)
    b = RNG.standard_normal((M, N)).astype(np.float32)
    np.testing.assert_allclose(kernel(a, b), a + b, rtol=1e-6, atol=1e-6)
    assert kernel.plan["grid"] == [2, 1, 1]


# ---- what the pass makes of them ------------------------------------------------------------
@pytest.mark.parametrize("block_M,block_N", [(16, 16), (8, 8), (32, 16), (32, 8)])
def test_small_blocks_become_the_32_wide_kernel(block_M, block_N):
    """After A0.0 the kernel is (structurally) the one written with 32x32 blocks, so it
    compiles to the same C++; the records name the axes."""
    small = _lowered(elementwise_add(64, 128, block_M, block_N))
    big = _lowered(elementwise_add(64, 128, 32, 32))
    assert tvm_ffi.structural_equal(small.body, big.body, map_free_vars=True)
    assert to_py(small.attrs[attrs.COL_COARSEN]) == [
        {"axis": "blockIdx.x", "columns": block_N, "factor": 32 // block_N}]
    rows = to_py(small.attrs.get(attrs.ROW_COARSEN, None)) or []
    assert rows == ([] if block_M == 32 else [
        {"axis": "blockIdx.y", "rows": block_M, "factor": 32 // block_M}])
    assert attrs.COL_COARSEN not in big.attrs


@pytest.mark.parametrize("trans_B", [False, True])
def test_gemm_block_n_16_becomes_block_n_32(trans_B):
    small = _lowered(matmul(64, 128, 64, 32, 16, 32, trans_B=trans_B))
    big = _lowered(matmul(64, 128, 64, 32, 32, 32, trans_B=trans_B))
    assert tvm_ffi.structural_equal(small.body, big.body, map_free_vars=True)


def test_atomic_8x8_becomes_32x32():
    small = _lowered(atomic_program(2, 64, 64, 8, 8))
    big = _lowered(atomic_program(2, 64, 64, 32, 32))
    assert tvm_ffi.structural_equal(small.body, big.body, map_free_vars=True)


# ---- refused --------------------------------------------------------------------------------
def _refused(kind):
    M, N = 64, 128
    if kind == "row_reduction":  # a dim=1 reduction over a 16-column block
        @T.prim_func
        def k(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
            with T.Kernel(N // 16, M // 32) as (bx, by):
                a = T.alloc_shared((32, 16), "float32")
                m = T.alloc_fragment((32,), "float32")
                c = T.alloc_shared((32, 16), "float32")
                T.copy(A[by * 32, bx * 16], a)
                T.reduce_max(a, m, dim=1)
                for i, j in T.Parallel(32, 16):
                    c[i, j] = a[i, j] - m[i]
                T.copy(c, C[by * 32, bx * 16])
        return k
    if kind == "gemm_k":  # the block's 16 columns of A are a GEMM's K
        @T.prim_func
        def k(A: T.Tensor((M, N), "bfloat16"), B: T.Tensor((16, 32), "bfloat16"),
              C: T.Tensor((M, N), "float32")):
            with T.Kernel(N // 16, M // 32) as (bx, by):
                a = T.alloc_shared((32, 16), "bfloat16")
                b = T.alloc_shared((16, 32), "bfloat16")
                c = T.alloc_fragment((32, 32), "float32")
                T.copy(A[by * 32, bx * 16], a)
                T.copy(B, b)
                T.gemm(a, b, c, clear_accum=True)
                T.copy(c, C[by * 32, 0])
        return k
    if kind == "column_expression":
        @T.prim_func
        def k(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
            with T.Kernel(N // 16, M // 32) as (bx, by):
                for i, j in T.Parallel(32, 16):
                    C[by * 32 + i, bx * 16 + j] = A[by * 32 + i, bx * 16 + j] * j
        return k
    if kind == "local_guard":  # a guard on the block's own column index tells columns apart
        @T.prim_func
        def k(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
            with T.Kernel(N // 16, M // 32) as (bx, by):
                for i, j in T.Parallel(32, 16):
                    if j < 8:
                        C[by * 32 + i, bx * 16 + j] = A[by * 32 + i, bx * 16 + j]
        return k
    if kind == "columns_not_covered":  # 3 blocks of 16 = 48 columns of 64
        @T.prim_func
        def k(A: T.Tensor((M, 64), "float32"), C: T.Tensor((M, 64), "float32")):
            with T.Kernel(3, M // 32) as (bx, by):
                a = T.alloc_shared((32, 16), "float32")
                T.copy(A[by * 32, bx * 16], a)
                T.copy(a, C[by * 32, bx * 16])
        return k
    raise KeyError(kind)


@pytest.mark.parametrize("kind,words", [
    ("row_reduction", ["blocks of 16 columns along blockIdx.x (bx)", "dimension 1 of a",
                       "reduced by `tile.max`", "combines or tells apart the columns",
                       "block_N = 32"]),
    ("gemm_k", ["dimension 1 of a holds the block's columns",
                "the K dimension of a T.gemm"]),
    ("column_expression", ["T.Parallel index j runs over the block's columns",
                           "used in the expression"]),
    ("local_guard", ["T.Parallel index j runs over the block's columns",
                     "used in the expression `j < 8`"]),
    ("columns_not_covered", ["48 columns, not a multiple of 32",
                             "A (dimension 1 of size 64) that no block of the grid touches"]),
])
def test_column_blocks_refused(kind, words):
    with pytest.raises(TTLayoutError) as err:
        tilelang.lower(_refused(kind), stop_after="A0.0")
    text = str(err.value)
    assert "test_col_blocks.py:" in text, text  # the user's line
    for w in words:
        assert w in text, text


# ---- GEMM K blocks of 16 (A0.5) ---------------------------------------------------------------
@pytest.mark.parametrize("block_N,options", [(16, None), (32, {"tt.k_coarsen": False})])
def test_gemm_block_k_16(block_N, options):
    """``block_K = 16`` in the T.Pipelined K loop: consecutive K steps run as one K block of
    whole tiles (at least 2 steps, also with the K-blocking optimisation off); the matmul engine
    sums a tile's 32 K products anyway, so the products are the same."""
    M, N, K = 64, 64, 128
    kwargs = {"pass_configs": options} if options else {}
    kernel = tilelang.compile(matmul(M, N, K, 32, block_N, 16), out_idx=[2], **kwargs)
    a = RNG.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = RNG.standard_normal((K, N)).astype(ml_dtypes.bfloat16)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(kernel(a, b), ref, rtol=2e-2, atol=2e-1)
    (f,) = tilelang.lower(matmul(M, N, K, 32, block_N, 16), stop_after="A0.5",
                          **kwargs).functions.values()
    (record,) = to_py(f.attrs[attrs.K_COARSEN])
    if options:  # only the required merge: 2 steps of 16 per 32-wide K block
        assert record == {"factor": 2, "k_tiles": 1, "steps": K // 32}
    else:
        assert record["factor"] % 2 == 0 and record["factor"] * 16 == record["k_tiles"] * 32


def test_gemm_block_k_16_odd_steps_refused():
    """K = 48 in steps of 16: 3 steps cannot pair into 32-wide K blocks."""
    with pytest.raises(TTLayoutError) as err:
        tilelang.compile(matmul(64, 64, 48, 32, 32, 16), out_idx=[2])
    text = str(err.value)
    assert "test_col_blocks.py:" in text, text
    for w in ("the K loop takes 3 steps of 16", "2 consecutive K steps must run as one",
              "use block_K = 32"):
        assert w in text, text
