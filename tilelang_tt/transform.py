"""``tilelang.transform``: TileLang's pass-configuration keys (accepted, ignored here).

TileLang's own TIR passes (``tilelang.transform.LegalizeNegativeIndex()``, ``LowerTileOp()``
...) are steps of its CUDA/HIP compiler; tilelang-tt lowers with its own pipeline
(docs/PIPELINE.md), so any other name taken from this module is a refusal that raises
TTUnsupportedError when used.
"""

from .language_compat import Refused
from .tilelang_compat import PassConfigKey  # noqa: F401

# a package for the import system: TileLang's submodules of it (profiler.bench, ...) are
# refusals served by _tilelang_modules
__path__: list = []

_PASSES = ("a pass of TileLang's CUDA/HIP compiler; tilelang-tt lowers kernels with its own "
           "pipeline (docs/PIPELINE.md): compile the kernel with tilelang.compile instead")


def simplify_prim_func(func):
    """TileLang's ``simplify_prim_func``: the kernel unchanged (the compiler simplifies)."""
    return func


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return Refused(f"transform.{name}", _PASSES, prefix="tilelang.")
