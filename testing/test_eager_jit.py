"""TileLang's eager ``@tilelang.jit`` form with macros, T.dynamic sizes, strided views and
outputs made in macros (TileLang 0.1.14's test_tilelang_language_eager_jit idioms), run on the
emulator and compared with numpy."""

import numpy as np
import pytest

import tilelang_tt as tilelang
import tilelang_tt.language as T
from tilelang_tt import TTCompileError, TTUnsupportedError
from tilelang_tt.runtime.tensors import TTCallArgumentError

BLOCK = 32


@T.macro
def affine_impl(A, B):
    """B = 2 A + 1, block by block; sizes read off the tensors as TileLang's macros do."""
    M, N = A.shape
    M_, N_ = B.shape
    assert M == M_, f"M mismatch {M} {M_}"
    assert N == N_, f"N mismatch {N} {N_}"
    with T.Kernel(T.ceildiv(M, BLOCK), T.ceildiv(N, BLOCK)) as (bx, by):
        tile = T.alloc_fragment((BLOCK, BLOCK), A.dtype)
        T.copy(A[bx * BLOCK:bx * BLOCK + BLOCK, by * BLOCK:by * BLOCK + BLOCK], tile)
        for i, j in T.Parallel(BLOCK, BLOCK):
            tile[i, j] = tile[i, j] * 2.0 + 1.0
        T.copy(tile, B[bx * BLOCK:bx * BLOCK + BLOCK, by * BLOCK:by * BLOCK + BLOCK])


@tilelang.jit
def affine_const(A, B):
    N, M = T.const("N, M")
    A: T.Tensor[[N, M], T.float32]
    B: T.Tensor[[N, M], T.float32]
    affine_impl(A, B)


@tilelang.jit
def affine_fixed(
    A: T.Tensor[[64, 96], T.float32],
    B: T.Tensor[[64, 96], T.float32],
):
    affine_impl(A, B)


@tilelang.jit
def affine_dynamic(A, B):
    N = T.dynamic("N")
    M = T.const("M")
    A: T.Tensor[[N, M], T.float32]
    B: T.Tensor[[N, M], T.float32]
    affine_impl(A, B)


@tilelang.jit
def affine_strided(A, B):
    N = T.dynamic("N")
    M, N_, M_ = T.const("M, N_, M_")
    A: T.StridedTensor[[N, M], [N_, M_], T.float32]
    B: T.StridedTensor[[N, M], [N_, M_], T.float32]
    affine_impl(A, B)


def _rand(*shape):
    return np.random.default_rng(sum(shape)).uniform(-1, 1, shape).astype(np.float32)


def test_macro_reads_sizes_from_shapes_const_fixed_and_dynamic():
    kernels = tilelang.par_compile([f.get_tir(T.Tensor((64, 96)), T.Tensor((64, 96)))
                                    for f in (affine_const, affine_fixed, affine_dynamic)])
    assert [k.name for k in kernels] == ["affine_const", "affine_fixed", "affine_dynamic"]
    a = _rand(64, 96)
    for f in (affine_const, affine_fixed, affine_dynamic):
        b = np.zeros_like(a)
        f(a, b)
        np.testing.assert_allclose(b, 2 * a + 1, rtol=1e-6)
    # T.dynamic: one kernel per shape (specialised), the grid from the macro's ceildiv
    a = _rand(128, 64)
    b = np.zeros_like(a)
    affine_dynamic(a, b)
    np.testing.assert_allclose(b, 2 * a + 1, rtol=1e-6)


def test_macro_assert_on_sizes_is_checked_at_compile():
    @tilelang.jit
    def mismatched(A, B):
        N, M = T.const("N, M")
        A: T.Tensor[[N, M], T.float32]
        B: T.Tensor[[M, N], T.float32]
        affine_impl(A, B)

    with pytest.raises(AssertionError, match="M mismatch 64 32"):
        mismatched.compile(N=64, M=32)


