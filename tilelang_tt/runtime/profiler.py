"""``kernel.get_profiler()``: TileLang's correctness check against a reference program.

``assert_allclose(ref_program, rtol=, atol=)`` draws random inputs as TileLang's profiler
does (uniform in [-1, 1) for float tensors, integers in [-2, 3) otherwise), runs the kernel on
the emulator and ``ref_program`` on the same inputs, and compares every output, allowing a
fraction ``max_mismatched_ratio`` of elements outside ``atol + rtol * |ref|``.  The inputs are
numpy arrays, or torch tensors when torch is imported (a program using torch gets torch).
``do_bench()`` runs the kernel once on the emulator and returns its modelled device time in
milliseconds (docs/MOCK.md, "Modelled device time"): a function of the program and the device
profile, so one run is the measurement (``warmup`` / ``rep`` are accepted and ignored).  The
device is ``get_profiler(device=...)`` or ``do_bench(device=...)`` (``"n150"``, the default on
Wormhole, ``"n300"``, ``"p150"`` for Blackhole), else ``$TT_MOCK_DEVICE``.
``tilelang_tt.profiler.do_bench(fn)`` calls ``fn`` and returns the modelled device time of the
emulator runs it made.
"""

from __future__ import annotations

import enum
import sys

import numpy as np

from ..errors import TTArgumentError, TTUnsupportedError
from . import tensors, torch_interop


class TensorSupplyType(enum.Enum):
    """How the profiler fills input tensors (TileLang's names)."""

    Integer = 1
    Uniform = 2
    Normal = 3
    Randn = 4
    Zero = 5
    One = 6
    Auto = 7


class TTProfilerUnavailable(TTUnsupportedError):
    """Timing was asked for something that made no emulator run."""


def do_bench(fn=None, *args, device: str | None = None, **kwargs) -> float:
    """``tilelang.profiler.do_bench(fn)``: the modelled device time (ms) of the emulator runs
    ``fn()`` makes (TileLang's warmup / rep / quantile arguments are accepted and ignored: the
    model is deterministic)."""
    from . import artifact

    if fn is None or not callable(fn):
        raise TTProfilerUnavailable("do_bench(fn): give a callable that runs a compiled kernel")
    before = artifact.modelled_time_ns()
    with artifact.device_override(device):
        fn()
    spent = artifact.modelled_time_ns() - before
    if spent <= 0:
        raise TTProfilerUnavailable(
            "do_bench: the function ran no kernel on the emulator, so there is no modelled "
            "device time to report (time a real device run with mode='real' instead)")
    return spent / 1e6


# Random inputs are drawn in chunks of this many elements: a Generator's draws continue from
# one call to the next, so the values are those of one call, without its float64 temporary
# (8 bytes an element: 1 GB for one of flash attention's 8x4096x32x128 inputs).
SUPPLY_CHUNK = 1 << 20


def _draw(kind: TensorSupplyType, rng: np.random.Generator, n: int):
    if kind == TensorSupplyType.Integer:
        return rng.integers(-2, 3, size=n)
    if kind == TensorSupplyType.Uniform:
        return rng.uniform(-1.0, 1.0, size=n)
    if kind == TensorSupplyType.Normal:
        return rng.normal(-1.0, 1.0, size=n)
    return rng.standard_normal(size=n)


def supply(spec: dict, kind: TensorSupplyType, rng: np.random.Generator) -> np.ndarray:
    shape = tensors.host_shape(spec)
    want = tensors.NP_DTYPE[tensors.host_dtype(spec)]
    is_float = tensors.host_dtype(spec) in ("bfloat16", "float32", "float16")
    if kind == TensorSupplyType.Auto:
        kind = TensorSupplyType.Uniform if is_float else TensorSupplyType.Integer
    if kind in (TensorSupplyType.Zero, TensorSupplyType.One):
        return np.full(shape, 0.0 if kind == TensorSupplyType.Zero else 1.0, dtype=want)
    out = np.empty(shape, dtype=want)
    flat = out.reshape(-1)
    for lo in range(0, flat.size, SUPPLY_CHUNK):
        n = min(SUPPLY_CHUNK, flat.size - lo)
        # rounded to float32 first, then to the tensor's dtype, as one whole-tensor draw was
        flat[lo:lo + n] = np.asarray(_draw(kind, rng, n), dtype=np.float32).astype(want)
    return out


def get_tensor_supply(supply_type: TensorSupplyType = TensorSupplyType.Integer, seed: int = 0):
    """TileLang's ``tilelang.utils.tensor.get_tensor_supply``: a function giving a random tensor
    for a parameter (anything with ``shape`` and ``dtype``: TileLang's KernelParam, a torch
    tensor, a numpy array), drawn as the profiler draws its inputs; a torch tensor when torch
    is imported, else a numpy array."""
    from ..dtypes import dtype_name

    rng = np.random.default_rng(seed)

    def get_tensor(param):
        spec = {"name": getattr(param, "name", "tensor"),
                "shape": [int(d) for d in param.shape], "dtype": dtype_name(param.dtype)}
        out = supply(spec, supply_type, rng)
        return torch_interop.from_numpy(out) if "torch" in sys.modules else out

    return get_tensor


