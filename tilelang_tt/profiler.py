"""``tilelang.profiler``: ``do_bench`` and the profiler's types (see runtime/profiler.py)."""

from .runtime.profiler import (Profiler, TensorSupplyType, TTProfilerUnavailable,  # noqa: F401
                               do_bench)

# a package for the import system: TileLang's submodules of it (profiler.bench, ...) are
# refusals served by _tilelang_modules
__path__: list = []

__all__ = ["Profiler", "TensorSupplyType", "TTProfilerUnavailable", "do_bench"]
