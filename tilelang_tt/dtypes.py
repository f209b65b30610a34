"""TileLang's dtypes: ``T.float32``, ``T.bfloat16``, ``T.half``, ``T.int32`` ...

As in TileLang, a dtype is a string equal to its canonical name (``T.float32 == "float32"``,
``T.float == "float32"``, ``T.half == "float16"``), so it can be passed wherever a dtype string
is accepted (``T.Tensor`` annotations, ``alloc_*``, ``.astype``, jit arguments), and it is
callable inside a kernel: ``T.float32(x)`` converts ``x`` (``T.float32(0)`` is a constant,
``T.float32()`` a fresh scalar variable as in TVMScript).  Which dtypes the compiler accepts in a kernel is a separate question (docs/SUPPORT.md).
"""

from __future__ import annotations

import sys

import numpy as np
import tvm_ffi
from tvm import tirx

from .errors import TTCompileError, TTDtypeError, TTUnsupportedError

# short names TileLang canonicalises when a dtype is built from a string
_ALIASES = {"double": "float64", "float": "float32", "int": "int32", "long": "int64",
            "short": "int16", "uint": "uint32", "ulong": "uint64", "tfloat32": "float32"}

_PY_TYPES = {bool: "bool", int: "int32", float: "float32"}

# dtype -> the TVMScript builder function that makes a value of it
_BUILDER_NAME = {"bool": "Boolean", "bfloat16": "BFloat16", "tfloat32": "TensorFloat32"}


def _builder_name(name: str) -> str:
    base, lanes = name, ""
    if "x" in name and name.rsplit("x", 1)[1].isdigit() and not name.startswith("tfloat"):
        base, lanes = name.rsplit("x", 1)
        lanes = "x" + lanes
    if base in _BUILDER_NAME:
        return _BUILDER_NAME[base] + lanes
    for prefix, cap in (("uint", "UInt"), ("int", "Int"), ("bfloat", "BFloat"),
                        ("float", "Float")):
        if base.startswith(prefix):
            rest = base[len(prefix):]
            if "_" in rest:  # float8_e4m3fn -> Float8E4M3FN
                bits, kind = rest.split("_", 1)
                rest = bits + kind.upper()
            return cap + rest + lanes
    raise TTUnsupportedError(f"dtype {name!r} cannot be used as a value constructor")


def _canonical(value) -> str:
    if isinstance(value, str):
        return _ALIASES.get(str(value), str(value))
    if value in _PY_TYPES:
        return _PY_TYPES[value]
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(value, torch.dtype):
        return str(value).replace("torch.", "")
    try:
        return str(np.dtype(value))  # numpy dtypes and ml_dtypes.bfloat16
    except TypeError:
        pass
    raise TypeError(f"not a dtype: {value!r} ({type(value).__name__}); use T.float32, "
                    "T.bfloat16, 'float16', a numpy dtype ...")


class dtype(tvm_ffi.dtype):  # noqa: N801 - TileLang's name
    """A TileLang dtype (see the module docstring)."""

    __slots__ = ()

    def __new__(cls, value="float32"):
        if isinstance(value, dtype):
            return value
        return super().__new__(cls, _canonical(value))

    def __call__(self, expr=None, *args, **kwargs):
        if args:
            return tirx.Shuffle([expr, *args], list(range(len(args) + 1)))
        if isinstance(expr, bool) or (isinstance(expr, int) and not self.startswith("bool")):
            return tirx.const(expr, str(self))
        from tvm.tirx.script.builder import _ffi_api as builder_ffi

        if isinstance(expr, str):  # T.float32("-inf")
            expr = float(expr)
        make = getattr(builder_ffi, _builder_name(str(self)), None)
        if make is None:
            raise TTDtypeError(f"T.{self}(...): TVM 0.27 has no scalar constructor for "
                               f"{self}; use T.cast(value, T.{self}) or a supported dtype")
        return make(expr)

    def __reduce__(self):
        return (dtype, (str(self),))

    @property
    def bytes(self) -> int:
        return self.itemsize

    def as_torch(self):
        import torch

        name = str(self)
        if not hasattr(torch, name):
            raise TTUnsupportedError(f"dtype {name} has no torch equivalent")
        return getattr(torch, name)

    def as_numpy(self) -> np.dtype:
        return numpy_dtype(self)

    def is_float4_e2m1fn(self) -> bool:
        return is_float4_e2m1fn(self)

    def is_float4_e2m1_unpacked(self) -> bool:
        return is_float4_e2m1_unpacked(self)

    def is_float4(self) -> bool:
        return is_float4(self)

    def __repr__(self):
        return f"dtype({str(self)!r})"


