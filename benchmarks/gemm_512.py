"""Benchmark: the seed GEMM, 512x512x512 bf16, in mock mode.

Prints the compile time (pipeline + codegen), the emulator build time (cold: library, host
program and kernels; warm: everything cached), the run time and the emulator's counters.

    python benchmarks/gemm_512.py [--size 512] [--block 128]
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

import ml_dtypes  # noqa: E402

import tilelang_tt  # noqa: E402
from kernels import matmul  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--block", type=int, default=128)
    parser.add_argument("--cold", action="store_true",
                        help="use an empty cache directory (measures the full build)")
    args = parser.parse_args()
    n, blk = args.size, args.block
    if args.cold:
        tmp = tempfile.mkdtemp(prefix="tt-bench-cache-")
        os.environ["TILELANG_TT_CACHE"] = tmp
        os.environ["TT_MOCK_CACHE"] = tmp

    t0 = time.perf_counter()
    art = tilelang_tt.compile(matmul(n, n, n, blk, blk, 32), out_idx=-1)
    t_compile = time.perf_counter() - t0

    from tilelang_tt.runtime import mockbuild

    t0 = time.perf_counter()
    mockbuild.mock_library()
    t_lib = time.perf_counter() - t0
    t0 = time.perf_counter()
    project = art.project_dir()
    mockbuild.build_host(project / "main.cpp", project)
    t_host = time.perf_counter() - t0

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    t0 = time.perf_counter()
    c = art(a, b)  # first run also JIT-compiles the three kernels
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    c = art(a, b)
    t_run = time.perf_counter() - t0

    ref = a.astype(np.float32) @ b.astype(np.float32)
    err = float(np.abs(c.astype(np.float32) - ref).max() / np.abs(ref).max())
    stats = art.last_run_stats or {}
    print(f"gemm {n}x{n}x{n} bf16, blocks {blk}x{blk}x32, {len(art.plan['cores'])} cores")
    print(f"  compile (pipeline + codegen): {t_compile:8.3f} s")
    print(f"  emulator library build:       {t_lib:8.3f} s (cached after the first time)")
    print(f"  host program build:           {t_host:8.3f} s")
    print(f"  first run (incl. kernel JIT): {t_first:8.3f} s")
    print(f"  run (all cached):             {t_run:8.3f} s")
    print(f"  max relative error vs numpy:  {err:.2e}")
    for key, value in sorted(stats.get("total", {}).items()):
        print(f"  {key}: {value}")
    if args.cold:
        shutil.rmtree(os.environ["TT_MOCK_CACHE"], ignore_errors=True)


if __name__ == "__main__":
    main()
