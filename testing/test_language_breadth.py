"""TileLang constructs from its own language tests that compile here as there: the eager form
under ``@T.prim_func``, serial elementwise loops, element ``T.copy``, constant stores, one-tuple
launches, ``T.let``, and the refusals that name what has no Tensix meaning."""

import numpy as np
import pytest

import tilelang_tt as tilelang
import tilelang_tt.language as T
from tilelang_tt import TTCompileError, TTLayoutError, TTUnsupportedError
from tilelang_tt.runtime.tensors import TTCallArgumentError
from helpers import parallel_outputs_kernel


def test_prim_func_eager_form_records_outputs_and_pass_configs():
    @T.prim_func
    def kernel(A):
        A: T.Tensor[[64, 64], T.float32]
        T.annotate_pass_configs({"tt.math_fidelity": "HiFi4"})
        T.annotate_compile_flags(["--use_fast_math"])
        B = T.empty([64, 64], T.float32)
        with T.Kernel(2) as (bx,):
            for i in T.serial(32):
                for j in T.serial(64):
                    B[bx * 32 + i, j] = A[bx * 32 + i, j] * 2.0
        return B

    assert list(kernel.attrs["tilelang_out_idx"]) == [-1]
    assert kernel.attrs["tilelang_pass_configs"]["tt.math_fidelity"] == "HiFi4"
    assert list(kernel.attrs["tilelang_compile_flags"]) == ["--use_fast_math"]
    compiled = tilelang.compile(kernel)
    assert compiled.plan["kernels"]["compute"]["config"]["math_fidelity"] == "HiFi4"
    a = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    np.testing.assert_allclose(compiled(a), a * 2.0, rtol=0, atol=0)
    with pytest.raises(ValueError, match="Out index conflict"):
        tilelang.compile(kernel, out_idx=[-1])


def test_prim_func_eager_form_needs_fixed_sizes():
    with pytest.raises(TTUnsupportedError, match=r"T\.dynamic \(m\).*@tilelang\.jit"):
        @T.prim_func
        def kernel(A):
            m = T.dynamic("m")
            A: T.Tensor[[m, 32], T.float32]
            with T.Kernel(1):
                pass


def elementwise(M, N, block_M, dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as (by,):
            A_local = T.alloc_fragment((block_M, N), dtype)
            B_local = T.alloc_fragment((block_M, N), dtype)
            E_local = T.alloc_fragment((block_M, N), dtype)
            E_local[0:block_M, 0:N] = 0.5  # a store to a region: T.fill
            for i, j in T.Parallel(block_M, N):
                A_local[i, j] = 1.0
            for i in T.Parallel(block_M):
                for j in T.vectorized(N):
                    A_local[i, j] = A_local[i, j] + A[by * block_M + i, j]
            for i, j in T.Parallel(block_M, N):
                T.copy(B[by * block_M + i, j], B_local[i, j])
            off = T.int32()
            T.let(off, by * block_M)
            for i in T.serial(block_M):
                for j in T.serial(N):
                    C[off + i, j] = A_local[i, j] + B_local[i, j] + E_local[i, j]

    return main


def test_constant_store_element_copy_serial_and_vectorized_nests_and_let_run():
    kernel = tilelang.compile(elementwise(64, 64, 32), out_idx=[2])
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((64, 64)).astype(np.float32) for _ in range(2))
    np.testing.assert_allclose(kernel(a, b), a + b + 1.5, rtol=1e-5, atol=1e-5)


def test_serial_loop_with_a_carried_dependence_stays_serial():
    @T.prim_func
    def main(A: T.Tensor((32, 32), T.float32), B: T.Tensor((32, 32), T.float32)):
        with T.Kernel(1):
            for i in T.serial(31):
                for j in T.serial(32):
                    B[i + 1, j] = B[i, j] + A[i, j]

    # a launch of element code alone is a scalar program: the loops run in order on the reader
    rng = np.random.default_rng(1)
    a = rng.standard_normal((32, 32)).astype(np.float32)
    b = rng.standard_normal((32, 32)).astype(np.float32)
    want = b.copy()
    for i in range(31):
        want[i + 1] = want[i] + a[i]
    tilelang.compile(main)(a, b)
    np.testing.assert_array_equal(b, want)


