"""Public compile entry points: ``lower``, ``compile``, ``annotate_tt_layout``,
``annotate_tt_schedule``."""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import tvm
from tvm import tirx

from . import attrs
from .codegen.cmake import cmake_source
from .codegen.host import host_source, launches_host_source
from .codegen.kernels import kernel_source
from .codegen.launch_plan import combine_plans
from .codegen.plan import build_plan
from .errors import TTArgumentError, TTCompileError, TTPerformanceWarning, TTUnsupportedError
from .passes import pipeline
from .passes.frontend.launches import split_launches
from .passes.verify.verify_ttir import kernels_of
from .runtime import dynamic
from .runtime.artifact import Artifact
from .target import TARGET_KEY


def _param_by_name(func, name):
    for p in func.params:
        if tirx.is_buffer_var(p) and str(p.name) == name:
            return p
    raise TTCompileError(f"kernel has no tensor parameter named {name!r}")


def annotate_tt_layout(func: tirx.PrimFunc, layouts: dict) -> tirx.PrimFunc:
    """Request layouts for tensor parameters: ``{"A": {"memory": "DRAM", "layout":
    "interleaved"}}``.  InferTTLayout validates the requests."""
    current = dict(func.attrs[attrs.LAYOUT_REQUEST]) if func.attrs is not None and \
        attrs.LAYOUT_REQUEST in func.attrs else {}
    for name, desc in layouts.items():
        current[str(_param_by_name(func, name).name)] = dict(desc)
    return func.with_attr(attrs.LAYOUT_REQUEST, current)


def annotate_tt_schedule(func: tirx.PrimFunc, *, core_grid=None) -> tirx.PrimFunc:
    """Scheduling requests: ``core_grid=(cols, rows)`` limits the cores the work is spread on."""
    sched = {}
    if core_grid is not None:
        cols, rows = (int(v) for v in core_grid)
        if cols < 1 or rows < 1:
            raise TTCompileError(f"core_grid must be positive, got {core_grid}")
        sched["core_grid"] = [cols, rows]
    return func.with_attr(attrs.SCHEDULE, sched)


def check_pass_configs(pass_configs) -> dict:
    """Validate ``pass_configs`` (keys in ``attrs.PASS_CONFIGS``); returns the ``tt.*`` options.

    Keys outside the ``tt.`` namespace (TileLang's own ``tl.*`` options for GPU targets) have
    no meaning here and are ignored."""
    if pass_configs is None:
        return {}
    if not isinstance(pass_configs, dict):
        raise TTCompileError(f"pass_configs must be a dict, got {type(pass_configs).__name__}")
    options = {}
    for key, val in pass_configs.items():
        key = str(key)
        if not key.startswith("tt."):
            continue
        kind = attrs.PASS_CONFIGS.get(key)
        if kind is None:
            raise TTCompileError(f"pass_configs: unknown option {key!r}; the Tenstorrent options "
                                 f"are {sorted(attrs.PASS_CONFIGS)}")
        if kind is bool:
            if not isinstance(val, bool):
                raise TTCompileError(f"pass_configs[{key!r}] must be True or False, got {val!r}")
        elif kind is int:
            if isinstance(val, bool) or not isinstance(val, int) or val < 0:
                raise TTCompileError(f"pass_configs[{key!r}] must be an integer >= 0, got {val!r}")
        elif val not in kind:
            raise TTCompileError(f"pass_configs[{key!r}] must be one of {list(kind)}, got {val!r}")
        options[key] = val
    return options


def lower(func, target="tenstorrent", target_host=None, runtime_only=False,
          enable_host_codegen=False, enable_device_compile=False, *, dump_ir=None,
          stop_after: str | None = None, pass_configs: dict | None = None,
          verify_each: bool | None = None) -> tvm.IRModule:
    """Run the pipeline; returns the module of reader/compute/writer kernels (or the module as
    it is after ``stop_after``).  ``dump_ir`` (or ``TT_DUMP_IR``) names a directory that
    receives the IR after every stage; ``pass_configs`` holds compile options
    (``attrs.PASS_CONFIGS``: math fidelity, fp32 DST accumulation); ``verify_each`` (or
    ``TT_VERIFY_EACH=1``) checks the IR after every stage.  TileLang's ``target_host``,
    ``runtime_only``, ``enable_host_codegen`` and ``enable_device_compile`` (which of its CUDA
    host and device modules to build) are accepted and ignored."""
    options = check_pass_configs(pass_configs)
    if _launches(func) is not None:
        raise TTUnsupportedError(
            f"kernel {pipeline.kernel_name(func)} has several `with T.Kernel(...)` launches (or "
            "T.alloc_global tensors): lower() returns the module of one launch",
            hint="tilelang_tt.lower_launches(func) lowers each launch; compile() runs them all")
    mod = pipeline.prepare(func, target)
    if options:
        ((gv, f),) = mod.functions.items()
        mod = tvm.IRModule({gv: f.with_attr(attrs.COMPILE_OPTIONS, options)})
    return pipeline.run(mod, stop_after=stop_after, dump_dir=dump_ir, verify_each=verify_each)


