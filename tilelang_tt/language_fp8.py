"""``tilelang.language.fp8``: TileLang's FP8 dtype choice.

TileLang picks the OCP FP8 formats on CUDA (``float8_e4m3fn`` / ``float8_e5m2``) and the FNUZ
ones on most ROCm devices.  Tenstorrent is neither; the OCP names are returned, as a program
written for CUDA expects.  A kernel whose tensors have an FP8 dtype is then refused at compile
time with TTUnsupportedError naming the buffer (Tensix tiles here hold bfloat16, float16,
float32; docs/SUPPORT.md).
"""

from __future__ import annotations

from .errors import TTArgumentError

_FORMATS = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2"}


def determine_fp8_type(fp8_format: str = "e4m3") -> str:
    """The FP8 dtype name TileLang gives ``fp8_format`` on a CUDA device."""
    from .dtypes import dtype

    if fp8_format not in _FORMATS:
        raise TTArgumentError(f"determine_fp8_type: unsupported FP8 format {fp8_format!r}; "
                              f"use one of {sorted(_FORMATS)}")
    return dtype(_FORMATS[fp8_format])


def determine_torch_fp8_type(fp8_format: str = "e4m3"):
    """The torch dtype of :func:`determine_fp8_type` (needs torch)."""
    import torch

    return getattr(torch, str(determine_fp8_type(fp8_format)))
