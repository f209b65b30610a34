import subprocess
import sys

import pytest
import tvm

import tilelang_tt
from tilelang_tt.target import PROFILES, resolve_target


def test_target_tags_and_profiles():
    t, p = resolve_target("tenstorrent")
    assert "tenstorrent" in list(t.keys) and p.name == "wormhole_b0"
    assert (p.grid_x, p.grid_y, p.l1_bytes) == (8, 8, 1464 * 1024)
    _, bh = resolve_target("tenstorrent/blackhole")
    assert (bh.grid_x, bh.grid_y, bh.l1_bytes) == (13, 10, 1536 * 1024)
    assert resolve_target(tvm.target.Target("tenstorrent/blackhole"))[1] is PROFILES["blackhole"]


def test_dst_capacity():
    p = PROFILES["wormhole_b0"]
    assert p.dst_capacity(False) == 8 and p.dst_capacity(True) == 4
    assert p.dst_capacity(False, full_sync=True) == 16 and p.dst_capacity(True, True) == 8


def test_bad_targets():
    with pytest.raises(tilelang_tt.TTCompileError, match="unknown Tenstorrent device"):
        resolve_target("tenstorrent/grayskull9")
    with pytest.raises(tilelang_tt.TTCompileError, match="not a Tenstorrent target"):
        resolve_target("llvm")


def test_import_tvm_autoloads_backend():
    code = "import tvm; print(tvm.target.Target('tenstorrent').attrs['model'])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "wormhole_b0"
