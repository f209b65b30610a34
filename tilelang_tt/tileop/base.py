"""``tilelang.tileop.base``."""

from ..language_compat import GemmWarpPolicy  # noqa: F401
