"""torch CPU tensors as kernel arguments, without depending on torch.

A compiled kernel takes and returns numpy arrays; when torch is imported, torch tensors are
accepted too and the results come back as torch tensors (so do the results of a call with no
arguments at all, every tensor an output it allocates, as TileLang's eager kernels return).
torch is never imported here: a value is a torch tensor only if the ``torch`` module is
already loaded and says so.
"""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np

from ..errors import TTRuntimeError


def _torch():
    return sys.modules.get("torch")


def loaded() -> bool:
    """torch is imported (by the program; never by tilelang-tt)."""
    return _torch() is not None


def is_tensor(value) -> bool:
    torch = _torch()
    return torch is not None and isinstance(value, torch.Tensor)


def to_numpy(tensor, copy: bool = True) -> np.ndarray:
    """A numpy copy of a CPU torch tensor (bfloat16 keeps its bits as ml_dtypes.bfloat16);
    with ``copy=False`` a view of its memory when it is contiguous (no second host copy of a
    kernel argument)."""
    torch = _torch()
    if tensor.device.type != "cpu":
        raise TTRuntimeError(
            f"a torch tensor on {tensor.device} was passed; the Tenstorrent emulator reads host "
            "memory: pass CPU tensors")
    t = tensor.detach().contiguous()
    if t.dtype == torch.bfloat16:
        a = t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    else:
        a = t.numpy()
    return a.copy() if copy else a


def from_numpy(array: np.ndarray, copy: bool = True):
    """A torch tensor holding a copy of ``array`` (bfloat16 included); with ``copy=False``
    it shares the array's memory (for arrays nothing else holds)."""
    torch = _torch()
    a = np.ascontiguousarray(array)
    if a.dtype == np.dtype(ml_dtypes.bfloat16):
        a = a.view(np.int16)
        return torch.from_numpy(a.copy() if copy else a).view(torch.bfloat16)
    return torch.from_numpy(a.copy() if copy else a)


def copy_into(tensor, array: np.ndarray) -> None:
    """Write ``array`` into a torch tensor the caller passed as an output."""
    tensor.copy_(from_numpy(array).to(tensor.dtype))
