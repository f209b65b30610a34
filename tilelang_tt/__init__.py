"""tilelang-tt: compile TileLang-style TIR kernels for Tenstorrent Tensix devices.

    import tilelang_tt
    import tilelang_tt.language as T

    art = tilelang_tt.compile(kernel, target="tenstorrent", out_idx=-1)
    c = art(a, b)                       # runs the generated C++ on the emulator (mock mode)
    art.sources["compute.cpp"]          # reader.cpp compute.cpp writer.cpp main.cpp ...
    art.save("out/")                    # a CMake project: mock by default, SDK via TT_METAL_HOME
"""

from . import ops as _ops  # noqa: F401  registers the tt.* TIR ops and the T.tt script namespace
from . import target as _target  # noqa: F401  registers the "tenstorrent" target tags
from .compiler import annotate_tt_layout, annotate_tt_schedule, compile, generate, lower
from .errors import (TTCompileError, TTLayoutError, TTResourceError, TTRuntimeError,
                     TTUnsupportedError, TTVerifyError)
from .runtime.artifact import Artifact

__version__ = "0.1.0"

__all__ = [
    "Artifact", "TTCompileError", "TTLayoutError", "TTResourceError", "TTRuntimeError",
    "TTUnsupportedError", "TTVerifyError", "annotate_tt_layout", "annotate_tt_schedule",
    "compile", "generate", "lower",
]
