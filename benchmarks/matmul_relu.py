"""tt-lang's matmul tutorial workload as a TileLang kernel: Y = relu(A @ B + C).

bf16 inputs and output, fp32 accumulation, 128x128 output blocks, K blocks of 128 (tt-lang's
tutorial: 4x4-tile blocks, K blocks of 4 tiles); the compiler spreads the blocks over the 8x8
cores. Run alone it is one whole-process workload of ``vs_ttlang.py``:

    python benchmarks/matmul_relu.py --size 2048 [--out y.bin] [--fidelity HiFi2]

It makes the inputs (``inputs``: seeded, shared with the tt-lang driver), compiles, runs on the
emulator and writes Y (raw bf16, row-major) to ``--out``; the emulator's run statistics go to
``--stats`` as JSON. The matrix engine runs at the compiler's default math fidelity (HiFi4,
TT-Metalium's) unless ``--fidelity`` names one (``tt.math_fidelity``; HiFi2 is ttnn's bf16
matmul default, about 0.6x the emulator's time per tile matmul); it prints the one it ran at.
"""

import argparse
import json
import sys
import time

import numpy as np

import tilelang_tt
import tilelang_tt.language as T

BLOCK = 128


def matmul_relu(M, N, K, block_M=BLOCK, block_N=BLOCK, block_K=BLOCK):
    @T.prim_func
    def matmul_relu_kernel(A: T.Tensor((M, K), "bfloat16"), B: T.Tensor((K, N), "bfloat16"),
                           C: T.Tensor((M, N), "bfloat16"), Y: T.Tensor((M, N), "bfloat16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M)) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "bfloat16")
            B_s = T.alloc_shared((block_K, block_N), "bfloat16")
            C_s = T.alloc_shared((block_M, block_N), "bfloat16")
            acc = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, ko * block_K], A_s)
                T.copy(B[ko * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(C[by * block_M, bx * block_N], C_s)
            for i, j in T.Parallel(block_M, block_N):
                acc[i, j] = T.max(acc[i, j] + C_s[i, j], 0.0)
            T.copy(acc, Y[by * block_M, bx * block_N])

    return matmul_relu_kernel


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write Y here (raw bf16, row-major)")
    parser.add_argument("--stats", help="write the emulator's run statistics here (JSON)")
    parser.add_argument("--fidelity", choices=["LoFi", "HiFi2", "HiFi3", "HiFi4"],
                        help="tt.math_fidelity (default: the compiler's, HiFi4)")
    args = parser.parse_args()
    n = args.size
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from inputs import make_inputs

    a, b, c = make_inputs(n, args.seed)
    t0 = time.perf_counter()
    options = {"tt.math_fidelity": args.fidelity} if args.fidelity else None
    art = tilelang_tt.compile(matmul_relu(n, n, n), out_idx=-1, pass_configs=options)
    t1 = time.perf_counter()
    fidelity = art.plan["kernels"]["compute"]["config"]["math_fidelity"]
    print(f"math fidelity {fidelity}", flush=True)
    y = art(a, b, c)
    t2 = time.perf_counter()
    if args.out:
        y.tofile(args.out)
    if args.stats:
        with open(args.stats, "w") as f:
            json.dump({"compile_s": t1 - t0, "run_s": t2 - t1, "math_fidelity": fidelity,
                       "stats": art.last_run_stats}, f)


if __name__ == "__main__":
    main()
