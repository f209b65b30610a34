"""The emulator against the hardware's numbers: outputs of TT-Metalium 0.81.1's add, subtract and
matmul on a simulated Wormhole (Tenstorrent's ttsim, bit-exact with silicon for these ops), read
from ../shared/numerics (see its README). programs/tensix_ref runs the same operations on the
same inputs with ttnn's configurations: eltwise bf16 in/out, 16-bit DST; matmul bf16 in/out,
16-bit DST at each fidelity, and ttnn's default (HiFi2, packer L1 accumulation of K blocks of one
tile, the last block reloaded into DST).
"""

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tilelang_tt.runtime import mockbuild

ROOT = Path(__file__).resolve().parents[2]


def _data_dir() -> Path:
    """../shared/numerics next to the repository (for a git worktree, next to its main checkout)."""
    candidates = [ROOT.parent / "shared" / "numerics"]
    git = ROOT / ".git"
    if git.is_file():  # a worktree: "gitdir: <main>/.git/worktrees/<name>"
        gitdir = Path(git.read_text().split(":", 1)[1].strip())
        candidates.append(gitdir.parents[2].parent / "shared" / "numerics")
    return next((c for c in candidates if c.is_dir()), candidates[0])


DATA = _data_dir()
PROGRAM = Path(__file__).resolve().parent / "programs" / "tensix_ref"

pytestmark = pytest.mark.skipif(
    not (DATA / "ttsim").is_dir(),
    reason=f"reference numerics not available ({DATA} is absent; they are read, not vendored)")

CASES = [(kind, n) for kind in ("normal", "mixed") for n in (64, 256)]


@pytest.fixture(scope="module")
def exe():
    return mockbuild.build_host(PROGRAM / "main.cpp", PROGRAM)


def run(exe, tmp_path, op, kind, n, fidelity="HiFi4", kblock=0):
    a = np.load(DATA / "inputs" / f"in_{kind}_{n}_a.npy")
    b = np.load(DATA / "inputs" / f"in_{kind}_{n}_b.npy")
    a.astype(np.uint16).tofile(tmp_path / "a.bin")
    b.astype(np.uint16).tofile(tmp_path / "b.bin")
    mockbuild.run_host(exe, [op, str(n), fidelity, "0", str(kblock), str(tmp_path / "a.bin"),
                             str(tmp_path / "b.bin"), str(tmp_path / "c.bin")])
    return np.fromfile(tmp_path / "c.bin", dtype=np.uint16).reshape(n, n)


def identical(c, name):
    ref = np.load(DATA / "ttsim" / f"{name}.npy").astype(np.uint16)
    return float(np.mean(c == ref))


@pytest.mark.parametrize("op", ["add", "sub"])
@pytest.mark.parametrize("kind,n", CASES)
def test_eltwise_bit_identical_to_hardware(exe, tmp_path, op, kind, n):
    c = run(exe, tmp_path, op, kind, n)
    assert identical(c, f"ttsim_{op}_{kind}_{n}_default") == 1.0


@pytest.mark.parametrize("fidelity", ["LoFi", "HiFi2", "HiFi3", "HiFi4"])
@pytest.mark.parametrize("kind,n", CASES)
def test_matmul_bit_identical_to_hardware(exe, tmp_path, fidelity, kind, n):
    c = run(exe, tmp_path, "matmul", kind, n, fidelity)
    fraction = identical(c, f"ttsim_mm_{kind}_{n}_{fidelity}_acc0")
    assert fraction >= 0.99, f"{fraction:.4%} bit-identical"
    assert fraction == 1.0  # what the model achieves today; docs/MOCK.md


@pytest.mark.parametrize("kind,n", CASES)
def test_matmul_ttnn_default_with_packer_l1_accumulation(exe, tmp_path, kind, n):
    c = run(exe, tmp_path, "matmul", kind, n, "HiFi2", kblock=1)
    assert identical(c, f"ttsim_mm_{kind}_{n}_default") == 1.0


def test_reference_data_is_bf16(exe):
    a = np.load(DATA / "inputs" / "in_normal_64_a.npy")
    assert a.dtype == np.uint16 and np.isfinite(a.view(ml_dtypes.bfloat16).astype(np.float32)).all()
