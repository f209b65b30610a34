"""Builds of the emulator's arithmetic (fpu.cpp, sfpu.cpp) with a test program of its own, for
the tests that compare its paths: each set of flags compiles the two sources once per session
(in parallel), and every program links against those objects."""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tilelang_tt.runtime import mockbuild


def _flags(extra: tuple[str, ...]) -> list[str]:
    src = mockbuild.mock_root() / "src"
    return ["-std=c++20", *mockbuild.EMULATOR_FLAGS, *extra, f"-I{src}",
            f"-I{mockbuild.mock_root() / 'include'}"]


@functools.lru_cache(maxsize=None)
def _objects(extra: tuple[str, ...], out_dir: Path) -> tuple[Path, ...]:
    src = mockbuild.mock_root() / "src"
    key = hashlib.sha256(" ".join(_flags(extra)).encode())
    for name in ("fpu.cpp", "sfpu.cpp"):
        key.update((src / name).read_bytes())
    d = out_dir / key.hexdigest()[:16]
    d.mkdir(parents=True, exist_ok=True)

    def compile_one(name):
        obj = d / (name + ".o")
        if not obj.exists():  # written under another name first: other test runs share the cache
            tmp = d / f"{name}.{os.getpid()}.tmp.o"
            subprocess.run([mockbuild.CXX, *_flags(extra), "-c", str(src / name), "-o", str(tmp)],
                           check=True)
            tmp.replace(obj)
        return obj

    with ThreadPoolExecutor(max_workers=2) as pool:
        return tuple(pool.map(compile_one, ("fpu.cpp", "sfpu.cpp")))


def build(program: Path, exe: Path, extra=()) -> Path:
    """``program`` (one C++ file) linked with fpu.cpp and sfpu.cpp built with ``extra`` flags."""
    objects = _objects(tuple(extra), mockbuild.cache_root() / "fpu-tests")
    subprocess.run([mockbuild.CXX, *_flags(tuple(extra)), str(program), *map(str, objects),
                    "-o", str(exe)], check=True)
    return exe