def test_strided_views_in_and_out():
    a = _rand(64, 2, 96, 2)
    b = np.full((64, 2, 96, 2), 7.0, np.float32)
    affine_strided(a[:, 0, :, 0], b[:, 1, :, 1])
    np.testing.assert_allclose(b[:, 1, :, 1], 2 * a[:, 0, :, 0] + 1, rtol=1e-6)
    # only the view is written
    assert (b[:, 0] == 7.0).all() and (b[:, 1, :, 0] == 7.0).all()
    # the strides are sizes: in elements, from the argument
    kernel = affine_strided.compile(a[:, 0, :, 0], b[:, 1, :, 1])
    assert kernel.name == "affine_strided"


def test_strided_torch_views_in_and_out():
    torch = pytest.importorskip("torch")
    a = torch.randn(64, 2, 96, 2)  # the sizes and strides of the numpy test: its kernel
    b = torch.zeros(64, 2, 96, 2)
    affine_strided(a[:, 1, :, 0], b[:, 0, :, 1])
    torch.testing.assert_close(b[:, 0, :, 1], 2 * a[:, 1, :, 0] + 1)
    assert (b[:, 1] == 0).all() and (b[:, 0, :, 0] == 0).all()


@tilelang.jit
def affine_strided_signature(
    A: T.StridedTensor[[32, 64], [256, 2], T.float32],
    B: T.Tensor[[32, 64], T.float32],
):
    affine_impl(A, B)


def test_strided_tensor_annotated_in_the_signature():
    a = _rand(32, 2, 64, 2)
    b = np.zeros((32, 64), np.float32)
    affine_strided_signature(a[:, 1, :, 1], b)
    np.testing.assert_allclose(b, 2 * a[:, 1, :, 1] + 1, rtol=1e-6)
    with pytest.raises(TTCallArgumentError, match=r"tensor A: T\.StridedTensor strides "
                                                  r"\(256, 2\)"):
        affine_strided_signature(np.ascontiguousarray(a[:, 1, :, 1]), b)


def test_strides_other_than_annotated_are_refused():
    @tilelang.jit
    def rows_of_pairs(A, B):
        N, M = T.const("N, M")
        A: T.StridedTensor[[N, M], [2 * M, 2], T.float32]
        B: T.Tensor[[N, M], T.float32]
        affine_impl(A, B)

    a = _rand(64, 32, 2)
    b = np.zeros((64, 32), np.float32)
    rows_of_pairs(a[:, :, 0], b)
    np.testing.assert_allclose(b, 2 * a[:, :, 0] + 1, rtol=1e-6)
    with pytest.raises(TTCallArgumentError, match=r"tensor A: T\.StridedTensor strides "
                                                  r"\(64, 2\).*has strides \(32, 1\)"):
        rows_of_pairs(np.zeros((64, 32), np.float32), b)


@T.macro
def affine_new(A):
    M, N = A.shape
    B = T.empty(M, N, dtype=A.dtype)
    affine_impl(A, B)
    return B


@tilelang.jit
def affine_return(A):
    N = T.dynamic("N")
    M = T.const("M")
    A: T.Tensor[[N, M], T.float32]
    return affine_new(A)


@tilelang.jit
def affine_return_strided(A):
    N, M, N_, M_ = T.const("N, M, N_, M_")
    A: T.StridedTensor[[N, M], [N_, M_], T.float32]
    return affine_new(A)


def test_output_made_in_a_macro_and_returned():
    a = _rand(64, 32)  # T.dynamic rows specialised per shape: test_macro_reads_sizes_...
    np.testing.assert_allclose(affine_return(a), 2 * a + 1, rtol=1e-6)
    a = _rand(32, 3, 64)
    np.testing.assert_allclose(affine_return_strided(a[:, 2, :]), 2 * a[:, 2, :] + 1,
                               rtol=1e-6)


def test_outputs_of_both_kinds_returned_in_order():
    @tilelang.jit
    def two(A):
        M, N = T.const("M, N")
        A: T.Tensor[[M, N], T.float32]
        C = T.empty((M, N), T.float32)
        B = affine_new(A)
        affine_impl(B, C)
        return B, C

    a = _rand(32, 64)
    b, c = two(a)
    np.testing.assert_allclose(b, 2 * a + 1, rtol=1e-6)
    np.testing.assert_allclose(c, 2 * (2 * a + 1) + 1, rtol=1e-6)


