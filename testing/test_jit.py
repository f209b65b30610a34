"""tilelang_tt.jit: TileLang's @tilelang.jit in its eager and factory forms, and the kernel
object API (get_kernel_source, get_profiler), with the kernels of examples/jit_kernels.py."""

import importlib.util
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import jit_kernels as K
import tilelang_tt as tilelang
import tilelang_tt.language as T
from tilelang_tt import TTCompileError, TTRuntimeError, TTUnsupportedError
from tilelang_tt.profiler import TTProfilerUnavailable

HERE = Path(__file__).resolve()
RNG = np.random.default_rng(0)


def f32(shape):
    return RNG.standard_normal(shape).astype(np.float32)


def bf16(shape):
    return RNG.standard_normal(shape).astype(ml_dtypes.bfloat16)


def test_eager_elementwise_call_compiles_once_per_shape():
    K.elementwise_add._kernels.clear()
    a, b = f32((64, 96)), f32((64, 96))
    np.testing.assert_array_equal(K.elementwise_add(a, b, block_M=32, block_N=32), a + b)
    K.elementwise_add(f32((64, 96)), f32((64, 96)), block_M=32, block_N=32)
    assert len(K.elementwise_add._kernels) == 1
    c, d = f32((32, 64)), f32((32, 64))
    np.testing.assert_array_equal(K.elementwise_add(c, d, block_M=32, block_N=32), c + d)
    assert len(K.elementwise_add._kernels) == 2
    assert K.elementwise_add.mode == "eager"


def test_eager_gemm_compile_with_sizes_and_call_with_arrays():
    kernel = K.matmul.compile(M=64, N=64, K=128, block_M=32, block_N=32, block_K=32)
    a, b = bf16((64, 128)), bf16((128, 64))
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(kernel(a, b).astype(np.float32), ref, atol=0.25, rtol=0.02)
    assert K.matmul.compile(a, b, 32, 32, 32) is kernel  # same sizes, same kernel
    assert [p for p in kernel.out_idx] == [2]


def test_eager_rms_norm_with_dtype_assigned_in_the_body():
    kernel = K.rms_norm.compile(M=64, N=64, blk_m=32)
    x = f32((64, 64))
    ref = x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(kernel(x), ref, rtol=0.02, atol=0.02)


def test_factory_form_with_out_idx():
    kernel = K.matmul_nt(64, 64, 64, 32, 32, 32)
    assert K.matmul_nt.mode == "lazy" and K.matmul_nt(64, 64, 64, 32, 32, 32) is kernel
    a, b = bf16((64, 64)), bf16((64, 64))
    ref = a.astype(np.float32) @ b.astype(np.float32).T
    np.testing.assert_allclose(kernel(a, b).astype(np.float32), ref, atol=0.25, rtol=0.02)
    x = f32((32, 64))
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(K.softmax(32, 64, 32)(x).astype(np.float32),
                               e / e.sum(-1, keepdims=True), atol=0.02)


def test_kernel_source_and_profiler():
    kernel = K.softmax(32, 64, 32)
    src = kernel.get_kernel_source()
    assert "// ---- compute.cpp ----" in src and "void kernel_main()" in src
    assert "main.cpp" not in src and "// ---- main.cpp ----" in \
        kernel.get_kernel_source(kernel_only=False)
    with pytest.raises(TTUnsupportedError, match="kernel adapter"):
        kernel.adapter.kernels  # TileLang's GPU launcher

    def ref(x):  # numpy arrays, or CPU torch tensors once anything imported torch
        x = np.asarray(x, dtype=np.float32)
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    profiler = kernel.get_profiler()
    profiler.assert_allclose(ref, rtol=0.02, atol=0.02)
    with pytest.raises(AssertionError, match="elements differ"):
        profiler.assert_allclose(lambda x: ref(x) + 0.5, rtol=0.02, atol=0.02)
    with pytest.raises(TTProfilerUnavailable, match="ran no kernel"):
        profiler.do_bench(ref, warmup=500)  # a reference program gets the inputs, runs no kernel
    assert profiler.do_bench(lambda x: kernel(x)) == pytest.approx(profiler.do_bench(), rel=1e-9)
    ms = profiler.do_bench()  # modelled device time of one run, deterministic
    assert 0 < ms < 1 and profiler.do_bench() == ms
    assert kernel.last_run_stats["device"]["profile"] == "n150"
    assert kernel.get_profiler(device="n300").do_bench() == ms  # one Wormhole chip each
    with pytest.raises(TTRuntimeError, match="p150.*blackhole"):
        kernel.get_profiler(device="p150").do_bench()
    with pytest.raises(TTProfilerUnavailable, match="ran no kernel") as info:
        tilelang.profiler.do_bench(lambda: None)
    assert isinstance(info.value, TTUnsupportedError)
    assert tilelang.profiler.do_bench(lambda: profiler.run_once()) == pytest.approx(ms, rel=1e-9)


