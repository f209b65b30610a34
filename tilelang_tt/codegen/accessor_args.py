"""The compile-time words ``TensorAccessorArgs(buffer).append_to()`` gives a kernel for a
sharded tensor, computed from a plan's tensor entry in the order the SDK's device header
(hw/inc/api/tensor/tensor_accessor_args.h) reads them: the ArgsConfig word (``Sharded`` = 1,
``IsDram`` = 2), the page size, the rank, the bank count, the tensor and shard shapes in pages
and the holders' packed coordinates (two ``x << 8 | y`` per word; DRAM banks as ``bank << 8``,
worker cores as the emulator numbers them, logical + 1).

sdkcheck computes an interleaved tensor's words itself but not a sharded one's: tools that
compile generated kernels without running the host give it these. ``main.cpp`` gets the words
from the SDK (``TensorAccessorArgs``) and never reads these."""

from __future__ import annotations

import copy


def _sharded(tensor: dict) -> bool:
    return tensor.get("layout", "interleaved") != "interleaved"


def sharded_accessor_words(tensor: dict) -> list[int]:
    dram = str(tensor.get("memory", "DRAM")).upper() == "DRAM"
    gy, gx = tensor["shard"]["projected_grid"]
    sm, sn = tensor["shard"]["projected_shard_tiles"]
    holders = [(b, 0) for b in range(gy * gx)] if dram else [(x, y) for y in range(gy) for x in range(gx)]
    packed = [(x << 8) if dram else (((x + 1) << 8) | (y + 1)) for x, y in holders]
    words = [1 | (2 if dram else 0), tensor["page_bytes"], 2, len(holders), *tensor["tiles"], sm, sn]
    for i in range(0, len(packed), 2):
        words.append(packed[i] | ((packed[i + 1] << 16) if i + 1 < len(packed) else 0))
    return words


def has_sharded_accessor(plan: dict) -> bool:
    tensors = {t["name"]: t for t in plan.get("tensors", [])}
    return any(a.get("kind") == "tensor_accessor" and _sharded(tensors[a["tensor"]])
               for k in plan.get("kernels", {}).values() for a in k.get("compile_args", []))


def with_explicit_accessor_words(plan: dict) -> dict:
    """A copy of ``plan`` whose sharded tensors' accessor compile args are spelled out as words."""
    plan = copy.deepcopy(plan)
    tensors = {t["name"]: t for t in plan.get("tensors", [])}
    for kernel in plan.get("kernels", {}).values():
        args = []
        for a in sorted(kernel.get("compile_args", []), key=lambda a: a.get("index", 0)):
            if a.get("kind") == "tensor_accessor" and _sharded(tensors[a["tensor"]]):
                args += [{"kind": "value", "value": w} for w in sharded_accessor_words(tensors[a["tensor"]])]
            else:
                args.append(a)
        if "compile_args" in kernel:
            kernel["compile_args"] = args
    return plan
