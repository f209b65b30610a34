"""TileLang's autotuner, tuning by the emulator's modelled device time.

``@tilelang.autotune(configs=...)`` over a ``@tilelang.jit`` function (factory or eager form)
and the older ``AutoTuner.from_kernel(kernel=..., configs=...)...run()`` compile every
configuration, run each once on the emulator (TileLang's random inputs, or those of
``set_autotune_inputs``) and keep the one with the least modelled device time (the model is
deterministic, so ``warmup`` / ``rep`` need no repetition). A configuration that does not compile,
or whose results miss ``ref_prog`` (when given), is skipped, as TileLang skips it; when none is
left the error names each configuration and why. A call that gives every tuned argument
runs that configuration without tuning, as TileLang does. A configuration's ``"pass_configs"``
entry is not a kernel argument: its compile options are laid over the decorator's (or
``set_compile_args``') for that configuration, as TileLang's autotuner reserves the key.

The best kernel carries ``latency`` (ms), ``config`` and ``ref_latency`` (the reference
program's modelled time: None, a reference runs no kernel).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import itertools
from typing import Any, Callable

from ..errors import TTCompileError

_INPUTS: list = []  # stack of set_autotune_inputs() tensors


@contextlib.contextmanager
def set_autotune_inputs(*tensors):
    """``with set_autotune_inputs([a, b]):`` tune on these inputs instead of random ones."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    _INPUTS.append(list(tensors))
    try:
        yield
    finally:
        _INPUTS.pop()


def get_autotune_inputs():
    return _INPUTS[-1] if _INPUTS else None


@dataclasses.dataclass
class AutotuneResult:
    latency: float
    config: dict
    ref_latency: float | None
    libcode: str
    func: Any
    kernel: Any


@dataclasses.dataclass
class _Profile:
    supply_type: Any = None
    ref_prog: Callable | None = None
    rtol: float = 1e-2
    atol: float = 1e-2
    max_mismatched_ratio: float = 0.01
    skip_check: bool = False
    manual_check_prog: Callable | None = None


def _configs(configs, args, kwargs) -> list[dict]:
    cfgs = configs(*args, **kwargs) if callable(configs) else configs
    if isinstance(cfgs, dict):  # {"block_M": [64, 128], ...}: their product
        keys = list(cfgs)
        cfgs = [dict(zip(keys, vals)) for vals in itertools.product(*cfgs.values())]
    return [dict(c) for c in (cfgs or [])]


def _split(cfg: dict):
    """(the configuration's kernel arguments, its own ``"pass_configs"`` or None): TileLang's
    autotuner reserves that key for compiler options tuned along with the arguments."""
    args = dict(cfg)
    return args, args.pop("pass_configs", None)


