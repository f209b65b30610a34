"""The main job: compile the seed GEMM for Tenstorrent, run the generated TT-Metalium C++ on
the emulator (mock mode) and check it against numpy.

    python examples/quickstart.py [--out DIR]
"""

import argparse
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import tilelang_tt  # noqa: E402
from kernels import matmul  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=None, help="also save the generated project here")
    parser.add_argument("-M", type=int, default=256)
    parser.add_argument("-N", type=int, default=256)
    parser.add_argument("-K", type=int, default=256)
    args = parser.parse_args()

    kernel = matmul(args.M, args.N, args.K)  # 128x128 blocks, K in 32-wide steps, 3 stages
    art = tilelang_tt.compile(kernel, target="tenstorrent", out_idx=-1)
    if args.out:
        print(f"project saved to {art.save(args.out)}")

    rng = np.random.default_rng(0)
    a = rng.standard_normal((args.M, args.K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((args.K, args.N)).astype(ml_dtypes.bfloat16)
    c = art(a, b)  # builds main.cpp + kernels against the emulator and runs them

    ref = a.astype(np.float32) @ b.astype(np.float32)
    err = np.abs(c.astype(np.float32) - ref).max() / np.abs(ref).max()
    stats = art.last_run_stats or {}
    total = stats.get("total", {})
    print(f"gemm {args.M}x{args.N}x{args.K} bf16 on {len(art.plan['cores'])} emulated Tensix "
          f"cores: max error {err:.2e} (relative to max |C|)")
    if total:
        print("emulator counters:", {k: total[k] for k in sorted(total)})
    ok = err < 1e-2
    print("MATCHES numpy" if ok else "DOES NOT MATCH numpy")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
