"""``tilelang.math``."""

from .tilelang_compat import cdiv, next_power_of_2  # noqa: F401
