#!/usr/bin/env python3
"""Check saved generated projects against the real TT-Metalium SDK (sdkcheck).

usage: sdkcheck_projects.py PROJECTS_DIR [SDKCHECK]

PROJECTS_DIR holds one directory per generated project (what compiling with
TILELANG_TT_SAVE_PROJECTS=PROJECTS_DIR leaves, one copy per distinct content; a kernel of
several launches as its project, main.cpp and no kernels, and a link to each launch's
kernels). The device
kernels of one project per distinct device program (device_shape: kernels and plan equal up to
numbers) are checked, warnings as errors (the SDK's JIT builds with -Werror), up to code
generation (-fsyntax-only); the host program of
one project per distinct main.cpp (host_shape)
(linking it against the real libtt_metal.so through the mock host headers). Exits non-zero on
any error in generated code or host API mismatch; sdkcheck's exit 3 (errors inside the SDK
environment only) counts as clean. sdkcheck does not compute a sharded tensor's accessor
compile args: a project with one is checked from a copy whose plan spells them out
(tilelang_tt.codegen.accessor_args).

usage: sdkcheck_projects.py --follow DONE_FILE PROJECTS_DIR [SDKCHECK]

checks the same, while the tests still write projects: new distinct programs are checked in
batches of at most 24 on one core as they appear (the test run leaves the other core busy),
until DONE_FILE exists; then what is left is checked on two cores for at most TAIL_SECONDS
(the device programs still pending after that are counted and reported, not checked).

Programs verified by an earlier run: .ci/sdkcheck_verified.txt lists the keys of the distinct
programs (device_shape / host_shape, hashed with the checker's own files, so any change to
sdkcheck or to its flags invalidates them) that an earlier run checked clean; those are not
checked again. With SDKCHECK_RECORD=FILE the run writes the keys it knows to be clean (read
and checked) to FILE; SDKCHECK_TAIL_SECONDS overrides TAIL_SECONDS.
"""

from __future__ import annotations

import hashlib
import json
import os
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
TAIL_SECONDS = int(os.environ.get("SDKCHECK_TAIL_SECONDS", "60"))
VERIFIED = ROOT / ".ci" / "sdkcheck_verified.txt"
DEVICE_FLAGS = ["--device-only", "--werror", "--syntax-only"]
HOST_FLAGS = ["--host-only", "--host-include"]


def tool_digest(sdkcheck: Path) -> str:
    """The checker's own files and the flags this script passes it."""
    h = hashlib.sha256(repr((DEVICE_FLAGS, HOST_FLAGS)).encode())
    for f in sorted(q for q in sdkcheck.resolve().parent.rglob("*")
                    if q.is_file() and q.suffix in (".sh", ".py", ".h", ".hpp", ".txt", "")
                    and "__pycache__" not in q.parts):
        h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()[:16]


def shape_key(kind: str, shape) -> str:
    """A digest of a device_shape / host_shape that is the same in every process (a frozenset's
    order follows the process's string hashing)."""
    canonical = sorted(shape) if isinstance(shape, frozenset) else shape
    return kind + ":" + hashlib.sha256(repr(canonical).encode()).hexdigest()[:32]


def run(sdkcheck: Path, args: list[str], report: Path, jobs: int = 2) -> tuple[int, dict]:
    cmd = ["bash", str(sdkcheck), "-j", str(jobs), "--json", str(report), *args]
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


