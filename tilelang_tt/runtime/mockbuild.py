"""Build and run generated programs against the emulator (mock mode).

Everything is cached under ``$TILELANG_TT_CACHE`` (default ``~/.cache/tilelang-tt``):

* ``mock/lib-<hash>/libttmock.so`` - the emulator, built once per version of its sources, next to
  ``include/``, a snapshot of the headers it JIT-compiles kernels against (so a cache entry never
  depends on a source tree that may since have changed);
* ``mock/host/<hash>/main`` - a host program, by content of ``main.cpp`` and kernel directory;
* ``mock/lib-<hash>/pch/<hash>/host_pch.hpp(.gch)`` - a precompiled header of the system
  includes host programs start with, by include lines, flags and compiler;
* ``mock/kernels/*.so`` - kernels, JIT-compiled by the emulator at ``CreateKernel`` and keyed by
  source, compile-time args, defines and emulator version.

Writes go to a temporary name and are renamed into place, so concurrent processes are safe.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

CXX = os.environ.get("CXX", "c++")
# The emulator's arithmetic is exact integer / exactly-rounded float work: optimise it fully, but
# never contract a*b+c into an FMA behind the model's back (results must not depend on the CPU).
EMULATOR_FLAGS = ["-O3", "-ffp-contract=off", "-fno-math-errno", "-Wno-psabi"]
# Kernels JIT-compiled at CreateKernel: thin loops around API calls into the library
KERNEL_FLAGS = "-O2"


class MockBuildError(RuntimeError):
    """The emulator or a host program failed to compile (message: the compiler's output)."""


class MockRuntimeError(RuntimeError):
    """The emulator reported an error (message: its ``TT-MOCK ERROR`` block)."""


@dataclass
class MockRunResult:
    returncode: int
    stdout: str
    stderr: str
    stats: dict | None


def mock_root() -> Path:
    return Path(__file__).resolve().parent / "mock"


def cache_root() -> Path:
    root = Path(os.environ.get("TILELANG_TT_CACHE", Path.home() / ".cache" / "tilelang-tt"))
    return root / "mock"


def _compiler_id() -> str:
    try:
        out = subprocess.run([CXX, "--version"], capture_output=True, text=True, check=True)
        return out.stdout.splitlines()[0]
    except (OSError, subprocess.CalledProcessError) as err:
        raise MockBuildError(f"no C++ compiler ({CXX}): {err}") from None


def sources_hash() -> str:
    h = hashlib.sha256(_compiler_id().encode() + b"\0cache-layout-2\0" +
                       " ".join(EMULATOR_FLAGS + [KERNEL_FLAGS] + _fmt_flags()).encode())
    root = mock_root()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in (".h", ".hpp", ".cpp")):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


# fmt is a dependency of the mock, as of TT-Metalium (its host headers and DPRINT use it). Without
# it (or with TT_MOCK_NO_FMT=1) the emulator is built without: TT_FATAL / DPRINT fill "{}" fields
# themselves and the host headers bring no fmt, so only programs that call fmt need it.
FMT_HINT = ("this program needs the fmt library (headers and libfmt.so), as TT-Metalium "
            "programs do: apt-get install libfmt-dev")


@functools.lru_cache(maxsize=None)
def has_fmt() -> bool:
    """fmt's headers are on the compiler's include path (and the mock uses them)."""
    if os.environ.get("TT_MOCK_NO_FMT"):
        return False
    # __has_include: the preprocessor finds the header without reading fmt (a tenth of a second)
    proc = subprocess.run([CXX, "-std=c++20", "-x", "c++", "-E", "-", "-o", os.devnull],
                          input="#if !__has_include(<fmt/format.h>)\n#error no fmt\n#endif\n",
                          capture_output=True, text=True)
    return proc.returncode == 0


def _fmt_flags() -> list[str]:
    return [] if has_fmt() else ["-DTTMOCK_NO_FMT"]


