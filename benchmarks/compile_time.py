"""Benchmark: compile time does not grow with the problem size.

Compiles the seed GEMM (128x128x32 blocks) and TileLang's flash attention forward (BSHD and
BHSD, 128x128 blocks, as TileLang's example_mha_fwd_b?hd.py compiles it) at growing sizes and
prints, for each, the time of the pipeline (lower) and of code generation (sources and plan),
the lowered module's IR node count and the plan's size.  The plan describes
per-core work ranges, not DRAM pages, and no stage unrolls blocks or loop iterations, so all of
these stay flat; the target is 0.3 s per compile for the 4096^3 and 8192^3 GEMMs.  The
largest flash attention size is the example's default (batch 8, 32 heads, 4096, dim 128).

    python benchmarks/compile_time.py [--sizes 512 4096 8192] [--repeat 3] [--no-attention]
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))

import tvm  # noqa: E402

import tilelang_tt  # noqa: E402
from flash_attention_4d import flashattn_bhsd, flashattn_bshd  # noqa: E402
from kernels import matmul  # noqa: E402
from tilelang_tt.passes.common import collect  # noqa: E402

ATTENTION_SIZES = [(1, 1, 256, 64), (1, 4, 1024, 128), (8, 32, 4096, 128)]


def ir_nodes(mod) -> int:
    """Statements and calls in the lowered module (a structural size)."""
    return sum(len(collect(f.body, (tvm.tirx.Stmt, tvm.ir.Call))) for f in mod.functions.values())


def measure(func, repeat: int):
    lowers, gens = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        mod = tilelang_tt.lower(func, verify_each=False)
        lowers.append(time.perf_counter() - t)
        t = time.perf_counter()
        sources, _ = tilelang_tt.generate(mod)
        gens.append(time.perf_counter() - t)
    return min(lowers), min(gens), ir_nodes(mod), len(sources["tt.plan.json"])


def row(label, work, func, repeat):
    lo, ge, nodes, plan = measure(func, repeat)
    print(f"{label:>22} {work:>9} {lo:>8.3f} {ge:>11.3f} {lo + ge:>10.3f} {nodes:>9} {plan:>8}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[512, 4096, 8192])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-attention", action="store_true")
    args = parser.parse_args()
    tilelang_tt.compile(matmul(256, 256, 256))  # warm up imports and caches
    print(f"{'kernel':>22} {'blocks':>9} {'lower s':>8} {'generate s':>11} {'compile s':>10} "
          f"{'IR nodes':>9} {'plan B':>8}")
    for n in args.sizes:
        row(f"gemm {n}^3", (n // 128) ** 2, matmul(n, n, n), args.repeat)
    if args.no_attention:
        return
    for layout, make in (("bshd", flashattn_bshd), ("bhsd", flashattn_bhsd)):
        for b, h, s, d in ATTENTION_SIZES:
            func = make(b, h, s, d, block_M=128, block_N=128)
            row(f"fa {layout} {b}x{h}x{s}x{d}", b * h * (s // 128), func, args.repeat)


if __name__ == "__main__":
    main()
