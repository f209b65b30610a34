"""TileLang submodules without a Tenstorrent counterpart, importable as refusals.

``import tilelang_tt as tilelang`` must not turn ``from tilelang.carver.arch import driver``
into a ModuleNotFoundError: the submodules of TileLang listed here import, and every name
taken from them is a :class:`~tilelang_tt.language_compat.Refused` object that raises
TTUnsupportedError, saying why, when it is used.

TileLang's ``tilelang.language`` submodules (``tilelang.language.fp8``, ``.dtypes``,
``.common`` ...) import the same way (``LANGUAGE``): a name taken from one is the
tilelang-tt object of that name (``T.copy`` for ``tilelang.language.common.copy``,
``determine_fp8_type`` from language_fp8.py) where there is one, else a refusal.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

from .language_compat import Refused

_CUDA = "is part of TileLang's CUDA/ROCm toolchain and has no Tenstorrent counterpart"
MODULES = {
    "autotuner": "TileLang's autotuner internals have no counterpart here; tilelang.autotune "
                 "and AutoTuner tune by the emulator's modelled device time",
    "carver": "queries and templates for CUDA/ROCm devices (SM counts, rasterisation); the "
              "Tenstorrent work partitioner decides block placement",
    "cuda": _CUDA, "rocm": _CUDA, "metal": _CUDA, "webgpu": _CUDA, "cpu": _CUDA,
    "contrib": _CUDA, "engine": _CUDA, "backend": _CUDA, "instrumentation": _CUDA,
    "tools": "TileLang's CUDA analysis and plotting tools are not available here",
    "analysis": _CUDA, "cache": "TileLang's kernel cache; builds here are cached by content",
    "quantize": "TileLang's quantisation helpers are not supported yet",
    "utils": "TileLang's utilities are not available here (tilelang.utils.tensor's "
             "TensorSupplyType, get_tensor_supply and torch_assert_close are)",
    "layout": "TileLang layouts do not apply to Tensix tiles (T.annotate_layout is a no-op)",
    "intrinsics": _CUDA, "env": _CUDA, "libinfo": _CUDA, "autodd": _CUDA,
    "_ffi_api": "TileLang's C++ functions (layout inference, fragment algebra) are internals "
                "of its CUDA/ROCm compiler and have no counterpart here",
    "ir": "TileLang's IR nodes (its tile-operator classes) are internals of its CUDA/ROCm "
          "compiler; tilelang-tt's tile ops are TVM's tile primitives (docs/PIPELINE.md)",
}


_FRONTEND = ("an internal of TileLang's Python frontend with no counterpart here; use the "
             "public T.* names (import tilelang_tt.language as T)")
# tilelang.language.<module>: the modules a name is looked up in, in order (else refused)
_T_NAMES = ("tilelang_tt.language",)
LANGUAGE = {name: _T_NAMES for name in (
    "allocate", "annotations", "atomic", "builtin", "common", "copy_op", "customize",
    "fill_op", "frame", "gemm_op", "kernel", "logical", "loop", "math_intrinsics", "proxy",
    "reduce_op", "scan_op", "symbolics", "tile_schedule", "tir", "utils", "experimental")}
LANGUAGE["dtypes"] = ("tilelang_tt.dtypes", "tilelang_tt.language")
LANGUAGE["fp8"] = ("tilelang_tt.language_fp8",)
LANGUAGE_REASONS = {
    "eager": "TileLang's eager-builder metaprogramming is not supported; use T.macro or Python",
    "ast": _FRONTEND, "parser": _FRONTEND, "overrides": _FRONTEND, "meta": _FRONTEND,
    "ws_schedule": "warp specialisation schedules do not apply: the backend already splits "
                   "each block into reader, compute and writer kernels",
}

# submodules of tilelang-tt's own jit / profiler / transform modules that are TileLang
# internals: importable, every name a refusal (or AVAILABLE below)
_ADAPTERS = ("TileLang's kernel adapters and ABI helpers (its NVRTC / CuTeDSL / TVM-FFI / HIP "
             "launchers) are internals of its GPU runtime; a tilelang-tt kernel runs "
             "its generated TT-Metalium host program")
NESTED = {
    "jit.abi": _ADAPTERS, "jit.env": _CUDA,
    "jit.kernel": "TileLang's JITKernel internals; tilelang.JITKernel is the kernel class here",
    "jit.diagnostics": "TileLang's logging of its JIT phases (lowering, NVCC / NVRTC builds) "
                       "belongs to its GPU compile pipeline; tilelang-tt's compile errors are "
                       "TTCompileError exceptions",
    "profiler.bench": "TileLang's CUDA-event / CUPTI timing; do_bench returns the emulator's "
                      "modelled device time here",
    "transform.simplify": "TileLang's TIR simplifier (a step of its CUDA/HIP compiler); "
                          "tilelang-tt simplifies while it lowers",
}

# TileLang modules whose import fails here, with the reason: TileLang probes its adapters'
# availability by importing them (``except ImportError``), so they stay absent
MISSING = {"jit.adapter": _ADAPTERS}

# names of these modules that do work here: module -> name -> "module:attribute" to import
AVAILABLE = {"autotuner": {name: f"tilelang_tt.jit.autotune:{name}" for name in (
    "autotune", "AutoTuner", "AutotuneResult", "set_autotune_inputs", "get_autotune_inputs")},
    # device probes answer that there is no such device
    "rocm.target": {"check_hip_availability": "tilelang_tt.tilelang_compat:no_gpu_available"},
    "jit.kernel": {"JITKernel": "tilelang_tt.jit:JITKernel"},
    # the SM count a persistent kernel launches over: the target's worker cores
    "carver.arch": {"driver": "tilelang_tt.tilelang_compat:carver_driver"},
    "carver.arch.driver": {"get_num_sms": "tilelang_tt.tilelang_compat:get_num_sms"},
    "transform.simplify": {"simplify_prim_func": "tilelang_tt.transform:simplify_prim_func"},
    # tilelang.utils.tensor: the tensor supply of TileLang's profiler
    "utils.tensor": {"TensorSupplyType": "tilelang_tt.runtime.profiler:TensorSupplyType",
                     "get_tensor_supply": "tilelang_tt.runtime.profiler:get_tensor_supply",
                     "torch_assert_close": "tilelang_tt.testing:torch_assert_close"}}
# top-level names (tilelang.autotune, tilelang.AutoTuner) taken from AVAILABLE
TOP_LEVEL = {"autotune": "autotuner", "AutoTuner": "autotuner"}
# what `from tilelang.<module> import *` brings in TileLang 0.1.14 (a star import reads __all__)
STAR = {"autotuner": ("autotune", "AutoTuner", "set_autotune_inputs", "get_autotune_inputs")}


class _RefusedModule(types.ModuleType):
    def __init__(self, name: str, reason: str, sources: tuple = ()):
        super().__init__(name, f"TileLang's {name.split('.', 1)[1]}: {reason}")
        self.__path__ = []
        self._reason = reason
        self._sources = sources
        parts = name.split(".")
        if len(parts) == 2 and parts[1] in STAR:
            self.__all__ = list(STAR[parts[1]])

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        short = self.__name__.split(".", 1)[1]
        if attr in AVAILABLE.get(short, {}):
            module, name = AVAILABLE[short][attr].split(":")
            return getattr(importlib.import_module(module), name)
        for module in self._sources:
            try:
                return getattr(importlib.import_module(module), attr)
            except AttributeError:
                pass
        return Refused(f"{short}.{attr}", self._reason, prefix="tilelang.")


def _language_module(name: str):
    """(reason, sources) of ``tilelang_tt.language.<sub>[.<more>]``, or None."""
    sub = name.split(".")[2]
    if sub in LANGUAGE:
        return ("not provided by tilelang-tt (docs/SUPPORT.md lists the T.* names that "
                "compile)", LANGUAGE[sub])
    if sub in LANGUAGE_REASONS:
        return LANGUAGE_REASONS[sub], ()
    return None


def _nested(name: str):
    """The NESTED key ``tilelang_tt.<key>[.<more>]`` falls under, or None."""
    parts = name.split(".")
    if parts[0] != "tilelang_tt" or len(parts) < 3:
        return None
    key = ".".join(parts[1:3])
    return key if key in NESTED else None


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname, path=None, target=None):
        parts = fullname.split(".")
        if parts[0] == "tilelang_tt" and ".".join(parts[1:3]) in MISSING:
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: {MISSING['.'.join(parts[1:3])]}",
                name=fullname)
        if _nested(fullname) is not None:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        if len(parts) >= 2 and parts[0] == "tilelang_tt" and parts[1] in MODULES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        if len(parts) >= 3 and parts[:2] == ["tilelang_tt", "language"] \
                and _language_module(fullname) is not None:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        parts = spec.name.split(".")
        if _nested(spec.name) is not None:
            return _RefusedModule(spec.name, NESTED[_nested(spec.name)])
        if parts[1] == "language":
            reason, sources = _language_module(spec.name)
            return _RefusedModule(spec.name, reason, sources)
        return _RefusedModule(spec.name, MODULES[parts[1]])

    def exec_module(self, module):
        pass


def install() -> None:
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
