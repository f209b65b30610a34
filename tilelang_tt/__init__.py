"""tilelang-tt: compile TileLang-style TIR kernels for Tenstorrent Tensix devices."""

from . import ops as _ops  # registers the tt.* TIR ops and the T.tt script namespace
from . import target as _target  # registers the "tenstorrent" target tags
from .errors import (TTCompileError, TTLayoutError, TTResourceError, TTRuntimeError,
                     TTUnsupportedError, TTVerifyError)

__version__ = "0.1.0"


def _autoload():
    """Entry point of the ``tvm.backends`` group: importing the package registers everything."""
    return None