def test_tilelang_options_are_accepted():
    @tilelang.jit(out_idx=-1, target="cuda", execution_backend="cython", verbose=True,
                  pass_configs={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True},
                  compile_flags=["-O3"])
    def copy_kernel(M, N):
        @T.prim_func
        def main(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32)):
            with T.Kernel(T.ceildiv(M, 32), threads=128) as bx:
                A_s = T.alloc_shared((32, N), T.float32)
                T.copy(A[bx * 32, 0], A_s)
                T.copy(A_s, B[bx * 32, 0])

        return main

    a = f32((64, 32))
    np.testing.assert_array_equal(copy_kernel(64, 32)(a), a)
    art = tilelang.compile(copy_kernel.get_tir(64, 32), out_idx=[1], target="auto")
    np.testing.assert_array_equal(art(a), a)


def _module(tmp_path, source):
    path = tmp_path / "user_kernel.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("user_kernel", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, path


def test_signature_names_resolve_as_in_python(tmp_path):
    # a name read only in a kernel's signature is no closure cell (Python evaluates the
    # signature where the def runs): the factory's argument shadows a module-level name of
    # the same name (they were taken from the module: a silent bfloat16 kernel); a name
    # bound only at module level is still found
    mod, _ = _module(tmp_path, '''
import tilelang_tt as tilelang
import tilelang_tt.language as T

dtype = "bfloat16"
block_M = 128
N = 128

def make(N, block_M=32, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((block_M, N), dtype), B: T.Tensor((block_M, N), dtype)):
        with T.Kernel(1, 1) as (bx, by):
            s = T.alloc_shared((32, 32), "float32")
            T.copy(A[0, 0], s)
            T.copy(s, B[0, 0])
    return main

@tilelang.jit(out_idx=[1])
def make_jit(N, block_M=32, dtype="float32"):
    return make(N, block_M, dtype)

def make_eager(N, block_M=32, dtype="float32"):
    @tilelang.jit
    def k(A: T.Tensor((block_M, N), dtype), B: T.Tensor((block_M, N), dtype)):
        with T.Kernel(1, 1) as (bx, by):
            s = T.alloc_shared((32, 32), "float32")
            T.copy(A[0, 0], s)
            T.copy(s, B[0, 0])
    return k

def make_global_dtype(n):
    @T.prim_func
    def main(A: T.Tensor((block_M, n), dtype)):
        with T.Kernel(1, 1) as (bx, by):
            T.clear(A[0:32, 0:32])
    return main
''')
    a = f32((32, 32))
    func = mod.make(32)
    assert [(str(p.dtype), [int(d) for d in p.shape]) for p in func.params] == \
        [("float32", [32, 32])] * 2
    np.testing.assert_array_equal(mod.make_jit(32)(a), a)
    b = np.zeros_like(a)
    mod.make_eager(32)(a, b)
    np.testing.assert_array_equal(b, a)
    (p,) = mod.make_global_dtype(32).params
    assert str(p.dtype) == "bfloat16" and [int(d) for d in p.shape] == [128, 32]


def test_eager_errors_name_the_users_line(tmp_path):
    mod, path = _module(tmp_path, '''
import tilelang_tt as tilelang
import tilelang_tt.language as T

@tilelang.jit
def f(A, block):
    M, N = T.const("M, N")
    A: T.Tensor((M, N), T.float32)
    B = T.empty((M, N), T.float32)
    with T.Kernel(T.ceildiv(M, block)) as bx:
        T.shfl_xor(A[0, 0], 1)
    return B

@tilelang.jit
def g(A):
    M, K = T.const("M, K")
    A: T.Tensor((M, 64), T.float32)
    B = T.empty((M, 64), T.float32)
    with T.Kernel(1) as bx:
        T.copy(A[0, 0], B[0, 0])
    return B
''')
    with pytest.raises(TTUnsupportedError) as info:
        mod.f(np.zeros((64, 64), np.float32), 32)
    msg = str(info.value)
    assert "T.shfl_xor" in msg and f"{path}:11" in msg
    with pytest.raises(TTCompileError, match="no value for size K: pass K="):
        mod.g(np.zeros((64, 64), np.float32))


