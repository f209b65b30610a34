"""Benchmark: compile time does not grow with the problem size.

Compiles the seed GEMM (128x128x32 blocks) at growing sizes and prints the time of the
pipeline (lower) and of code generation (sources and plan) for each.  The plan describes
per-core work ranges, not DRAM pages, so both stay flat; the target is 0.3 s per compile
for the 4096^3 and 8192^3 GEMMs.

    python benchmarks/compile_time.py [--sizes 512 4096 8192] [--repeat 3]
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

import tilelang_tt  # noqa: E402
from kernels import matmul  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 4096, 8192])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    tilelang_tt.compile(matmul(256, 256, 256))  # warm up imports and caches
    print(f"{'size':>6} {'blocks':>7} {'lower s':>8} {'generate s':>11} {'compile s':>10}")
    for n in args.sizes:
        func = matmul(n, n, n)
        lowers, gens = [], []
        for _ in range(args.repeat):
            t = time.perf_counter()
            mod = tilelang_tt.lower(func, verify_each=False)
            lowers.append(time.perf_counter() - t)
            t = time.perf_counter()
            tilelang_tt.generate(mod)
            gens.append(time.perf_counter() - t)
        lo, ge = min(lowers), min(gens)
        print(f"{n:>6} {(n // 128) ** 2:>7} {lo:>8.3f} {ge:>11.3f} {lo + ge:>10.3f}")


if __name__ == "__main__":
    main()
