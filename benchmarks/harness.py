"""Shared timing harness of the mock-mode benchmarks.

``measure(make_artifact, inputs)`` compiles, builds the emulator library and the host
program, runs twice (the first run JIT-compiles the kernels) and returns the times, the
outputs and the emulator's counters; ``report`` prints them.
"""

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))


def use_cold_cache():
    """Point the build caches at an empty directory (measures the full build); returns it."""
    tmp = tempfile.mkdtemp(prefix="tt-bench-cache-")
    os.environ["TILELANG_TT_CACHE"] = tmp
    os.environ["TT_MOCK_CACHE"] = tmp
    return tmp


def measure(make_artifact, inputs):
    from tilelang_tt.runtime import mockbuild

    t = {}
    t0 = time.perf_counter()
    art = make_artifact()
    t["compile (pipeline + codegen)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    mockbuild.mock_library()
    t["emulator library build"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    project = art.project_dir()
    mockbuild.build_host(project / "main.cpp", project)
    t["host program build"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    art(*inputs)
    t["first run (incl. kernel JIT)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = art(*inputs)
    t["run (all cached)"] = time.perf_counter() - t0
    return art, out, t


def report(title, art, times, error):
    fidelity = art.plan["kernels"].get("compute", {}).get("config", {}).get("math_fidelity")
    print(f"{title}, {len(art.plan['cores'])} cores"
          + (f", math fidelity {fidelity}" if fidelity else ""))
    for what, seconds in times.items():
        print(f"  {what + ':':31s}{seconds:8.3f} s")
    print(f"  max relative error vs numpy:  {error:.2e}")
    for key, value in sorted((art.last_run_stats or {}).get("total", {}).items()):
        print(f"  {key}: {value}")


def drop_cache(path):
    shutil.rmtree(path, ignore_errors=True)
