"""``tilelang_tt.jit``: TileLang's ``@tilelang.jit`` (``import tilelang_tt as tilelang``).

Two forms, told apart as TileLang does:

* the factory form, ``@tilelang.jit(out_idx=[-1])`` on a function that builds and returns a
  ``@T.prim_func``: calling it with the factory's arguments returns the compiled kernel (one
  per distinct argument set);
* the eager form, ``@tilelang.jit`` on a function of tensors and compile-time values whose
  body declares sizes (``M, N = T.const("M, N")``), annotates its tensors
  (``A: T.Tensor((M, N), dtype)``), declares outputs (``C = T.empty((M, N), dtype)``) and
  returns them: ``f(a, b, block_M=64)`` compiles for the arrays' shapes (once per shape and
  compile-time values) and runs; ``f.compile(M=..., N=..., block_M=64)`` or
  ``f.compile(a, b, block_M=64)`` returns the kernel (see tilelang_tt/jit/eager.py).

The kernel is a :class:`tilelang_tt.Artifact`: it takes numpy arrays (and CPU torch tensors
when torch is imported), and has TileLang's ``get_kernel_source()`` / ``get_profiler()``.
TileLang's options are accepted: ``out_idx`` and ``target`` (a Tenstorrent target; others
select the default device) have their meaning, ``debug_root_path`` receives the generated
sources, ``pass_configs`` is forwarded to :func:`tilelang_tt.compile`; ``execution_backend``,
``target_host``, ``verbose`` and ``compile_flags`` have no meaning here and are ignored.
"""

from __future__ import annotations

import functools
import inspect
from pathlib import Path

import tvm

from .. import compiler
from ..errors import TTCompileError, TTUnsupportedError
from . import eager

__all__ = ["jit", "JITImpl", "JITKernel", "compile", "par_compile"]

JITKernel = compiler.Artifact


def compile(func, out_idx=None, execution_backend=None, target=None,  # noqa: A001
            target_host=None, verbose=None, pass_configs=None, compile_flags=None):
    """TileLang's ``tilelang.compile``: see :func:`tilelang_tt.compile`."""
    return compiler.compile(func, out_idx=out_idx, execution_backend=execution_backend,
                            target=target, target_host=target_host, verbose=verbose,
                            pass_configs=pass_configs, compile_flags=compile_flags)


def par_compile(funcs, out_idx=None, execution_backend=None, target=None, target_host=None,
                verbose=None, pass_configs=None, compile_flags=None, num_workers=None,
                ignore_error=False):
    """Compile several kernels (one after another: compilation is quick next to a run)."""
    kernels = []
    for f in funcs:
        try:
            kernels.append(compile(f, out_idx, execution_backend, target, target_host, verbose,
                                   pass_configs, compile_flags))
        except TTCompileError:
            if not ignore_error:
                raise
            kernels.append(None)
    return kernels


