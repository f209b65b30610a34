"""Micro-benchmark: nanoseconds per tile operation of the emulator's arithmetic.

Builds benchmarks/tile_ops/bench.cpp against the emulator library (the same objects and flags
mock mode uses) and prints the time of one 32x32 tile op: matmul at each fidelity, eltwise,
copy, reduce, pack and SFPU functions, with a 16-bit and a 32-bit DST.

    python benchmarks/tile_ops.py [--seconds 0.2]
"""

import argparse
import subprocess
import tempfile
from pathlib import Path

from tilelang_tt.runtime import mockbuild


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=0.2, help="minimum time per measurement")
    args = parser.parse_args()
    lib = mockbuild.mock_library()
    src = Path(__file__).resolve().parent / "tile_ops" / "bench.cpp"
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "bench"
        subprocess.run([mockbuild.CXX, "-std=c++20", *mockbuild.EMULATOR_FLAGS,
                        f"-I{mockbuild.mock_root() / 'src'}", f"-I{lib.parent / 'include'}", str(src),
                        "-o", str(exe), f"-L{lib.parent}", "-lttmock", f"-Wl,-rpath,{lib.parent}"],
                       check=True)
        subprocess.run([str(exe), str(args.seconds)], check=True)


if __name__ == "__main__":
    main()
