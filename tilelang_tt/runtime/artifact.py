"""A compiled kernel: its sources and plan, saving, and running in mock (or real) mode."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import TTRuntimeError, TTUnsupportedError
from . import tensors, torch_interop


def cache_root() -> Path:
    return Path(os.environ.get("TILELANG_TT_CACHE", Path.home() / ".cache" / "tilelang-tt"))


DEVICES = {"n150": "wormhole_b0", "n300": "wormhole_b0", "p150": "blackhole"}
_modelled_ns = [0.0]      # modelled device time of every emulator run of this process
_device_default = [None]  # do_bench(fn, device=...): the device of the runs fn makes


def modelled_time_ns() -> float:
    return _modelled_ns[0]


class device_override:
    """``with device_override("n300"):`` emulator runs inside model that device."""

    def __init__(self, device):
        self.device, self.saved = device, None

    def __enter__(self):
        self.saved = _device_default[0]
        if self.device is not None:
            _device_default[0] = self.device

    def __exit__(self, *exc):
        _device_default[0] = self.saved


class Artifact:
    """What ``tilelang_tt.compile`` returns.

    * ``sources``: file name -> text (``reader.cpp``, ``compute.cpp``, ``writer.cpp``,
      ``main.cpp``, ``tt.plan.json``, ``CMakeLists.txt``);
    * ``plan``: the runtime plan as a dict; ``module``: the lowered IRModule;
    * ``save(dir)`` writes the project; ``art(a, b)`` / ``art.run(a, b)`` runs it (see
      :meth:`run`); ``last_run_stats`` holds the emulator's counters of the last run and, in
      ``last_run_stats["device"]``, its modelled device time and breakdown (docs/MOCK.md);
    * TileLang's kernel API: ``get_kernel_source()``, ``get_host_source()``,
      ``get_profiler()``.
    """

    def __init__(self, *, sources: dict, plan: dict, module, out_idx=None):
        self.sources = dict(sources)
        self.plan = plan
        self.module = module
        self.tensors = plan["tensors"]
        n = len(self.tensors)
        if out_idx is None:
            self.out_idx = []
        else:
            idx = [out_idx] if isinstance(out_idx, int) else list(out_idx)
            # call order of the returned outputs is the order given (TileLang's)
            self.out_idx = list(dict.fromkeys(i % n if -n <= i < n else _bad_out_idx(i, n)
                                              for i in idx))
        self.last_run_stats = None
        self.last_run_output = ""  # the DPRINT lines (T.print) of the last mock run

    @property
    def name(self) -> str:
        return self.plan["kernel"]

    def digest(self) -> str:
        h = hashlib.sha256()
        for key in sorted(self.sources):
            h.update(key.encode() + b"\0" + self.sources[key].encode() + b"\0")
        return h.hexdigest()[:20]

    def save(self, directory) -> Path:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        for fname, text in self.sources.items():  # a kernel of several launches: launch<i>/
            (directory / fname).parent.mkdir(parents=True, exist_ok=True)
            (directory / fname).write_text(text)
        return directory

    def __call__(self, *args):
        return self.run(*args)

    # ---- TileLang's kernel object API -----------------------------------------------------
    def get_kernel_source(self, kernel_only: bool = True) -> str:
        """The device kernels (reader, compute, writer), and with ``kernel_only=False`` the
        host program too."""
        names = [f"{d}{k}.cpp" for d in self._kernel_dirs()
                 for k in ("reader", "compute", "writer")]
        if not kernel_only:
            names.append("main.cpp")
        return "\n".join(f"// ---- {n} ----\n{self.sources[n]}" for n in names)

    def _kernel_dirs(self) -> list[str]:
        """Where the device kernels are: the project's top, or a directory per launch."""
        return [f"{launch['dir']}/" for launch in self.plan.get("launches", [])] or [""]

    def get_host_source(self) -> str:
        return self.sources["main.cpp"]

    @property
    def adapter(self):
        """TileLang's ``kernel.adapter`` (its CUDA / HIP / NVRTC launcher) has no counterpart."""
        raise adapter_refusal(self.name)

    def get_profiler(self, tensor_supply_type=None, device: str | None = None):
        """TileLang's profiler: ``assert_allclose(ref_program, rtol=, atol=)`` on random
        inputs; ``do_bench()``: modelled device time in ms (``device="n150" | "n300" |
        "p150"``, or ``$TT_MOCK_DEVICE``)."""
        from .profiler import Profiler, TensorSupplyType

        return Profiler(self, tensor_supply_type or TensorSupplyType.Auto, device=device)

    # ---- running -------------------------------------------------------------------------
    def run(self, *args, mode: str = "mock", arch: str | None = None, device: str | None = None,
            trace: str | None = None):
        """Run on the emulator (``mode="mock"``) or an SDK build (``mode="real"``).

        Pass every tensor (outputs are filled in place and returned), or - when the artifact
        was compiled with ``out_idx`` - only the inputs: the outputs are allocated and
        returned (one array, or a list).  bfloat16 tensors take and return
        ``ml_dtypes.bfloat16`` arrays; float arrays given for them are rounded to nearest even.
        CPU torch tensors are accepted too (when torch is imported); the results are then
        torch tensors, as they are for a call with no arguments (every tensor an output the
        call allocates) when the program imported torch.  ``device`` chooses the modelled
        device (``"n150"``, ``"n300"``, ``"p150"``; default ``$TT_MOCK_DEVICE``, else the
        target's first); ``trace`` writes a Chrome / Perfetto trace of the modelled run to
        that path.
        """
        use_torch = any(torch_interop.is_tensor(a) for a in args) or \
            (not args and torch_interop.loaded())
        given = args
        if use_torch:
            # views of the tensors' memory, not copies: inputs are only read (written to the
            # emulator's files); outputs are filled and then copied into the caller's tensors
            args = tuple(torch_interop.to_numpy(a, copy=False) if torch_interop.is_tensor(a)
                         else a for a in args)
        host = tensors.bind_arguments(self.tensors, self.out_idx, args)
        if mode == "mock":
            device = device or _device_default[0] or os.environ.get("TT_MOCK_DEVICE") or None
            if device is not None and device not in DEVICES:
                raise TTRuntimeError(f"unknown device {device!r}; use one of {', '.join(DEVICES)}")
            arch = arch or self.plan["target"]
            if device is not None and DEVICES[device] != arch:
                raise TTRuntimeError(
                    f"device {device!r} is a {DEVICES[device]} device but {self.name} was "
                    f"compiled for {arch}; compile for that target or choose a {arch} device")
            self._run_mock(host, arch, device, trace)
        elif mode == "real":
            self._run_real(host)
        else:
            raise TTRuntimeError(f"unknown run mode {mode!r}; use 'mock' or 'real'")
        result = tensors.results(self.tensors, self.out_idx, host)
        if use_torch:
            result = self._torch_results(given, host, result)
        return result

    def _torch_results(self, given, host, result):
        if "_given" in host:  # every tensor passed: write outputs back into the caller's
            for i, t in enumerate(self.tensors):
                if t["role"] in ("output", "inout") and torch_interop.is_tensor(given[i]):
                    torch_interop.copy_into(given[i], host[i])
            outs = self.out_idx or [i for i, t in enumerate(self.tensors)
                                    if t["role"] in ("output", "inout")]
            picked = [given[i] for i in outs]
            return picked[0] if len(picked) == 1 else picked
        # the outputs were allocated by this call: the tensors take over their memory
        if isinstance(result, list):
            return [torch_interop.from_numpy(r, copy=False) for r in result]
        return torch_interop.from_numpy(result, copy=False)

    def project_dir(self) -> Path:
        """A content-addressed copy of the project (kernels must stay at a fixed path)."""
        d = cache_root() / "projects" / f"{self.name}-{self.digest()}"
        if not (d / "main.cpp").exists():
            tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=d.parent if d.parent.exists()
                                        else _mkdir(d.parent)))
            self.save(tmp)
            try:
                tmp.rename(d)
            except OSError:  # another process won the race
                shutil.rmtree(tmp, ignore_errors=True)
        return d

    def _run_mock(self, host: dict, arch: str, device: str | None = None,
                  trace: str | None = None):
        from . import mockbuild

        project = self.project_dir()
        try:
            # kernels named relative to the run's directory: equal host programs share a build
            exe = mockbuild.build_host(project / "main.cpp", None)
        except mockbuild.MockBuildError as err:
            raise TTRuntimeError(f"building {self.name} for the emulator failed:\n{err}") from None
        with tempfile.TemporaryDirectory(prefix="tt-run-", dir=_scratch_dir(host)) as tmp:
            paths = tensors.write_inputs(self.tensors, host, Path(tmp))
            debug = _debug_ops(self.plan)
            # T.print: DPRINT on every core unless the user chose cores
            env = {"TT_METAL_DPRINT_CORES": "all"} if debug and \
                not os.environ.get("TT_METAL_DPRINT_CORES") else None
            try:
                result = mockbuild.run_host(exe, [str(Path(p).resolve()) for p in paths],
                                            arch=arch, device=device, cwd=project,
                                            trace=str(Path(trace).resolve()) if trace else None,
                                            env=env)
            except mockbuild.MockRuntimeError as err:
                raise TTRuntimeError(f"running {self.name} on the emulator failed:\n{err}") from None
            self.last_run_stats = result.stats
            # the kernels' DPRINT lines (the print server's prefix "0:(x=X,y=Y):RISC: "), in
            # the emulator's order; shown on the caller's stdout
            self.last_run_output = "".join(
                line for line in result.stdout.splitlines(keepends=True)
                if _DPRINT_LINE.match(line)) if debug else ""
            if self.last_run_output:
                sys.stdout.write(self.last_run_output)
                sys.stdout.flush()
            if result.stats and "device" in result.stats:
                _modelled_ns[0] += result.stats["device"]["device_time_ns"]
            tensors.read_outputs(self.tensors, host, paths)

    def _run_real(self, host: dict):
        sdk = os.environ.get("TT_METAL_HOME")
        if not sdk:
            raise TTRuntimeError(
                "real mode needs a TT-Metalium SDK: set TT_METAL_HOME to its checkout/install")
        project = self.project_dir()
        build = project / "build-real"
        for cmd in (["cmake", "-S", str(project), "-B", str(build), "-DTT_METAL_REAL=ON"],
                    ["cmake", "--build", str(build), "-j"]):
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                raise TTRuntimeError(f"real-mode build failed ({' '.join(cmd)}):\n"
                                     f"{proc.stdout}\n{proc.stderr}")
        exe = build / _target_name(self.name)
        with tempfile.TemporaryDirectory(prefix="tt-run-") as tmp:
            paths = tensors.write_inputs(self.tensors, host, Path(tmp))
            proc = subprocess.run([str(exe)] + [str(p) for p in paths], capture_output=True,
                                  text=True)
            if proc.returncode != 0:
                raise TTRuntimeError(f"{self.name} failed on the device:\n{proc.stderr}")
            self.last_run_stats = None
            tensors.read_outputs(self.tensors, host, paths)

    def __repr__(self):
        if "launches" in self.plan:
            return (f"<tilelang_tt.Artifact {self.name}: {len(self.plan['launches'])} launches "
                    f"(grids {[launch['plan']['grid'] for launch in self.plan['launches']]}), "
                    f"files {sorted(self.sources)}>")
        return (f"<tilelang_tt.Artifact {self.name}: {len(self.plan['cores'])} cores, "
                f"grid {self.plan['grid']}, files {sorted(self.sources)}>")