def test_macro_outputs_misused_are_errors():
    @T.macro
    def late(A):
        M, N = A.shape
        with T.Kernel(1):
            B = T.empty(M, N, dtype=A.dtype)
            T.copy(A, B)
        return B

    @tilelang.jit
    def late_output(A):
        A: T.Tensor[[32, 32], T.float32]
        return late(A)

    with pytest.raises(TTCompileError, match="T.empty must run before the T.Kernel launch"):
        late_output.compile()

    @T.macro
    def passthrough(A):
        return A

    @tilelang.jit
    def returns_input(A):
        A: T.Tensor[[32, 32], T.float32]
        return passthrough(A)

    with pytest.raises(TTCompileError, match="returns tensor A; a @tilelang.jit function "
                                             "returns only tensors declared with T.empty"):
        returns_input.compile()

    @tilelang.jit
    def dropped(A):
        A: T.Tensor[[32, 32], T.float32]
        affine_new(A)

    with pytest.raises(TTCompileError, match="output B = T.empty.* is not returned"):
        dropped.compile()

    with pytest.raises(TTUnsupportedError, match="T.StridedTensor"):
        @T.prim_func
        def kernel(A: T.StridedTensor[[32, 32], [64, 1], T.float32]):
            with T.Kernel(1):
                pass


# a module-level name that a macro's parameter also takes (TileLang's notebooks define the
# arrays `A`, `B` next to macros of parameters `A`, `B`)
X = np.ones((32, 32), np.float32)


@T.macro
def add_ones(X, n):
    """X += 1, n times: a macro that expands itself (n is a Python int)."""
    if n > 0:
        for i, j in T.Parallel(32, 32):
            X[i, j] = X[i, j] + 1.0
        add_ones(X, n - 1)


@tilelang.jit
def add_three(A):
    A: T.Tensor[[32, 32], T.float32]
    B = T.empty((32, 32), T.float32)
    with T.Kernel(1):
        tile = T.alloc_fragment((32, 32), T.float32)
        T.copy(A, tile)
        add_ones(tile, 3)
        T.copy(tile, B)
    return B


def test_macro_parameter_named_like_a_global_and_recursive_macro():
    np.testing.assert_allclose(add_three(2 * X), 2 * X + 3)


@T.macro
def relu_into(y: T.Ref, v):
    y = T.max(v, 0.0)


@T.macro
def scale_by(s: T.Ref, factor):
    s *= factor


@tilelang.jit
def relu_scaled(A, factor: float = 3.0):
    M, N = T.const("M, N")
    A: T.Tensor[[M, N], T.float32]
    B = T.empty((M, N), T.float32)
    with T.Kernel(T.ceildiv(M, 32), T.ceildiv(N, 32)) as (bx, by):
        a = T.alloc_fragment((32, 32), T.float32)
        b = T.alloc_fragment((32, 32), T.float32)
        s = T.alloc_var(T.float32, init=0.5)
        scale_by(s, factor)  # s = 1.5
        T.copy(A[bx * 32, by * 32], a)
        for i, j in T.Parallel(32, 32):
            relu_into(b[i, j], a[i, j] * s)
        T.copy(b, B[bx * 32, by * 32])
    return B


def test_ref_macro_parameters_store_into_elements_and_variables():
    a = _rand(64, 32)
    np.testing.assert_allclose(relu_scaled(a), np.maximum(a * 1.5, 0), rtol=1e-6)

    @T.macro
    def set_one(x: T.Ref):
        x = 1.0

    with pytest.raises(TTCompileError, match=r"(?s)a T.Ref macro parameter refers to the "
                                             r"buffer A of shape.*test_eager_jit.py:\d+"):
        @T.prim_func
        def bad(A: T.Tensor((32, 32), T.float32)):
            with T.Kernel(1):
                set_one(A)
