"""The mock host headers are TT-Metalium 0.81.1's twin, checked against the real library.

A generated main.cpp compiled against the mock headers must link against the libtt_metal.so of
the official ttnn==0.81.1 wheel (sdkcheck --host-only): every non-inline function it takes from
the mock has the SDK's namespace, name and parameter types. Functions the mock defines inline
must not be ones the library exports (the SDK defines them in its headers too). A mock
declaration changed to differ must make the check fail.

Needs sdkcheck's environment (bash ../shared/tools/sdkcheck/setup.sh; found as
testing/sdk_twin.py finds it, or at $SDKCHECK_DIR). Without it these tests skip, unless
TT_REQUIRE_SDKCHECK=1 (set by .ci/run): then they fail. testing/test_sdk_twin.py is the device
side's twin check.
"""

import os
import re
import shutil
import subprocess

import pytest

import kernels
import sdk_twin
import tilelang_tt
from tilelang_tt.codegen.cmake import mock_dir

SDKCHECK = sdk_twin.SDKCHECK_DIR / "sdkcheck.sh"


def sdkcheck(*args):
    return subprocess.run(["bash", str(SDKCHECK), *map(str, args)], capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def sdk():
    problem = None
    if not SDKCHECK.exists():
        problem = f"sdkcheck not found at {SDKCHECK}"
    else:
        probe = sdkcheck("--host-symbols", r"^tt::tt_metal::CreateProgram\(")
        if probe.returncode != 0 or "tt::tt_metal::CreateProgram()" not in probe.stdout:
            problem = f"sdkcheck environment missing (run setup.sh): {probe.stdout}{probe.stderr}"
    if problem:
        if os.environ.get("TT_REQUIRE_SDKCHECK") == "1":
            pytest.fail(f"TT_REQUIRE_SDKCHECK=1 but {problem}")
        pytest.skip(problem)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    art = tilelang_tt.compile(kernels.matmul(64, 64, 64, 32, 32, 32), out_idx=-1)
    return art.save(tmp_path_factory.mktemp("twin") / "gemm")


def host_check(project, include, *extra):
    proc = sdkcheck("--host-only", "--host-include", include, *extra, project)
    return proc.returncode, proc.stdout + proc.stderr


def test_generated_host_program_links_against_the_real_library(sdk, project):
    code, out = host_check(project, mock_dir() / "include", "-v")
    assert code == 0, out
    linked = re.search(r"main\.cpp takes (\d+) function\(s\) from the host library; (\d+) of them link", out)
    assert linked and int(linked.group(1)) >= 20 and linked.group(1) == linked.group(2), out
    # what the mock defines inline (or as templates), the real library must not export
    inline = [line.split("inline:", 1)[1].strip() for line in out.splitlines() if "inline:" in line]
    assert inline, out
    pattern = "^(" + "|".join(re.escape(name) for name in inline) + ")$"
    exported = sdkcheck("--host-symbols", pattern)
    assert exported.returncode == 0, exported.stderr
    clashes = [line for line in exported.stdout.splitlines() if line and not line.startswith("#")]
    assert not clashes, f"inline in the mock headers but exported by libtt_metal.so: {clashes}"


ALTERATIONS = {
    # the mock's former Finish(MeshCommandQueue&): 0.81.1 takes a span of sub-device ids
    "Finish": ("tt-metalium/distributed.hpp",
               "void Finish(MeshCommandQueue& mesh_cq, ttsl::Span<const SubDeviceId> sub_device_ids = {});",
               "void Finish(MeshCommandQueue& mesh_cq);"),
    # a parameter type: runtime args as 64-bit words
    "SetRuntimeArgs": ("tt-metalium/host_api.hpp",
                       "    std::initializer_list<uint32_t> runtime_args);",
                       "    std::initializer_list<uint64_t> runtime_args);"),
}


@pytest.mark.parametrize("name", ["Finish", "SetRuntimeArgs"])
def test_an_altered_mock_declaration_is_a_host_api_mismatch(sdk, project, tmp_path, name):
    include = tmp_path / "include"
    shutil.copytree(mock_dir() / "include", include)
    header, old, new = ALTERATIONS[name]
    text = (include / header).read_text()
    assert old in text, f"{header} no longer declares {old!r}"
    (include / header).write_text(text.replace(old, new))
    code, out = host_check(project, include)
    assert code == 1, out
    assert "[host API mismatch]" in out and f"{name}(" in out, out