def test_fast_math_intrinsics_take_floats_only():
    from tvm import tirx

    with pytest.raises(TypeError, match=r"T\.__exp only supports floating-point inputs, but "
                                        r"got int8"):
        T.__exp(tirx.Var("x", "int8"))
    assert T.__log2.__name__ == "__log2"
    assert str(T.__exp(tirx.Var("x", "float16")).ty) == "float16"


def test_torch_dtypes_and_scalar_initialisers():
    torch = pytest.importorskip("torch")

    @T.prim_func
    def k(A: T.Tensor((32, 32), torch.float32)):
        with T.Kernel(1):
            S = T.alloc_shared((32, 32), torch.bfloat16)
            T.copy(A, S)
            x = T.alloc_var(T.float64, init=1e300)

    assert str(k.params[0].ty.dtype) == "float32"
    import re

    literal = re.search(r"T\.float64\(([0-9.e+]+)\)", k.script())
    assert literal is not None and float(literal.group(1)) == 1e300
    with pytest.raises(ValueError, match="exceeds maximum of float32"):
        @T.prim_func
        def bad(A: T.Tensor((32, 32), T.float32)):
            with T.Kernel(1):
                x = T.alloc_var(T.float32, init=1e300)
    with pytest.raises(TTCompileError, match="dtype is required"):
        T.Tensor((32, 32), None)


def test_pointers_are_refused_and_strides_checked_by_name():
    with pytest.raises(TTUnsupportedError, match=r"T\.ptr: raw pointers"):
        T.Tensor([4], T.ptr)

    @tilelang.jit
    def strided(x):
        m = T.dynamic("m")
        x: T.StridedTensor[[m, 32], [64, 1], T.float32]
        with T.Kernel(1):
            pass

    # a contiguous (32, 32) array has strides (32, 1), not the annotation's (64, 1)
    with pytest.raises(TTCallArgumentError, match=r"test_language_breadth.py:\d+: tensor x: "
                                                  r"T\.StridedTensor strides \(64, 1\)"):
        strided(np.zeros((32, 32), np.float32))

    with pytest.raises(TTUnsupportedError, match=r"T\.StridedTensor: a strided tensor "
                                                 r"parameter is supported in an eager"):
        @T.prim_func
        def kernel(x: T.StridedTensor[[32, 32], [64, 1], T.float32]):
            with T.Kernel(1):
                pass


@tilelang.jit
def test_named_jit_kernel(A: T.Tensor((32, 32), T.float32)):
    with T.Kernel(1):
        pass


def test_jit_kernel_named_like_a_test_is_not_a_test_function():
    import inspect

    assert not inspect.isfunction(test_named_jit_kernel)
    assert not hasattr(test_named_jit_kernel, "__wrapped__")
    assert list(inspect.signature(test_named_jit_kernel).parameters) == ["A"]


def test_reduce_of_a_block_into_a_scalar_variable_names_both_buffers():
    # a variable is a one-element destination (testing/test_reduce_1d.py reduces vectors
    # into one); a 2-D block reduced along dim 0 leaves one value per column
    @T.prim_func
    def main(A: T.Tensor((32, 32), T.float32), B: T.Tensor((1,), T.float32)):
        with T.Kernel(1):
            src = T.alloc_fragment((32, 32), T.float32)
            dst = T.alloc_var(T.float32)
            T.copy(A, src)
            T.reduce_sum(src, dst, dim=0)
            B[0] = dst

    with pytest.raises(TTLayoutError, match=r"T\.reduce_sum\(src\[32, 32\], dst\[1\], dim=0\): "
                                            r"reducing along dim 0 leaves 32 values .* dst must "
                                            r"have shape \[32\]"):
        tilelang.compile(main)


@T.macro
def affine(x, a, b):
    return x * a + b  # a macro ending in `return value` is an expression of that value


