"""The SDK release is explicit: the plan records it, real-mode CMake checks the SDK it finds."""

import json
import os
import shutil
import subprocess

import pytest

import kernels
import tilelang_tt
from tilelang_tt.target import SDK_NAME, SDK_VERSION


def test_plan_records_the_sdk_release():
    art = tilelang_tt.compile(kernels.elementwise_add(64, 64), out_idx=-1)
    assert SDK_VERSION == "0.81.1"
    assert art.plan["sdk"] == {"name": SDK_NAME, "version": SDK_VERSION}
    assert json.loads(art.sources["tt.plan.json"])["sdk"]["version"] == SDK_VERSION


def fake_sdk(prefix, version):
    """A CMake package `TT-Metalium` of the given version (an empty interface target)."""
    pkg = prefix / "lib" / "cmake" / "TT-Metalium"
    pkg.mkdir(parents=True)
    (pkg / "TT-MetaliumConfig.cmake").write_text(
        "if(NOT TARGET TT::Metalium)\n  add_library(TT::Metalium INTERFACE IMPORTED)\nendif()\n")
    (pkg / "TT-MetaliumConfigVersion.cmake").write_text(
        f'set(PACKAGE_VERSION "{version}")\nset(PACKAGE_VERSION_COMPATIBLE TRUE)\n')
    return prefix


def configure(project, build, *args):
    env = {k: v for k, v in os.environ.items() if k != "TT_METAL_HOME"}
    proc = subprocess.run(["cmake", "-S", str(project), "-B", str(build), *args],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return " ".join((proc.stdout + proc.stderr).split())  # CMake wraps message lines


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_real_mode_names_both_versions_when_the_sdk_differs(tmp_path):
    project = tilelang_tt.compile(kernels.elementwise_add(64, 64)).save(tmp_path / "proj")
    other = configure(project, tmp_path / "b1", "-DTT_METAL_REAL=ON",
                      f"-DCMAKE_PREFIX_PATH={fake_sdk(tmp_path / 'old', '0.80.0')}")
    assert f"generated for {SDK_NAME} {SDK_VERSION}" in other
    assert f"the SDK found is {SDK_NAME} 0.80.0" in other

    same = configure(project, tmp_path / "b2", "-DTT_METAL_REAL=ON",
                     f"-DCMAKE_PREFIX_PATH={fake_sdk(tmp_path / 'same', SDK_VERSION)}")
    assert "generated for" not in same

    mock = configure(project, tmp_path / "b3")
    assert "generated for" not in mock
