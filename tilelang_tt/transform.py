"""``tilelang.transform``: TileLang's pass-configuration keys (accepted, ignored here)."""

from .tilelang_compat import PassConfigKey  # noqa: F401
