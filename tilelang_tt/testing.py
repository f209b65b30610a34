"""``tilelang.testing`` for TileLang tests run on the Tenstorrent emulator.

``requires_cuda`` and TileLang's other device-requirement decorators run the test here (the
emulator stands in for the device; kernels using CUDA-only features fail with
TTUnsupportedError), ``torch_assert_close`` compares with TileLang's mismatch allowance, and
``main()`` runs the calling module's tests with pytest.

TileLang's ``tilelang.testing`` imports its TVM's ``tvm.testing``, whose ``requires_package``
and ``requires_cuda`` TileLang programs then use (``@tvm.testing.requires_package("bitblas")``);
apache-tvm 0.27's ``tvm.testing`` has neither, so until a program imports ``tvm.testing`` itself,
``tvm.testing`` is a stand-in that serves these decorators from here and any other name from
TVM's own ``tvm.testing`` (imported at that first use).
"""

from __future__ import annotations

import importlib
import random
import sys
import types

import numpy as np

from .runtime.profiler import assert_close


def _passthrough(*args, **kwargs):
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda f: f


requires_cuda = _passthrough
requires_cuda_compute_version = _passthrough
requires_cuda_compute_version_ge = _passthrough
requires_cuda_compute_version_gt = _passthrough
requires_cuda_compute_version_le = _passthrough
requires_cuda_compute_version_lt = _passthrough
requires_cuda_compute_version_eq = _passthrough
requires_package = _passthrough
requires_rocm = _passthrough
requires_cdna = _passthrough
requires_cuda_or_cdna = _passthrough
requires_gfx950 = _passthrough
requires_metal = _passthrough
requires_llvm = _passthrough


def set_random_seed(seed: int = 42) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.manual_seed(seed)


def torch_assert_close(tensor_a, tensor_b, rtol=1e-2, atol=1e-3, max_mismatched_ratio=0.001,
                       **_kwargs):
    assert_close(tensor_a, tensor_b, rtol=rtol, atol=atol,
                 max_mismatched_ratio=max_mismatched_ratio)


def main():
    import pytest

    module = sys.modules["__main__"]
    sys.exit(pytest.main([getattr(module, "__file__", "."), "-q"]))


class _TVMTesting(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("requires_") and name in globals():
            return globals()[name]
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(importlib.import_module("tvm.testing"), name)


def _install_tvm_testing() -> None:
    import tvm

    if "tvm.testing" not in sys.modules and not hasattr(tvm, "testing"):
        tvm.testing = _TVMTesting("tvm.testing", "tvm.testing, as tilelang.testing leaves it")


_install_tvm_testing()
