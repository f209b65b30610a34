"""The runtime plan of a kernel of several launches (``tt.plan.json`` at the project's top).

Each launch is compiled as a kernel of its own (``passes/frontend/launches.py``) and has its own
plan (``codegen/plan.py``), saved with its three device kernels in the project's
``launch<i>/`` directory (a project of its own for ``sdkcheck``).  The top plan holds:

* ``tensors``: the kernel's tensor parameters in their order, as in a single launch's plan, each
  described by the first launch that has it, its ``role`` over all launches (read by any and
  written by any: ``inout``; ...);
* ``globals``: the ``T.alloc_global`` tensors (role ``global``): the host allocates them
  (zeros), no file holds them;
* ``launches``: per launch its kernel name, directory and plan, in program order;
* ``kernels``: empty (each launch's plan lists its kernels).

A tensor two launches see with different device layouts (shape padded otherwise, another tiled
plane, another memory) cannot be one buffer: ``TTUnsupportedError`` naming it.
"""

from __future__ import annotations

from ..errors import TTUnsupportedError
from .plan import PLAN_VERSION

# what makes two launches' views of a tensor the same device buffer
LAYOUT_KEYS = ("shape", "padded_shape", "pad_value", "axes", "dtype", "memory", "layout",
               "page_bytes", "tiles", "vector", "shard")


def _role(read: bool, written: bool) -> str:
    return "inout" if read and written else "input" if read else "output" if written else \
        "unused"


def combine_plans(name: str, param_names: list, launches: list, plans: list) -> dict:
    """The top plan of ``launches`` (``passes.frontend.launches.Launch``) whose own plans are
    ``plans``; ``param_names``: the kernel's tensor parameters in order."""
    seen, read, written = {}, {}, {}
    for launch, plan in zip(launches, plans):
        for t in plan["tensors"]:
            n = t["name"]
            if n in seen:
                first_launch, first = seen[n]
                diff = [k for k in LAYOUT_KEYS if first.get(k) != t.get(k)]
                if diff:
                    k = diff[0]
                    raise TTUnsupportedError(
                        f"tensor {n} is used by launches {first_launch} and {launch.name} with "
                        f"different device layouts ({k}: {first.get(k)} and {t.get(k)}); one "
                        "buffer holds it for every launch of the kernel",
                        hint="access the tensor with the same tiling in every launch (copies "
                        "of the same block shape along the same dims)")
            else:
                seen[n] = (launch.name, t)
            read[n] = read.get(n, False) or t["role"] in ("input", "inout")
            written[n] = written.get(n, False) or t["role"] in ("output", "inout")
    tensors = []
    for index, n in enumerate(param_names):
        t = dict(seen[n][1])
        t.update(index=index, role=_role(read[n], written[n]))
        tensors.append(t)
    globals_ = []
    for launch in launches:
        for g in launch.globals:
            if g not in (x["name"] for x in globals_):
                t = dict(seen[g][1])
                t.update(index=None, role="global")
                globals_.append(t)
    return {
        "version": PLAN_VERSION,
        "kernel": name,
        "target": plans[0]["target"],
        "sdk": plans[0]["sdk"],
        "tensors": tensors,
        "globals": globals_,
        "launches": [{"kernel": launch.name, "dir": f"launch{i}", "plan": plan}
                     for i, (launch, plan) in enumerate(zip(launches, plans))],
        "kernels": {},
    }
