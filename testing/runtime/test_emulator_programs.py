"""Hand-written programs on the emulator: tilize layout, semaphores + multicast, CMake builds."""

import os
import shutil
import subprocess
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import kernels
import tilelang_tt
from tilelang_tt.codegen.cmake import cmake_module_dir, mock_dir
from tilelang_tt.runtime import mockbuild

PROGRAMS = Path(__file__).resolve().parent / "programs"


def face_layout(tile):
    """Reference: a 32x32 tile as four 16x16 faces (TL, TR, BL, BR), row-major inside each."""
    return np.concatenate([tile[:16, :16].ravel(), tile[:16, 16:].ravel(),
                           tile[16:, :16].ravel(), tile[16:, 16:].ravel()])


def test_tilize_layout_and_round_trip(tmp_path):
    exe = mockbuild.build_host(PROGRAMS / "tilize" / "main.cpp", PROGRAMS / "tilize")
    rows, cols = 64, 96
    x = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    x.tofile(tmp_path / "in.bin")
    mockbuild.run_host(exe, [str(rows), str(cols), str(tmp_path / "in.bin"),
                             str(tmp_path / "tiled.bin"), str(tmp_path / "back.bin")])
    tiled = np.fromfile(tmp_path / "tiled.bin", dtype=np.float32)
    expected = np.concatenate([face_layout(x[r:r + 32, c:c + 32])
                               for r in range(0, rows, 32) for c in range(0, cols, 32)])
    np.testing.assert_array_equal(tiled, expected)
    np.testing.assert_array_equal(np.fromfile(tmp_path / "back.bin", dtype=np.float32), x.ravel())


def test_semaphores_and_multicast(tmp_path):
    exe = mockbuild.build_host(PROGRAMS / "multicast" / "main.cpp", PROGRAMS / "multicast")
    tile = np.random.default_rng(0).standard_normal((32, 32)).astype(ml_dtypes.bfloat16)
    tile.tofile(tmp_path / "in.bin")
    result = mockbuild.run_host(exe, [str(tmp_path / "in.bin"), str(tmp_path / "out.bin")])
    out = np.fromfile(tmp_path / "out.bin", dtype=ml_dtypes.bfloat16).reshape(4, 32, 32)
    for core in range(4):
        np.testing.assert_array_equal(out[core], tile)
    total = result.stats["total"]
    assert total["multicasts"] == 1 and total["semaphore_ops"] >= 8
    # only the sender read from DRAM: the receivers got the tile over the multicast
    assert total["dram_bytes_read"] == 2048


def test_multicast_num_dests_is_checked(tmp_path):
    exe = mockbuild.build_host(PROGRAMS / "multicast" / "main.cpp", PROGRAMS / "multicast")
    np.zeros((32, 32), dtype=ml_dtypes.bfloat16).tofile(tmp_path / "in.bin")
    with pytest.raises(mockbuild.MockRuntimeError) as info:
        mockbuild.run_host(exe, [str(tmp_path / "in.bin"), str(tmp_path / "out.bin"), "4"])
    msg = str(info.value)
    # with 4 expected receivers the sender waits forever: a deadlock, diagnosed
    assert "deadlock" in msg and "noc_semaphore_wait" in msg and "core (0,0)" in msg


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_generated_project_builds_with_cmake_in_mock_mode(tmp_path):
    art = tilelang_tt.compile(kernels.elementwise_add(64, 64), out_idx=-1)
    project = art.save(tmp_path / "proj")
    build = tmp_path / "build"
    env = {k: v for k, v in os.environ.items() if k != "TT_METAL_HOME"}
    for cmd in (["cmake", "-S", str(project), "-B", str(build)],
                ["cmake", "--build", str(build), "-j2"]):
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    a = np.random.default_rng(0).standard_normal((64, 64)).astype(ml_dtypes.bfloat16)
    a.tofile(tmp_path / "a.bin")
    a.tofile(tmp_path / "b.bin")
    run = subprocess.run([str(build / "add"), str(tmp_path / "a.bin"), str(tmp_path / "b.bin"),
                          str(tmp_path / "c.bin")], capture_output=True, text=True,
                         env=dict(env, TT_MOCK_CACHE=str(tmp_path / "cache")))
    assert run.returncode == 0, run.stderr
    c = np.fromfile(tmp_path / "c.bin", dtype=ml_dtypes.bfloat16).reshape(64, 64)
    ref = (a.astype(np.float32) * 2).astype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(c.astype(np.float32), ref.astype(np.float32))


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_real_mode_without_sdk_fails_clearly(tmp_path):
    art = tilelang_tt.compile(kernels.elementwise_add(64, 64))
    project = art.save(tmp_path / "proj")
    env = {k: v for k, v in os.environ.items() if k != "TT_METAL_HOME"}
    proc = subprocess.run(["cmake", "-S", str(project), "-B", str(tmp_path / "build"),
                           "-DTT_METAL_REAL=ON"], capture_output=True, text=True, env=env)
    assert proc.returncode != 0
    assert "TT_METAL_HOME" in proc.stdout + proc.stderr
    assert (cmake_module_dir() / "FindMetalium.cmake").exists() and mock_dir().exists()


def test_run_in_real_mode_without_sdk_is_a_clear_error():
    art = tilelang_tt.compile(kernels.elementwise_add(64, 64), out_idx=-1)
    old = os.environ.pop("TT_METAL_HOME", None)
    try:
        with pytest.raises(tilelang_tt.TTRuntimeError, match="TT_METAL_HOME"):
            art.run(np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float32), mode="real")
    finally:
        if old is not None:
            os.environ["TT_METAL_HOME"] = old


def test_shared_cb_region_pages():
    """Two CBs of one CircularBufferConfig share its L1: a CB may take pages the other freed,
    not pages it still holds."""
    exe = mockbuild.build_host(PROGRAMS / "cb_region" / "main.cpp", PROGRAMS / "cb_region")
    mockbuild.run_host(exe, ["0"])
    with pytest.raises(mockbuild.MockRuntimeError) as info:
        mockbuild.run_host(exe, ["1"])
    msg = str(info.value)
    assert "cb_reserve_back(cb=1, 2)" in msg and "region.cpp" in msg and "core (0,0)" in msg
    assert "CB 1 shares its L1 region with CB 0" in msg and "region bytes 4096..8192" in msg
    assert "2 page(s) pushed by region.cpp (reader kernel)" in msg


def test_cb_placement_follows_the_dram_alignment(monkeypatch):
    """A CB after a 32-byte CB starts at the next multiple of the DRAM alignment, as
    ProgramImpl::allocate_circular_buffers places it: 32 bytes on Wormhole, 64 on Blackhole
    (whose 64-byte DRAM reads need the CB's L1 offset a multiple of 64)."""
    monkeypatch.setenv("TT_METAL_DPRINT_CORES", "0,0")
    monkeypatch.delenv("TT_METAL_DPRINT_RISCVS", raising=False)
    exe = mockbuild.build_host(PROGRAMS / "cb_region" / "main.cpp", PROGRAMS / "cb_region")
    for arch, gap in (("wormhole_b0", 32), ("blackhole", 64)):
        out = mockbuild.run_host(exe, ["2"], arch=arch).stdout
        assert f"c_3 - c_2 = {gap}" in out, out
