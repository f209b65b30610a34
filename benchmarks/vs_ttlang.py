"""Whole-process wall time and peak memory of tt-lang's matmul tutorial workload,
relu(A @ B + C) at n^3 (bf16, fp32 accumulation, 128x128 blocks, K blocks of 128, 8x8 cores):
tilelang-tt's mock mode against tt-lang-sim, side by side.

    python benchmarks/vs_ttlang.py [--sizes 512,1024,2048,4096,8192] [--repeat 2]
                                   [--ttlang-sim PATH] [--threads N] [--only mock|ttlang]
                                   [--fidelity LoFi|HiFi2|HiFi3|HiFi4]

* mock: ``matmul_relu.py`` in a fresh Python process (import, compile, run on the emulator,
  write Y), after one untimed warm-up run of the same size (so the build caches and
  tilelang_tt's bytecode caches are warm, whatever ``PYTHONDONTWRITEBYTECODE`` says: an
  installed package has its bytecode, as tt-lang-sim's has; ``--warm`` skips it). Its matrix
  engine runs at the compiler's default math fidelity, HiFi4, unless ``--fidelity`` names
  one (the emulator's time per tile matmul grows with the fidelity's phases: HiFi2 takes about
  0.6x HiFi4's); each run line and the table name the fidelity the mock ran at.
* tt-lang: tt-lang's own tutorial kernel (``step_4_multinode_grid_full.py`` shipped in the
  tt-lang-sim wheel), copied at run time into a temporary directory with its driver section
  (inputs, reference check) replaced by one that takes the same inputs as the mock run and
  writes Y (float32: the simulator computes in float32); run by ``tt-lang-sim`` (default grid 8x8). Needs tt-lang-sim installed (pip, in
  its own venv: ``--ttlang-sim`` names its ``tt-lang-sim`` script; default: on PATH, else
  ``/tmp/ttlsim-venv/bin/tt-lang-sim``).

Both runs get the same seeded inputs (``inputs.py``). Time: process start to exit. Memory:
the peak over time of the summed proportional resident memory (Pss) of the process and
its children (sampled from /proc every 10 ms while their Rss, which bounds it, reaches the peak
so far, at most a fifth of the time: reading Pss walks the page tables). After each run, rows of Y are checked against numpy (untimed).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from inputs import check_sample  # noqa: E402

TUTORIAL = "step_4_multinode_grid_full.py"
DRIVER_MARK = "torch.manual_seed("

DRIVER = '''
# ---- driver written by tilelang-tt's benchmarks/vs_ttlang.py (replaces the tutorial's) ----
import sys as _sys
_sys.path.insert(0, {bench!r})
import numpy as _np
from inputs import make_inputs as _make_inputs

device = ttnn.open_device(device_id=0)
try:
    # the simulator computes in float32 (it rebinds torch.bfloat16 to torch.float32): give it
    # the bf16 inputs' values as float32 tensors
    _host = _make_inputs({n}, {seed})
    a, b, c = (from_torch(torch.from_numpy(_x.astype(_np.float32))) for _x in _host)
    del _host
    y = ttnn.to_torch(tutorial_operation(a, b, c))
    if {out!r}:
        y.contiguous().numpy().tofile({out!r})
finally:
    ttnn.close_device(device)
'''


_PAGE = os.sysconf("SC_PAGE_SIZE")


def _tree_rss(pid, pss=True):
    """Proportional resident bytes (Pss: pages shared after a fork count once) of pid and its
    descendants; with pss=False their resident bytes (Rss, an upper bound of Pss: a kernel
    counter, where Pss walks every page table of the process)."""
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        try:
            if pss:
                with open(f"/proc/{p}/smaps_rollup") as f:
                    for line in f:
                        if line.startswith("Pss:"):
                            total += int(line.split()[1]) * 1024
                            break
            else:
                with open(f"/proc/{p}/statm") as f:
                    total += int(f.read().split()[1]) * _PAGE
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    stack.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            pass
    return total


def run_measured(cmd, env=None, timeout=7200):
    """(seconds, peak tree RSS bytes, CompletedProcess-like (returncode, stderr))."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    peak = [0]
    done = threading.Event()

    def sample():
        # Pss every 10 ms, but only while the tree's Rss (which bounds its Pss) reaches the peak
        # so far, and at most a fifth of the time: reading Pss of a process of 1 GB takes ~10 ms
        # of kernel time, which on a 2-core machine slows the measured run itself
        while not done.is_set():
            t = time.perf_counter()
            cost = 0.0
            if _tree_rss(proc.pid, pss=False) >= peak[0]:
                peak[0] = max(peak[0], _tree_rss(proc.pid))
                cost = time.perf_counter() - t
            done.wait(max(0.01, 4 * cost))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        err += f"\n(killed after {timeout} s)"
    seconds = time.perf_counter() - t0
    done.set()
    sampler.join()
    return seconds, peak[0], proc.returncode, out, err


def find_ttlang_sim(given):
    for cand in (given, shutil.which("tt-lang-sim"), "/tmp/ttlsim-venv/bin/tt-lang-sim"):
        if cand and Path(cand).exists():
            return Path(cand)
    return None