def _launches(func):
    """``func``'s launches when it has several (or T.alloc_global tensors), else None."""
    if not isinstance(func, tirx.PrimFunc):
        return None
    return split_launches(func, pipeline.kernel_name(func))


def lower_launches(func, target="tenstorrent", *, dump_ir=None, pass_configs=None,
                   verify_each=None) -> list[tvm.IRModule]:
    """The lowered module of each ``T.Kernel`` launch of ``func`` in program order (one for a
    kernel of one launch); ``dump_ir`` gets a directory per launch."""
    launches = _launches(func)
    if launches is None:
        return [lower(func, target, dump_ir=dump_ir, pass_configs=pass_configs,
                      verify_each=verify_each)]
    return _lower_each(launches, target, dump_ir, pass_configs, verify_each)


def _lower_each(launches, target, dump_ir, pass_configs, verify_each=None):
    return [lower(launch.func, target, pass_configs=pass_configs, verify_each=verify_each,
                  dump_ir=os.path.join(dump_ir, launch.name) if dump_ir else None)
            for launch in launches]


def generate_launches(func, launches, mods) -> tuple[dict, dict]:
    """(sources, plan) of a kernel of several launches lowered to ``mods``: each launch's
    kernels and plan under ``launch<i>/``, one ``main.cpp`` running them in order
    (``codegen/launch_plan.py``)."""
    plans = [build_plan(mod) for mod in mods]
    for launch, p in zip(launches, plans):
        report_l1_fit(p, launch.name)
    params = [str(p.name) for p in func.params if tirx.is_buffer_var(p)]
    plan = combine_plans(pipeline.kernel_name(func), params, launches, plans)
    sources = {}
    for entry, mod in zip(plan["launches"], mods):
        kernels = kernels_of(mod)
        for kind in ("reader", "compute", "writer"):
            sources[f"{entry['dir']}/{kind}.cpp"] = kernel_source(kernels[kind])
        sources[f"{entry['dir']}/tt.plan.json"] = json.dumps(entry["plan"], indent=1) + "\n"
    sources["main.cpp"] = launches_host_source(plan)
    sources["tt.plan.json"] = json.dumps(plan, indent=1) + "\n"
    sources["CMakeLists.txt"] = cmake_source(plan["kernel"])
    return sources, plan


def report_l1_fit(plan: dict, name: str) -> None:
    """Warn (``TTPerformanceWarning``) when D6.1 single-buffered CBs to fit L1; log (info, the
    ``tilelang_tt`` logger) the CB indices D5.2 shared to fit a core's 32."""
    shared = [cb for cb in plan["circular_buffers"] if "shared" in cb]
    if shared:
        logging.getLogger("tilelang_tt").info(
            "%s: %d circular buffers share %d of the core's indices (lifetimes that do not "
            "overlap): %s", name, sum(len(cb["shared"]) for cb in shared), len(shared),
            "; ".join(f"c_{cb['id']}: " + ", ".join(cb["shared"]) for cb in shared))
    fit = plan["l1"].get("single_buffered", [])
    if fit:
        counts = {}
        for f in fit:  # versions of one buffer (A0.4) share its name
            counts[f["name"]] = counts.get(f["name"], 0) + 1
        warnings.warn(
            f"{name}: single-buffered " + ", ".join(
                n + (f" ({k} versions)" if k > 1 else "") for n, k in counts.items())
            + f" to fit L1 ({sum(f['saved_bytes'] for f in fit) // 1024} KiB saved; their "
            "producer no longer fills the next block while their consumer works on the current "
            "one - smaller blocks keep the overlap)", TTPerformanceWarning, stacklevel=4)


def generate(mod: tvm.IRModule) -> tuple[dict, dict]:
    """(sources, plan) of a lowered module."""
    kernels = kernels_of(mod)
    plan = build_plan(mod)
    report_l1_fit(plan, plan["kernel"])
    sources = {f"{kind}.cpp": kernel_source(kernels[kind])
               for kind in ("reader", "compute", "writer")}
    sources["main.cpp"] = host_source(plan)
    sources["tt.plan.json"] = json.dumps(plan, indent=1) + "\n"
    sources["CMakeLists.txt"] = cmake_source(plan["kernel"])
    return sources, plan


# When set to a directory, every compiled project is also saved there as <kernel>-<digest>/
# (one copy per distinct content): CI checks all of them against the real SDK. A kernel of
# several launches also gets <kernel>-<digest>.launch<i>, a link to each launch's directory
# (its kernels: a project of its own), so that checking every project below the directory
# checks them.
SAVE_PROJECTS_ENV = "TILELANG_TT_SAVE_PROJECTS"


