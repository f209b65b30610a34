"""``tilelang.testing`` for TileLang tests run on the Tenstorrent emulator.

``requires_cuda`` and TileLang's other device-requirement decorators run the test here (the
emulator stands in for the device; kernels using CUDA-only features fail with
TTUnsupportedError), ``torch_assert_close`` compares with TileLang's mismatch allowance, and
``main()`` runs the calling module's tests with pytest.
"""

from __future__ import annotations

import random
import sys

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
