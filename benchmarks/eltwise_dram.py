"""Benchmark: modelled DRAM bandwidth of TileLang's elementwise add against the DRAM roof.

C = A + B, bf16, 32x32 blocks (examples/kernels.py ``elementwise_add``): reads 2 and writes 1
tile per tile of output. Prints the modelled device time, GB/s, the share of the spec bandwidth
(n150: 288 GB/s) and of the one-reader-per-bank bandwidth tt-metal measured (267 GB/s), and the
bound.

    python benchmarks/eltwise_dram.py [--sizes 1024 4096] [--device n150]
"""

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

import tilelang_tt  # noqa: E402
from kernels import elementwise_add  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--device", default="n150")
    args = parser.parse_args()
    # the math fidelity column: the ComputeConfig's (an add takes one pass at every fidelity)
    print(f"{'size':>6} {'modelled us':>12} {'GB/s':>7} {'% of spec':>9} {'% of 267':>8} "
          f"{'bound':>8} {'fidelity':>8}")
    for n in args.sizes:
        art = tilelang_tt.compile(elementwise_add(n, n), out_idx=-1)
        a = np.ones((n, n), dtype=np.float32)
        art.run(a, a, device=args.device)
        dev = art.last_run_stats["device"]
        print(f"{n:>6} {dev['device_time_ns'] / 1e3:>12.1f} {dev['dram_gbps']:>7.1f} "
              f"{100 * dev['dram_utilization']:>9.1f} {100 * dev['dram_gbps'] / 267:>8.1f} "
              f"{dev['bound']:>8} "
              f"{art.plan['kernels']['compute']['config']['math_fidelity']:>8}", flush=True)


if __name__ == "__main__":
    main()