def _tune(name: str, configs: list[dict], compile_one: Callable, profile: _Profile):
    """(best kernel, its config, its modelled ms) over ``configs``."""
    if not configs:
        raise TTCompileError(f"autotune of {name}: configs is empty; give at least one "
                             "configuration")
    best, failures = None, []
    for cfg in configs:
        try:
            kernel = compile_one(cfg)
            prof = kernel.get_profiler(profile.supply_type)
            inputs = get_autotune_inputs()
            if profile.manual_check_prog is not None and not profile.skip_check:
                ins = inputs if inputs is not None else prof._inputs(_torch_loaded())
                profile.manual_check_prog(_as_list(kernel(*ins)), *ins)
            elif profile.ref_prog is not None and not profile.skip_check:
                prof.assert_allclose(profile.ref_prog, input_tensors=inputs, rtol=profile.rtol,
                                     atol=profile.atol,
                                     max_mismatched_ratio=profile.max_mismatched_ratio)
            latency = prof.do_bench(input_tensors=inputs)
        except (TTCompileError, AssertionError) as err:
            failures.append((cfg, f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"))
            continue
        if best is None or latency < best[2]:
            best = (kernel, cfg, latency)
    if best is None:
        # the first line carries a reason too: tools that show one line of an error still say why
        raise TTCompileError(f"autotune of {name}: no configuration compiled and ran "
                             f"({len(failures)} tried; the first: {failures[0][1]}):\n  "
                             + "\n  ".join(f"{cfg}: {why}" for cfg, why in failures))
    kernel, cfg, latency = best
    kernel.latency, kernel.config, kernel.ref_latency = latency, dict(cfg), None
    return best


def _call_key(args, kwargs):
    """A call's arguments as a cache key; arrays and tensors by shape and dtype."""
    from . import _freeze

    def one(v):
        if hasattr(v, "shape") and hasattr(v, "dtype"):
            return ("tensor", tuple(int(d) for d in v.shape), str(v.dtype))
        return _freeze(v)

    return (tuple(one(a) for a in args), tuple(sorted((k, one(v)) for k, v in kwargs.items())))


def _torch_loaded() -> bool:
    import sys

    return "torch" in sys.modules


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


class AutoTuneImpl:
    """What ``@autotune(...)`` returns for a ``@tilelang.jit`` function."""

    def __init__(self, jit_impl, configs, profile: _Profile):
        self.jit_impl = jit_impl
        self.configs = configs
        self.profile = profile
        self._cache: dict = {}
        functools.update_wrapper(self, jit_impl.func if hasattr(jit_impl, "func") else jit_impl)

    def _tuned(self, args, kwargs):
        cfgs = _configs(self.configs, args, kwargs)
        tuned = set().union(*(_split(c)[0].keys() for c in cfgs)) if cfgs else set()
        # kwargs may also name an eager function's sizes (f.compile(M=..., N=...))
        given = set(list(self.jit_impl.signature.parameters)[:len(args)]) | set(kwargs)
        if cfgs and tuned <= given:  # every tuned argument given: run that configuration
            return self.jit_impl.compile(*args, **kwargs), None
        key = _call_key(args, kwargs)
        if key not in self._cache:
            self._cache[key] = _tune(self.__name__, cfgs,
                                     lambda c: self.jit_impl.compile_with(
                                         args, {**kwargs, **_split(c)[0]}, _split(c)[1]),
                                     self.profile)
        kernel, cfg, _ = self._cache[key]
        return kernel, cfg

    def compile(self, *args, **kwargs):
        return self._tuned(args, kwargs)[0]

    def __call__(self, *args, **kwargs):
        kernel, cfg = self._tuned(args, kwargs)
        if self.jit_impl.mode == "lazy":
            return kernel
        return self.jit_impl.run_kernel(kernel, args, {**kwargs, **_split(cfg or {})[0]})

    def get_tir(self, *args, **kwargs):
        return self.jit_impl.get_tir(*args, **kwargs)


def autotune(func=None, *, configs=None, warmup=25, rep=100, timeout=100, supply_type=None,
             ref_prog=None, supply_prog=None, rtol=1e-2, atol=1e-2, max_mismatched_ratio=0.01,
             skip_check=False, manual_check_prog=None, cache_input_tensors=False,
             do_not_specialize=None, **_options):
    """``@tilelang.autotune(configs=...)`` over ``@tilelang.jit``. ``warmup``, ``rep``,
    ``timeout``, ``supply_prog`` and ``cache_input_tensors`` are accepted and unused (one run
    gives the modelled time; inputs come from the profiler or ``set_autotune_inputs``)."""
    profile = _Profile(supply_type, ref_prog, rtol, atol, max_mismatched_ratio, skip_check,
                       manual_check_prog)

    def decorate(fn):
        from . import JITImpl, jit

        return AutoTuneImpl(fn if isinstance(fn, JITImpl) else jit(fn), configs, profile)

    return decorate(func) if func is not None else decorate


class AutoTuner:
    """TileLang's ``AutoTuner.from_kernel(kernel=f, configs=...)`` with ``set_compile_args``,
    ``set_profile_args`` and ``run()`` -> :class:`AutotuneResult`; ``f(**config)`` returns the
    ``@T.prim_func`` of a configuration."""

    def __init__(self, fn, configs):
        self.fn = fn
        self.configs = configs
        self.compile_args: dict = {}
        self.profile = _Profile()

    @classmethod
    def from_kernel(cls, kernel, configs):
        return cls(kernel, configs)

    def set_compile_args(self, out_idx=None, target=None, execution_backend=None,
                         target_host=None, verbose=None, pass_configs=None, **_unused):
        self.compile_args = dict(out_idx=out_idx, target=target, pass_configs=pass_configs)
        return self

    def set_profile_args(self, warmup=None, rep=None, timeout=None, supply_type=None,
                         ref_prog=None, supply_prog=None, rtol=1e-2, atol=1e-2,
                         max_mismatched_ratio=0.01, skip_check=False, manual_check_prog=None,
                         cache_input_tensors=False, **_unused):
        self.profile = _Profile(supply_type, ref_prog, rtol, atol, max_mismatched_ratio,
                                skip_check, manual_check_prog)
        return self

    def set_kernel_parameters(self, *_args, **_kwargs):
        return self

    def run(self, warmup: int = 25, rep: int = 100, timeout: int = 30,
            **_options) -> AutotuneResult:
        """``early_stop``, ``enable_grouped_compile`` and TileLang's other tuning options are
        accepted and unused: every configuration runs once."""
        from .. import compiler

        def compile_one(cfg):
            params, pass_configs = _split(cfg)
            compile_args = dict(self.compile_args)
            if pass_configs:
                compile_args["pass_configs"] = {**(compile_args.get("pass_configs") or {}),
                                                **pass_configs}
            return compiler.compile(self.fn(**params), **compile_args)

        name = getattr(self.fn, "__name__", "the kernel")
        kernel, cfg, latency = _tune(name, _configs(self.configs, (), {}), compile_one,
                                     self.profile)
        return AutotuneResult(latency=latency, config=dict(cfg), ref_latency=None,
                              libcode=kernel.get_kernel_source(), func=kernel.func
                              if hasattr(kernel, "func") else None, kernel=kernel)

    __call__ = run
