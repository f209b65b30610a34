"""Block buffers that are not whole tiles, held as padded tiles (A0.5.1 PadShortBlocksTT):
kernels written as TileLang's tests write them (one block, 16x16 / [4, 512] / [2, 512]
fragments reduced per row, 1-D outputs of 1, 8 and 16 values, GEMMs with M = 16 or N = 104)
run on the emulator and match numpy; the padding a reduction or a GEMM's K sum would fold in
is masked to the op's identity; a padded block that would not be tiles of its tensor, or whose
padding a store would write over the tensor's elements, is a TTLayoutError naming the buffer
and the line."""

import inspect

import ml_dtypes
import numpy as np
import pytest

import tilelang_tt as tilelang
import tilelang_tt.language as T
from tilelang_tt import attrs
from tilelang_tt.errors import TTLayoutError
from tilelang_tt.passes.common import to_py

RNG = np.random.default_rng(23)
TOL = dict(rtol=1e-2, atol=1e-2)


def _negative(*shape):
    # negative values: a padding of zeros would be a wrong max (and a wrong min's sign)
    return (-np.abs(RNG.standard_normal(shape)) - 0.25).astype("float32")


# ---- TileLang's kernel shapes ------------------------------------------------------------------
def reduce_rows(M, N, op, dtype="float32"):
    """test_tilelang_language_reduce.py's one-block reduction of an (M, N) fragment per row."""
    reduce = {"sum": T.reduce_sum, "max": T.reduce_max, "min": T.reduce_min,
              "abssum": T.reduce_abssum, "absmax": T.reduce_absmax}[op]

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M,), dtype)):
        with T.Kernel(1, threads=32) as _:
            A_local = T.alloc_fragment((M, N), dtype)
            B_local = T.alloc_fragment((M,), dtype)
            T.copy(A, A_local)
            reduce(A_local, B_local, dim=1)
            T.copy(B_local, B)

    return main


def normalize_rows(rows, width):
    """_make_partial_reduce_kernel's body: x / its row sum, x a (rows, width) fragment."""

    @T.prim_func
    def fragment_reduce(x: T.Tensor((rows, width), "float32"),
                        out: T.Tensor((rows, width), "float32")):
        with T.Kernel(1, threads=128):
            x_frag = T.alloc_fragment((rows, width), "float32")
            sum_frag = T.alloc_fragment((rows,), "float32")
            for i, j in T.Parallel(rows, width):
                x_frag[i, j] = x[i, j]
            T.reduce_sum(x_frag, sum_frag, dim=1)
            for i, j in T.Parallel(rows, width):
                out[i, j] = x_frag[i, j] / sum_frag[i]

    return fragment_reduce


def two_group_reduce(rows, width):
    """_make_two_group_reduce_kernel: a (2, 512) fragment summed per row into a (2,) output."""

    @T.prim_func
    def main(x: T.Tensor((rows, width), "float32"), out: T.Tensor((rows,), "float32")):
        with T.Kernel(1, threads=128):
            x_frag = T.alloc_fragment((rows, width), "float32")
            out_frag = T.alloc_fragment((rows,), "float32")
            for i, j in T.Parallel(rows, width):
                x_frag[i, j] = x[i, j]
            T.reduce_sum(x_frag, out_frag, dim=1)
            for i in T.Parallel(rows):
                out[i] = out_frag[i]

    return main


def vector_max(length, out_len, scope="fragment"):
    """A 1-D output of ``out_len`` values: the max of each of ``out_len`` rows of ``length``."""
    alloc = T.alloc_fragment if scope == "fragment" else T.alloc_shared

    @T.prim_func
    def main(a: T.Tensor((out_len, length), "float32"), out: T.Tensor((out_len,), "float32")):
        with T.Kernel(1, threads=32):
            frag = T.alloc_fragment((out_len, length), "float32")
            out_frag = alloc((out_len,), "float32")
            T.copy(a, frag)
            T.reduce_max(frag, out_frag, dim=1)
            T.copy(out_frag, out)

    return main


def matmul(M, N, K, dtype="bfloat16", accum_dtype="float32"):
    """test_tilelang_issue_2537.py's single-block GEMM with an M x N accumulator fragment."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             C: T.Tensor((M, N), accum_dtype)):
        with T.Kernel(1, 1, threads=128):
            A_shared = T.alloc_shared((M, K), dtype)
            B_shared = T.alloc_shared((K, N), dtype)
            C_frag = T.alloc_fragment((M, N), accum_dtype)
            T.clear(C_frag)
            T.copy(A, A_shared)
            T.copy(B, B_shared)
            T.gemm(A_shared, B_shared, C_frag)
            T.copy(C_frag, C)

    return main


def matmul_k_slice(M, N, K, block_K):
    """One K step of ``block_K`` < 32 out of wider tensors: the K padding of both blocks would
    read real elements (A's columns and B's rows past ``block_K``), so it must be masked."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "bfloat16"), B: T.Tensor((K, N), "bfloat16"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, 1, threads=128):
            A_shared = T.alloc_shared((M, block_K), "bfloat16")
            B_shared = T.alloc_shared((block_K, N), "bfloat16")
            C_frag = T.alloc_fragment((M, N), "float32")
            T.clear(C_frag)
            T.copy(A[0, 0], A_shared)
            T.copy(B[0, 0], B_shared)
            T.gemm(A_shared, B_shared, C_frag)
            T.copy(C_frag, C)

    return main


