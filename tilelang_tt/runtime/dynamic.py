"""Kernels compiled once per call-time value: symbolic sizes and scalar parameters.

TileLang's factory form takes ``M = T.dynamic("m")`` (or ``T.symbolic("m")``) as a size and
compiles one kernel for every value of it.  Tensix kernels are generated for constant tile
counts (the reader's page loops, the CB sizes, the core partition), so here
``tilelang.compile`` of such a kernel returns a :class:`DynamicKernel`: every call binds the
sizes from the shapes of the tensors passed, specialises the kernel to them
(``PrimFunc.specialize``), compiles it (cached per set of sizes) and runs it.  A tensor
dimension is a constant, a size variable, or an affine expression ``a * m + b`` of one size
variable with integers ``a > 0`` and ``b`` (``T.Tensor((n * 3 + 1,), ...)``): the call solves it
for ``m`` (a size that no whole ``m`` gives is an argument error).  Other expressions of sizes
(``m * k``, ``m // 2``) are refused when the kernel is compiled.

Scalar parameters (``offset: T.int32`` in the ``@T.prim_func`` signature, passed as Python
numbers in the call: ``kernel(a, b, 1)``) are specialised the same way: one kernel per value,
as the eager form's scalar parameters are (the value is a constant the kernel folds).

Its profiler draws inputs for the sizes given as ``dynamic_symbolic_constraints={"m": 256}``
(TileLang's name), or takes ``input_tensors`` (which a kernel with scalar parameters needs).
"""

from __future__ import annotations

import tvm
import tvm_ffi
from tvm import tirx
from tvm.sym import Analyzer

from ..errors import TTArgumentError, TTUnsupportedError
from ..passes.common import substitute
from .tensors import TTCallArgumentError


def _dims(param):
    return list(param.shape)


def _scalar_value(spec: dict, value):
    """A scalar parameter's value from a call: a Python (or numpy / 0-d torch) number of its
    dtype's kind."""
    item = getattr(value, "item", None)
    if item is not None and getattr(value, "shape", None) in ((), []):
        value = item()
    dtype = spec["dtype"]
    if dtype.startswith("bool"):
        ok = isinstance(value, (bool, int))
        conv = bool
    elif dtype.startswith(("int", "uint")):
        ok = isinstance(value, int) and not isinstance(value, bool)
        conv = int
    else:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        conv = float
    if not ok:
        raise TTCallArgumentError(f"scalar parameter {spec['name']} ({dtype}): expected a "
                                  f"number, got {type(value).__name__}")
    return conv(value)


def has_scalar_params(func) -> bool:
    """``func`` has parameters that are not tensors (``offset: T.int32``)."""
    return any(not tirx.is_buffer_var(p) for p in func.params)


def _at(expr, var, value: int) -> int | None:
    """``expr`` with ``var`` = ``value``, folded to an integer (None if it does not fold)."""
    folded = Analyzer().simplify(substitute(expr, {var: tirx.IntImm(str(var.ty), value)}))
    return int(folded.value) if isinstance(folded, tirx.IntImm) else None


def affine_size(dim):
    """``(var, a, b)`` when the tensor dimension ``dim`` is ``a * var + b`` for one size variable
    and integers ``a > 0``, ``b`` (a bare variable: ``(var, 1, 0)``); None otherwise."""
    if isinstance(dim, tvm.ir.Var):
        return dim, 1, 0
    found = list(tirx.analysis.undefined_vars(dim))
    if len(found) != 1:
        return None
    var = found[0]
    points = [_at(dim, var, k) for k in (0, 1, 2, 3, 17)]
    if any(p is None for p in points):
        return None
    b, a = points[0], points[1] - points[0]
    if a <= 0 or any(p != a * k + b for p, k in zip(points, (0, 1, 2, 3, 17))):
        return None
    return var, a, b


def dim_spec(dim):
    """A tensor dimension as the call and the profiler read it: an int, a size's name, or
    ``(name, a, b)`` for ``a * name + b``."""
    if isinstance(dim, tirx.IntImm):
        return int(dim)
    var, a, b = affine_size(dim)
    return str(var.name) if (a, b) == (1, 0) else (str(var.name), a, b)