def _sized(spec: dict, sizes: dict | None) -> dict:
    """``spec`` with its symbolic sizes (names in its shape) replaced by their ``sizes``."""
    from .dynamic import dim_names, dim_value

    if spec.get("scalar"):
        raise TTArgumentError(
            f"the kernel's scalar parameter {spec['name']} ({spec['dtype']}) has no random "
            "value; pass the inputs with their values (input_tensors=[..., value, ...])")
    if all(isinstance(d, int) for d in spec["shape"]):
        return spec
    names = list(dict.fromkeys(n for d in spec["shape"] for n in dim_names(d)))
    if not sizes:
        raise TTArgumentError(
            f"tensor {spec['name']} has the symbolic size(s) {', '.join(names)}: give their "
            f"values (dynamic_symbolic_constraints={{{', '.join(repr(n) + ': ...' for n in names)}}}"
            ") or the input tensors (input_tensors=[...])")
    missing = [n for n in names if n not in sizes]
    if missing:
        raise TTArgumentError(
            f"Dynamic symbolic variable '{missing[0]}' (of tensor {spec['name']}) not found in "
            f"constraints. Available constraints: {list(sizes)}")
    return dict(spec, shape=[dim_value(d, sizes) for d in spec["shape"]])


def _as_list(outs):
    if outs is None:
        return []
    if isinstance(outs, (list, tuple)):
        return list(outs)
    return [outs]


def _f32(x) -> np.ndarray:
    if torch_interop.is_tensor(x):
        x = torch_interop.to_numpy(x)
    return np.asarray(x).astype(np.float32)


def assert_close(out, ref, *, rtol: float, atol: float, max_mismatched_ratio: float,
                 name: str = "output") -> None:
    a, b = _f32(out), _f32(ref)
    if a.shape != b.shape:
        raise AssertionError(f"{name}: kernel shape {a.shape} != reference shape {b.shape}")
    close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
    bad = int((~close).sum())
    allowed = int(a.size * max_mismatched_ratio)
    if bad > allowed:
        flat = int(np.argmax(~close.reshape(-1)))
        idx = np.unravel_index(flat, a.shape)
        raise AssertionError(
            f"{name}: {bad} of {a.size} elements differ beyond atol={atol}, rtol={rtol} "
            f"(allowed {allowed}); first at {tuple(int(i) for i in idx)}: kernel "
            f"{a.reshape(-1)[flat]:.6g}, reference {b.reshape(-1)[flat]:.6g}")


class Profiler:
    def __init__(self, kernel, supply_type: TensorSupplyType = TensorSupplyType.Auto,
                 seed: int = 0, device: str | None = None):
        self.kernel = kernel
        self.device = device
        self.supply_type = supply_type
        self.rng = np.random.default_rng(seed)

    def _inputs(self, use_torch: bool, sizes: dict | None = None) -> list:
        """Random inputs; a kernel with symbolic sizes (runtime/dynamic.py) takes their values
        from ``sizes`` (TileLang's ``dynamic_symbolic_constraints``)."""
        specs = [_sized(t, sizes) for t in self.kernel.tensors]
        outs = set(self.kernel.out_idx)
        ins = [supply(t, self.supply_type, self.rng) for i, t in enumerate(specs)
               if i not in outs]
        return [torch_interop.from_numpy(x) for x in ins] if use_torch else ins

    def _given_or_drawn(self, input_tensors, sizes):
        if input_tensors is not None:
            return list(input_tensors)
        return self._inputs("torch" in sys.modules, sizes)

    def assert_allclose(self, reference_program, input_tensors=None, atol: float = 1e-2,
                        rtol: float = 1e-2, max_mismatched_ratio: float = 0.01,
                        dynamic_symbolic_constraints: dict | None = None, **_kwargs) -> None:
        ins = self._given_or_drawn(input_tensors, dynamic_symbolic_constraints)
        ref = _as_list(reference_program(*ins))
        got = _as_list(self.kernel(*ins))
        if len(got) != len(ref):
            raise AssertionError(f"the kernel returned {len(got)} outputs, the reference "
                                 f"program {len(ref)}")
        for k, (o, r) in enumerate(zip(got, ref)):
            if o is not None and r is not None:
                assert_close(o, r, rtol=rtol, atol=atol,
                             max_mismatched_ratio=max_mismatched_ratio, name=f"output {k}")

    def run_once(self, func=None, dynamic_symbolic_constraints: dict | None = None):
        ins = self._inputs("torch" in sys.modules, dynamic_symbolic_constraints)
        return (func or self.kernel)(*ins)

    def do_bench(self, func=None, warmup: int = 25, rep: int = 100, n_warmup: int = 1,
                 n_repeat: int = 1, input_tensors=None, device: str | None = None,
                 dynamic_symbolic_constraints: dict | None = None, **kwargs) -> float:
        """Modelled device time (ms) of one run of the kernel on random inputs (or
        ``input_tensors``) on the emulator; ``device`` as in the module docstring. ``func``
        (TileLang's reference program) is called with those inputs: the modelled time of the
        kernels it runs, TTProfilerUnavailable when it runs none.  A kernel with symbolic
        sizes draws its inputs for ``dynamic_symbolic_constraints`` (``{"m": 256}``) unless
        ``input_tensors`` are given."""
        ins = self._given_or_drawn(input_tensors, dynamic_symbolic_constraints)
        if func is not None and func is not self.kernel:  # TileLang passes it the inputs
            return do_bench(lambda: func(*ins), device=device or self.device)
        self.kernel.run(*ins, device=device or self.device)
        stats = self.kernel.last_run_stats or {}
        return stats["device"]["device_time_ns"] / 1e6
