"""TileLang's language surface: dtypes, every tilelang.language name, aliases."""

import importlib
from pathlib import Path

import numpy as np
import pytest

import tilelang_tt
import tilelang_tt.language as T
from tilelang_tt import TTCompileError, TTUnsupportedError
from tilelang_tt.language_compat import NO_OPS, REFUSED, Refused

HERE = Path(__file__).resolve()
NAMES = (HERE.parent / "data" / "tilelang_0_1_14_language_names.txt").read_text().split()


# ---- dtypes -----------------------------------------------------------------------------------
def test_dtypes_equal_their_strings_as_in_tilelang():
    assert T.float32 == "float32" and T.float == "float32" and T.half == "float16"
    assert T.bfloat16 == "bfloat16" and T.int32 == "int32" and T.int == "int32"
    assert isinstance(T.float32, str) and hash(T.float32) == hash("float32")
    assert T.dtype("float") == "float32" and T.dtype(np.float32) == T.float32
    assert T.float16.bits == 16 and T.float32.bytes == 4


def test_dtype_objects_in_annotations_allocations_and_casts():
    @T.prim_func
    def k(A: T.Tensor((64, 64), T.float32), B: T.Tensor((64, 64), T.bfloat16)):
        with T.Kernel(2, 2) as (bx, by):
            A_s = T.alloc_shared((32, 32), T.float32)
            B_l = T.alloc_fragment((32, 32), T.bfloat16)
            T.copy(A[by * 32, bx * 32], A_s)
            for i, j in T.Parallel(32, 32):
                B_l[i, j] = T.bfloat16(A_s[i, j] * T.float32(2))
            T.copy(B_l, B[by * 32, bx * 32])

    params = {str(p.name): str(p.ty.dtype) for p in k.params}
    assert params == {"A": "float32", "B": "bfloat16"}
    text = k.script()
    assert 'T.Cast("bfloat16"' in text and "T.float32(2.0)" in text
    art = tilelang_tt.compile(k, out_idx=[1])
    a = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    np.testing.assert_allclose(art(a).astype(np.float32), a * 2, rtol=1e-2)


def test_astype_takes_a_dtype_object():
    from tvm import tirx

    assert str(tirx.Var("x", "float32").astype(T.bfloat16).ty) == "bfloat16"


