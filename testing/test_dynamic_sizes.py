"""Symbolic sizes in the factory form: ``tilelang.compile`` / ``@tilelang.jit`` of a kernel
declared with ``T.dynamic`` sizes compiles one kernel per set of sizes when called
(tilelang_tt/runtime/dynamic.py), as TileLang's testing/python/jit and profiler tests use it."""

import numpy as np
import pytest

import tilelang_tt as tilelang
import tilelang_tt.language as T
from tilelang_tt import TTUnsupportedError
from tilelang_tt.runtime.dynamic import DynamicKernel


@tilelang.jit(out_idx=[-1])
def matmul(M, N, K, block_M, block_N, block_K, dtype=T.float32, accum_dtype=T.float32):
    @T.prim_func
    def gemm(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm


def elementwise_scale(M, N, block_M, block_N, dtype=T.bfloat16):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                B[by * block_M + i, bx * block_N + j] = A[by * block_M + i, bx * block_N + j] * 2.0

    return main


def reference(a, b):  # numpy arrays, or CPU torch tensors once anything imported torch
    return np.asarray(a, dtype=np.float64) @ np.asarray(b, dtype=np.float64)


def test_dynamic_m_compiles_per_size_and_matches():
    kernel = matmul(T.dynamic("m"), 64, 96, 32, 32, 32)
    assert isinstance(kernel, DynamicKernel) and kernel.size_names == ["m"]
    rng = np.random.default_rng(0)
    for m in (32, 256, 32):
        a = rng.uniform(-1, 1, (m, 96)).astype(np.float32)
        b = rng.uniform(-1, 1, (96, 64)).astype(np.float32)
        c = kernel(a, b)
        assert c.shape == (m, 64)
        np.testing.assert_allclose(c, reference(a, b), rtol=1e-2, atol=1e-2)
    assert len(kernel._kernels) == 2  # 32 and 256: the second 32 reuses its kernel
    assert "matmul_tiles" in kernel.get_kernel_source()  # the last size's source


def test_dynamic_mnk_all_tensors_passed():
    # every tensor passed (no out_idx): the output is filled in place
    prog = matmul.get_tir(T.dynamic("m"), T.dynamic("n"), T.dynamic("k"), 32, 32, 32)
    kernel = tilelang.compile(prog)
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (64, 128)).astype(np.float32)
    b = rng.uniform(-1, 1, (128, 96)).astype(np.float32)
    c = np.zeros((64, 96), np.float32)
    kernel(a, b, c)
    np.testing.assert_allclose(c, reference(a, b), rtol=1e-2, atol=1e-2)


def test_dynamic_elementwise_two_sizes():
    import ml_dtypes

    kernel = tilelang.compile(elementwise_scale(T.dynamic("m"), T.dynamic("n"), 32, 32),
                              out_idx=[1])
    a = np.random.default_rng(2).uniform(-4, 4, (96, 64)).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(kernel(a).astype(np.float32), a.astype(np.float32) * 2)


def test_dynamic_profiler_constraints_and_input_tensors():
    # the sizes of test_dynamic_m_compiles_per_size_and_matches: the same programs
    kernel = matmul(T.dynamic("m"), 64, 96, 32, 32, 32)
    profiler = kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Normal)
    small = profiler.do_bench(dynamic_symbolic_constraints={"m": 32})
    large = profiler.do_bench(dynamic_symbolic_constraints={"m": 256})
    assert 0 < small < large  # modelled time grows with the work
    a = np.random.default_rng(3).uniform(-1, 1, (256, 96)).astype(np.float32)
    b = np.random.default_rng(4).uniform(-1, 1, (96, 64)).astype(np.float32)
    assert profiler.do_bench(input_tensors=[a, b]) > 0
    profiler.assert_allclose(reference, dynamic_symbolic_constraints={"m": 32})
    with pytest.raises(ValueError, match="'m'"):
        profiler.do_bench(dynamic_symbolic_constraints={"wrong_name": 256})
    with pytest.raises(ValueError, match="dynamic_symbolic_constraints"):
        profiler.do_bench()


