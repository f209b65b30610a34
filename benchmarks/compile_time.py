"""Compile time of the seed GEMM over problem sizes (it should not grow with the problem).

    python benchmarks/compile_time.py [--sizes 512,1024,2048,4096,8192] [--repeat 3]

Times ``tilelang_tt.compile`` (pipeline + codegen) of ``examples/kernels.py:matmul`` at n^3
(bf16, 128x128 blocks, K blocks of 32), after one untimed compile at 256^3 so imports and
caches do not count; prints the best of ``--repeat`` and the size of the generated plan.
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
    parser.add_argument("--sizes", default="512,1024,2048,4096,8192")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    tilelang_tt.compile(matmul(256, 256, 256), out_idx=-1)
    print("| size | compile (best of %d) | tt.plan.json |" % args.repeat)
    print("|---|---|---|")
    for n in (int(s) for s in args.sizes.split(",")):
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            art = tilelang_tt.compile(matmul(n, n, n), out_idx=-1)
            best = min(best, time.perf_counter() - t0)
        plan = len(art.sources["tt.plan.json"])
        print(f"| {n}^3 | {best:.3f} s | {plan / 1024:.0f} KiB |", flush=True)


if __name__ == "__main__":
    main()