def _fmt_libs() -> list[str]:
    return ["-lfmt"] if has_fmt() else []


def _run(cmd, what):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        out = proc.stdout + proc.stderr
        hint = f"\n{FMT_HINT}" if ("fmt/" in out and "No such file" in out) or "-lfmt" in out else ""
        raise MockBuildError(f"{what} failed:\n$ {' '.join(map(str, cmd))}\n{out}{hint}")


def _publish(tmp_dir: Path, final: Path) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    try:
        tmp_dir.rename(final)
    except OSError:  # another process published first
        shutil.rmtree(tmp_dir, ignore_errors=True)


def mock_library() -> Path:
    """The emulator shared library, built on first use."""
    version = sources_hash()
    final = cache_root() / f"lib-{version}"
    lib = final / "libttmock.so"
    if lib.exists():
        return lib
    root = mock_root()
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".lib-", dir=final.parent))
    shutil.copytree(root / "include", tmp / "include")
    include = final / "include"  # the path the snapshot has once published
    defines = [f'-DTTMOCK_INCLUDE_DIR="{include}"', f'-DTTMOCK_CXX="{CXX}"',
               f'-DTTMOCK_VERSION="{version}"', f'-DTTMOCK_KERNEL_FLAGS="{KERNEL_FLAGS}"']
    sources = sorted((root / "src").glob("*.cpp"))

    def compile_one(src):
        obj = tmp / (src.stem + ".o")
        _run([CXX, "-std=c++20", *EMULATOR_FLAGS, "-fPIC", "-c", f"-I{tmp / 'include'}", f"-I{root / 'src'}",
              *defines, *_fmt_flags(), str(src), "-o", str(obj)], f"compiling the emulator ({src.name})")
        return obj

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        objects = list(pool.map(compile_one, sources))
    _run([CXX, "-shared", "-o", str(tmp / "libttmock.so"), *map(str, objects), "-ldl", *_fmt_libs()],
         "linking the emulator")
    for obj in objects:
        obj.unlink()
    _publish(tmp, final)
    return lib


def _leading_system_includes(text: str) -> list[str]:
    """The ``#include <...>`` lines a source file starts with (before anything else but blank
    lines and ``//`` comments)."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("//"):
            continue
        if not re.fullmatch(r"#\s*include\s*<[^<>]+>", stripped):
            break
        lines.append(stripped)
    return lines


def _host_pch(lib: Path, includes: list[str], flags: list[str]) -> Path | None:
    """A precompiled header of a host program's leading system includes, built once per set of
    includes and flags next to the emulator library; None when there is nothing to precompile
    or it does not compile (the program's own compile then reports why).

    Parsing the host headers is most of a generated ``main.cpp``'s compile time (1.1 of 1.8 s).
    ``-include`` of a header holding exactly the lines the program starts with changes nothing:
    every header is guarded, so the program's own includes of them are empty. GCC falls back to
    the header's text whenever the precompiled form does not fit the compile."""
    if not includes:
        return None
    key = hashlib.sha256(("\n".join(includes) + "\0" + " ".join(flags) + "\0" + CXX).encode())
    final = lib.parent / "pch" / key.hexdigest()[:16]
    header = final / "host_pch.hpp"
    if (final / "host_pch.hpp.gch").exists():
        return header
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".pch-", dir=final.parent))
    (tmp / header.name).write_text("\n".join(includes) + "\n")
    proc = subprocess.run([CXX, *flags, "-x", "c++-header", str(tmp / header.name), "-o",
                           str(tmp / (header.name + ".gch"))], capture_output=True, text=True)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    _publish(tmp, final)
    return header if (final / "host_pch.hpp.gch").exists() else None


