"""tilelang.autotune and AutoTuner choose by the emulator's modelled device time, written as
TileLang's autotune tests and GEMM examples write them."""

import itertools

import numpy as np
import pytest

import tilelang_tt as tilelang
import tilelang_tt.language as T
from tilelang_tt import TTCompileError
from tilelang_tt.autotuner import AutoTuner, set_autotune_inputs

import kernels
from helpers import assert_matmul, rand


def get_configs():
    iter_params = dict(block_M=[32, 64], block_N=[32, 64], num_stages=[1])
    return [dict(zip(iter_params, values)) for values in itertools.product(*iter_params.values())]


matmul_factory = kernels.matmul  # TileLang's GEMM, a factory of its block sizes


def ref_program(A, B):  # the profiler hands torch tensors once torch is imported
    if hasattr(A, "float"):
        return A.float() @ B.float()
    return A.astype(np.float32) @ B.astype(np.float32)


def modelled_ms(M, N, K, cfg):
    kernel = tilelang.compile(matmul_factory(M, N, K, **cfg), out_idx=[-1])
    return kernel.get_profiler().do_bench()


def test_autotune_keeps_the_config_with_least_modelled_time():
    matmul = tilelang.autotune(configs=get_configs())(tilelang.jit(out_idx=[-1])(matmul_factory))
    kernel = matmul(128, 128, 64)
    times = {tuple(c.values()): modelled_ms(128, 128, 64, c) for c in get_configs()}
    assert kernel.latency == pytest.approx(min(times.values()))
    assert times[tuple(kernel.config.values())] == kernel.latency
    assert len(set(times.values())) > 1  # the choice is not a tie
    a, b = rand((128, 64), "bfloat16", seed=0), rand((64, 128), "bfloat16", seed=1)
    assert_matmul(kernel(a, b), a, b, kernel)
    assert matmul(128, 128, 64) is kernel  # tuned once per argument set


def test_autotune_eager_form_and_given_inputs():
    @tilelang.autotune(configs=[dict(block_M=32), dict(block_M=64)])
    @tilelang.jit
    def scale(A, block_M=64):
        M, N = T.const("M, N")
        A: T.Tensor((M, N), T.float32)
        B = T.empty((M, N), T.float32)
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            A_s = T.alloc_shared((block_M, N), T.float32)
            T.copy(A[bx * block_M, 0], A_s)
            for i, j in T.Parallel(block_M, N):
                A_s[i, j] = A_s[i, j] * 2.0
            T.copy(A_s, B[bx * block_M, 0])
        return B

    a = np.arange(128 * 32, dtype=np.float32).reshape(128, 32)
    with set_autotune_inputs([a]):
        out = scale(a)
    np.testing.assert_array_equal(out, a * 2)
    kernel = scale.compile(M=64, N=32)  # sizes as keywords, as TileLang's convolution example
    assert kernel.config in ({"block_M": 32}, {"block_M": 64}) and kernel.latency > 0
    np.testing.assert_array_equal(kernel(a[:64]), a[:64] * 2)


def test_autotuner_from_kernel_and_failing_configs():
    def kernel(block_M=None, block_N=None):
        return matmul_factory(64, 64, 64, block_M=block_M, block_N=block_N)

    # block_N=48 columns start off a tile boundary (rows may: gathered row by row, columns
    # may not): that configuration is skipped
    configs = [dict(block_M=32, block_N=48), dict(block_M=32, block_N=32)]
    result = (AutoTuner.from_kernel(kernel=kernel, configs=configs)
              .set_compile_args(out_idx=[-1], target="auto")
              .set_profile_args(ref_prog=ref_program, rtol=0.1, atol=0.1)
              .run(warmup=3, rep=20, early_stop=True))  # TileLang options accepted
    assert result.config == dict(block_M=32, block_N=32)
    assert result.kernel.latency == result.latency > 0
    with pytest.raises(TTCompileError, match=r"no configuration compiled and ran \(1 tried; the first: TTLayoutError: .*\):\n.*block_N': 48"):
        AutoTuner.from_kernel(kernel=kernel, configs=configs[:1]).run()


def test_autotune_skips_a_config_whose_result_is_wrong():
    calls = []

    def check(outs, A, B):
        calls.append(len(calls))
        if len(calls) == 1:
            raise AssertionError("first configuration rejected by the check")

    matmul = tilelang.autotune(configs=[dict(block_M=32, block_N=64),
                                        dict(block_M=32, block_N=32)],
                               manual_check_prog=check)(
        tilelang.jit(out_idx=[-1])(matmul_factory))
    kernel = matmul(64, 64, 64)
    assert kernel.config == dict(block_M=32, block_N=32) and calls == [0, 1]


def test_autotune_per_config_pass_configs():
    # TileLang's example_gemm_autotune_pass_configs: a configuration's "pass_configs" are
    # compiler options tuned along with its arguments (not an argument of the kernel), laid
    # over the decorator's / set_compile_args' own
    def fidelity(kernel):
        return kernel.plan["kernels"]["compute"]["config"]["math_fidelity"]

    configs = [dict(block_M=32, block_N=32, pass_configs={"tt.math_fidelity": f})
               for f in ("LoFi", "HiFi4")]
    times = {f: tilelang.compile(matmul_factory(64, 64, 64, block_M=32, block_N=32),
                                 out_idx=[-1], pass_configs={"tt.math_fidelity": f})
             .get_profiler().do_bench() for f in ("LoFi", "HiFi4")}
    assert times["LoFi"] < times["HiFi4"]  # the choice is not a tie

    matmul = tilelang.autotune(configs=configs)(
        tilelang.jit(out_idx=[-1], pass_configs={"tt.math_fidelity": "HiFi2"})(matmul_factory))
    kernel = matmul(64, 64, 64)
    assert kernel.config["pass_configs"] == {"tt.math_fidelity": "LoFi"}
    assert fidelity(kernel) == "LoFi" and kernel.latency == pytest.approx(times["LoFi"])

    result = (AutoTuner.from_kernel(kernel=lambda block_M, block_N: matmul_factory(
        64, 64, 64, block_M=block_M, block_N=block_N), configs=configs)
        .set_compile_args(out_idx=[-1]).run())
    assert result.config["pass_configs"] == {"tt.math_fidelity": "LoFi"}
    assert fidelity(result.kernel) == "LoFi"
