"""Host tensors <-> the files ``main.cpp`` reads and writes; argument checking.

Files hold raw row-major little-endian data: bfloat16 and float16 as 2-byte words, float32 as 4
bytes.
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np

from ..errors import TTRuntimeError

NP_DTYPE = {"bfloat16": np.dtype(ml_dtypes.bfloat16), "float16": np.dtype(np.float16),
            "float32": np.dtype(np.float32),
            # integer / bool tensors: converted to bfloat16 by the host (A0.1.5), or read as
            # scalars in branch conditions (their elements cross as 32-bit words)
            "bool": np.dtype(np.bool_), "int8": np.dtype(np.int8), "uint8": np.dtype(np.uint8),
            "int16": np.dtype(np.int16), "uint16": np.dtype(np.uint16),
            "int32": np.dtype(np.int32), "uint32": np.dtype(np.uint32)}


class TTCallArgumentError(TTRuntimeError, ValueError):
    """A tensor passed to a compiled kernel has the wrong shape, dtype or count (at call time;
    errors.TTArgumentError is the compile-time one)."""


def host_shape(t: dict) -> tuple:
    """The shape a caller passes the tensor in: ``shape`` unless the kernel views the tensor in
    another (T.reshape: ``host_shape`` is the declared one, ``shape`` the device's)."""
    return tuple(t.get("host_shape", t["shape"]))


def host_dtype(t: dict) -> str:
    """The dtype a caller passes the tensor in (``dtype`` unless a T.view reinterprets it)."""
    return t.get("host_dtype", t["dtype"])


def _device(t: dict, arr: np.ndarray) -> np.ndarray:
    """``arr`` (host-shaped, C-contiguous) seen in the shape and dtype main.cpp reads: a free
    reshape (and view of its bytes); transposed by ``host_axes`` (a view: an output is written
    through it) and its values converted (``host_convert``: an input; an output is converted
    back by ``read_outputs``) for A0.1.5 / 6 / 7."""
    if "host_shape" not in t:
        return arr
    if "host_axes" in t:
        arr = arr.transpose(t["host_axes"])
        return arr.astype(NP_DTYPE[t["dtype"]]) if t.get("host_convert") else arr
    return arr.view(NP_DTYPE[t["dtype"]]).reshape(tuple(t["shape"]))


def _convert(t: dict, value, what: str) -> np.ndarray:
    want = NP_DTYPE[host_dtype(t)]
    arr = np.asarray(value)
    shape = host_shape(t)
    if arr.shape != shape:
        raise TTCallArgumentError(f"{what} {t['name']}: expected shape {shape}, got {arr.shape}")
    if arr.dtype == want:
        return np.ascontiguousarray(arr)
    if want.kind in "biu" and arr.dtype.kind in "biu":  # integers and bools convert exactly
        if np.array_equal(arr.astype(want).astype(arr.dtype), arr):
            return np.ascontiguousarray(arr.astype(want))
        raise TTCallArgumentError(f"{what} {t['name']}: values do not fit {host_dtype(t)}")
    if arr.dtype.kind == "f" or arr.dtype == NP_DTYPE["bfloat16"]:
        # ml_dtypes converts to bfloat16 with round-to-nearest-even
        return np.ascontiguousarray(arr.astype(want))
    raise TTCallArgumentError(
        f"{what} {t['name']}: expected {host_dtype(t)} (or a float array to convert), got "
        f"{arr.dtype}")


def bind_arguments(tensor_specs: list, out_idx: list, args: tuple) -> dict:
    """index -> host array for every tensor (outputs allocated when not passed).

    A call passes every tensor, or - with ``out_idx`` - only the others (the inputs), as
    TileLang's adapter takes them; either way ``None`` stands for a tensor the kernel never
    accesses (TileLang passes a null pointer), which reads as zeros."""
    n = len(tensor_specs)
    names = [t["name"] for t in tensor_specs]
    inputs = [i for i in range(n) if i not in out_idx]
    host = {}
    if len(args) == n:
        for i, (t, a) in enumerate(zip(tensor_specs, args)):
            if a is None and i in out_idx:
                raise TTCallArgumentError(
                    f"tensor {t['name']}: got None, but it is an output the call allocates "
                    f"(out_idx); pass only the inputs ({', '.join(names[j] for j in inputs)}), "
                    "or an array for it to fill")
            if a is None:
                host[i] = _absent(t)
                continue
            if t["role"] in ("output",) and not isinstance(a, np.ndarray):
                raise TTCallArgumentError(f"output {t['name']} must be a numpy array to fill in place")
            host[i] = _convert(t, a, "tensor")
        host["_given"] = list(args)
        return host
    if out_idx and len(args) == len(inputs):
        for i, a in zip(inputs, args):
            t = tensor_specs[i]
            host[i] = _absent(t) if a is None else _convert(t, a, "input")
        for i in out_idx:
            t = tensor_specs[i]
            host[i] = np.zeros(host_shape(t), dtype=NP_DTYPE[host_dtype(t)])
        return host
    expect = f"{n} tensors ({', '.join(names)})"
    if out_idx:
        expect += f" or the {len(inputs)} inputs ({', '.join(names[i] for i in inputs)})"
    raise TTCallArgumentError(f"kernel takes {expect}; got {len(args)} "
                              f"argument{'' if len(args) == 1 else 's'}")


def _absent(t: dict) -> np.ndarray:
    """The array standing for a tensor passed as None: zeros, if the kernel never accesses it."""
    if t["role"] != "unused":
        raise TTCallArgumentError(
            f"tensor {t['name']}: got None, but the kernel "
            f"{'reads' if t['role'] in ('input', 'inout') else 'writes'} it; "
            "only a tensor the kernel never accesses may be None")
    return np.zeros(host_shape(t), dtype=NP_DTYPE[host_dtype(t)])


def _vector(spec: dict, data) -> bool:
    """The tensor is stored as row vectors (A1's ``vector``: a 1-D tensor, or one row of tiles
    per index of its leading dims)."""
    return bool(spec.get("vector", data.ndim == 1))


def write_inputs(tensor_specs: list, host: dict, directory: Path) -> list[Path]:
    paths = []
    for i, t in enumerate(tensor_specs):
        p = directory / f"{i}_{t['name']}.bin"
        if t.get("scalars") and t["role"] in ("input", "inout", "unused"):
            # one 32-bit word per element (main.cpp writes them into the tensor's pages)
            data = np.ascontiguousarray(host[i])
            if t["dtype"] in ("bfloat16", "float16", "float32"):  # operands: float32 words
                data.astype(np.float32).tofile(p)
            else:
                data.astype(np.int32).tofile(p)
        elif t["role"] in ("input", "inout", "unused"):
            data = _device(t, host[i])
            if _vector(t, data):  # row vectors: row 0 of a 32-row tile band, the rest zero
                rows = data.reshape(-1, data.shape[-1])
                band = np.zeros((rows.shape[0], 32, rows.shape[1]), dtype=data.dtype)
                band[:, 0] = rows
                data = band
            data.tofile(p)
        paths.append(p)
    return paths


def _converted_output(t: dict, host_arr: np.ndarray, path) -> None:
    """An output the device holds in another dtype (A0.1.7: integer index values in float32,
    every one an exact integer): its values converted into the caller's integer array."""
    target = host_arr.transpose(t["host_axes"]) if "host_axes" in t else host_arr
    data = _written(t, target, path)
    want = NP_DTYPE[host_dtype(t)]
    converted = data.astype(want)
    if not np.array_equal(converted.astype(data.dtype), data):
        raise TTRuntimeError(f"output {t['name']}: the device's values are not all integers "
                             f"of {host_dtype(t)}")
    target[...] = converted


def _written(t: dict, target: np.ndarray, path) -> np.ndarray:
    """The values the program wrote for output ``t``, in the device's dtype and ``target``'s
    shape (a vector's row 0 of each tile row band)."""
    data = np.fromfile(path, dtype=NP_DTYPE[t["dtype"]])
    if _vector(t, target) and data.size == 32 * target.size:  # row vectors: row 0
        data = data.reshape(-1, 32, target.shape[-1])[:, 0]
    if data.size != target.size:
        raise TTRuntimeError(f"output {t['name']}: the program wrote {data.size} values, "
                             f"expected {target.size}")
    return data.reshape(target.shape)


def read_outputs(tensor_specs: list, host: dict, paths: list) -> None:
    for i, t in enumerate(tensor_specs):
        if t["role"] not in ("output", "inout"):
            continue
        if t.get("host_convert"):
            _converted_output(t, host[i], paths[i])
            continue
        if t.get("scalars") and t["dtype"] in ("bfloat16", "float16"):
            # stored by a scalar program as float32 words holding values of the dtype: exact
            words = np.fromfile(paths[i], dtype=np.float32)
            if words.size != host[i].size:
                raise TTRuntimeError(f"output {t['name']}: the program wrote {words.size} "
                                     f"values, expected {host[i].size}")
            host[i][...] = words.reshape(host[i].shape).astype(NP_DTYPE[t["dtype"]])
            continue
        target = _device(t, host[i])
        if not _vector(t, target) and target.flags.c_contiguous and \
                Path(paths[i]).stat().st_size == target.nbytes:
            with open(paths[i], "rb") as f:  # straight into the result: no second copy
                f.readinto(memoryview(target.view(np.uint8).reshape(-1)))
            continue
        target[...] = _written(t, target, paths[i])


def results(tensor_specs: list, out_idx: list, host: dict):
    """What a call returns: the outputs (filled in the caller's arrays when they were given)."""
    given = host.get("_given")
    outs = out_idx or [i for i, t in enumerate(tensor_specs) if t["role"] in ("output", "inout")]
    if given is not None:
        for i in outs:
            target = given[i]
            if isinstance(target, np.ndarray) and target is not host[i]:
                target[...] = host[i].astype(target.dtype)
        arrays = [given[i] for i in outs]
    else:
        arrays = [host[i] for i in outs]
    return arrays[0] if len(arrays) == 1 else arrays