def build_host(main_cpp: Path, kernel_dir: Path | None, strict_deprecations: bool = True,
               sources: list[Path] | None = None) -> Path:
    """Compile a host program against the emulator; returns the executable.

    ``kernel_dir``: what ``TT_KERNEL_DIR`` (the directory of the kernels' sources) is defined
    to; None leaves it to the program (a generated ``main.cpp`` then names its kernels relative
    to the directory it runs in, so equal programs of different projects share one build).

    ``strict_deprecations``: uses of deprecated SDK names are errors (as in sdkcheck); a user's
    TT-Metalium program is built as the SDK's CMake builds it, where they are warnings.
    ``sources``: further host source files compiled with ``main_cpp``."""
    lib = mock_library()
    main_cpp = Path(main_cpp).resolve()
    kernel_dir = Path(kernel_dir).resolve() if kernel_dir is not None else None
    extra = [Path(p).resolve() for p in sources or []]
    key = hashlib.sha256(main_cpp.read_bytes() + str(kernel_dir or "").encode() + str(lib).encode() +
                         str(strict_deprecations).encode() +
                         b"".join(p.read_bytes() + str(p).encode() for p in extra))
    final = cache_root() / "host" / key.hexdigest()[:20]
    exe = final / "main"
    if exe.exists():
        return exe
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".host-", dir=final.parent))
    # deprecated SDK names are errors, as in sdkcheck: the mock headers carry the SDK's
    # [[deprecated]] aliases, so a host program that uses one fails here too
    deprecations = "-Werror=deprecated-declarations" if strict_deprecations else "-Wno-deprecated-declarations"
    flags = ["-std=c++20", "-O1", deprecations, *_fmt_flags(), f"-I{lib.parent / 'include'}"]
    pch = _host_pch(lib, _leading_system_includes(main_cpp.read_text(errors="replace")), flags)
    _run([CXX, *flags, *(["-include", str(pch)] if pch else []),
          *([f'-DTT_KERNEL_DIR="{kernel_dir}"'] if kernel_dir else []), str(main_cpp), *map(str, extra), "-o", str(tmp / "main"),
          f"-L{lib.parent}", "-lttmock", *_fmt_libs(), f"-Wl,-rpath,{lib.parent}"],
         f"compiling {main_cpp.name} against the emulator")
    _publish(tmp, final)
    return exe


def run_host(exe: Path, args: list[str], arch: str = "wormhole_b0", timeout: float = 600,
             device: str | None = None, trace: str | None = None,
             cwd: Path | None = None, env: dict | None = None) -> MockRunResult:
    """Run a host program on the emulator (in ``cwd``, against which relative kernel paths
    resolve); raises MockRuntimeError on any failure. ``device``: the modelled device profile
    (TT_MOCK_DEVICE); ``trace``: write a Chrome / Perfetto trace of the modelled run there
    (TT_MOCK_TRACE); ``env``: more environment variables (TT_METAL_DPRINT_CORES)."""
    with tempfile.TemporaryDirectory(prefix="tt-mock-") as tmp:
        stats_path = Path(tmp) / "stats.json"
        env = dict(os.environ, **(env or {}), TT_MOCK_ARCH=arch, TT_MOCK_STATS=str(stats_path),
                   TT_MOCK_CACHE=str(cache_root()))
        if device:
            env["TT_MOCK_DEVICE"] = device
        if trace:
            env["TT_MOCK_TRACE"] = str(trace)
        try:
            proc = subprocess.run([str(exe), *args], capture_output=True, text=True, env=env,
                                  timeout=timeout, cwd=cwd)
        except subprocess.TimeoutExpired:
            raise MockRuntimeError(f"{exe.name} did not finish in {timeout:.0f} s") from None
        stats = json.loads(stats_path.read_text()) if stats_path.exists() else None
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        start = next((i for i, l in enumerate(lines) if l.startswith("TT-MOCK ERROR")), None)
        message = "\n".join(lines[start:]) if start is not None else proc.stderr.strip()
        if not message:
            message = f"exit status {proc.returncode}"
        raise MockRuntimeError(message)
    return MockRunResult(proc.returncode, proc.stdout, proc.stderr, stats)