def write_ttlang_script(sim, directory, n, seed, out):
    python = sim.parent / "python"
    src = subprocess.run(
        [str(python), "-c", "import ttl.tutorials.matmul as m, pathlib; "
         "print(pathlib.Path(m.__file__).parent)"],
        capture_output=True, text=True, check=True).stdout.strip()
    text = (Path(src) / TUTORIAL).read_text()
    cut = text.find(DRIVER_MARK)
    if cut < 0 or "def tutorial_operation(" not in text:
        raise SystemExit(f"{TUTORIAL} of this tt-lang-sim has no driver section to replace")
    script = Path(directory) / f"ttl_matmul_{n}.py"
    script.write_text(text[:cut] + DRIVER.format(bench=str(HERE), n=n, seed=seed, out=out))
    return script


def read_y(path, n):
    """Y as written: raw bf16 (the mock) or float32 (tt-lang-sim computes in float32)."""
    import ml_dtypes

    dtype = np.float32 if os.path.getsize(path) == 4 * n * n else ml_dtypes.bfloat16
    return np.fromfile(path, dtype=dtype).reshape(n, n)


def fmt_mb(b):
    return f"{b / 2**20:.0f}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="512,1024,2048,4096,8192")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ttlang-sim", help="path of tt-lang-sim (in its venv)")
    parser.add_argument("--threads", help="TT_MOCK_THREADS for the mock runs")
    parser.add_argument("--only", choices=["mock", "ttlang"])
    parser.add_argument("--warm", action="store_true", help="skip the mock warm-up runs")
    parser.add_argument("--timeout", type=float, default=7200)
    parser.add_argument("--fidelity", choices=["LoFi", "HiFi2", "HiFi3", "HiFi4"],
                        help="tt.math_fidelity of the mock runs (default: the compiler's, HiFi4)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    sim = None if args.only == "mock" else find_ttlang_sim(args.ttlang_sim)
    if sim is None and args.only != "mock":
        print("tt-lang-sim not found: measuring the mock only")
    env = dict(os.environ)
    if args.threads:
        env["TT_MOCK_THREADS"] = args.threads
    # the mock runs may write tilelang_tt's bytecode caches (__pycache__, in the warm-up run),
    # which an installed package has, as tt-lang-sim's installed modules have theirs
    mock_env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    rows = []
    fidelities = set()
    with tempfile.TemporaryDirectory(prefix="tt-vs-ttlang-") as tmp:
        out = str(Path(tmp) / "y.bin")
        for n in sizes:
            mock_cmd = [sys.executable, str(HERE / "matmul_relu.py"), "--size", str(n),
                        "--seed", str(args.seed), "--out", out]
            if args.fidelity:
                mock_cmd += ["--fidelity", args.fidelity]
            if args.only != "ttlang" and not args.warm:
                run_measured(mock_cmd, mock_env, args.timeout)
            ttl_cmd = None
            if sim is not None:
                ttl_cmd = [str(sim), str(write_ttlang_script(sim, tmp, n, args.seed, out))]
            for rep in range(args.repeat):
                res = {"n": n}
                for name, cmd in (("ttlang", ttl_cmd), ("mock", mock_cmd)):
                    if cmd is None or args.only not in (None, name):
                        continue
                    if os.path.exists(out):
                        os.remove(out)
                    secs, peak, rc, stdout, err = run_measured(
                        cmd, mock_env if name == "mock" else env, args.timeout)
                    found = re.search(r"^math fidelity (\w+)", stdout or "", re.M)
                    if name == "mock" and found:
                        fidelities.add(found.group(1))
                    if rc != 0:
                        print(f"{name} {n}^3 failed (exit {rc}):\n{err[-3000:]}")
                        res[name] = (secs, peak, float("nan"))
                        continue
                    res[name] = (secs, peak, check_sample(read_y(out, n), n, args.seed))
                    at = f" ({found.group(1)})" if name == "mock" and found else ""
                    print(f"  {name:6s} {n}^3 run {rep + 1}: {secs:8.1f} s, peak "
                          f"{fmt_mb(peak)} MB, rel. error {res[name][2]:.1e}{at}", flush=True)
                rows.append(res)
    tensors = {n: 4 * n * n * 2 for n in sizes}
    mock_at = f" ({', '.join(sorted(fidelities))})" if fidelities else ""
    print(f"\n| size | tt-lang-sim | tilelang-tt mock{mock_at} | ratio (sim / mock) | "
          "peak MB sim | peak MB mock | limit MB (2x tensors + 300) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        n = r["n"]
        t = r.get("ttlang")
        m = r.get("mock")
        ratio = f"{t[0] / m[0]:.2f}" if t and m else ""
        print(f"| {n}^3 | {f'{t[0]:.1f} s' if t else ''} | {f'{m[0]:.1f} s' if m else ''} | "
              f"{ratio} | {fmt_mb(t[1]) if t else ''} | {fmt_mb(m[1]) if m else ''} | "
              f"{fmt_mb(2 * tensors[n] + 300 * 2**20)} |")


if __name__ == "__main__":
    main()
