"""Evaluate tilelang-tt on TileLang's own programs, with only their imports changed.

    python tools/tilelang_eval.py /tmp/tl/tilelang-0.1.14 [-o report.md] [--timeout 300]
                                  [--only examples/gemm] [--jobs 1]

For every example script (``examples/**/*.py`` but tests, regression scripts and conftest)
and every language test (``testing/python/language/test_*.py``; with ``--only testing/...``
the test files of any directory under ``testing/python``) of a TileLang source distribution, the imports are rewritten as a user would (``import tilelang`` ->
``import tilelang_tt as tilelang``, ``import tilelang.language as T`` ->
``import tilelang_tt.language as T``, ``from tilelang.x import y`` -> ``from tilelang_tt.x
import y``; nothing else changes), then the example's ``__main__`` runs (default arguments) or
the test file's tests run under pytest, each file in its own process with a time limit (the
modules and packages next to it, which it may import, get the same rewrite).

TileLang's programs make their inputs with torch on CUDA.  When torch is installed (a CPU
build: ``pip install torch``), the runner maps CUDA devices to the CPU (``.cuda()``,
``device="cuda"``, ``torch.cuda.synchronize``); without torch those programs stop at
``import torch``.  This device mapping is the harness's, not tilelang-tt's.

Each program (or test) is classified by how it ends: ran (its own checks passed, a kernel ran
on the emulator), ran with no kernel on the emulator (a helper module or a torch-only script),
ran up to ``do_bench`` (modelled time is not available), TTUnsupportedError, another TTCompileError,
TTRuntimeError (emulator), AssertionError (a wrong result), a missing ``tilelang_tt``
submodule, time limit, or another exception - a bug to fix (raw traceback).  The report
prints one table per example directory and the messages behind each class.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_IMPORT_RULES = [
    (re.compile(r"^(\s*)import tilelang\.language as (\w+)"), r"\1import tilelang_tt.language as \2"),
    (re.compile(r"^(\s*)import tilelang as (\w+)"), r"\1import tilelang_tt as \2"),
    (re.compile(r"^(\s*)import tilelang\.([\w.]+) as (\w+)"), r"\1import tilelang_tt.\2 as \3"),
    (re.compile(r"^(\s*)import tilelang\.([\w.]+)\s*$"),
     r"\1import tilelang_tt.\2; import tilelang_tt as tilelang"),
    (re.compile(r"^(\s*)import tilelang(\s*#.*)?\s*$"), r"\1import tilelang_tt as tilelang\2"),
    (re.compile(r"^(\s*)from tilelang\.([\w.]+) import "), r"\1from tilelang_tt.\2 import "),
    (re.compile(r"^(\s*)from tilelang import "), r"\1from tilelang_tt import "),
]


def rewrite_imports(text: str) -> str:
    out = []
    for line in text.splitlines():
        for pat, rep in _IMPORT_RULES:
            new = pat.sub(rep, line)
            if new != line:
                line = new
                break
        out.append(line)
    return "\n".join(out) + "\n"


def programs(root: Path, only: str | None):
    found = []
    for p in sorted((root / "examples").rglob("*.py")):
        name = p.name
        if name.startswith(("test_", "regression_")) or name in ("conftest.py", "__init__.py"):
            continue
        found.append(("example", p))
    # TileLang's language tests by default; any of its test directories when --only names one
    tests = root / "testing" / "python"
    pattern = "**/test_*.py" if only and only.startswith("testing/") else "language/test_*.py"
    for p in sorted(tests.glob(pattern)):
        found.append(("test", p))
    if only:
        found = [(k, p) for k, p in found if str(p.relative_to(root)).startswith(only)]
    return found


# ---- the child process ------------------------------------------------------------------------
_RUNNER = r'''
import json, os, runpy, sys, traceback
RESULT = sys.argv[3]

def map_cuda_to_cpu():
    try:
        import torch
    except ImportError:
        return
    from torch.overrides import TorchFunctionMode

    def cpu(dev):
        s = str(dev) if dev is not None else None
        return "cpu" if s is not None and s.startswith("cuda") else dev

    class CudaAsCpu(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = dict(kwargs or {})
            if "device" in kwargs:
                kwargs["device"] = cpu(kwargs["device"])
            name = getattr(func, "__name__", "")
            if name == "cuda":
                return args[0]
            if name == "to":
                args = tuple(cpu(a) if isinstance(a, (str, torch.device)) else a for a in args)
            return func(*args, **kwargs)

    CudaAsCpu().__enter__()
    torch.cuda.synchronize = lambda *a, **k: None
    torch.cuda.is_available = lambda: True
    torch.cuda.current_device = lambda: 0
    torch.cuda.set_device = lambda *a, **k: None
    torch.cuda.manual_seed = lambda *a, **k: None
    torch.cuda.manual_seed_all = lambda *a, **k: None
    torch.cuda.empty_cache = lambda *a, **k: None
    torch.cuda.get_device_name = lambda *a, **k: "Tenstorrent (tilelang-tt emulator)"
    torch.cuda.get_device_capability = lambda *a, **k: (0, 0)

def classify(exc):
    import tilelang_tt
    from tilelang_tt.profiler import TTProfilerUnavailable
    if isinstance(exc, TTProfilerUnavailable):
        return "ran; do_bench unavailable"
    if isinstance(exc, tilelang_tt.TTUnsupportedError):
        return "TTUnsupportedError"
    if isinstance(exc, tilelang_tt.TTCompileError):
        return "TTCompileError"
    if isinstance(exc, tilelang_tt.TTRuntimeError):
        return "TTRuntimeError"
    if "CUDA" in str(exc) and not isinstance(exc, tilelang_tt.TTCompileError):
        return "needs a CUDA device (torch)"
    if isinstance(exc, AssertionError):
        return "AssertionError (wrong result?)"
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").startswith("tilelang_tt"):
        return "missing tilelang_tt module"
    if isinstance(exc, ModuleNotFoundError):
        return "missing package"
    return "other exception (bug)"

def record(outcome, exc=None):
    entry = {"outcome": outcome}
    if exc is not None:
        entry["type"] = type(exc).__name__
        lines = [l.strip() for l in str(exc).strip().splitlines() if l.strip()]
        err = [l for l in lines if l.startswith("error:")]
        first = lines[0] if lines else ""
        if err and first.startswith("cannot parse kernel"):
            first = err[0] + " " + next((l for l in lines if l.startswith("-->")), "")
        entry["message"] = first[:2000]
        tb = traceback.extract_tb(exc.__traceback__)
        where = [f"{os.path.basename(f.filename)}:{f.lineno}" for f in tb[-3:]]
        entry["where"] = " <- ".join(reversed(where))
    return entry

map_cuda_to_cpu()
kind, path = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.dirname(path))
sys.argv = [path]
results = []


def ran(since):
    """"ran" when a kernel ran on the emulator since ``since`` (modelled ns), else a program
    that ran no kernel (a helper module, a reference-only script)."""
    from tilelang_tt.runtime import artifact
    return "ran" if artifact.modelled_time_ns() > since else "ran, no kernel on the emulator"


def modelled():
    from tilelang_tt.runtime import artifact
    return artifact.modelled_time_ns()


if kind == "example":
    t0 = modelled()
    try:
        runpy.run_path(path, run_name="__main__")
        results.append(record(ran(t0)))
    except SystemExit as e:
        results.append(record(ran(t0)) if not e.code else record("other exception (bug)", e))
    except BaseException as e:
        results.append(record(classify(e), e))
else:
    import pytest

    class Collect:
        t0 = 0

        def pytest_runtest_setup(self, item):
            Collect.t0 = modelled()

        def pytest_runtest_makereport(self, item, call):
            if call.when == "call" or (call.when == "setup" and call.excinfo is not None):
                if call.excinfo is None:
                    results.append(dict(record(ran(Collect.t0)), test=item.name))
                elif call.excinfo.typename == "Skipped":
                    results.append(dict(record("skipped"), test=item.name))
                else:
                    results.append(dict(record(classify(call.excinfo.value), call.excinfo.value), test=item.name))

        def pytest_collectreport(self, report):
            if report.failed:
                exc = getattr(report, "_tt_exc", None)
                results.append({"outcome": "collection error", "message": str(report.longrepr).strip().splitlines()[-1][:300]})

    pytest.main([path, "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--no-header", "-rN"], plugins=[Collect()])
with open(RESULT, "w") as fh:
    json.dump(results, fh)
'''


def run_one(kind: str, src: Path, root: Path, workdir: Path, timeout: float) -> list[dict]:
    rel = src.relative_to(root)
    dst = workdir / rel
    dst.parent.mkdir(parents=True, exist_ok=True)
    # sibling modules (a test importing its example) and sibling packages (a directory with an
    # __init__.py, as examples/dequantize_gemm/quantize) get the same rewrite
    sibs = list(src.parent.glob("*.py"))
    for init in src.parent.glob("*/__init__.py"):
        sibs += init.parent.rglob("*.py")
    for sib in sibs:
        out = dst.parent / sib.relative_to(src.parent)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(rewrite_imports(sib.read_text()))
    runner = workdir / "_runner.py"
    runner.write_text(_RUNNER)
    result = workdir / "_result.json"
    if result.exists():
        result.unlink()
    t0 = time.time()
    # its own process group: at the time limit the program's emulator host processes (which
    # the program's death would orphan, still running) are ended with it
    proc = subprocess.Popen([sys.executable, str(runner), kind, str(dst), str(result)],
                            cwd=dst.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return [{"outcome": f"time limit ({timeout:.0f} s)"}]
    if not result.exists():
        tail = (err or out).strip().splitlines()[-1:] or ["no output"]
        return [{"outcome": "crashed", "message": tail[0][:300]}]
    entries = json.loads(result.read_text())
    for e in entries:
        e["seconds"] = round(time.time() - t0, 1)
    return entries or [{"outcome": "no tests collected"}]


ORDER = ["ran", "ran; do_bench unavailable", "ran, no kernel on the emulator", "TTUnsupportedError", "TTCompileError",
         "TTRuntimeError", "AssertionError (wrong result?)", "missing tilelang_tt module",
         "needs a CUDA device (torch)", "missing package", "other exception (bug)",
         "collection error", "crashed", "skipped"]


def report(rows: list, root: Path) -> str:
    by_dir = collections.defaultdict(collections.Counter)
    for r in rows:
        d = str(Path(r["file"]).parent)
        by_dir[d][r["outcome"]] += 1
    cols = [c for c in ORDER if any(c in v for v in by_dir.values())]
    cols += sorted({o for v in by_dir.values() for o in v} - set(cols))
    lines = ["| directory | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    total = collections.Counter()
    for d in sorted(by_dir):
        total.update(by_dir[d])
        lines.append(f"| {d} | " + " | ".join(str(by_dir[d].get(c, "")) for c in cols) + " |")
    lines.append("| **total** | " + " | ".join(str(total.get(c, "")) for c in cols) + " |")
    lines.append("")
    for c in cols:
        if c == "ran":
            continue
        msgs = collections.Counter()
        for r in rows:
            if r["outcome"] == c and c != "ran":
                key = f"{r.get('type', '')}: {r.get('message', '')}"
                if c == "other exception (bug)":
                    key += f"  [{r.get('where', '')}]"
                msgs[re.sub(r"\d+", "N", key) if c != "other exception (bug)" else key] += 1
        if msgs:
            lines.append(f"### {c}")
            for m, n in msgs.most_common():
                lines.append(f"- {n} x {m}")
            lines.append("")
    lines.append("### per program")
    for r in rows:
        test = f"::{r['test']}" if r.get("test") else ""
        msg = f" - {r.get('type', '')}: {r.get('message', '')}" if r.get("message") else ""
        lines.append(f"- {r['file']}{test}: {r['outcome']}{msg}")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tilelang_src", type=Path)
    ap.add_argument("-o", "--output", type=Path)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--only", help="a path prefix inside the distribution, e.g. examples/gemm")
    args = ap.parse_args(argv)
    root = args.tilelang_src.resolve()
    rows = []
    with tempfile.TemporaryDirectory(prefix="tl-eval-") as tmp:
        work = Path(tmp)
        for kind, path in programs(root, args.only):
            rel = str(path.relative_to(root))
            for entry in run_one(kind, path, root, work, args.timeout):
                entry["file"] = rel
                rows.append(entry)
                print(f"{rel}{'::' + entry['test'] if entry.get('test') else ''}: "
                      f"{entry['outcome']} {entry.get('message', '')[:120]}", flush=True)
    text = report(rows, root)
    if args.output:
        args.output.write_text(text)
        Path(str(args.output) + ".json").write_text(json.dumps(rows, indent=1))
    print(text)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    main()
