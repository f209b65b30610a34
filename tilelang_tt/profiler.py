"""``tilelang.profiler``: ``do_bench`` and the profiler's types (see runtime/profiler.py)."""

from .runtime.profiler import (Profiler, TensorSupplyType, TTProfilerUnavailable,  # noqa: F401
                               do_bench)

__all__ = ["Profiler", "TensorSupplyType", "TTProfilerUnavailable", "do_bench"]
