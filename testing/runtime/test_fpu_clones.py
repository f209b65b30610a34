"""The emulator's arithmetic gives the same bits whatever the host CPU: the hot loops' AVX2 /
x86-64-v3 clones (chosen when the library loads) and the matrix engine's AVX-512 and AVX2 paths
(matmul; ELWMUL and ELWADD on AVX-512) against a build without them, and against the narrower paths chosen
at run time (TT_MOCK_FPU=avx2, TT_MOCK_FPU=portable). The program's tile products include edge cases
(exponents near underflow and overflow, alignment-limit gaps, exact ties, zero rows and columns,
special DST values, sums that cancel to a few units in the last place)."""

import os
import platform
import subprocess
from pathlib import Path

import pytest

from tilelang_tt.runtime import mockbuild

import fpu_build

PROGRAM = Path(__file__).resolve().parent / "programs" / "fpu_hash" / "main.cpp"
AVX512 = {"avx512f", "avx512bw", "avx512dq", "avx512vl"}


def _cpu_flags():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="clones are x86-only")
def test_clones_compute_the_same_bits(tmp_path):
    hashes, paths = {}, {}
    for extra in ([], ["-DTTMOCK_NO_CLONES"]):
        exe = tmp_path / ("clones" if not extra else "baseline")
        fpu_build.build(PROGRAM, exe, extra)
        for fpu in ([None, "avx2", "portable"] if not extra else [None]):
            env = {k: v for k, v in os.environ.items() if k != "TT_MOCK_FPU"}
            if fpu:
                env["TT_MOCK_FPU"] = fpu
            key = f"{exe.name}/{fpu or 'default'}"
            for arch in ("wormhole_b0", "blackhole"):
                run = subprocess.run([str(exe), arch], capture_output=True, text=True, check=True,
                                     env=env)
                hashes[(arch, key)] = run.stdout
            paths[key] = run.stderr.strip().removeprefix("matmul path: ")
    # every path gives the same bits for each architecture; the architectures differ (the
    # program's sums include exactly -1, which only Wormhole's accumulator renormalises wrongly)
    for arch in ("wormhole_b0", "blackhole"):
        assert len({h for (a, _), h in hashes.items() if a == arch}) == 1, hashes
    assert hashes[("wormhole_b0", "clones/default")] != hashes[("blackhole", "clones/default")]
    assert paths["baseline/default"] == "portable" and paths["clones/portable"] == "portable", paths
    # the vector paths are built with GCC only; there the default is the widest path the CPU
    # has, so on an AVX-512 machine that path was compared
    version = subprocess.run([mockbuild.CXX, "--version"], capture_output=True, text=True).stdout
    flags = _cpu_flags() if "clang" not in version.lower() else set()
    if "avx2" in flags:
        assert paths["clones/avx2"] == "avx2", paths
    want = "avx512" if AVX512 <= flags else "avx2" if "avx2" in flags else "portable"
    assert paths["clones/default"] == want, paths
