"""Benchmark: row softmax (examples/kernels.py:softmax), bf16, in mock mode.

Prints compile, build and run times and the emulator's counters (reduce, broadcast and SFPU
tile operations, DRAM traffic).

    python benchmarks/softmax_rows.py [--rows 1024] [--cols 1024] [--block 32] [--cold]
"""

import argparse

import ml_dtypes
import numpy as np
from harness import drop_cache, measure, report, use_cold_cache

import tilelang_tt
from kernels import softmax


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1024)
    parser.add_argument("--cols", type=int, default=1024)
    parser.add_argument("--block", type=int, default=32)
    parser.add_argument("--cold", action="store_true",
                        help="use an empty cache directory (measures the full build)")
    args = parser.parse_args()
    m, n = args.rows, args.cols
    cache = use_cold_cache() if args.cold else None

    x = (np.random.default_rng(0).standard_normal((m, n)) * 2).astype(ml_dtypes.bfloat16)
    art, y, times = measure(
        lambda: tilelang_tt.compile(softmax(m, n, args.block), out_idx=-1), [x])
    xf = x.astype(np.float32)
    e = np.exp(xf - xf.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    err = float(np.abs(y.astype(np.float32) - ref).max() / ref.max())
    report(f"softmax rows {m}x{n} bf16, {args.block}-row blocks", art, times, err)
    if cache:
        drop_cache(cache)


if __name__ == "__main__":
    main()