def dim_value(spec, sizes: dict) -> int:
    """The extent of a dimension given as :func:`dim_spec` gives it, for ``sizes``."""
    if isinstance(spec, int):
        return spec
    if isinstance(spec, str):
        return sizes[spec]
    name, a, b = spec
    return a * sizes[name] + b


def dim_names(spec) -> list:
    """The size names a dimension spec reads."""
    return [] if isinstance(spec, int) else [spec] if isinstance(spec, str) else [spec[0]]


def symbolic_sizes(func) -> list:
    """The size variables (``tvm.ir.Var``) of ``func``'s tensor shapes, in order of first use;
    empty for a kernel with constant shapes.  A dimension that is neither a constant nor an
    affine expression of one variable (:func:`affine_size`) is a TTUnsupportedError naming
    the tensor."""
    found = []
    for p in func.params:
        if not tirx.is_buffer_var(p):
            continue
        for d, dim in enumerate(_dims(p)):
            if isinstance(dim, tirx.IntImm):
                continue
            affine = affine_size(dim)
            if affine is not None:
                if not any(affine[0].same_as(v) for v in found):
                    found.append(affine[0])
                continue
            raise TTUnsupportedError(
                f"tensor {p.name}: dimension {d} is `{dim}`; a symbolic size must be a T.dynamic "
                "variable or `a * m + b` of one (integers a > 0, b): the call's shape must give "
                "its value (declare the tensor with such sizes and compute others inside the "
                "kernel)")
    return found