def scale_add_macro(block_M, N):
    """A ``@T.macro`` made by a function the kernel calls (TileLang's dequantize examples)."""

    @T.macro
    def scale_add(s, scale, offset):
        for i, j in T.Parallel(block_M, N):
            s[i, j] = affine(s[i, j], scale, offset)

    return scale_add


def scale_rows(M, N, block_M, sizes=(1, 2, 3)):
    """TileLang's kernel-body Python: an ``assert`` on sizes, a generator expression over a
    Python list, a Python-typed annotation, ``T.clear`` / ``T.fill`` of a T.alloc_var
    variable, a ``x: T.float32 = v`` scalar assigned again, a macro returned by a call, a macro returning a value."""

    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32)):
        assert M % block_M == 0, "block_M must divide M"
        total: int = sum(s * 2 for s in sizes)
        with T.Kernel(M // block_M, threads=128) as bx:
            scale = T.alloc_var(T.float32)
            offset = T.alloc_var(T.float32)
            T.clear(scale)
            T.fill(offset, 0.25)
            scale += total
            bias: T.float32 = 1.0  # a declared scalar: the next assignment stores into it
            bias = 0.25
            offset += bias
            s = T.alloc_shared((block_M, N), T.float32)
            T.copy(A[bx * block_M, 0], s)
            scale_add_macro(block_M, N)(s, scale, offset)
            T.copy(s, B[bx * block_M, 0])

    return main


def test_assert_generator_and_clear_of_a_variable_run():
    art = tilelang.compile(scale_rows(64, 32, 32), out_idx=-1)
    a = np.random.default_rng(3).standard_normal((64, 32)).astype(np.float32)
    np.testing.assert_allclose(art(a), a * np.float32(12.0) + np.float32(0.5), rtol=1e-6)


def test_tilelang_helper_modules_and_tvm_names():
    import tvm
    from tvm import tirx

    import tilelang_tt.language.common as T_common
    import tilelang_tt.testing  # noqa: F401  (as tilelang.testing: tvm.testing's decorators)
    from tilelang_tt import DataType
    from tilelang_tt.language.dtypes import dtype, is_float4
    from tilelang_tt.language.fp8 import determine_fp8_type

    assert T_common.copy is T.copy and dtype is T.dtype and not is_float4(T.float16)
    assert DataType(T.float16).bits == 16
    x = tirx.Var("x", T.float16)
    assert isinstance(T.exp(x), tirx.Call) and isinstance(x, tirx.PrimExpr)
    assert x.dtype == T.float16 and T.exp(x).dtype == "float16"
    assert tvm.testing.requires_package("bitblas")(len)([1]) == 1
    fp8 = determine_fp8_type()
    assert fp8 == "float8_e4m3fn" and T.float4_e2m1fn.is_float4() and not fp8.is_float4()

    @T.prim_func
    def k(A: T.Tensor((32, 128), fp8), B: T.Tensor((128, 32), fp8),
          C: T.Tensor((32, 32), T.float32)):
        with T.Kernel(1):
            A_s = T.alloc_shared((32, 32), fp8)
            B_s = T.alloc_shared((32, 32), fp8)
            C_l = T.alloc_fragment((32, 32), T.float32)
            T.clear(C_l)
            for ko in T.Pipelined(4, num_stages=2):
                T.copy(A[0, ko * 32], A_s)
                T.copy(B[ko * 32, 0], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C)

    with pytest.raises(TTUnsupportedError, match="buffer A has dtype float8_e4m3fn"):
        tilelang.compile(k)


def test_dtype_without_a_scalar_constructor_is_a_type_error():
    with pytest.raises(TypeError, match=r"T\.int8x2\(\.\.\.\): TVM 0.27 has no scalar "
                                        r"constructor"):
        T.int8x2(1.0)


def ieee_ops(M, N, block_M, block_N, rounding_mode="rn", dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype),
             C: T.Tensor((M, N), dtype), D: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                D[by * block_M + i, bx * block_N + j] = T.ieee_fmaf(
                    A[by * block_M + i, bx * block_N + j],
                    T.ieee_add(B[by * block_M + i, bx * block_N + j], 1.0, rounding_mode),
                    T.ieee_frsqrt(C[by * block_M + i, bx * block_N + j]),
                    rounding_mode=rounding_mode)

    return main


def test_ieee_ops_take_tilelangs_rounding_mode_argument():
    # TileLang's testing/python/math/test_math_ieee_math.py: the rounding mode positional or
    # keyword; round-to-nearest-even computes the operation
    kernel = tilelang.compile(ieee_ops(64, 64, 32, 32), out_idx=[3])
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((64, 64)).astype(np.float32) for _ in range(2))
    c = rng.uniform(0.5, 4.0, (64, 64)).astype(np.float32)
    np.testing.assert_allclose(kernel(a, b, c), a * (b + 1.0) + 1.0 / np.sqrt(c),
                               rtol=1e-3, atol=1e-3)
    with pytest.raises(ValueError, match="Invalid rounding mode 'xy'"):
        T.ieee_mul(1.0, 2.0, "xy")
    with pytest.raises(TTUnsupportedError, match=r"T\.ieee_add\(rounding_mode='rz'\)"):
        tilelang.compile(ieee_ops(64, 64, 32, 32, "rz"))
    with pytest.raises(ValueError, match="T.ieee_frsqrt takes 1 operand"):
        T.ieee_frsqrt(4.0, "rn")


