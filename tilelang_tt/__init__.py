"""tilelang-tt: compile TileLang-style TIR kernels for Tenstorrent Tensix devices.

    import tilelang_tt
    import tilelang_tt.language as T

    art = tilelang_tt.compile(kernel, target="tenstorrent", out_idx=-1)
    c = art(a, b)                       # runs the generated C++ on the emulator (mock mode)
    art.sources["compute.cpp"]          # reader.cpp compute.cpp writer.cpp main.cpp ...
    art.save("out/")                    # a CMake project: mock by default, SDK via TT_METAL_HOME

``import tilelang_tt as tilelang`` serves TileLang programs: ``tilelang.jit`` (both forms),
``tilelang.compile``, ``tilelang.PassConfigKey``, ``tilelang.TensorSupplyType``,
``tilelang.profiler.do_bench``, ``tilelang.testing``, ``tilelang.DataType``.
"""

import gc as _gc
import os as _os
import sys as _sys

# Importing TVM (and torch, which tvm_ffi imports when it is installed) creates some 350 000
# objects, over which Python's cyclic garbage collector would run again and again during the
# import and in every full collection after it (together about 0.9 s of CPU per process): it is
# paused while they load; then one collection frees the import's garbage and gc.freeze() moves
# the survivors (everything alive at that point) out of the collector's generations, so later
# collections do not walk them.
#
# tvm_ffi imports torch whenever it is installed (for its DLPack and dtype helpers, which
# tilelang-tt does not use: torch tensors are converted by runtime/torch_interop.py), which costs
# some 3 s and 90 MB per process. Unless the program imported torch already (or
# TILELANG_TT_TVM_TORCH=1), torch is hidden while TVM loads; a later `import torch` works as
# usual, and torch tensors are still accepted by compiled kernels.
#
# TVM's own import also loads tvm.relax, nine GPU / DSP backends' Python hooks and other
# packages' TVM extensions (about 0.4 s and 50 MB), which compiling for Tenstorrent does not
# use: _tvm_import imports TVM without them (tvm.relax stays importable, lazily), unless the
# program imported tvm already (or TILELANG_TT_TVM_FULL=1).
_hide_torch = "torch" not in _sys.modules and _os.environ.get("TILELANG_TT_TVM_TORCH") != "1"
_gc_enabled = _gc.isenabled()
_gc.disable()
try:
    if _hide_torch:
        _sys.modules["torch"] = None  # `import torch` raises ImportError
    try:
        from ._tvm_import import import_tvm as _import_tvm

        tvm = _import_tvm()  # TileLang programs write `from tilelang import tvm`
    finally:
        if _hide_torch and _sys.modules.get("torch", 0) is None:
            del _sys.modules["torch"]
    DataType = tvm.DataType  # TileLang's `from tilelang import DataType` (TVM's dtype)

    from . import _tilelang_modules
    from . import ops as _ops  # noqa: F401  registers the tt.* TIR ops and the T.tt script namespace
    from . import target as _target  # noqa: F401  registers the "tenstorrent" target tags
    from .compiler import (annotate_tt_layout, annotate_tt_schedule, compile, generate, lower,
                           lower_launches)
    from .errors import (TTAliasError, TTArgumentError, TTAssertionError, TTCompileError,
                         TTDeadCodeWarning, TTDtypeError,
                         TTLayoutError, TTPerformanceWarning, TTResourceError,
                         TTRuntimeError, TTUnsupportedError, TTVerifyError)
    from .jit import JITKernel, jit, par_compile
    from .runtime.artifact import Artifact
    from .runtime.profiler import TensorSupplyType
    from .tilelang_compat import (PassConfigKey, cdiv, disable_cache, enable_cache,
                                  is_cache_enabled, next_power_of_2, set_log_level)
finally:
    _gc.collect()
    _gc.freeze()
    if _gc_enabled:
        _gc.enable()

_tilelang_modules.install()

__version__ = "0.1.0"

__all__ = [
    "Artifact", "DataType", "JITKernel", "PassConfigKey", "TTAliasError", "TTArgumentError",
    "TTAssertionError", "TTCompileError", "TTDeadCodeWarning", "TTDtypeError", "TTLayoutError",
    "TTPerformanceWarning", "TTResourceError", "TTRuntimeError", "TTUnsupportedError",
    "TTVerifyError",
    "TensorSupplyType", "annotate_tt_layout", "annotate_tt_schedule", "cdiv", "compile",
    "disable_cache", "enable_cache", "generate", "is_cache_enabled", "jit", "lower",
    "lower_launches",
    "next_power_of_2", "par_compile", "set_log_level",
]


def __getattr__(name):
    """TileLang's submodules without a counterpart (_tilelang_modules) are refusals, not
    AttributeErrors; ``tilelang.autotune`` / ``tilelang.AutoTuner`` tune by modelled device
    time (jit/autotune.py)."""
    import importlib
    import importlib.util

    if name in _tilelang_modules.TOP_LEVEL:
        owner = _tilelang_modules.TOP_LEVEL[name]
        module, attr = _tilelang_modules.AVAILABLE[owner][name].split(":")
        return getattr(importlib.import_module(module), attr)
    if name in _tilelang_modules.MODULES or importlib.util.find_spec(f"{__name__}.{name}"):
        return importlib.import_module(f"{__name__}.{name}")  # `tilelang.math.f` after import
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
