"""Benchmark: the seed GEMM, 512x512x512 bf16, in mock mode.

Prints the compile time (pipeline + codegen), the emulator build time (cold: library, host
program and kernels; warm: everything cached), the run time and the emulator's counters.

    python benchmarks/gemm_512.py [--size 512] [--block 128] [--cold]
"""

import argparse

import ml_dtypes
import numpy as np
from harness import drop_cache, measure, report, use_cold_cache

import tilelang_tt
from kernels import matmul


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--block", type=int, default=128)
    parser.add_argument("--cold", action="store_true",
                        help="use an empty cache directory (measures the full build)")
    args = parser.parse_args()
    n, blk = args.size, args.block
    cache = use_cold_cache() if args.cold else None

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    art, c, times = measure(
        lambda: tilelang_tt.compile(matmul(n, n, n, blk, blk, 32), out_idx=-1), [a, b])
    ref = a.astype(np.float32) @ b.astype(np.float32)
    err = float(np.abs(c.astype(np.float32) - ref).max() / np.abs(ref).max())
    report(f"gemm {n}x{n}x{n} bf16, blocks {blk}x{blk}x32", art, times, err)
    if cache:
        drop_cache(cache)


if __name__ == "__main__":
    main()