def _freeze(value):
    if isinstance(value, dict):
        return (dict, tuple(sorted((repr(k), _freeze(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_freeze(v) for v in value))
    if isinstance(value, set):
        return (set, tuple(sorted(repr(v) for v in value)))
    try:
        hash(value)
        return value
    except TypeError:
        return ("id", id(value))


# TileLang's JITFunc (``kernel.func``) methods that compute its own cache keys and tracing mode;
# tilelang-tt keys kernels by its own binding (JITImpl._bind) and has no such object
_JITFUNC_INTERNALS = ("parse_args", "set_mode", "_parse_phase1_key", "_is_lazy_style",
                      "_build_tir_template", "p1_cache", "tensor_args", "tensor_args_defaults",
                      "ir_gen", "arg_names")


class JITFunction:
    """``kernel.func`` of a ``@tilelang.jit`` kernel: the user's function (callable as it, its
    attributes forwarded), as TileLang's JITFunc wraps it; ``get_tir`` and ``orig_func`` as
    there; TileLang's cache-key and mode internals (``parse_args``, ``set_mode`` ...) raise
    TTUnsupportedError naming them."""

    def __init__(self, owner, fn):
        functools.update_wrapper(self, fn)
        self._owner = owner
        self.orig_func = fn
        self.signature = inspect.signature(fn)

    def __call__(self, *args, **kwargs):
        return self.orig_func(*args, **kwargs)

    def get_tir(self, *args, **kwargs):
        return self._owner.get_tir(*args, **kwargs)

    def __getattr__(self, name):
        if name in _JITFUNC_INTERNALS:
            raise TTUnsupportedError(
                f"{self.orig_func.__name__}.func.{name}: TileLang's JITFunc internals (its "
                "argument cache keys and lazy / eager tracing mode) have no counterpart in "
                "tilelang-tt, whose @tilelang.jit binds a call's arguments itself; call the "
                "kernel (or kernel.compile / kernel.get_tir) instead")
        if name.startswith("__") and name not in ("__code__", "__closure__", "__globals__",
                                                  "__defaults__", "__kwdefaults__"):
            raise AttributeError(name)
        return getattr(self.orig_func, name)


class JITImpl:
    """What ``@tilelang.jit`` returns (see the module docstring)."""

    def __init__(self, func, *, out_idx=None, target=None, target_host=None,
                 execution_backend=None, verbose=None, pass_configs=None,
                 debug_root_path=None, compile_flags=None):
        if not inspect.isfunction(func):
            raise TTCompileError(f"@tilelang.jit expects a function, got {type(func).__name__}")
        self.func = JITFunction(self, func)
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__
        # no __wrapped__: pytest would collect a jit kernel named test_* as a test function
        self.signature = inspect.signature(func)
        self.__signature__ = self.signature
        self.out_idx = out_idx
        self.target = target
        self.target_host = target_host
        self.execution_backend = execution_backend
        self.verbose = verbose
        self.pass_configs = pass_configs
        self.debug_root_path = debug_root_path
        self.compile_flags = compile_flags
        self.mode = "lazy" if eager.has_inner_prim_func(func) or not eager.is_eager(func) \
            else "eager"
        self._eager = None
        # a refused construct (T.StridedTensor ...) is raised when the kernel is compiled, as
        # TileLang does, so a module defining such a kernel still imports; a malformed eager
        # function is an error here
        self._error = None
        if self.mode == "eager":
            try:
                self._eager = eager.analyse(func)
            except TTUnsupportedError as err:
                self._error = err
        if self._eager is not None and out_idx is not None:
            raise TTCompileError(
                f"{func.__name__}: out_idx is for the factory form; an eager @tilelang.jit "
                "function declares its outputs with T.empty and returns them")
        self._kernels: dict = {}

    # ---- binding ---------------------------------------------------------------------------
    def _bind(self, args, kwargs):
        """(tensor arguments, compile-time values, size values) of a call."""
        if self._error is not None:
            raise self._error
        info = self._eager
        size_kw = {k: kwargs.pop(k) for k in list(kwargs)
                   if k in info.size_kinds and k not in self.signature.parameters}
        try:
            bound = self.signature.bind_partial(*args, **kwargs)
        except TypeError as err:
            raise TTCompileError(f"{self.__name__}: {err}") from None
        bound.apply_defaults()
        values = dict(bound.arguments)
        tensors = {p: values.pop(p) for p in info.tensor_params if p in values}
        missing = [p for p in info.params if p not in values and p not in tensors
                   and p not in info.tensor_params]
        if missing:
            raise TTCompileError(f"{self.__name__}: missing value for {', '.join(missing)}")
        sizes = eager.size_values(info, tensors, size_kw, values)
        return tensors, values, sizes

    # ---- compiling -------------------------------------------------------------------------
    def get_tir(self, *args, **kwargs):
        """The ``T.prim_func`` these arguments select."""
        if self.mode == "lazy":
            func = self.func.orig_func(*args, **kwargs)
            if not isinstance(func, tvm.tirx.PrimFunc):
                raise TTCompileError(
                    f"{self.__name__} returned {type(func).__name__}; a @tilelang.jit factory "
                    "returns its @T.prim_func (or use the eager form: T.const sizes, tensor "
                    "annotations, T.empty outputs)")
            return func
        _, values, sizes = self._bind(args, dict(kwargs))
        return eager.build(self._eager, values, sizes)

    def _key(self, args, kwargs):
        if self.mode == "lazy":
            return _freeze((args, kwargs))
        _, values, sizes = self._bind(args, dict(kwargs))
        return _freeze((values, sizes))

    def compile(self, *args, **kwargs):
        """The compiled kernel for these arguments (cached)."""
        return self.compile_with(args, kwargs)

    def compile_with(self, args, kwargs, pass_configs=None):
        """:meth:`compile` with ``pass_configs`` laid over the decorator's (an autotune
        configuration's own ``"pass_configs"``, as TileLang's autotuner merges them)."""
        key = self._key(args, kwargs)
        merged = self.pass_configs
        if pass_configs:
            merged = {**(self.pass_configs or {}), **pass_configs}
            key = (key, _freeze(pass_configs))
        kernel = self._kernels.get(key)
        if kernel is None:
            func = self.get_tir(*args, **kwargs)
            # an eager function's outputs are recorded on the kernel (tilelang_out_idx)
            idx = self.out_idx if self.mode == "lazy" else None
            kernel = compiler.compile(func, out_idx=idx, target=self.target,
                                      pass_configs=merged)
            if self.debug_root_path:
                kernel.save(Path(self.debug_root_path) / kernel.name)
            self._kernels[key] = kernel
        return kernel

    def par_compile(self, configs, num_workers=None, ignore_error=False):
        kernels = []
        for cfg in configs:
            try:
                kernels.append(self.compile(**cfg) if isinstance(cfg, dict)
                               else self.compile(*cfg))
            except TTCompileError:
                if not ignore_error:
                    raise
                kernels.append(None)
        return kernels

    def get_kernel_source(self, *args, **kwargs) -> str:
        return self.compile(*args, **kwargs).get_kernel_source()

    def parse_cache_key(self, *args, **kwargs):
        return self._key(args, kwargs)

    def __call__(self, *args, **kwargs):
        if self.mode == "lazy":
            return self.compile(*args, **kwargs)
        return self.run_kernel(self.compile(*args, **kwargs), args, kwargs)

    def run_kernel(self, kernel, args, kwargs):
        """Run ``kernel`` (compiled for this eager call) on the call's tensors."""
        tensors, values, sizes = self._bind(args, dict(kwargs))
        eager.check_strides(self._eager, tensors, values, sizes)
        missing = [p for p in self._eager.tensor_params if p not in tensors]
        if missing:
            raise TTCompileError(f"{self.__name__}: pass the tensor {', '.join(missing)} (or "
                                 "use .compile(...) to get the kernel without running it)")
        result = kernel(*(tensors[p] for p in self._eager.tensor_params))
        return result if self._eager.has_return else None

    def __repr__(self):
        return f"<tilelang_tt.jit {self.mode} {self.__name__}>"


def jit(func=None, *, out_idx=None, target=None, target_host=None, execution_backend=None,
        verbose=None, pass_configs=None, debug_root_path=None, compile_flags=None):
    """``@tilelang.jit`` / ``@tilelang.jit(out_idx=..., target=..., pass_configs=...)``."""
    options = dict(out_idx=out_idx, target=target, target_host=target_host,
                   execution_backend=execution_backend, verbose=verbose,
                   pass_configs=pass_configs, debug_root_path=debug_root_path,
                   compile_flags=compile_flags)

    def decorate(f):
        return JITImpl(f, **options)

    return decorate(func) if func is not None else decorate