def test_dynamic_call_errors_name_the_size():
    kernel = matmul(T.dynamic("m"), 64, T.dynamic("k"), 32, 32, 32)
    with pytest.raises(ValueError, match="size k is 64 in tensor A"):
        kernel(np.zeros((32, 64), np.float32), np.zeros((96, 64), np.float32))
    with pytest.raises(TTUnsupportedError, match="call it first"):
        kernel.get_kernel_source()


def test_dynamic_affine_sizes_solved_from_the_call():
    # TileLang's test_tilelang_language_annot.py declares `T.Tensor((n * 4,), ...)`,
    # `(n + 1,)`, `(n * 3 + 1,)`: the call's extent gives n
    n = T.symbolic("n")

    @T.prim_func
    def double(A: T.Tensor((n * 32 + 32, 64), T.float32), B: T.Tensor((n * 32 + 32, 64), T.float32)):
        with T.Kernel(n + 1, threads=128) as bx:
            for i, j in T.Parallel(32, 64):
                B[bx * 32 + i, j] = A[bx * 32 + i, j] * 2.0

    kernel = tilelang.compile(double, out_idx=[1])
    assert isinstance(kernel, DynamicKernel) and kernel.size_names == ["n"]
    a = np.random.default_rng(5).uniform(-1, 1, (96, 64)).astype(np.float32)
    np.testing.assert_array_equal(kernel(a), a * 2)  # n = 2: 3 blocks
    assert kernel.last is kernel.specialize(n=2)
    with pytest.raises(ValueError, match=r"extent 100, which is not 32 \* n \+ 32"):
        kernel(np.zeros((100, 64), np.float32))
    profiler = kernel.get_profiler()
    assert profiler.do_bench(dynamic_symbolic_constraints={"n": 1}) > 0


def test_dynamic_size_expression_refused():
    m, k = T.dynamic("m"), T.dynamic("k")

    for dim in (m * k, m // 2):
        @T.prim_func
        def other(A: T.Tensor((m, 64), T.float32), B: T.Tensor((dim, 64), T.float32)):
            with T.Kernel(1, threads=128) as bx:
                for i, j in T.Parallel(32, 64):
                    B[bx * 32 + i, j] = A[bx * 32 + i, j]

        with pytest.raises(TTUnsupportedError, match="tensor B: dimension 0"):
            tilelang.compile(other)


def matmul_variable(M, N, K, block_M, block_N, block_K, offset_dtype, dtype=T.float32):
    # TileLang's testing/python/jit/test_tilelang_jit_gemm_cython.py matmul_int_variable /
    # matmul_float_variable: a scalar parameter added to the accumulator
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             C: T.Tensor((M, N), dtype), offset: offset_dtype):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), T.float32)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=0):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            for i, j in T.Parallel(block_M, block_N):
                C_local[i, j] = C_local[i, j] + offset
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


@pytest.mark.parametrize("offset_dtype, values", [(T.int32, (1, -3)), (T.float32, (1.0, 0.25))])
def test_scalar_parameter_specialised_per_value(offset_dtype, values):
    kernel = tilelang.compile(matmul_variable(64, 64, 64, 32, 32, 32, offset_dtype), out_idx=2)
    rng = np.random.default_rng(5)
    a = rng.uniform(-1, 1, (64, 64)).astype(np.float32)
    b = rng.uniform(-1, 1, (64, 64)).astype(np.float32)
    for value in values:
        np.testing.assert_allclose(kernel(a, b, value), reference(a, b) + value,
                                   rtol=1e-2, atol=1e-2)
    assert len(kernel._kernels) == 2 and kernel.scalar_names == ["offset"]
    with pytest.raises(ValueError, match="scalar parameter offset"):
        kernel(a, b, "1")
    with pytest.raises(ValueError, match="scalar parameter offset"):
        kernel.get_profiler().do_bench()