def test_round_takes_tilelangs_rounding_mode():
    from tvm import tirx

    x = tirx.Var("x", T.float32)
    assert T.round(x).op.name == "tirx.round"
    with pytest.raises(TTUnsupportedError, match="ties-away-from-zero"):
        T.round(x, "ties-away-from-zero")
    with pytest.raises(ValueError, match="Unsupported T.round rounding_mode 'up'"):
        T.round(x, "up")


def tf32_matmul(M, N, K, block_M, block_N, block_K, in_dtype=T.tfloat32):
    @T.prim_func
    def main(A: T.Tensor((M, K), in_dtype), B: T.Tensor((N, K), in_dtype),
             C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), in_dtype)
            B_shared = T.alloc_shared((block_N, block_K), in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def test_tfloat32_is_float32_read_as_tf32_by_the_matrix_engine():
    # TileLang's kernel/test_tilelang_kernel_gemm.py f32f32f32 tests declare T.tfloat32 inputs
    assert T.tfloat32 == "float32" and T.dtype("tfloat32") == "float32"
    kernel = tilelang.compile(tf32_matmul(64, 64, 96, 32, 32, 32), out_idx=[2])
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (64, 96)).astype(np.float32)
    b = rng.uniform(-1, 1, (64, 96)).astype(np.float32)
    c = kernel(a, b)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(c, ref, rtol=1e-2, atol=1e-2)
    # operands read with TF32's 10 mantissa bits: not float32-exact, within TF32's error
    err = np.abs(c - ref).max()
    assert 1e-6 < err < np.abs(ref).max() * 2e-3


def guarded_add(M, N, block_M, block_N, guard_rows=None, dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                row = by * block_M + i
                col = bx * block_N + j
                if row < (guard_rows or M) and col < N:
                    C[row, col] = A[row, col] + B[row, col]

    return main


def test_bounds_guard_true_for_every_block_is_dropped():
    # TileLang's guarded elementwise idiom (testing/python/jit pdl and l2 tests): with sizes
    # that are multiples of the block, the guard holds everywhere and the kernel runs
    kernel = tilelang.compile(guarded_add(64, 96, 32, 32), out_idx=[2])
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((64, 96)).astype(np.float32) for _ in range(2))
    np.testing.assert_array_equal(kernel(a, b), a + b)
    # a guard that is false for some elements (rows 48.. of 64) is a select (if-conversion,
    # A0.1.0.1): those rows keep C's elements (zeros: the output as the host allocates it)
    kernel = tilelang.compile(guarded_add(64, 96, 32, 32, guard_rows=48), out_idx=[2])
    ref = a + b
    ref[48:] = 0
    np.testing.assert_array_equal(kernel(a, b), ref)