def test_eager_returns_only_empty_tensors_and_refuses_out_idx(tmp_path):
    src = '''
import tilelang_tt as tilelang
import tilelang_tt.language as T

@tilelang.jit{opts}
def f(A):
    M = T.const("M")
    A: T.Tensor((M, 32), T.float32)
    B = T.empty((M, 32), T.float32)
    with T.Kernel(1) as bx:
        T.copy(A[0, 0], B[0, 0])
    return {ret}
'''
    with pytest.raises(TTCompileError, match="returns only tensors declared with T.empty"):
        _module(tmp_path, src.format(opts="", ret="A"))
    with pytest.raises(TTCompileError, match="out_idx is for the factory form"):
        _module(tmp_path, src.format(opts="(out_idx=[-1])", ret="B"))


def test_torch_tensors_in_and_out():
    # the kernels (and sizes) of the numpy tests above
    torch = pytest.importorskip("torch")
    a = torch.randn(64, 96)
    b = torch.randn(64, 96)
    c = K.elementwise_add(a, b, block_M=32, block_N=32)
    assert isinstance(c, torch.Tensor) and torch.equal(c, a + b)
    x, w = torch.randn(64, 128).bfloat16(), torch.randn(128, 64).bfloat16()
    kernel = K.matmul.compile(M=64, N=64, K=128, block_M=32, block_N=32, block_K=32)
    y = kernel(x, w)
    assert y.dtype == torch.bfloat16
    torch.testing.assert_close(y.float(), x.float() @ w.float(), atol=0.25, rtol=0.02)
    kernel.get_profiler().assert_allclose(lambda p, q: p @ q, atol=0.25, rtol=0.02)


def test_torch_inputs_untouched_outputs_own_memory():
    """torch tensors are passed as views (no host copy): inputs keep their values, each call's
    outputs are tensors of their own."""
    torch = pytest.importorskip("torch")
    a, b = torch.randn(64, 96), torch.randn(64, 96)
    a0, b0 = a.clone(), b.clone()
    c = K.elementwise_add(a, b, block_M=32, block_N=32)
    d = K.elementwise_add(a, b, block_M=32, block_N=32)
    assert torch.equal(a, a0) and torch.equal(b, b0)
    assert torch.equal(c, a + b) and torch.equal(d, c)
    assert c.data_ptr() != d.data_ptr()


def test_import_does_not_load_torch():
    """tvm_ffi imports torch when it is installed; tilelang_tt hides it while TVM loads (3 s
    and ~90 MB per process) unless TILELANG_TT_TVM_TORCH=1; a later import of torch works."""
    pytest.importorskip("torch")
    import os
    import subprocess
    import sys

    code = ("import sys, tilelang_tt; print('torch' in sys.modules); import torch; "
            "print(torch.tensor([1.0, 2.0]).sum().item())")
    env = dict(os.environ)
    env.pop("TILELANG_TT_TVM_TORCH", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout.split()
    assert out == ["False", "3.0"]
    env["TILELANG_TT_TVM_TORCH"] = "1"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         check=True).stdout.split()
    assert out == ["True", "3.0"]


@tilelang.jit
def matmul_dynamic_mnk(A, B, block_M, block_N, block_K, trans_A, trans_B, in_dtype, out_dtype,
                       accum_dtype, num_stages, threads):
    M = T.dynamic("m")
    N = T.dynamic("n")
    K = T.dynamic("k")
    A_shape = (K, M) if trans_A else (M, K)
    B_shape = (N, K) if trans_B else (K, N)
    A_shared_shape = (block_K, block_M) if trans_A else (block_M, block_K)
    B_shared_shape = (block_N, block_K) if trans_B else (block_K, block_N)
    A: T.Tensor(A_shape, in_dtype)
    B: T.Tensor(B_shape, in_dtype)
    C = T.empty((M, N), out_dtype)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
        A_shared = T.alloc_shared(A_shared_shape, in_dtype)
        B_shared = T.alloc_shared(B_shared_shape, in_dtype)
        C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
        T.clear(C_local)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
            if trans_A:
                T.copy(A[k * block_K, by * block_M], A_shared)
            else:
                T.copy(A[by * block_M, k * block_K], A_shared)
            if trans_B:
                T.copy(B[bx * block_N, k * block_K], B_shared)
            else:
                T.copy(B[k * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local, trans_A, trans_B)
        T.copy(C_local, C[by * block_M, bx * block_N])
    return C


def test_eager_shapes_from_python_expressions():
    # TileLang's examples/dynamic_shape: tensor shapes chosen by a conditional expression
    # assigned to a local before the annotation; sizes come from the arrays' shapes. A
    # transposed and B not: the two conditional expressions take both branches between them
    trans_A, trans_B = True, False
    M, N, K = 64, 96, 128
    rng = np.random.default_rng(0)
    a = rng.random((K, M) if trans_A else (M, K)).astype(np.float16)
    b = rng.random((N, K) if trans_B else (K, N)).astype(np.float16)
    c = matmul_dynamic_mnk(a, b, 32, 32, 32, trans_A, trans_B, "float16", "float16", "float32",
                           2, 128)
    ref = (a.T if trans_A else a).astype(np.float32) @ (b.T if trans_B else b).astype(np.float32)
    assert c.shape == (M, N)
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=1e-2, atol=0.1)


