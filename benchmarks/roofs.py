"""Benchmark: modelled device time of reductions, norms and flash attention against the roofs.

Row kernels (examples/kernels.py: a row sum broadcast back, softmax, RMSNorm, LayerNorm) are
memory-bound on Tensix: each row's bytes are read once and written once.  For each the
benchmark prints the modelled device time, the DRAM bandwidth it reaches (bytes the kernel
must move / modelled time), its share of the spec bandwidth (n150: 288 GB/s) and of the one-
reader-per-bank figure tt-metal measured (267 GB/s, tech_reports/Saturating_DRAM_bandwidth),
and the model's bound.  Flash attention forward (examples/flash_attention_4d.py, BHSD, bf16)
prints TFLOP/s (4 * B * H * S^2 * D, half of it causal) and the matrix engine's utilisation.
No published tt-metal figure exists for these kernels; the roofs are the reference.

    python benchmarks/roofs.py [--rows 2048] [--cols 1024] [--attention 1,8,1024,64]
                               [--device n150] [--only rows|attention] [--fidelity HiFi2]

Flash attention runs at the compiler's default math fidelity (HiFi4) unless ``--fidelity``
names one; the line above its table says which.
"""

import argparse
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

import tilelang_tt  # noqa: E402
from flash_attention_4d import flashattn_bhsd  # noqa: E402
from kernels import layernorm, rmsnorm, row_reduce_broadcast, softmax  # noqa: E402

BANK_GBPS = 267.0  # tt-metal tech_reports/Saturating_DRAM_bandwidth, one reader per bank


def row_kernels(m, n):
    """(name, prim_func, element bytes) of the memory-bound row kernels."""
    return [
        ("rowsum-sub bf16", row_reduce_broadcast(m, n, kind="sum", dtype="bfloat16"), 2),
        ("softmax bf16", softmax(m, n), 2),
        ("rmsnorm fp32", rmsnorm(m, n), 4),
        ("layernorm fp32", layernorm(m, n), 4),
    ]


def run_rows(m, n, device):
    print(f"row kernels, {m}x{n}: one read and one write of every element")
    print(f"{'kernel':>16} {'modelled us':>12} {'GB/s':>7} {'% of spec':>9} "
          f"{'% of 267':>8} {'bound':>14}")
    rng = np.random.default_rng(0)
    for name, func, nbytes in row_kernels(m, n):
        art = tilelang_tt.compile(func, out_idx=-1)
        x = rng.standard_normal((m, n)).astype(np.float32)
        art.run(x, device=device)
        dev = art.last_run_stats["device"]
        moved = 2 * m * n * nbytes  # the bytes any implementation moves
        gbps = moved / dev["device_time_ns"]
        print(f"{name:>16} {dev['device_time_ns'] / 1e3:>12.1f} {gbps:>7.1f} "
              f"{100 * gbps / dev['dram_spec_gbps']:>9.1f} {100 * gbps / BANK_GBPS:>8.1f} "
              f"{dev['bound']:>14}", flush=True)


def run_attention(shape, device, fidelity=None):
    b, h, s, d = shape
    options = {"tt.math_fidelity": fidelity} if fidelity else None
    arts = [tilelang_tt.compile(flashattn_bhsd(b, h, s, d, block_M=64, block_N=64,
                                               is_causal=causal), out_idx=[3],
                                pass_configs=options) for causal in (False, True)]
    at = arts[0].plan["kernels"]["compute"]["config"]["math_fidelity"]
    print(f"flash attention forward BHSD {b}x{h}x{s}x{d}, bf16, 64x64 blocks, math fidelity {at}")
    print(f"{'causal':>7} {'modelled us':>12} {'TFLOP/s':>8} {'matrix util.':>12} "
          f"{'bound':>14}")
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((b, h, s, d)).astype(ml_dtypes.bfloat16) for _ in range(3))
    for causal, art in zip((False, True), arts):
        art.run(q, k, v, device=device)
        dev = art.last_run_stats["device"]
        flops = 4.0 * b * h * s * s * d * (0.5 if causal else 1.0)
        print(f"{str(causal):>7} {dev['device_time_ns'] / 1e3:>12.1f} "
              f"{flops / dev['device_time_ns'] / 1e3:>8.2f} "
              f"{100 * dev['matrix_engine_utilization']:>11.1f}% {dev['bound']:>14}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2048)
    parser.add_argument("--cols", type=int, default=1024)
    parser.add_argument("--attention", default="1,8,1024,64")
    parser.add_argument("--device", default="n150")
    parser.add_argument("--only", choices=["rows", "attention"])
    parser.add_argument("--fidelity", choices=["LoFi", "HiFi2", "HiFi3", "HiFi4"],
                        help="tt.math_fidelity of flash attention (default: the compiler's, HiFi4)")
    args = parser.parse_args()
    if args.only != "attention":
        run_rows(args.rows, args.cols, args.device)
    if args.only != "rows":
        run_attention([int(x) for x in args.attention.split(",")], args.device, args.fidelity)


if __name__ == "__main__":
    main()
