"""Run a user's TT-Metalium program (host file + kernels) on the emulator: ``tilelang-tt emulate``.

The host program is the ``.cpp`` file directly in the program's directory that defines ``main``
(or the one named); it is built against the mock TT-Metalium headers as the SDK's CMake builds a
program (deprecated SDK names warn, they are not errors) and run with the emulator, in a working
directory against which its kernel paths resolve: by default the directory above the program's, as
TT-Metalium's programming examples name their kernels (``OVERRIDE_KERNEL_PREFIX "dir/kernels/..."``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tilelang_tt.runtime import mockbuild

_MAIN = re.compile(r"^\s*int\s+main\s*\(", re.MULTILINE)


class EmulateError(RuntimeError):
    """The program could not be found or built (message says why)."""


@dataclass
class EmulateResult:
    returncode: int
    stdout: str
    stderr: str
    stats: dict | None


def find_host_file(program: Path) -> Path:
    """The host source of a program directory: its one top-level .cpp that defines main()."""
    if program.is_file():
        return program
    if not program.is_dir():
        raise EmulateError(f"no such program directory: {program}")
    mains = [p for p in sorted(program.glob("*.cpp")) if _MAIN.search(p.read_text(errors="replace"))]
    if not mains:
        raise EmulateError(f"{program} has no .cpp file defining main() at its top level")
    if len(mains) > 1:
        raise EmulateError(f"{program} has several host programs ({', '.join(p.name for p in mains)}): "
                           "name one (tilelang-tt emulate DIR/FILE.cpp)")
    return mains[0]


def build(program: Path) -> Path:
    host = find_host_file(Path(program).resolve())
    try:
        return mockbuild.build_host(host, host.parent, strict_deprecations=False)
    except mockbuild.MockBuildError as err:
        raise EmulateError(str(err)) from None


def run(program: Path, args: list[str] | None = None, root: Path | None = None,
        arch: str = "wormhole_b0", timeout: float = 600, env: dict | None = None) -> EmulateResult:
    """Build and run a program; never raises for the program's own failure (see returncode)."""
    program = Path(program).resolve()
    exe = build(program)
    host = find_host_file(program)
    cwd = Path(root).resolve() if root else host.parent.parent
    with tempfile.TemporaryDirectory(prefix="tt-emulate-") as tmp:
        stats_path = Path(tmp) / "stats.json"
        run_env = dict(os.environ, **(env or {}), TT_MOCK_ARCH=arch, TT_MOCK_STATS=str(stats_path),
                       TT_MOCK_CACHE=str(mockbuild.cache_root()))
        try:
            proc = subprocess.run([str(exe), *(args or [])], capture_output=True, text=True,
                                  env=run_env, cwd=cwd, timeout=timeout)
        except subprocess.TimeoutExpired:
            return EmulateResult(124, "", f"did not finish in {timeout:.0f} s", None)
        stats = json.loads(stats_path.read_text()) if stats_path.exists() else None
    return EmulateResult(proc.returncode, proc.stdout, proc.stderr, stats)


def summary(stats: dict | None) -> str:
    """The emulator's counters of a run, in a few lines."""
    if not stats:
        return "emulator: no statistics (the program did not run a workload)"
    total = stats.get("total", {})
    lines = [f"emulator: {len(stats.get('cores', []))} active core(s) ({stats.get('arch', '?')}), "
             f"{stats.get('schedule', {}).get('rounds', 0)} round(s)"]
    keys = ("dram_bytes_read", "dram_bytes_written", "noc_reads", "noc_writes", "multicasts",
            "semaphore_ops")
    lines.append("  " + ", ".join(f"{k} {total[k]}" for k in keys if k in total))
    ops = total.get("tile_ops")
    if ops:
        lines.append("  tile ops: " + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))
    for key in ("device_time_ns", "modelled_time_ns", "device_cycles"):  # once the clock model exists
        if key in stats or key in total:
            lines.append(f"  {key}: {stats.get(key, total.get(key))}")
    return "\n".join(lines)