def matmul_batched(batch, M, N, K, block_M, block_N, block_K, dtype=T.float32):
    # TileLang's testing/python/kernel/test_tilelang_kernel_gemm_batched.py: one slice of the
    # block buffers per batch
    @T.prim_func
    def main(A: T.Tensor((batch, M, K), dtype), B: T.Tensor((batch, K, N), dtype),
             C: T.Tensor((batch, M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((batch, block_M, block_K), dtype)
            B_shared = T.alloc_shared((batch, block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), T.float32)
            for b in T.serial(batch):
                T.clear(C_local)
                for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=0):
                    T.copy(A[b, by * block_M, k * block_K], A_shared[b, :, :])
                    T.copy(B[b, k * block_K, bx * block_N], B_shared[b, :, :])
                    T.gemm(A_shared[b, :, :], B_shared[b, :, :], C_local)
                T.copy(C_local, C[b, by * block_M, bx * block_N])

    return main


def test_batched_gemm_with_a_block_slice_per_batch():
    kernel = tilelang.compile(matmul_batched(3, 64, 64, 96, 32, 32, 32), out_idx=[2])
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (3, 64, 96)).astype(np.float32)
    b = rng.uniform(-1, 1, (3, 96, 64)).astype(np.float32)
    np.testing.assert_allclose(kernel(a, b), a.astype(np.float64) @ b, rtol=1e-2, atol=2e-2)


def test_block_slices_of_a_nested_loop_are_kept():
    # an enclosing loop reruns the batch loop: slice b could carry a value between its runs,
    # so the buffer keeps its slices (and the partial region is refused as before)
    from tvm_ffi import structural_equal

    from tilelang_tt.passes.frontend.block_slices import collapse_block_slices

    @T.prim_func
    def main(A: T.Tensor((2, 64, 64), T.float32), C: T.Tensor((2, 64, 64), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((2, 64, 64), T.float32)
            for r in T.serial(2):
                for b in T.serial(2):
                    T.copy(A[b, 0, 0], S[b, :, :])
                    T.copy(S[b, :, :], C[b, 0, 0])

    body = tilelang.lower(main, stop_after="A0.1.1")
    func = list(body.functions.values())[0]
    assert structural_equal(collapse_block_slices(func.body), func.body)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_floor_ceil_trunc_round_nearbyint_on_the_vector_engine(tmp_path, dtype):
    # floor, ceil, trunc; T.round (TileLang's default "ties-to-even") and T.nearbyint:
    # round_tile(idst, 0). Row 0 holds the floor/ceil/trunc edge values, row 1 the ties.
    import ml_dtypes

    names = ["floor", "ceil", "trunc", "round", "nearbyint"]
    refs = [np.floor, np.ceil, np.trunc, np.rint, np.rint]
    # TileLang's testing/python/math/test_math_fast_math.py single-argument kernel, one
    # T.Parallel nest (and output) per function
    kernel = parallel_outputs_kernel(tmp_path, dtype, ["A"], {f"B_{n}": f"T.{n}({{A}})" for n in names},
                                     64, 64, 32, 32)
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((64, 64)) * 40).astype(np.float32)
    a[0, :8] = [-0.5, 0.5, -1.5, 2.5, -0.0, 1e30, -3e9, 0.25]
    a[1, :8] = [0.5, 1.5, 2.5, -0.5, -2.5, 1e30, -3e9, 0.49]
    a = a.astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float32)
    got = [np.asarray(g).astype(np.float32) for g in kernel(a)]
    for f, (name, ref) in enumerate(zip(names, refs)):
        np.testing.assert_array_equal(got[f], ref(a.astype(np.float32)), err_msg=name)
        if dtype == "float32" and name in ("floor", "ceil", "trunc"):
            # -0.5 -> -1.0 or -0.0 (a bfloat16 pack writes zeros as +0.0)
            assert np.signbit(got[f][0, 0]) == np.signbit(ref(np.float32(-0.5))), name


def test_exp10_log10_as_exp_and_log(tmp_path):
    # TileLang's test_math_fast_math single-argument kernel: exp10(x) = exp(x ln 10),
    # log10(x) = log(x) / ln 10 on the vector engine
    names, refs = ["exp10", "log10", "exp2"], [lambda x: 10.0 ** x, np.log10, np.exp2]
    kernel = parallel_outputs_kernel(tmp_path, "float32", ["A"],
                                     {f"B_{n}": f"T.{n}({{A}})" for n in names}, 64, 64, 32, 32)
    a = np.random.default_rng(1).uniform(0.1, 3.0, (64, 64)).astype(np.float32)
    got = kernel(a)
    for f, (name, ref) in enumerate(zip(names, refs)):
        np.testing.assert_allclose(got[f], ref(a.astype(np.float64)), rtol=2e-3, atol=1e-5,
                                   err_msg=name)


def test_tuple_assignment_swaps_variables():
    # TileLang's frontend test `a, b = b, a` on T.alloc_var variables: Python's tuple
    # assignment (every value read before any is stored), so the two scalars swap; unpacking
    # into plain names (`M, N = ...`) stays a Python binding
    @T.prim_func
    def kernel(A: T.Tensor((64, 64), T.float32), B: T.Tensor((64, 64), T.float32)):
        with T.Kernel(2, threads=128) as bx:
            a = T.alloc_var(T.float32, 1.0)
            b = T.alloc_var(T.float32, 3.0)
            a, b = b, a
            rows, cols = 32, 64
            for i, j in T.Parallel(rows, cols):
                B[bx * 32 + i, j] = A[bx * 32 + i, j] * a + b

    x = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    y = np.zeros_like(x)
    tilelang.compile(kernel)(x, y)
    np.testing.assert_allclose(y, x * 3.0 + 1.0, rtol=1e-6, atol=1e-6)


def test_fill_of_a_tensor_with_infinity():
    """TileLang's test_infinity: `T.fill` of a whole tensor (a staged block of constant tiles
    the writer stores), `T.infinity` of each float dtype bfloat16 included (one output each)."""

    @tilelang.jit(out_idx=[0, 1, 2])
    def get_inf_kernel(dtypes):
        @T.prim_func
        def main(A: T.Tensor((32,), dtypes[0]), B: T.Tensor((32,), dtypes[1]),
                 C: T.Tensor((32,), dtypes[2])):
            with T.Kernel(1, threads=32):
                T.fill(A, T.infinity(dtypes[0]))
                T.fill(B, T.infinity(dtypes[1]))
                T.fill(C, T.infinity(dtypes[2]))

        return main

    dtypes = (T.float16, T.bfloat16, T.float32)
    outs = get_inf_kernel(dtypes)()
    for dtype, out in zip(dtypes, outs):
        assert str(out.dtype).replace("torch.", "") == str(dtype), (out.dtype, dtype)
        out = out.float().numpy() if hasattr(out, "float") else np.asarray(out, dtype=np.float32)
        assert out.shape == (32,) and np.all(out == np.inf), dtype


def test_fill_with_negative_infinity_seeds_a_running_max():
    """TileLang's test_reduce_clear (max): the seed `-T.infinity(dtype)` is a constant
    expression (TVM leaves `inf * -1` unfolded), folded to the constant fill."""
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float16), B: T.Tensor((64,), T.float16)):
        with T.Kernel(1, threads=128):
            src = T.alloc_fragment((64, 64), T.float16)
            dst = T.alloc_fragment((64,), T.float16)
            T.copy(A, src)
            T.fill(dst, -T.infinity(T.float16))
            T.reduce_max(src, dst, dim=1, clear=False)
            T.copy(dst, B)

    a = np.random.default_rng(3).standard_normal((64, 64)).astype(np.float16)
    out = tilelang.compile(main, out_idx=-1)(a)
    np.testing.assert_array_equal(out, a.max(axis=1))  # the max of float16 values is exact
