"""``import tvm`` as tilelang-tt needs it: without what TVM's own import loads for other uses.

``import tvm`` imports tvm.relax (the graph-level IR), tries tvm.runtime.disco (the distributed
runtime, whose import fails at that point of TVM's import anyway: ``tvm.runtime.disco`` is
None), and then runs TVM's backend autoload: the Python hooks of nine GPU / DSP backends (CUDA,
Metal, ROCm, ...; Adreno's imports relax's pipelines), the ``libtvm_runtime_extra`` library and
the ``tvm.backends`` entry points of other installed packages. Compiling for Tenstorrent uses
none of them; together they take about 0.4 s and 50 MB of every process that imports
tilelang_tt.

When tilelang_tt is the first to import TVM (and ``TILELANG_TT_TVM_FULL`` is not ``1``), TVM is
imported with ``tvm.relax`` as a lazy module (imported in full at its first use, also through
``from tvm.script import relax``), without the
doomed disco import, and without the backend hooks and entry points
(``TVM_DEVICE_BACKEND_AUTOLOAD=0`` for the time of the import); ``libtvm_runtime_extra`` is
loaded as TVM would (about a millisecond), so a later ``import tvm.runtime.disco`` works as
after TVM's own import. A program that imports tvm before tilelang_tt gets TVM's full import.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys

_LAZY = ("tvm.relax",)
_SKIP = ("tvm.runtime.disco",)


class _LeanFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name in _SKIP:
            raise ImportError(f"{name} is not imported with tvm by tilelang_tt "
                              "(TILELANG_TT_TVM_FULL=1 imports it)")
        if name not in _LAZY:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = importlib.util.LazyLoader(spec.loader)
        return spec


def import_tvm():
    """Import tvm (lean when tilelang_tt is the first to import it); returns the module."""
    if "tvm" in sys.modules or os.environ.get("TILELANG_TT_TVM_FULL") == "1":
        import tvm

        return add_tilelang_names(tvm)
    autoload = os.environ.get("TVM_DEVICE_BACKEND_AUTOLOAD")
    finder = _LeanFinder()
    sys.meta_path.insert(0, finder)
    os.environ["TVM_DEVICE_BACKEND_AUTOLOAD"] = "0"
    try:
        import tvm
    finally:
        sys.meta_path.remove(finder)
        if autoload is None:
            del os.environ["TVM_DEVICE_BACKEND_AUTOLOAD"]
        else:
            os.environ["TVM_DEVICE_BACKEND_AUTOLOAD"] = autoload
    if autoload != "0" and not tvm.base._RUNTIME_ONLY:
        _load_runtime_extra(tvm)
    # what tvm.relax's import registers for `from tvm.script import relax` (which then imports
    # tvm.relax in full)
    if "relax" not in tvm.script._DIALECT_REGISTRY:
        tvm.script.register_dialect("relax", "tvm.relax.script")
    return add_tilelang_names(tvm)


# names of TileLang's TVM (a fork) that apache-tvm 0.27 spells differently: TileLang programs
# annotate helpers with ``tirx.PrimExpr`` and test ``isinstance(e, tirx.Call)``
_TIRX_NAMES = {"PrimExpr": "Expr", "Call": "Call", "StringImm": "StringImm", "SizeVar": "Var"}


def add_tilelang_names(tvm):
    """Add the ``tvm.tirx`` names of TileLang's TVM fork that 0.27 has under ``tvm.ir``
    (``PrimExpr`` is 0.27's ``Expr``), where ``tvm.tirx`` lacks them, and TileLang's
    ``expr.dtype`` (0.27's ``str(expr.ty)``) on scalar expressions, as TVM 0.27 itself keeps
    ``buffer.dtype`` on buffer variables; returns ``tvm``."""
    for name, ir_name in _TIRX_NAMES.items():
        if not hasattr(tvm.tirx, name):
            setattr(tvm.tirx, name, getattr(tvm.ir, ir_name))
    if not getattr(tvm.ir.Expr, "_tt_dtype", False):
        buffer_dtype = tvm.ir.Var.dtype  # TVM's own: a buffer variable's element dtype

        def expr_dtype(expr):
            if tvm.tirx.is_buffer_var(expr):
                return buffer_dtype.fget(expr)
            dtype = getattr(expr.ty, "dtype", None)
            if dtype is None or not isinstance(expr.ty, tvm.ir.PrimType):
                raise AttributeError(f"dtype: {type(expr).__name__} of type {expr.ty} is not "
                                     "a scalar expression")
            return dtype

        tvm.ir.Expr.dtype = property(expr_dtype)
        tvm.ir.Var.dtype = property(expr_dtype)
        tvm.ir.Expr._tt_dtype = True
    return tvm


def _load_runtime_extra(tvm):
    """libtvm_runtime_extra, as TVM's autoload loads it (registration side effects only)."""
    from pathlib import Path

    from tvm_ffi.libinfo import load_lib_ctypes

    libs = tvm.base._LOADED_LIBS
    if "tvm_runtime_extra" in libs:
        return
    try:
        libs["tvm_runtime_extra"] = load_lib_ctypes(
            package="tvm", target_name="tvm_runtime_extra",
            extra_lib_paths=[Path(libs["tvm_runtime"]._name).resolve().parent], mode="RTLD_LOCAL")
    except (OSError, FileNotFoundError, RuntimeError):
        pass  # not installed: TVM goes on without it too