# ---- every name of tilelang.language ---------------------------------------------------------
def test_name_list_is_tilelang_0_1_14s():
    assert len(NAMES) > 600 and {"GemmWarpPolicy", "const", "empty", "clamp", "tma_load",
                                 "shfl_xor", "Serial", "float16"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_every_tilelang_name_resolves(name):
    obj = getattr(T, name)  # never AttributeError
    if isinstance(obj, Refused):
        with pytest.raises(TTUnsupportedError, match=f"T.{name}:"):
            obj()
    elif name in NO_OPS:
        assert obj({}) is None


def test_refusals_say_why():
    for name, what in (("shfl_xor", "warp"), ("atomic_addx2", "atomic"), ("tma_load", "TMA"),
                       ("extract_lane", "SIMT"), ("ptx_mma", "tensor-core")):
        assert what in REFUSED[name], name


def test_refused_name_in_a_kernel_names_it_and_the_line():
    with pytest.raises(TTUnsupportedError) as info:
        @T.prim_func
        def k(A: T.Tensor((32, 32), "float32")):
            with T.Kernel(1) as bx:
                T.atomic_addx2(A[0, 0], 1.0)
    msg = str(info.value)
    assert "T.atomic_addx2" in msg and f"{HERE}:" in msg and "T.atomic_addx2(A[0, 0], 1.0)" in msg


def test_refused_names_can_be_referenced_without_error():
    table = {"policy": T.GemmWarpPolicy.FullRow, "ws": T.ws, "fp4": T.float4_e2m1_unpacked}
    assert table["policy"] == T.GemmWarpPolicy.FullRow
    with pytest.raises(TTUnsupportedError):
        table["ws"](1)


def test_tilelang_internal_submodules_of_jit_profiler_transform_import_as_refusals():
    # TileLang's testing/python/jit and profiler tests import its adapters, CUPTI timing and
    # simplifier: the imports work, the names refuse when used, the public ones are ours
    from tilelang_tt.jit.abi import prepare_tvm_ffi_callee_allocated_outputs
    from tilelang_tt.jit.kernel import JITKernel
    from tilelang_tt.profiler.bench import _bench_with_cupti
    from tilelang_tt.transform.simplify import simplify_prim_func

    assert JITKernel is tilelang_tt.JITKernel
    assert simplify_prim_func is tilelang_tt.transform.simplify_prim_func
    with pytest.raises(TTUnsupportedError, match="tilelang.profiler.bench._bench_with_cupti"):
        _bench_with_cupti(lambda: None)
    with pytest.raises(TTUnsupportedError, match="kernel adapters"):
        prepare_tvm_ffi_callee_allocated_outputs()
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("tilelang_tt.jit.no_such_module")
    # TileLang probes its adapters with `except ImportError`: they stay absent, saying why
    with pytest.raises(ImportError, match="kernel adapters"):
        importlib.import_module("tilelang_tt.jit.adapter.cutedsl.checks")


def test_no_op_hints_leave_the_kernel_unchanged():
    def body(hints):
        @T.prim_func
        def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
            with T.Kernel(2, 2, threads=256) as (bx, by):
                A_s = T.alloc_shared((32, 32), "float32")
                if hints:
                    T.use_swizzle(panel_size=10, enable=True)
                    T.annotate_layout({A_s: T.Layout((32, 32), lambda i, j: (i, j))})
                    T.annotate_l2_hit_ratio({A: 0.5})
                    T.sync_threads()
                T.copy(A[by * 32, bx * 32], A_s)
                T.copy(A_s, B[by * 32, bx * 32])
        return k

    assert body(True).script() == body(False).script()


# ---- aliases ---------------------------------------------------------------------------------
def test_serial_cdiv_clamp_and_block_bindings_behave_as_in_tilelang():
    seen = []

    @T.prim_func
    def k(A: T.Tensor((64, 128), "float32"), B: T.Tensor((64, 128), "float32")):
        with T.Kernel(T.cdiv(64, 32)) as bx:
            A_s = T.alloc_shared((32, 32), "float32")
            seen.append(T.get_block_binding(0).same_as(bx))
            for ko in T.Serial(T.cdiv(128, 32)):
                T.copy(A[bx * 32, ko * 32], A_s)
                for i, j in T.Parallel(32, 32):
                    A_s[i, j] = T.clamp(A_s[i, j], -1.0, 1.0)
                T.copy(A_s, B[bx * 32, ko * 32])

    text = k.script()
    assert "T.min(T.max(" in text and "for ko in range(4)" in text
    assert 'T.launch_thread("blockIdx.x", 2)' in text and seen == [True]


def test_python_values_assigned_in_a_kernel_stay_python_values():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(2) as bx:
            block = T.ceildiv(64, 2)
            dtype = T.float
            scale = 0.25 * 2
            A_s = T.alloc_shared((block, 64), dtype)
            T.copy(A[bx * block, 0], A_s)
            for i, j in T.Parallel(block, 64):
                A_s[i, j] = A_s[i, j] * scale
            T.copy(A_s, B[bx * block, 0])

    text = k.script()
    assert "(32, 64)" in text and "T.float32(0.5)" in text and "local_scalar" not in text


def test_const_empty_outside_jit_and_dynamic_in_prim_func():
    with pytest.raises(TTCompileError, match="T.const"):
        T.const("M, N")
    with pytest.raises(TTCompileError, match="T.empty"):
        T.empty((32, 32), T.float32)
    m, n = T.dynamic("m, n")
    assert (m.name, n.name) == ("m", "n")


def test_tilelang_top_level_helpers():
    assert tilelang_tt.cdiv(65, 32) == 3 and tilelang_tt.next_power_of_2(65) == 128
    assert tilelang_tt.PassConfigKey.TL_ENABLE_FAST_MATH == "tl.enable_fast_math"
    from tilelang_tt.profiler import do_bench

    with pytest.raises(TTUnsupportedError, match="ran no kernel"):
        do_bench(lambda: None)


def test_autotune_runs_the_configuration_a_call_gives():
    # TileLang's attention examples: `from tilelang.autotuner import *`, `@autotune(configs=...)`
    # over `@tilelang.jit`, then a call with every tuned argument (or none: tuning is refused)
    scope = {}
    exec("from tilelang_tt.autotuner import *", scope)
    assert {"autotune", "AutoTuner"} <= set(scope) and scope["autotune"] is tilelang_tt.autotune
    configs = [dict(block_M=bm, block_N=32) for bm in (32, 64)]

    @scope["autotune"](configs=configs, warmup=10, rep=10)
    @tilelang_tt.jit(out_idx=[-1])
    def add(M, N, block_M=64, block_N=64):
        @T.prim_func
        def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"),
                 C: T.Tensor((M, N), "float32")):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M)) as (bx, by):
                for i, j in T.Parallel(block_M, block_N):
                    C[by * block_M + i, bx * block_N + j] = (
                        A[by * block_M + i, bx * block_N + j] + B[by * block_M + i, bx * block_N + j])

        return main

    kernel = add(64, 64, block_M=32, block_N=32)
    a, b = np.ones((64, 64), np.float32), np.full((64, 64), 2.0, np.float32)
    np.testing.assert_array_equal(kernel(a, b), a + b)
    assert not hasattr(kernel, "config")  # not tuned
