"""The emulator's vector fast paths give the bits of the scalar forms they replace: SFPU exp (32-bit
DST), fill, the scalar ops and the binary add / sub / mul / max / min on AVX-512, GMPOOL max,
the ELWADD / ELWMUL broadcasts, matmul_tiles of BF16 tiles with transpose (its cached
transposed copy), reduce_tile SUM over rows / columns and ELWMUL (its exact product onto a +0
DST). testing/runtime/programs/fast_paths/main.cpp runs each on random values,
random bit patterns and special values (NaN, infinities, denormals, +-0, BF16 rounding ties,
exp's range edges) against the reference form kept in the library (sfpu::unary_reference,
sfpu::binary_reference, fpu::reduce_max_reference, fpu::reduce_sum_reference,
fpu::eltwise_mul_reference; every BF16 pattern through reduce sum and ELWMUL) and exits 1 on
the first differing bit."""

import os
import platform
import subprocess
from pathlib import Path

import pytest

from tilelang_tt.runtime import mockbuild

import fpu_build

PROGRAM = Path(__file__).resolve().parent / "programs" / "fast_paths" / "main.cpp"


def _build(tmp_path, extra=()):
    exe = tmp_path / ("fast_paths" + "".join(extra).replace("-", "_"))
    return fpu_build.build(PROGRAM, exe, extra)


def _avx512():
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines()
                     if line.startswith("flags")).split()
    except (OSError, StopIteration):
        return False
    return {"avx512f", "avx512bw", "avx512dq", "avx512vl", "fma"} <= set(flags)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64") or not _avx512(),
                    reason="the vector paths need an x86 CPU with AVX-512")
def test_vector_paths_match_the_scalar_forms(tmp_path):
    exe = _build(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "TT_MOCK_FPU"}
    run = subprocess.run([str(exe)], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stdout
    assert "0 mismatches" in run.stdout and "avx512" in run.stderr, (run.stdout, run.stderr)
    checked = int(run.stdout.split("checked ")[1].split()[0])
    assert checked > 3000


def test_portable_paths_match(tmp_path):
    # without the vector paths (a build without clones, TT_MOCK_FPU=portable) the same program
    # runs the portable forms on both sides of each comparison; the broadcast and the transposed
    # matmul are still compared against independent forms
    exe = _build(tmp_path, ["-DTTMOCK_NO_CLONES"])
    run = subprocess.run([str(exe)], capture_output=True, text=True,
                         env=dict(os.environ, TT_MOCK_FPU="portable"))
    assert run.returncode == 0, run.stdout
    assert "0 mismatches" in run.stdout