@tilelang.jit
def tensor_null_test(M, N, K, block_M, block_N, block_K, dtype=T.bfloat16, accum_dtype=T.float32,
                     with_bias=False):
    # TileLang's testing/python/jit/test_tilelang_jit_nullptr.py
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype),
             C: T.Tensor((M, N), accum_dtype), Bias: T.Tensor((N), accum_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_N, block_K), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[bx * block_N, ko * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            if with_bias:
                for i, j in T.Parallel(block_M, block_N):
                    C_local[i, j] += Bias[bx * block_N + j]
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def test_none_for_a_tensor_the_kernel_never_accesses():
    a, b = f32((64, 96)), f32((64, 96))
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    c = np.zeros((64, 64), np.float32)
    tensor_null_test(64, 64, 96, 32, 32, 32, T.float32, with_bias=False)(a, b, c, None)
    np.testing.assert_allclose(c, ref, rtol=1e-2, atol=0.05)  # operands read as TF32
    with pytest.raises(ValueError, match="tensor Bias: got None, but the kernel reads it"):
        tensor_null_test(64, 64, 96, 32, 32, 32, T.float32, with_bias=True)(a, b, c, None)

    # with out_idx the call passes the inputs only (TileLang's adapter), None among them too;
    # sizes (T.dynamic) come from the other tensors
    m = T.dynamic("m")

    @T.prim_func
    def copy(A: T.Tensor((m, 32), "float32"), Unused: T.Tensor((m, 32), "float32"),
             B: T.Tensor((m, 32), "float32")):
        with T.Kernel(T.ceildiv(m, 32)) as bx:
            s = T.alloc_shared((32, 32), "float32")
            T.copy(A[bx * 32, 0], s)
            T.copy(s, B[bx * 32, 0])

    kernel = tilelang.compile(copy, out_idx=[2])
    x = f32((64, 32))
    np.testing.assert_array_equal(kernel(x, None), x)
    y = np.zeros_like(x)
    kernel(x, None, y)  # every tensor, as without out_idx
    np.testing.assert_array_equal(y, x)
    with pytest.raises(ValueError, match=r"tensor B: got None, but it is an output the call "
                       r"allocates \(out_idx\); pass only the inputs \(A, Unused\)"):
        kernel(x, None, None)
    with pytest.raises(ValueError, match=r"or the 2 inputs \(A, Unused\); got 1$"):
        kernel(x)


def test_jit_func_is_the_users_function_and_refuses_tilelang_internals():
    # TileLang's own jit tests reach into `kernel.func` (its JITFunc): the user's function is
    # there, callable, with get_tir; TileLang's cache-key internals are refused by name
    import inspect

    from tilelang_tt import TTUnsupportedError

    @tilelang.jit
    def factory(hidden: int, token_stride: int, sf_only: bool = False):
        @T.prim_func
        def kernel(A: T.Tensor((32, hidden), "float32"), B: T.Tensor((32, hidden), "float32")):
            with T.Kernel(1, threads=128):
                T.copy(A, B)

        return kernel

    assert list(inspect.signature(factory.func).parameters) == ["hidden", "token_stride",
                                                                  "sf_only"]
    assert factory.func.__name__ == "factory" and factory.func.orig_func.__name__ == "factory"
    assert isinstance(factory.func(64, 1), type(factory.func.get_tir(64, 1)))
    for name in ("parse_args", "set_mode", "_parse_phase1_key"):
        with pytest.raises(TTUnsupportedError, match=f"factory.func.{name}: TileLang's JITFunc"):
            getattr(factory.func, name)
    with pytest.raises(AttributeError):
        factory.func.no_such_attribute
    with pytest.raises(TTUnsupportedError, match="jit_phase"):
        from tilelang_tt.jit.diagnostics import jit_phase
        jit_phase("phase", enabled=True)