def reducer_two_sites(M, K1, K2):
    """test_tilelang_language_reducer_v2.py's two update nests of (M, 4) and (M, 8) fragments
    into one sum reducer."""

    @T.prim_func
    def kernel(A: T.Tensor((M, K1), "float32"), B: T.Tensor((M, K2), "float32"),
               C: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=128):
            a_frag = T.alloc_fragment((M, K1), "float32")
            b_frag = T.alloc_fragment((M, K2), "float32")
            T.copy(A, a_frag)
            T.copy(B, b_frag)
            acc = T.alloc_reducer((M,), "float32", op="sum")
            T.reducer_init(acc)
            for i, k in T.Parallel(M, K1):
                T.reducer_update(acc[i], a_frag[i, k])
            for i, k in T.Parallel(M, K2):
                T.reducer_update(acc[i], b_frag[i, k])
            result = T.alloc_fragment((M,), "float32")
            T.finalize_reducer(acc, result)
            T.copy(result, C)

    return kernel


def tma_atomic_add(repeats=16):
    """test_tilelang_language_atomic.py's tma_atomic_add_program."""

    @T.prim_func
    def main(out: T.Tensor((16, 16), "float32")):
        with T.Kernel(1):
            out_shared = T.alloc_shared((16, 16), dtype="float32")
            T.fill(out_shared, 1)
            for _ in range(repeats):
                T.atomic_add(out, out_shared)

    return main


# ---- runs --------------------------------------------------------------------------------------
@pytest.mark.parametrize("op", ["sum", "max", "min", "absmax", "abssum"])
def test_one_block_16x16_reduce(op):
    kernel = tilelang.compile(reduce_rows(16, 16, op), out_idx=[1])
    a = _negative(16, 16)
    ref = {"sum": a.sum(1), "max": a.max(1), "min": a.min(1), "absmax": np.abs(a).max(1),
           "abssum": np.abs(a).sum(1)}[op]
    np.testing.assert_allclose(kernel(a), ref, **TOL)


def test_padded_buffers_are_recorded():
    (f,) = tilelang.lower(reduce_rows(16, 16, "max"), stop_after="A0.5.1").functions.values()
    blocks = {r["buffer"]: r for r in to_py(f.attrs[attrs.PADDED_BLOCKS])}
    assert blocks["A_local"]["logical"] == [16, 16] and blocks["A_local"]["padded"] == [32, 32]
    assert blocks["B_local"]["logical"] == [16] and blocks["B_local"]["padded"] == [32]


def _masks(func):
    (f,) = tilelang.lower(func, stop_after="A0.5.1").functions.values()
    return str(f).count("tt_index_mask")


def test_padding_masked_only_where_not_already_the_identity():
    # a sum of a block copied from a 16x16 tensor: its padding is the tensor's zero padding
    assert _masks(reduce_rows(16, 16, "sum")) == 0
    # a max needs -inf there
    assert _masks(reduce_rows(16, 16, "max")) == 1
    # a sum of a computed block (|x|) needs zeros there
    assert _masks(reduce_rows(16, 16, "abssum")) == 1
    # K = 16 operands copied from tensors of exactly K = 16: zero padding already
    assert _masks(matmul(48, 64, 16)) == 0
    # a 16-wide K step out of 64-wide tensors reads real elements: both operands masked
    assert _masks(matmul_k_slice(32, 64, 64, 16)) == 2


def test_whole_tile_kernels_are_unchanged():
    (before,) = tilelang.lower(reduce_rows(32, 64, "max"), stop_after="A0.5").functions.values()
    (after,) = tilelang.lower(reduce_rows(32, 64, "max"), stop_after="A0.5.1").functions.values()
    assert attrs.PADDED_BLOCKS not in after.attrs
    assert str(before.body) == str(after.body)


@pytest.mark.parametrize("rows", [4, 2])
def test_row_sums_of_512_columns(rows):
    x = RNG.uniform(0.5, 1.5, (rows, 512)).astype("float32")
    out = tilelang.compile(normalize_rows(rows, 512), out_idx=[1])(x)
    np.testing.assert_allclose(out, x / x.sum(1, keepdims=True), **TOL)
    sums = tilelang.compile(two_group_reduce(rows, 512), out_idx=[1])(x)
    np.testing.assert_allclose(sums, x.sum(1), rtol=1e-2)


