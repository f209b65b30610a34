"""The emulator's arithmetic gives the same bits whatever the host CPU: the hot loops' AVX2 /
x86-64-v3 clones (chosen when the library loads) and the 16-bit matmul on AVX2 against a build
without them, and against the portable matmul chosen at run time (TT_MOCK_FPU=portable)."""

import os
import platform
import subprocess
from pathlib import Path

import pytest

from tilelang_tt.runtime import mockbuild

PROGRAM = Path(__file__).resolve().parent / "programs" / "fpu_hash" / "main.cpp"


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="clones are x86-only")
def test_clones_compute_the_same_bits(tmp_path):
    src = mockbuild.mock_root() / "src"
    hashes = []
    for extra in ([], ["-DTTMOCK_NO_CLONES"]):
        exe = tmp_path / ("clones" if not extra else "baseline")
        subprocess.run([mockbuild.CXX, "-std=c++20", *mockbuild.EMULATOR_FLAGS, *extra, f"-I{src}",
                        f"-I{mockbuild.mock_root() / 'include'}",
                        str(PROGRAM), str(src / "fpu.cpp"), str(src / "sfpu.cpp"), "-o", str(exe)],
                       check=True)
        hashes.append(subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout)
        if not extra:
            env = {**os.environ, "TT_MOCK_FPU": "portable"}
            hashes.append(subprocess.run([str(exe)], capture_output=True, text=True, check=True,
                                         env=env).stdout)
    assert len(set(hashes)) == 1, hashes
