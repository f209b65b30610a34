"""``tilelang.tileop``: ``GemmWarpPolicy`` (accepted and ignored, as ``T.GemmWarpPolicy``)."""

from ..language_compat import GemmWarpPolicy  # noqa: F401