AnyDType = object  # TileLang's typing alias; anything dtype() accepts


def get_tvm_dtype(value) -> dtype:
    return dtype(value)


def dtype_name(value) -> str:
    """The canonical name of anything TileLang accepts as a dtype (a string, ``T.float32``, a
    torch or numpy dtype, a Python type); other values (a TVM ``DataType``) as ``str()``."""
    from .language_compat import Refused

    if isinstance(value, Refused):  # T.ptr, T.float4_e2m1_unpacked ... as a dtype
        raise value._error()
    if value is None:  # numpy would read None as float64
        raise TTCompileError("a dtype is required here, got None; write T.float32, "
                             "T.bfloat16, 'float16' ...")
    try:
        return _canonical(value)
    except TypeError:
        return str(value)


def numpy_dtype(value) -> np.dtype:
    """The numpy dtype of a TileLang dtype (bfloat16 is ``ml_dtypes.bfloat16``)."""
    import ml_dtypes

    name = str(dtype(value))
    if name == "bfloat16":
        return np.dtype(ml_dtypes.bfloat16)
    try:
        return np.dtype(name)
    except TypeError:
        if hasattr(ml_dtypes, name):
            return np.dtype(getattr(ml_dtypes, name))
        raise TTUnsupportedError(f"dtype {name} has no numpy equivalent") from None


def is_float4_e2m1fn(value) -> bool:
    return str(dtype(value)).startswith("float4_e2m1fn")


def is_float4_e2m1_unpacked(value) -> bool:
    return str(value) == "float4_e2m1_unpacked"


def is_float4(value) -> bool:
    return str(value).startswith("float4")


def is_f8f6f4_family(value) -> bool:
    return str(value).startswith(("float8", "float6", "float4"))


def validate_gemm_ab_dtypes(a_dtype, b_dtype, *, a_in_tmem=False, allow_f8f6f4_mixed=False):
    if a_in_tmem or str(a_dtype) == str(b_dtype):
        return
    if allow_f8f6f4_mixed and is_f8f6f4_family(a_dtype) and is_f8f6f4_family(b_dtype):
        return
    raise ValueError(f"mixed-dtype GEMM operands A={a_dtype}, B={b_dtype}")


# ---- the dtype objects TileLang exports -----------------------------------------------------
_INTS = ("int8", "int16", "int32", "int64")
_UINTS = ("uint8", "uint16", "uint32", "uint64")
_FLOATS = ("float16", "float32", "float64")
_FP8 = ("float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
        "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn",
        "float4_e2m1fn")
_LANES = (2, 4, 8, 16, 32, 64)

DTYPES: dict[str, dtype] = {
    "bool": dtype("bool"), "short": dtype("int16"), "int": dtype("int32"),
    "uint": dtype("uint32"), "long": dtype("int64"), "half": dtype("float16"),
    "float": dtype("float32"), "double": dtype("float64"), "int4": dtype("int4"),
}
for _base in _INTS + _UINTS + _FLOATS + _FP8 + ("bfloat16",):
    DTYPES[_base] = dtype(_base)
    for _lanes in _LANES:
        DTYPES[f"{_base}x{_lanes}"] = dtype(f"{_base}x{_lanes}")

# TileLang's T.tfloat32: float32 data whose GEMM operands the tensor cores read as TF32, which
# is how the Tensix matrix engine reads float32 operands (docs/MOCK.md "Numerics"): float32 here
DTYPES["tfloat32"] = dtype("float32")
for _lanes in _LANES:
    DTYPES[f"tfloat32x{_lanes}"] = dtype(f"float32x{_lanes}")

# TileLang's custom storage types that this TVM build cannot represent
REFUSED_DTYPES = {
    "float4_e2m1_unpacked": "an SM100 shared-memory storage format",
}

# TileLang's list of the dtype names ``T`` exports (tilelang.language.dtypes._all_dtypes)
_all_dtypes = list(DTYPES) + list(REFUSED_DTYPES)