class Checker:
    """The distinct device and host programs seen so far, and the sdkcheck runs over them."""

    def __init__(self, projects_dir: Path, sdkcheck: Path):
        self.projects_dir, self.sdkcheck = projects_dir, sdkcheck
        self.explicit = projects_dir.parent / (projects_dir.name + "-explicit-accessors")
        shutil.rmtree(self.explicit, ignore_errors=True)
        self.seen: set[str] = set()
        self.by_host: dict = {}
        self.by_device: dict = {}
        self.pending_host: list[Path] = []
        self.pending_device: list[Path] = []
        self.n_projects = self.n_explicit = self.runs = 0
        self.failed: set[str] = set()
        self.tool = tool_digest(sdkcheck)
        self.known: set[str] = set()   # verified earlier, same checker
        self.clean: set[str] = set()   # checked clean in this run
        self.key: dict = {}            # project -> shape key
        self.n_known = {"device": 0, "host": 0}
        if VERIFIED.exists():
            lines = VERIFIED.read_text().split()
            if lines[:2] == ["tool", self.tool]:
                self.known = set(lines[2:])

    def scan(self) -> None:
        """Take in the projects saved since the last scan (they appear complete: saved under a
        dot-name and renamed)."""
        if not self.projects_dir.is_dir():
            return
        for p in sorted(self.projects_dir.iterdir()):
            if p.name.startswith(".") or p.name in self.seen or not (p / "tt.plan.json").exists():
                continue
            self.seen.add(p.name)
            self.n_projects += 1
            plan = json.loads((p / "tt.plan.json").read_text())
            if accessor_args.has_sharded_accessor(plan):
                copy = self.explicit / p.name
                shutil.copytree(p, copy)
                (copy / "tt.plan.json").write_text(
                    json.dumps(accessor_args.with_explicit_accessor_words(plan)))
                p = copy
                self.n_explicit += 1
            # a kernel of several launches: the project holds main.cpp and no kernels, and
            # links <project>.launch<i> to each launch's directory, kernels and no main.cpp
            if (p / "main.cpp").exists():
                host = host_shape((p / "main.cpp").read_text())
                if host not in self.by_host:
                    self.by_host[host] = p
                    self._pend("host", host, p, self.pending_host)
            if plan.get("kernels"):
                device = device_shape(p)
                if device not in self.by_device:
                    self.by_device[device] = p
                    self._pend("device", device, p, self.pending_device)

    def _pend(self, kind: str, shape, project: Path, pending: list) -> None:
        key = shape_key(kind, shape)
        if key in self.known:
            self.n_known[kind] += 1
            return
        self.key[(kind, project)] = key
        pending.append(project)

    def _ran(self, kind: str, batch: list, code: int) -> None:
        if code in (0, 3):
            self.clean.update(self.key[(kind, p)] for p in batch)
        else:
            self.failed.add(kind)

    def record(self, path: Path) -> None:
        path.write_text("tool " + self.tool + "\n" +
                        "".join(k + "\n" for k in sorted(self.known | self.clean)))

    def check(self, jobs: int, at_least: int = 1, most: int | None = None) -> None:
        """Check the pending programs when there are ``at_least`` of a kind (device programs
        ``most`` at a time)."""
        self.runs += 1
        if len(self.pending_device) >= at_least:
            cut = len(self.pending_device) if most is None else most
            batch, self.pending_device = self.pending_device[:cut], self.pending_device[cut:]
            # -fsyntax-only: every SDK declaration, type, template instantiation and deprecation
            # is checked as in a full build; only code generation is skipped (40% of the time;
            # the generated kernels hold no assembly); the tests that run sdkcheck themselves build in full.
            code, _ = run(self.sdkcheck, [*DEVICE_FLAGS, *map(str, batch)],
                          self.projects_dir.parent / f"sdkcheck-device-{self.runs}.json", jobs)
            self._ran("device", batch, code)
        if len(self.pending_host) >= at_least:
            batch, self.pending_host = self.pending_host, []
            code, _ = run(self.sdkcheck, [*HOST_FLAGS, str(MOCK_INCLUDE), *map(str, batch)],
                          self.projects_dir.parent / f"sdkcheck-host-{self.runs}.json", jobs)
            self._ran("host", batch, code)

    def summary(self) -> int:
        print(f"sdkcheck_projects: {self.n_projects} projects ({self.n_explicit} with sharded "
              f"accessors spelled out), {len(self.by_device)} distinct device programs, "
              f"{len(self.by_host)} distinct host programs; verified by an earlier run of the same "
              f"checker (.ci/sdkcheck_verified.txt): {self.n_known['device']} device, "
              f"{self.n_known['host']} host")
        if os.environ.get("SDKCHECK_RECORD"):
            self.record(Path(os.environ["SDKCHECK_RECORD"]))
        if self.failed:
            print(f"sdkcheck_projects: FAILED ({', '.join(sorted(self.failed))} check)")
            return 1
        print("sdkcheck_projects: clean")
        return 0


def main() -> int:
    args = sys.argv[1:]
    done = None
    if args[:1] == ["--follow"] and len(args) >= 3:
        done, args = Path(args[1]), args[2:]
    if not args:
        print(__doc__)
        return 2
    projects_dir = Path(args[0]).resolve()
    sdkcheck = Path(args[1]) if len(args) > 1 else ROOT.parent / "shared" / "tools" / "sdkcheck" / "sdkcheck.sh"
    checker = Checker(projects_dir, sdkcheck)
    if done is not None:
        while not done.exists():
            checker.scan()
            # small batches: what is still running when the tests end waits at most one batch
            checker.check(jobs=1, at_least=12, most=24)
            time.sleep(5)
    checker.scan()
    if not checker.n_projects:
        print(f"sdkcheck_projects: no generated projects under {projects_dir}")
        return 1
    if done is None:
        checker.check(jobs=2)
        return checker.summary()
    # after the tests: the host programs, then the device programs still pending within
    # TAIL_SECONDS (CI's whole run must stay under 30 minutes on 2 cores); those left over are
    # counted, not checked
    deadline = time.monotonic() + TAIL_SECONDS
    checker.check(jobs=2, most=48)
    while checker.pending_device and time.monotonic() < deadline:
        checker.check(jobs=2, most=48)
    if checker.pending_device:
        print(f"sdkcheck_projects: {len(checker.pending_device)} device programs left unchecked "
              f"(the {TAIL_SECONDS} s after the tests ran out)")
    return checker.summary()


if __name__ == "__main__":
    sys.exit(main())
