import json
import subprocess
import sys
from pathlib import Path

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
        "        s = T.alloc_shared((64, 48), 'bfloat16')\n"
        "        T.copy(A[0, 0], s)\n"
        "        T.copy(s, B[0, 0])\n")
    proc = run_cli("compile", f"{bad}:k", "-o", str(out))
    assert proc.returncode == 1 and "multiples of 32" in proc.stderr
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