def _save_project_copy(art: Artifact) -> None:
    root = os.environ.get(SAVE_PROJECTS_ENV)
    if not root:
        return
    final = Path(root) / f"{art.name}-{art.digest()}"
    if not final.exists():
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".save-", dir=final.parent))
        art.save(tmp)
        try:
            tmp.rename(final)
        except OSError:  # saved concurrently by another process
            shutil.rmtree(tmp, ignore_errors=True)
    for launch in art.plan.get("launches", []):
        link = final.parent / f"{final.name}.{launch['dir']}"
        try:
            link.symlink_to(Path(final.name) / launch["dir"], target_is_directory=True)
        except FileExistsError:  # linked before (or concurrently)
            pass


def tenstorrent_target(target):
    """The Tenstorrent target a TileLang ``target=`` stands for: Tenstorrent targets are kept;
    TileLang's other targets (None, "auto", "cuda", "hip", "llvm", a dict ...) have no meaning
    here and select the default device."""
    if isinstance(target, str) and target.strip().split("/")[0] == TARGET_KEY:
        return target
    if isinstance(target, tvm.target.Target) and TARGET_KEY in list(target.keys):
        return target
    return TARGET_KEY


def _out_idx(func, out_idx):
    """``out_idx``, or the outputs a kernel in the eager form declares (``T.empty``)."""
    declared = func.attrs.get(attrs.OUT_IDX) if isinstance(func, tvm.tirx.PrimFunc) and \
        func.attrs is not None else None
    if declared is None:
        return out_idx
    declared = [int(i) for i in declared]
    if out_idx is not None:
        raise TTArgumentError(
            f"Out index conflict: kernel {func.attrs.get('global_symbol', '')} declares its "
            f"outputs with T.empty and returns them (out_idx {declared}), and was also given "
            f"out_idx={out_idx}; drop the out_idx argument")
    return declared


def _annotated_pass_configs(func, pass_configs):
    """``pass_configs`` over those the kernel records (``T.annotate_pass_configs``)."""
    recorded = func.attrs.get(attrs.PASS_CONFIGS_ATTR) if isinstance(func, tvm.tirx.PrimFunc) \
        and func.attrs is not None else None
    if recorded is None:
        return pass_configs
    merged = {str(k): v for k, v in recorded.items()}
    merged.update(pass_configs or {})
    return merged


def compile(func, out_idx=None, execution_backend=None, target="tenstorrent",  # noqa: A001
            target_host=None, verbose=None, pass_configs=None, compile_flags=None, *,
            dump_ir=None) -> Artifact | dynamic.DynamicKernel:
    """Compile a kernel for Tenstorrent; see :class:`Artifact` for running it.

    TileLang's signature: ``out_idx`` lists the outputs a call allocates and returns;
    ``target`` selects a Tenstorrent device (other TileLang targets select the default one);
    ``pass_configs`` selects compile options, e.g. ``{"tt.math_fidelity": "HiFi2",
    "tt.fp32_dest_acc_en": True}`` (docs/SUPPORT.md; the math fidelity defaults to HiFi4,
    TT-Metalium's, HiFi2 trades precision for speed); ``execution_backend``, ``target_host``,
    ``verbose``, ``compile_flags`` and the ``pass_configs`` keys outside ``tt.`` (TileLang's GPU
    options) are accepted and ignored."""
    out_idx = _out_idx(func, out_idx)
    pass_configs = _annotated_pass_configs(func, pass_configs)
    sizes = dynamic.symbolic_sizes(func) if isinstance(func, tirx.PrimFunc) else []
    if sizes or isinstance(func, tirx.PrimFunc) and dynamic.has_scalar_params(func):
        # T.dynamic sizes, scalar parameters: one kernel per set of values, compiled when called
        def specialised(f, idx):
            return compile(f, out_idx=idx, target=target, pass_configs=pass_configs,
                           dump_ir=dump_ir)
        return dynamic.DynamicKernel(func, sizes, specialised, out_idx)
    launches = _launches(func)
    if launches is not None:  # several T.Kernel launches, or T.alloc_global tensors
        mods = _lower_each(launches, tenstorrent_target(target), dump_ir, pass_configs)
        sources, plan = generate_launches(func, launches, mods)
        mod = tvm.IRModule({gv: f for m in mods for gv, f in m.functions.items()})
        art = Artifact(sources=sources, plan=plan, module=mod, out_idx=out_idx)
        _save_project_copy(art)
        return art
    mod = lower(func, tenstorrent_target(target), dump_ir=dump_ir, pass_configs=pass_configs)
    sources, plan = generate(mod)
    art = Artifact(sources=sources, plan=plan, module=mod, out_idx=out_idx)
    _save_project_copy(art)
    return art