@pytest.mark.parametrize("out_len,scope", [(1, "fragment"), (8, "shared"), (16, "fragment")])
def test_short_vector_outputs(out_len, scope):
    a = _negative(out_len, 64)
    out = tilelang.compile(vector_max(64, out_len, scope), out_idx=[1])(a)
    assert out.shape == (out_len,)
    np.testing.assert_allclose(out, a.max(1), **TOL)


@pytest.mark.parametrize("M,N,K", [(16, 64, 64), (32, 104, 64), (16, 104, 32), (48, 64, 16)])
def test_gemm_short_blocks(M, N, K):
    a = RNG.integers(-2, 3, (M, K)).astype(ml_dtypes.bfloat16)
    b = RNG.integers(-2, 3, (K, N)).astype(ml_dtypes.bfloat16)
    c = tilelang.compile(matmul(M, N, K), out_idx=[2])(a, b)
    np.testing.assert_allclose(c, a.astype("float32") @ b.astype("float32"), **TOL)


def test_gemm_k_padding_is_masked():
    M, N, K, block_K = 32, 64, 64, 16
    a = RNG.integers(-2, 3, (M, K)).astype(ml_dtypes.bfloat16)
    b = RNG.integers(-2, 3, (K, N)).astype(ml_dtypes.bfloat16)
    c = tilelang.compile(matmul_k_slice(M, N, K, block_K), out_idx=[2])(a, b)
    ref = a[:, :block_K].astype("float32") @ b[:block_K].astype("float32")
    np.testing.assert_allclose(c, ref, **TOL)


@pytest.mark.parametrize("M", [32, 16])
def test_reducer_over_narrow_fragments(M):
    a = RNG.standard_normal((M, 4)).astype("float32")
    b = RNG.standard_normal((M, 8)).astype("float32")
    c = tilelang.compile(reducer_two_sites(M, 4, 8), out_idx=-1)(a, b)
    np.testing.assert_allclose(c, a.sum(1) + b.sum(1), **TOL)


def test_tma_atomic_add_shape():
    out = np.zeros((16, 16), "float32")
    tilelang.compile(tma_atomic_add())(out)
    np.testing.assert_allclose(out, np.full((16, 16), 16.0))


# ---- refusals ----------------------------------------------------------------------------------
def store_inside(M):
    @T.prim_func
    def main(A: T.Tensor((M, 32), "float32"), B: T.Tensor((M, 32), "float32")):
        with T.Kernel(1):
            S = T.alloc_shared((16, 32), "float32")
            T.copy(A[0:16, 0:32], S)
            T.copy(S, B[0:16, 0:32])

    return main


def read_unaligned(cols=32):
    @T.prim_func
    def main(A: T.Tensor((64, 32), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1):
            S = T.alloc_fragment((16, cols), "float32")
            r = T.alloc_fragment((16,), "float32")
            T.copy(A[16:32, 0:cols], S)
            T.reduce_sum(S, r, dim=1)
            T.copy(r, B)

    return main


def _line_of(func, text):
    src, first = inspect.getsourcelines(func)
    return first + next(i for i, line in enumerate(src) if text in line)


def test_store_over_tensor_elements_is_refused():
    with pytest.raises(TTLayoutError) as err:
        tilelang.compile(store_inside(64), out_idx=[1])
    msg = str(err.value)
    assert "S" in msg and "overwrite" in msg and "tensor B" in msg
    assert f":{_line_of(store_inside, 'T.copy(S, B')}" in msg


def test_store_reaching_the_tensor_end_runs():
    a = RNG.standard_normal((16, 32)).astype("float32")
    np.testing.assert_allclose(tilelang.compile(store_inside(16), out_idx=[1])(a), a)


def test_unaligned_read_gathered_padded_columns_refused():
    """A 16-row block read from row 16 is gathered row by row (its padding reads rows 32-47,
    masked out of the sum); one whose columns are padded too would not be tiles of the
    tensor: refused."""
    a = np.random.default_rng(5).standard_normal((64, 32)).astype(np.float32)
    b = tilelang.compile(read_unaligned(), out_idx=[1])(a)
    np.testing.assert_allclose(b, a[16:32].sum(1), rtol=1e-2, atol=1e-2)
    with pytest.raises(TTLayoutError) as err:
        tilelang.compile(read_unaligned(16), out_idx=[1])
    msg = str(err.value)
    assert "block buffer S" in msg and "not a multiple of 32" in msg
    assert f":{_line_of(read_unaligned, 'T.copy(A[16:32')}" in msg