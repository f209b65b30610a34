#!/usr/bin/env python3
"""Check saved generated projects against the real TT-Metalium SDK (sdkcheck).

usage: sdkcheck_projects.py PROJECTS_DIR [SDKCHECK]

PROJECTS_DIR holds one directory per generated project (what compiling with
TILELANG_TT_SAVE_PROJECTS=PROJECTS_DIR leaves, one copy per distinct content). The device
kernels of one project per distinct device program (device_shape: kernels and plan equal up to
numbers) are checked, warnings as errors (the SDK's JIT builds with -Werror); the host program of
one project per distinct main.cpp (host_shape)
(linking it against the real libtt_metal.so through the mock host headers). Exits non-zero on
any error in generated code or host API mismatch; sdkcheck's exit 3 (errors inside the SDK
environment only) counts as clean. sdkcheck does not compute a sharded tensor's accessor
compile args: a project with one is checked from a copy whose plan spells them out
(tilelang_tt.codegen.accessor_args).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tilelang_tt.codegen import accessor_args  # noqa: E402
MOCK_INCLUDE = ROOT / "tilelang_tt" / "runtime" / "mock" / "include"


def run(sdkcheck: Path, args: list[str], report: Path) -> tuple[int, dict]:
    cmd = ["bash", str(sdkcheck), "-j", "2", "--json", str(report), *args]
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    summary = [line for line in proc.stdout.splitlines() if line.startswith("sdkcheck:")]
    print(f"$ sdkcheck {' '.join(args[:4])} ... ({time.monotonic() - start:.0f} s, exit {proc.returncode})")
    if proc.returncode not in (0, 3):
        print(proc.stdout[-20000:], proc.stderr[-5000:], sep="\n")
    else:
        print("\n".join(summary) or proc.stdout[-2000:])
    data = json.loads(report.read_text()) if report.exists() else {}
    return proc.returncode, data


def _up_to_numbers(source: str) -> str:
    """``source`` without comments, with every string literal empty and every number 0."""
    text = re.sub(r"//[^\n]*", "", source)
    text = re.sub(r'"[^"\n]*"', '""', text)
    return re.sub(r"\b\d+(\.\d+)?(?=[uUlLfF]*\b)", "0", text)


def host_shape(main_cpp: str) -> frozenset:
    """Host programs with the same statements up to numbers, string literals, comments and order
    call the same SDK functions with the same argument types: linking one checks them all."""
    return frozenset(line.strip() for line in _up_to_numbers(main_cpp).splitlines())


def device_shape(project: Path) -> tuple:
    """Projects whose kernels are the same up to numbers and whose plans (what the JIT build
    turns into compile-time args, defines and CB formats) are the same up to numbers compile
    the same SDK calls with the same types, the same compute configuration and the same data
    formats: checking one checks them all.  Only the sources' numbers (loop bounds, tile
    counts) and the plan's sizes differ."""
    kernels = tuple(_up_to_numbers((project / f).read_text()) if (project / f).exists() else None
                    for f in ("reader.cpp", "compute.cpp", "writer.cpp"))
    plan = json.loads((project / "tt.plan.json").read_text())
    described = {"target": plan.get("target"), "kernels": plan.get("kernels"),
                 "tensors": plan.get("tensors"),
                 "cbs": [(cb.get("id"), cb.get("data_format")) for cb in plan.get("circular_buffers", [])]}
    return kernels, re.sub(r"-?\b\d+(\.\d+)?\b", "0", json.dumps(described, sort_keys=True))


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    projects_dir = Path(sys.argv[1]).resolve()
    sdkcheck = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT.parent / "shared" / "tools" / "sdkcheck" / "sdkcheck.sh"
    projects = sorted(p for p in projects_dir.iterdir()
                      if not p.name.startswith(".") and (p / "tt.plan.json").exists()) if projects_dir.is_dir() else []
    if not projects:
        print(f"sdkcheck_projects: no generated projects under {projects_dir}")
        return 1
    explicit = projects_dir.parent / (projects_dir.name + "-explicit-accessors")
    shutil.rmtree(explicit, ignore_errors=True)
    for i, p in enumerate(projects):
        plan = json.loads((p / "tt.plan.json").read_text())
        if accessor_args.has_sharded_accessor(plan):
            copy = explicit / p.name
            shutil.copytree(p, copy)
            (copy / "tt.plan.json").write_text(json.dumps(accessor_args.with_explicit_accessor_words(plan)))
            projects[i] = copy
    by_host, by_device = {}, {}
    for p in projects:
        by_host.setdefault(host_shape((p / "main.cpp").read_text()), p)
        by_device.setdefault(device_shape(p), p)
    n_explicit = sum(1 for p in projects if p.parent == explicit)
    print(f"sdkcheck_projects: {len(projects)} projects ({n_explicit} with sharded accessors spelled out), "
          f"{len(by_device)} distinct device programs, {len(by_host)} distinct host programs")
    device_code, _ = run(sdkcheck, ["--device-only", "--werror", *map(str, by_device.values())],
                         projects_dir.parent / "sdkcheck-device.json")
    host_code, _ = run(sdkcheck, ["--host-only", "--host-include", str(MOCK_INCLUDE), *map(str, by_host.values())],
                       projects_dir.parent / "sdkcheck-host.json")
    failed = [what for what, code in (("device", device_code), ("host", host_code)) if code not in (0, 3)]
    if failed:
        print(f"sdkcheck_projects: FAILED ({', '.join(failed)} check)")
        return 1
    print("sdkcheck_projects: clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())
