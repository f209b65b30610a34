#!/usr/bin/env python3
"""Run the test suite on every core: the test files split into groups of about equal run time,
one ``pytest`` process per group.

    python tools/run_tests.py [-j N] [--record FILE] [PYTEST_OPTION ...]

Most of a test's time is one process waiting for a compiler or the emulator, so one ``pytest``
leaves the other cores idle. The files are split by their run times in
``testing/durations.json`` (seconds per file, written by ``--record``; a file missing from it
counts as the median), longest first, each to the least loaded group. Each group's output is
printed, prefixed by its number, as it arrives. The exit code is the first of the groups' that
is neither 0 nor pytest's 5 ("no tests collected"); else 5 when every group collected nothing
(a filter such as ``-k`` may leave one group empty), else 0. Options other than ``-j`` and
``--record`` are passed to every ``pytest`` (``-x``, ``-k EXPR``, ...); with file or directory
arguments, pytest runs once, on them, in this process's place.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "testing"
DURATIONS = TESTS / "durations.json"


def test_files() -> list[str]:
    return sorted(p.relative_to(ROOT).as_posix() for p in TESTS.rglob("test_*.py"))


def split(files: list[str], seconds: dict[str, float], jobs: int) -> list[list[str]]:
    """Longest-processing-time-first: each file, longest first, to the least loaded group."""
    default = statistics.median(seconds.values()) if seconds else 1.0
    groups: list[list[str]] = [[] for _ in range(jobs)]
    load = [0.0] * jobs
    for f in sorted(files, key=lambda f: (-seconds.get(f, default), f)):
        k = load.index(min(load))
        groups[k].append(f)
        load[k] += seconds.get(f, default)
    return [sorted(g) for g in groups if g]


def file_seconds(junit_xml: Path, files: list[str]) -> dict[str, float]:
    """Seconds per test file from a pytest junit report (its ``classname`` is the module's
    dotted path, then the class, if any)."""
    by_module = {f[:-3].replace("/", "."): f for f in files}
    by_module.update({f[:-3].rsplit("/", 1)[-1]: f for f in files})
    out: dict[str, float] = {}
    for case in ET.parse(junit_xml).getroot().iter("testcase"):
        name = case.get("classname", "")
        while name and name not in by_module:
            name = name.rpartition(".")[0]
        if name:
            f = by_module[name]
            out[f] = out.get(f, 0.0) + float(case.get("time", 0.0))
    return out


def exit_code(codes: list[int]) -> int:
    """The run's exit code from its processes' (5: pytest collected no test)."""
    failed = [c for c in codes if c not in (0, 5)]
    if failed:
        return failed[0]
    return 5 if all(c == 5 for c in codes) else 0


def _pump(k: int, stream, lock: threading.Lock) -> None:
    for line in iter(stream.readline, ""):
        with lock:
            sys.stdout.write(f"[{k}] {line}")
            sys.stdout.flush()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1,
                    help="pytest processes (default: the number of cores)")
    ap.add_argument("--record", type=Path, help="write each file's run time (seconds, JSON) here")
    opts, pytest_args = ap.parse_known_args()
    cmd = [sys.executable, "-m", "pytest"]
    if any(not a.startswith("-") and (ROOT / a.split("::")[0]).exists() for a in pytest_args):
        os.chdir(ROOT)
        os.execv(sys.executable, [*cmd, *pytest_args])

    # the emulator library, once, before the groups would each build it
    subprocess.run([sys.executable, "-c", "from tilelang_tt.runtime import mockbuild; mockbuild.mock_library()"],
                   cwd=ROOT, check=True)
    files = test_files()
    seconds = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    groups = split(files, seconds, max(1, opts.jobs))
    start = time.monotonic()
    lock = threading.Lock()
    with tempfile.TemporaryDirectory() as tmp:
        procs, pumps = [], []
        for k, group in enumerate(groups, 1):
            p = subprocess.Popen([*cmd, *pytest_args, f"--junitxml={tmp}/{k}.xml", *group], cwd=ROOT,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
            t = threading.Thread(target=_pump, args=(k, p.stdout, lock), daemon=True)
            t.start()
            procs.append(p)
            pumps.append(t)
        codes = [p.wait() for p in procs]
        for t in pumps:
            t.join()
        elapsed = time.monotonic() - start
        if opts.record:
            measured: dict[str, float] = {}
            for k in range(1, len(groups) + 1):
                if Path(f"{tmp}/{k}.xml").exists():
                    measured.update(file_seconds(Path(f"{tmp}/{k}.xml"), files))
            opts.record.write_text(json.dumps({f: round(s, 1) for f, s in sorted(measured.items())}, indent=1) + "\n")
    print(f"run_tests: {len(groups)} pytest processes, exit codes {codes}, {elapsed:.0f} s")
    return exit_code(codes)


if __name__ == "__main__":
    sys.exit(main())
