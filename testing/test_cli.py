import json
import subprocess
import sys
from pathlib import Path

import pytest

from tilelang_tt.runtime import mockbuild

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "tilelang_tt.cli", *args], capture_output=True,
                          text=True)


def test_compile_writes_project(tmp_path):
    kernel = tmp_path / "k.py"
    kernel.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(EXAMPLES)!r})\n"
        "from kernels import elementwise_add\n"
        "add = elementwise_add(64, 64)\n")
    out = tmp_path / "out"
    proc = run_cli("compile", f"{kernel}:add", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.iterdir()) == ["CMakeLists.txt", "compute.cpp", "main.cpp",
                                                    "reader.cpp", "tt.plan.json", "writer.cpp"]


def test_compile_factory_and_errors(tmp_path):
    out = tmp_path / "out"
    proc = run_cli("compile", f"{EXAMPLES / 'kernels.py'}:matmul_nt", "-o", str(out))
    assert proc.returncode != 0 and "cannot be called without arguments" in proc.stderr
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import tilelang_tt.language as T\n"
        "@T.prim_func\n"
        "def k(A: T.Tensor((64, 48), 'bfloat16'), B: T.Tensor((64, 48), 'bfloat16')):\n"
        "    with T.Kernel(1, 1) as (bx, by):\n"
        "        s = T.alloc_shared((64, 16), 'bfloat16')\n"
        "        T.copy(A[0, 0], s)\n"
        "        T.copy(s, B[0, 0])\n")
    proc = run_cli("compile", f"{bad}:k", "-o", str(out))
    assert proc.returncode == 1 and "multiples of 32" in proc.stderr
    assert "Traceback" not in proc.stderr
    dynamic = tmp_path / "dynamic.py"
    dynamic.write_text(
        "import tilelang_tt.language as T\n"
        "m = T.dynamic('m')\n"
        "@T.prim_func\n"
        "def k(A: T.Tensor((m, 64), 'bfloat16'), B: T.Tensor((m, 64), 'bfloat16')):\n"
        "    with T.Kernel(2, T.ceildiv(m, 32)) as (bx, by):\n"
        "        s = T.alloc_shared((32, 32), 'bfloat16')\n"
        "        T.copy(A[by * 32, bx * 32], s)\n"
        "        T.copy(s, B[by * 32, bx * 32])\n")
    proc = run_cli("compile", f"{dynamic}:k", "-o", str(out))
    assert proc.returncode == 1 and "symbolic sizes or scalar parameters (m)" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_run_prints_counters():
    proc = run_cli("run", f"{EXAMPLES / 'elementwise_add.py'}:add")
    assert proc.returncode == 0, proc.stderr
    assert "on 64 emulated cores" in proc.stdout and '"dram_bytes_read": 4194304' in proc.stdout
    assert "modelled device time on n150" in proc.stdout and "bound: DRAM" in proc.stdout


def test_run_flash_attention():
    """The attention example runs from the command line: 8 query blocks, each reading its
    Q block once and its head's K and V whole (2 heads x 128 x 64 bf16)."""
    proc = run_cli("run", f"{EXAMPLES / 'flash_attention.py'}:attention")
    assert proc.returncode == 0, proc.stderr
    assert "on 8 emulated cores" in proc.stdout
    assert '"dram_bytes_read": 294912' in proc.stdout and '"dram_bytes_written": 32768' in proc.stdout


def test_run_writes_a_trace(tmp_path):
    trace = tmp_path / "t.json"
    proc = run_cli("run", f"{EXAMPLES / 'gemm.py'}:gemm", "--device", "n300", "--trace", str(trace))
    assert proc.returncode == 0, proc.stderr
    assert "modelled device time on n300" in proc.stdout and "TFLOP/s" in proc.stdout
    events = json.loads(trace.read_text())["traceEvents"]
    names = {e["args"]["name"] for e in events if e["ph"] == "M"}
    assert {"NCRISC reader", "BRISC writer", "TRISC1 math", "core (0,0)"} <= names
    spans = [e for e in events if e["ph"] == "X"]
    assert any(e["name"] == "matmul" for e in spans)
    assert any(e["cat"] == "stall" and "cb_wait_front CB" in e["name"] for e in spans)
    assert any(e["name"].startswith("noc read") for e in spans)


HELLO_HOST = r'''
#include <tt-metalium/distributed.hpp>
#include <tt-metalium/host_api.hpp>
#ifndef OVERRIDE_KERNEL_PREFIX
#define OVERRIDE_KERNEL_PREFIX ""
#endif
using namespace tt::tt_metal;
int main(int argc, char** argv) {
    auto mesh = distributed::MeshDevice::create_unit_mesh(0);
    Program program = CreateProgram();
    constexpr CoreCoord core = {0, 0};
    auto k = CreateKernel(program, OVERRIDE_KERNEL_PREFIX "hello/kernels/hello.cpp", core,
                          DataMovementConfig{.processor = DataMovementProcessor::RISCV_0,
                                             .noc = NOC::RISCV_0_default});
    SetRuntimeArgs(program, k, core, {static_cast<uint32_t>(argc)});
    distributed::MeshWorkload workload;
    workload.add_program(distributed::MeshCoordinateRange(mesh->shape()), std::move(program));
    distributed::EnqueueMeshWorkload(mesh->mesh_command_queue(), workload, true);
    fmt::print("host done\n");
    TT_FATAL(argc < 3, "too many arguments: {}", argc);
    return 0;
}
'''

HELLO_KERNEL = r'''
#include "api/debug/dprint.h"
void kernel_main() {
    DPRINT("hello from {} with {} arg(s)\n", "BRISC", get_arg_val<uint32_t>(0));
}
'''


@pytest.mark.skipif(not mockbuild.has_fmt(), reason="the program calls fmt::print: needs libfmt-dev")
def test_emulate_runs_a_metalium_program_tree(tmp_path):
    prog = tmp_path / "hello"
    (prog / "kernels").mkdir(parents=True)
    (prog / "hello.cpp").write_text(HELLO_HOST)
    (prog / "kernels" / "hello.cpp").write_text(HELLO_KERNEL)
    env_run = subprocess.run([sys.executable, "-m", "tilelang_tt.cli", "emulate", str(prog), "--", "x"],
                             capture_output=True, text=True,
                             env={**__import__("os").environ, "TT_METAL_DPRINT_CORES": "0,0"})
    assert env_run.returncode == 0, env_run.stderr
    assert env_run.stdout.splitlines()[:2] == ["0:(x=0,y=0):BR: hello from BRISC with 2 arg(s)", "host done"]
    assert "emulator: 1 active core(s) (wormhole_b0)" in env_run.stdout
    # the program's own failure is its exit status, with its message
    failed = run_cli("emulate", str(prog), "--", "x", "y")
    assert failed.returncode != 0 and "too many arguments: 3" in failed.stderr
    # a directory without a host program is a clear error
    missing = run_cli("emulate", str(prog / "kernels" / "nothing"))
    assert missing.returncode == 1 and "no such program directory" in missing.stderr