def adapter_refusal(name: str) -> TTUnsupportedError:
    return TTUnsupportedError(
        f"kernel {name}.adapter: TileLang's kernel adapter (its CUDA / HIP / NVRTC / TVM-FFI "
        "launcher and its handles) has no counterpart here; call the kernel itself, which "
        "runs its TT-Metalium host program (get_kernel_source() / get_host_source() give the "
        "sources)")


def _scratch_dir(host: dict) -> str | None:
    """Where a run's tensor files go: /dev/shm (memory, so the host program reads them without
    a file system's page cache in between) when it can hold twice the tensors' bytes, else the
    default temporary directory."""
    need = 2 * sum(getattr(v, "nbytes", 0) for k, v in host.items() if isinstance(k, int))
    try:
        st = os.statvfs("/dev/shm")
        if os.access("/dev/shm", os.W_OK) and st.f_bavail * st.f_frsize >= need + (64 << 20):
            return "/dev/shm"
    except OSError:
        pass
    return None


_DPRINT_LINE = re.compile(r"\d+:\(x=\d+,y=\d+\):(BR|NC|TR\d|ER\d?): ")


def _debug_ops(plan: dict) -> list:
    """The debug ops (``dprint``, ``device_assert``) the kernels of ``plan`` hold."""
    found = set(plan.get("debug", []))
    for launch in plan.get("launches", []):
        found |= set(launch["plan"].get("debug", []))
    return sorted(found)


def _target_name(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name) or "kernel"


def _mkdir(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def _bad_out_idx(i, n):
    raise TTRuntimeError(f"out_idx {i} is out of range for a kernel with {n} tensors")

