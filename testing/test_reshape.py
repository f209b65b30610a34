"""T.reshape / T.view on Tensix (tilelang_tt/passes/frontend/views.py, A0.2.0 ResolveViewsTT).

A tensor argument seen in another shape is laid out by the host in that shape (numpy's reshape
is free); a block buffer reshaped by merging or splitting leading dims keeps every 32x32 tile
and is re-indexed.  Reshapes that move elements across tiles and dtype-changing views are
refused with the op, the shapes and the line.  Every kernel that compiles runs on the emulator
and is compared with numpy."""

import numpy as np
import pytest

import tilelang_tt as tilelang
import tilelang_tt.language as T
from helpers import as_f32, src_operand
from tilelang_tt.errors import TTAssertionError, TTUnsupportedError


def reshape_test(N, M, dtype):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N // M, M), dtype)):
        with T.Kernel(1) as _:
            A_reshaped = T.reshape(A, [N // M, M])
            T.copy(A_reshaped, B)

    return main


@pytest.mark.parametrize("N, M, dtype", [(1024, 32, "float32"), (2048, 64, "float16")])
def test_reshape_tensor_argument(N, M, dtype):
    """TileLang's test_reshape_smem: A (N,) read as (N // M, M); the host lays A out so."""
    kernel = tilelang.compile(reshape_test(N, M, dtype), out_idx=-1)
    a = np.random.default_rng(0).uniform(-1, 1, N).astype(dtype)
    b = kernel(a)
    assert b.shape == (N // M, M)
    np.testing.assert_array_equal(as_f32(b), a.reshape(N // M, M).astype(np.float32))
    kernel.get_profiler().assert_allclose(lambda A: A.reshape(N // M, M), atol=1e-2, rtol=1e-2)


def view_test(N, M, dtype):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N // M, M), dtype)):
        with T.Kernel(1) as _:
            A_viewed = T.view(A, [N // M, M])
            T.copy(A_viewed, B)

    return main


def test_view_tensor_argument_same_dtype():
    """TileLang's test_reshape_view without a dtype change."""
    N, M = 2048, 64
    kernel = tilelang.compile(view_test(N, M, "float16"), out_idx=-1)
    kernel.get_profiler().assert_allclose(lambda A: A.reshape(N // M, M), atol=1e-2, rtol=1e-2)


def reshape_output(M, N, block_M):
    """An output written through a view: B (M * N,) seen as (M, N), blocks of rows."""
    @T.prim_func
    def main(A: T.Tensor((M, N), "bfloat16"), B: T.Tensor((M * N,), "bfloat16")):
        with T.Kernel(T.ceildiv(M, block_M)) as bx:
            B_2d = T.reshape(B, [M, N])
            A_s = T.alloc_shared((block_M, N), "bfloat16")
            T.copy(A[bx * block_M, 0], A_s)
            for i, j in T.Parallel(block_M, N):
                A_s[i, j] = A_s[i, j] * 2
            T.copy(A_s, B_2d[bx * block_M, 0])

    return main


def test_reshape_output_tensor():
    M, N = 128, 64
    kernel = tilelang.compile(reshape_output(M, N, 64), out_idx=-1)
    a = np.random.default_rng(1).uniform(-1, 1, (M, N)).astype(np.float32)
    b = kernel(a)
    assert b.shape == (M * N,)
    np.testing.assert_allclose(as_f32(b), (as_f32(kernel_input(a)) * 2).reshape(-1), rtol=1e-2)


def kernel_input(a):
    import ml_dtypes
    return a.astype(ml_dtypes.bfloat16)


def fill_3d_then_compute_2d(B, R, C):
    """A 3-D fragment filled, then computed on and copied out through its 2-D view: the
    fragment is kept 2-D and the fill re-indexed onto its rows (no element moves)."""
    @T.prim_func
    def main(A: T.Tensor((B * R, C), "float32"), Out: T.Tensor((B * R, C), "float32")):
        with T.Kernel(1) as _:
            A_s = T.alloc_shared((B * R, C), "float32")
            acc = T.alloc_fragment((B, R, C), "float32")
            T.copy(A, A_s)
            T.fill(acc, 1.5)
            acc_2d = T.reshape(acc, [B * R, C])
            for i, j in T.Parallel(B * R, C):
                acc_2d[i, j] = acc_2d[i, j] + A_s[i, j] * 2
            T.copy(acc_2d, Out)

    return main


@pytest.mark.parametrize("B, R, C", [(2, 64, 32), (4, 32, 64)])
def test_reshape_fragment_3d_filled_2d_computed(B, R, C):
    kernel = tilelang.compile(fill_3d_then_compute_2d(B, R, C), out_idx=-1)
    kernel.get_profiler().assert_allclose(lambda A: A * 2 + 1.5, atol=1e-2, rtol=1e-2)


def gemm_into_2d_view(M, N, K, B):
    """T.gemm accumulating into the 2-D view of a 3-D accumulator cleared as 3-D."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "bfloat16"), W: T.Tensor((K, N), "bfloat16"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(1) as _:
            A_s = T.alloc_shared((M, K), "bfloat16")
            W_s = T.alloc_shared((K, N), "bfloat16")
            acc = T.alloc_fragment((B, M // B, N), "float32")
            T.clear(acc)
            acc_2d = T.reshape(acc, [M, N])
            T.copy(A, A_s)
            T.copy(W, W_s)
            T.gemm(A_s, W_s, acc_2d)
            T.copy(acc_2d, C)

    return main


def test_reshape_accumulator_gemm():
    M, N, K = 64, 64, 64
    kernel = tilelang.compile(gemm_into_2d_view(M, N, K, 2), out_idx=-1)
    kernel.get_profiler().assert_allclose(lambda A, W: as_f32(A) @ as_f32(W), atol=5e-2,
                                          rtol=5e-2)


def copy_whole_3d_view(B, R, C):
    @T.prim_func
    def main(A: T.Tensor((B * R, C), "float32"), Out: T.Tensor((B, R, C), "float32")):
        with T.Kernel(1) as _:
            A_frag = T.alloc_fragment((B * R, C), "float32")
            T.copy(A, A_frag)
            A_3d = T.reshape(A_frag, [B, R, C])
            T.copy(A_3d, Out)

    return main


def test_copy_of_a_3d_view_to_a_3d_tensor_is_refused():
    """The block is kept 2-D; a copy of [B, R, C] elements is no copy of its whole rows with
    the same extents (reshape the tensor instead: T.reshape(Out, [B * R, C]))."""
    with pytest.raises(TTUnsupportedError) as err:
        tilelang.compile(copy_whole_3d_view(2, 64, 32), out_idx=-1)
    msg = str(err.value)
    assert "A_3d [2, 64, 32], a view of the block buffer A_frag [128, 32], is kept as A_frag" \
        in msg and "region [0:2, 0:64, 0:32]" in msg
    assert f":{_line_of(copy_whole_3d_view, 'T.copy(A_3d, Out)')}" in msg


def compute_on_3d_view(B, R, C):
    @T.prim_func
    def main(A: T.Tensor((B * R, C), "float32"), Out: T.Tensor((B * R, C), "float32")):
        with T.Kernel(1) as _:
            S = T.alloc_shared((B * R, C), "float32")
            T.copy(A, S)
            S_3d = T.reshape(S, [B, R, C])
            for b, i, j in T.Parallel(B, R, C):
                S_3d[b, i, j] = S_3d[b, i, j] * 2
            T.copy(S, Out)

    return main


def test_element_access_of_a_higher_rank_view_is_refused():
    with pytest.raises(TTUnsupportedError) as err:
        tilelang.compile(compute_on_3d_view(2, 64, 32), out_idx=-1)
    assert "S_3d [2, 64, 32], a view of the block buffer S [128, 32]" in str(err.value)
    assert f":{_line_of(compute_on_3d_view, 'S_3d[b, i, j] = ')}" in str(err.value)


# ---- refusals ----------------------------------------------------------------------------------
def _line_of(fn, text):
    import inspect
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, s in enumerate(lines) if text in s)


def reshape_smem_1d_2_2d(N, M, dtype):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N // M, M), dtype)):
        with T.Kernel(1) as _:
            A_shared = T.alloc_shared((N,), dtype)
            for i in T.Parallel(N):
                A_shared[i] = A[i]
            A_smem_reshaped = T.reshape(A_shared, [N // M, M])
            T.copy(A_smem_reshaped, B)

    return main


def reduce_absmax_after_reshape_3d(M, N, groups):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, groups), "float32")):
        with T.Kernel(1, threads=128) as _:
            A_local = T.alloc_fragment((M, N), "float32")
            A_reshaped = T.reshape(A_local, [M, groups, N // groups])
            B_local = T.alloc_fragment((M, groups), "float32")
            T.copy(A, A_local)
            T.reduce_absmax(A_reshaped, B_local, dim=2)
            T.copy(B_local, B)

    return main


@pytest.mark.parametrize("make, args, text", [
    (reduce_absmax_after_reshape_3d, (32, 384, 3), "T.reduce_absmax(A_reshaped"),
])
def test_reshape_across_tiles_is_refused(make, args, text):
    with pytest.raises(TTUnsupportedError) as err:
        tilelang.compile(make(*args), out_idx=-1)
    msg = str(err.value)
    assert "moves elements across 32x32 tiles" in msg and "T.reshape" in msg
    assert f":{_line_of(make, text)}" in msg


def view_dtype_test(N, M, dtype, new_dtype, new_cols):
    """TileLang's test_reshape_view with a dtype change: A's bytes read as another dtype."""
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N // M, new_cols), new_dtype)):
        with T.Kernel(1) as _:
            A_viewed = T.view(A, [N // M, new_cols], dtype=new_dtype)
            T.copy(A_viewed, B)

    return main


@pytest.mark.parametrize("N, M, dtype, new_dtype, new_cols", [
    (1024, 32, "float32", "float16", 64), (2048, 64, "float16", "float32", 32),
    (2048, 64, "bfloat16", "float32", 32)])
def test_view_tensor_argument_changing_dtype(N, M, dtype, new_dtype, new_cols):
    """A tensor argument's bytes: the host hands the device a numpy view of them (exact)."""
    import ml_dtypes
    np_dtype = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
    kernel = tilelang.compile(view_dtype_test(N, M, dtype, new_dtype, new_cols), out_idx=-1)
    rng = np.random.default_rng(4)
    a = rng.uniform(-1, 1, N).astype(np_dtype[dtype])
    if dtype != "float32":  # no NaN / Inf bit patterns in the float32 words the pairs make
        a = np.abs(a)
    b = kernel(a)
    want = a.view(np_dtype[new_dtype]).reshape(N // M, new_cols)
    np.testing.assert_array_equal(b.view(np.uint8), np.asarray(want).view(np.uint8))


def view_dtype_block(N, M):
    @T.prim_func
    def main(A: T.Tensor((N // M, M), "float32"), B: T.Tensor((N // M, 2 * M), "float16")):
        with T.Kernel(1) as _:
            A_shared = T.alloc_shared((N // M, M), "float32")
            T.copy(A, A_shared)
            A_half = T.view(A_shared, [N // M, 2 * M], dtype="float16")
            T.copy(A_half, B)

    return main


def test_view_changing_dtype_of_a_block_is_refused():
    with pytest.raises(TTUnsupportedError) as err:
        tilelang.compile(view_dtype_block(1024, 32), out_idx=-1)
    msg = str(err.value)
    assert "T.view(A_shared, [32, 64], dtype=float16)" in msg and "float32" in msg
    assert f":{_line_of(view_dtype_block, 'T.copy(A_half, B)')}" in msg


def two_shapes(N, M):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N // M, M), "float32"),
             C: T.Tensor((N,), "float32")):
        with T.Kernel(1) as _:
            A_2d = T.reshape(A, [N // M, M])
            T.copy(A_2d, B)
            T.copy(A, C)

    return main


def test_tensor_used_through_two_shapes_is_refused():
    with pytest.raises(TTUnsupportedError) as err:
        tilelang.compile(two_shapes(1024, 32), out_idx=[1, 2])
    msg = str(err.value)
    assert "tensor A [1024] is accessed through 2 shapes" in msg


def test_reshape_shape_mismatch():
    """TileLang's test: an AssertionError when the element counts differ, naming the line."""
    with pytest.raises(AssertionError) as err:
        reshape_test_mismatch(1024, 32)
    assert isinstance(err.value, TTAssertionError)
    assert "T.reshape/view shape check failed" in str(err.value)
    assert f":{_line_of(reshape_test_mismatch, 'T.reshape(A, [N // M, M + 1])')}" in \
        str(err.value)


def reshape_test_mismatch(N, M):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N // M, M), "float32")):
        with T.Kernel(1) as _:
            A_reshaped = T.reshape(A, [N // M, M + 1])
            T.copy(A_reshaped, B)

    return main


# ---- reshapes across tiles that only whole-buffer copies see: the copies take the new shape
def reshape_smem_2d_2_1d(N, M, dtype):
    @T.prim_func
    def main(A: T.Tensor((N // M, M), dtype), B: T.Tensor((N,), dtype)):
        with T.Kernel(1) as _:
            A_shared = T.alloc_shared((N // M, M), dtype)
            for i, j in T.Parallel(N // M, M):
                A_shared[i, j] = A[i, j]
            A_smem_reshaped = T.reshape(A_shared, [N])
            T.copy(A_smem_reshaped, B)

    return main


def reshape_fragment(N, M, dtype):
    @T.prim_func
    def main(A: T.Tensor((N // M, M), dtype), B: T.Tensor((N,), dtype)):
        with T.Kernel(1, threads=32) as _:
            A_shared = T.alloc_shared((N // M, M), dtype, scope="shared")
            A_local = T.alloc_fragment((N // M, M), dtype)
            B_shared = T.alloc_shared((N,), dtype, scope="shared")
            T.copy(A, A_shared)
            T.copy(A_shared, A_local)
            A_local_reshape = T.reshape(A_local, [N])
            T.copy(A_local_reshape, B_shared)
            T.copy(B_shared, B)

    return main


@pytest.mark.parametrize("make, N, M, dtype", [
    # each kernel once, each (size, dtype) at least once (the reshape is dtype-blind: the
    # copies move whole tiles)
    (reshape_smem_2d_2_1d, 1024, 32, "float32"), (reshape_fragment, 2048, 64, "float16"),
    (reshape_smem_1d_2_2d, 2048, 64, "float16")])
def test_reshape_1d_2d_copied_whole(make, N, M, dtype):
    """TileLang's test_reshape_smem_2d_2_1d / test_reshape_fragment / test_reshape_smem_1d_2_2d:
    the 1-D buffers (the view, B_shared, the tensor B; A and A_shared, whose T.Parallel copy is
    a whole-buffer copy) are copied whole only, so they take the 2-D shape (tensors on the
    host)."""
    kernel = tilelang.compile(make(N, M, dtype), out_idx=-1)
    one_d = make is reshape_smem_1d_2_2d
    a = np.random.default_rng(2).uniform(-1, 1, N if one_d else (N // M, M)).astype(dtype)
    b = kernel(a)
    assert b.shape == ((N // M, M) if one_d else (N,))
    np.testing.assert_array_equal(as_f32(b), a.reshape(b.shape).astype(np.float32))


def reduce_after_reshape(N, M, dtype):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N // M,), dtype)):
        with T.Kernel(1, threads=32) as _:
            A_shared = T.alloc_shared((N,), dtype, scope="shared")
            A_local = T.alloc_fragment((N,), dtype)
            B_local = T.alloc_fragment((N // M,), dtype)
            T.copy(A, A_shared)
            T.copy(A_shared, A_local)
            A_local_reshape = T.reshape(A_local, [N // M, M])
            T.reduce_max(A_local_reshape, B_local, dim=1)
            T.copy(B_local, B)

    return main


@pytest.mark.parametrize("N, M, dtype", [(1024, 32, "float32"), (2048, 64, "float16")])
def test_reduce_after_reshape_1d_to_2d(N, M, dtype):
    """TileLang's test_reduce_after_reshape: A, A_shared and A_local are copied whole only, so
    they take the 2-D shape of the reduction's operand (A on the host)."""
    kernel = tilelang.compile(reduce_after_reshape(N, M, dtype), out_idx=-1)
    a = np.random.default_rng(3).uniform(-1, 1, N).astype(dtype)
    # max takes no rounding: the row maxima of the operands as the unpacker reads them (a
    # float32 max runs on the vector engine, on the values themselves)
    seen = a if dtype == "float32" else src_operand(a, fp32_dst=True)
    want = seen.reshape(N // M, M).max(axis=1)
    np.testing.assert_array_equal(as_f32(kernel(a)), want.astype(np.float32))