class DynamicKernel:
    """What ``tilelang.compile`` returns for a kernel with symbolic sizes (module docstring).

    ``kernel(a, b)`` / ``kernel.run(a, b, ...)`` run it for the tensors' shapes;
    ``kernel.specialize(m=256)`` returns the compiled :class:`Artifact` for those sizes;
    ``get_kernel_source()`` is the source of the last sizes run (one per shape);
    ``get_profiler()`` as for any kernel; ``save(dir)`` writes the project of each set of
    sizes compiled (now or later) to ``dir/m256...``."""

    def __init__(self, func, sizes: list, compile_fn, out_idx=None):
        self.func = func
        self.sizes = sizes
        self.size_names = [str(v.name) for v in sizes]
        self._compile = compile_fn
        self.params = list(func.params)
        self.scalars = [i for i, p in enumerate(self.params) if not tirx.is_buffer_var(p)]
        self.scalar_names = [str(self.params[i].name) for i in self.scalars]
        n = len(self.params)
        idx = [] if out_idx is None else [out_idx] if isinstance(out_idx, int) else list(out_idx)
        for i in idx:
            if not -n <= i < n:
                raise TTArgumentError(f"out_idx {i} is out of range for a kernel with {n} "
                                      "parameters")
        self.out_idx = list(dict.fromkeys(i % n for i in idx))
        bad = [self.params[i].name for i in self.out_idx if i in self.scalars]
        if bad:
            raise TTArgumentError(f"out_idx names the scalar parameter {bad[0]}; outputs are "
                                  "tensors")
        # out_idx of the specialised kernel, whose parameters are the tensors only
        tensor_pos = [i for i in range(n) if i not in self.scalars]
        self._tensor_out_idx = [tensor_pos.index(i) for i in self.out_idx]
        # the parameters as the profiler reads them: a size variable stands as its name
        self.tensors = [{"name": str(p.name), "dtype": str(p.dtype),
                         "shape": [dim_spec(d) for d in _dims(p)]} if i not in self.scalars else
                        {"name": str(p.name), "dtype": str(p.ty), "scalar": True}
                        for i, p in enumerate(self.params)]
        self._kernels: dict = {}
        self._save_dirs: list = []
        self.last = None  # the Artifact of the last run
        self.last_run_stats = None
        self.last_run_output = ""

    @property
    def name(self) -> str:
        attrs = self.func.attrs
        return str(attrs["global_symbol"]) if attrs is not None and "global_symbol" in attrs \
            else "kernel"

    # ---- sizes and scalars -----------------------------------------------------------------
    def _given(self, nargs: int) -> list:
        """The parameter indices a call with ``nargs`` arguments passes (all parameters, or
        the inputs when the kernel has ``out_idx``)."""
        n = len(self.params)
        if nargs == n:
            return list(range(n))
        given = [i for i in range(n) if i not in self.out_idx]
        if not self.out_idx or nargs != len(given):
            names = [str(p.name) for p in self.params]
            expect = f"{n} arguments ({', '.join(names)})"
            if self.out_idx:
                expect += f" or the {len(given)} inputs ({', '.join(names[i] for i in given)})"
            raise TTCallArgumentError(f"kernel {self.name} takes {expect}; got {nargs}")
        return given

    def bind(self, args) -> dict:
        """name -> value of every size (from the shapes of the tensors of a call) and scalar
        parameter (the call's value)."""
        values: dict = {}
        where: dict = {}
        for i, a in zip(self._given(len(args)), args):
            spec = self.tensors[i]
            if spec.get("scalar"):
                values[spec["name"]] = _scalar_value(spec, a)
                continue
            if a is None:  # a tensor the kernel never accesses (checked when it runs)
                continue
            shape = tuple(getattr(a, "shape", ()))
            if len(shape) != len(spec["shape"]):
                raise TTCallArgumentError(
                    f"tensor {spec['name']}: expected {len(spec['shape'])} dimensions "
                    f"{tuple(spec['shape'])}, got shape {shape}")
            for d, (want, got) in enumerate(zip(spec["shape"], shape)):
                if isinstance(want, int):
                    continue
                name, a, b = (want, 1, 0) if isinstance(want, str) else want
                value, rest = divmod(int(got) - b, a)
                if rest or value <= 0:
                    raise TTCallArgumentError(
                        f"tensor {spec['name']} (dimension {d}) has extent {int(got)}, which "
                        f"is not {a} * {name} + {b} for a positive whole {name}")
                if name in values and values[name] != value:
                    raise TTCallArgumentError(
                        f"size {name} is {values[name]} in {where[name]} but {value} in "
                        f"tensor {spec['name']} (dimension {d}, extent {int(got)})")
                values.setdefault(name, value)
                where.setdefault(name, f"tensor {spec['name']} (dimension {d})")
        missing = [s for s in self.size_names + self.scalar_names if s not in values]
        if missing:
            raise TTCallArgumentError(
                f"kernel {self.name}: the sizes {', '.join(missing)} are not the shape of any "
                "tensor passed; pass the tensors that have them")
        return values

    def _tensor_args(self, args) -> tuple:
        """The call's arguments without its scalars (the specialised kernel's arguments)."""
        given = self._given(len(args))
        return tuple(a for i, a in zip(given, args) if i not in self.scalars)

    def specialize(self, values: dict | None = None, **kw):
        """The compiled kernel (an Artifact) for the sizes and scalar parameters ``values``
        (name -> value)."""
        values = dict(values or {}, **kw)
        missing = [s for s in self.size_names + self.scalar_names if s not in values]
        if missing:
            raise TTArgumentError(
                f"kernel {self.name}: no value for {', '.join(missing)} (symbolic sizes and "
                f"scalar parameters); given {sorted(values)}")
        key = tuple(int(values[s]) for s in self.size_names) + \
            tuple(_scalar_value(self.tensors[i], values[s])
                  for i, s in zip(self.scalars, self.scalar_names))
        art = self._kernels.get(key)
        if art is None:
            for s, v in zip(self.size_names, key):
                if v <= 0:
                    raise TTCallArgumentError(f"kernel {self.name}: size {s} = {v} must be "
                                              "positive")
            by_var = {s: tirx.IntImm(str(v.ty), val)
                      for s, v, val in zip(self.size_names, self.sizes, key)}
            sizes = dict(zip(self.size_names, key))

            def extent(d):
                return tirx.IntImm(str(d.ty), dim_value(dim_spec(d), sizes))

            func = self.func
            # PrimFunc.specialize matches a buffer's dims only as bare variables: fold the
            # affine ones (n * 32 + 32) to their extents first
            affine = [d for p in func.params if tirx.is_buffer_var(p) for d in _dims(p)
                      if not isinstance(d, (tirx.IntImm, tvm.ir.Var))]
            if affine:
                func = tvm_ffi.structural_map(
                    func, [(tvm.ir.Expr, lambda e: next(
                        (extent(d) for d in affine if e.same_as(d)), e))], order="pre")
            params = list(func.params)
            mapping = {params[i]: tirx.const(val, str(params[i].ty))
                       for i, val in zip(self.scalars, key[len(self.size_names):])}
            for p in params:
                if not tirx.is_buffer_var(p):
                    continue
                dims = _dims(p)
                if all(isinstance(d, tirx.IntImm) for d in dims):
                    continue
                shape = [d if isinstance(d, tirx.IntImm) else extent(d) for d in dims]
                mapping[p] = tirx.decl_buffer(shape, p.dtype, str(p.name))
            func = func.specialize(mapping)
            # specialize leaves the sizes in the domains of the block indices (T.Kernel's
            # ceildiv(m, block_M)): replace them everywhere
            values = {v: by_var[s] for s, v in zip(self.size_names, self.sizes)}
            func = func.with_body(tvm_ffi.structural_map(
                func.body, [(tvm.ir.Var, lambda v: values.get(v, v))], order="post"))
            art = self._compile(func, self._tensor_out_idx)
            self._kernels[key] = art
            for directory in self._save_dirs:
                self._save_one(directory, key, art)
        return art

    def save(self, directory):
        """Write the project of every set of sizes compiled so far, and of those compiled
        later, to ``directory/<m>_<n>...``."""
        from pathlib import Path

        directory = Path(directory)
        self._save_dirs.append(directory)
        for key, art in self._kernels.items():
            self._save_one(directory, key, art)
        return directory

    def _save_one(self, directory, key, art):
        art.save(directory / "_".join(f"{s}{v}" for s, v in
                                      zip(self.size_names + self.scalar_names, key)))

    # ---- running -------------------------------------------------------------------------
    def __call__(self, *args):
        return self.run(*args)

    def run(self, *args, **kwargs):
        art = self.specialize(self.bind(args))
        try:
            return art.run(*self._tensor_args(args), **kwargs)
        finally:
            self.last = art
            self.last_run_stats = art.last_run_stats
            self.last_run_output = art.last_run_output

    def get_kernel_source(self, kernel_only: bool = True) -> str:
        return self._last("get_kernel_source()").get_kernel_source(kernel_only)

    def get_host_source(self) -> str:
        return self._last("get_host_source()").get_host_source()

    @property
    def sources(self) -> dict:
        """The generated files of the last values run (see :meth:`get_kernel_source`)."""
        return self._last("sources").sources

    @property
    def plan(self) -> dict:
        return self._last("plan").plan

    @property
    def adapter(self):
        from .artifact import adapter_refusal

        raise adapter_refusal(self.name)

    def _last(self, what):
        if self.last is None:
            raise TTUnsupportedError(
                f"kernel {self.name}.{what}: its symbolic sizes and scalar parameters "
                f"({', '.join(self.size_names + self.scalar_names)}) are compiled per value, so "
                "there is no source before it runs; call it first, or use kernel.specialize("
                f"{', '.join(s + '=...' for s in self.size_names + self.scalar_names)})"
                ".get_kernel_source()")
        return self.last

    def get_profiler(self, tensor_supply_type=None, device: str | None = None):
        from .profiler import Profiler, TensorSupplyType

        return Profiler(self, tensor_supply_type or TensorSupplyType.Auto, device=device)

    def __repr__(self):
        return (f"<tilelang_tt.DynamicKernel {self.name}: "
                f"{', '.join(self.size_names + self.scalar_names)}, {len(self._kernels)} "
                "compiled>")
