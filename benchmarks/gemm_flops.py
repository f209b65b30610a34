"""Benchmark: modelled device time of TileLang's GEMM against tt-metal's published n150 figures.

tt-metal tech_reports/GEMM_FLOPS/GEMM_FLOPS.md, "N150 Out of Box Results" (bf16, HiFi2, in0 /
in1 / out in DRAM, 8x8 cores, no trace): device time of tt-metal's out-of-box matmul.  The GEMM
here is TileLang's (examples/kernels.py ``matmul``) compiled with one output block per core of
the 8x8 grid (block_M = M / 8, block_N = N / 8, as tt-metal's 2D matmul splits the output) and
block_K 32, at the kernel's fidelity HiFi2; each row prints the modelled time, TFLOP/s, matrix
engine utilisation (GEMM_FLOPS.md's "device based utilization": ideal cycles of 64 cores at the
fidelity / device time), the bound and the error against the published time.

    python benchmarks/gemm_flops.py [--sizes 1024 2048] [--fidelity HiFi2] [--block-k 32]
                                    [--device n150]
"""

import argparse
import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

import tilelang_tt  # noqa: E402
from kernels import matmul  # noqa: E402

# GEMM_FLOPS.md, N150 out of box, bf16 HiFi2 DRAM, Use Trace False: M=K=N -> device time (ns)
PUBLISHED_NS = {1024: 72388.65, 2048: 302200.32, 3072: 887527.47, 4096: 2016849.52}
PUBLISHED_UTIL = {1024: 41.69, 2048: 66.74, 3072: 58.18, 4096: 59.49}


def run(n, fidelity, block_k, device):
    blk = n // 8
    art = tilelang_tt.compile(matmul(n, n, n, blk, blk, block_k), out_idx=-1,
                              pass_configs={"tt.math_fidelity": fidelity})
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    t0 = time.perf_counter()
    art.run(a, b, device=device)
    wall = time.perf_counter() - t0
    return art.last_run_stats["device"], wall


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048])
    parser.add_argument("--fidelity", default="HiFi2")
    parser.add_argument("--block-k", type=int, default=32)
    parser.add_argument("--device", default="n150")
    args = parser.parse_args()
    print(f"{'M=N=K':>6} {'modelled us':>12} {'TFLOP/s':>8} {'util %':>7} {'bound':>14} "
          f"{'published us':>13} {'pub util %':>10} {'error %':>8} {'emulator s':>10}")
    for n in args.sizes:
        dev, wall = run(n, args.fidelity, args.block_k, args.device)
        us = dev["device_time_ns"] / 1e3
        tflops = 2.0 * n ** 3 / dev["device_time_ns"] / 1e3
        pub = PUBLISHED_NS.get(n)
        err = f"{100 * (dev['device_time_ns'] - pub) / pub:+.1f}" if pub else "-"
        pub_us = f"{pub / 1e3:.1f}" if pub else "-"
        pub_util = f"{PUBLISHED_UTIL[n]:.1f}" if n in PUBLISHED_UTIL else "-"
        print(f"{n:>6} {us:>12.1f} {tflops:>8.2f} {100 * dev['matrix_engine_utilization']:>7.1f} "
              f"{dev['bound']:>14} {pub_us:>13} {pub_util:>10} {err:>8} {wall:>10.1f}",
              flush=True)


if __name__ == "__main__":
    main()
