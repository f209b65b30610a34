"""Run TT-Metalium's programming examples on the emulator and print a table of outcomes.

    python tools/tt_examples.py DIR [NAME ...]

DIR is a pinned copy of tt-metal's ``tt_metal/programming_examples`` (kept outside this repository:
the examples are Tenstorrent's code), with a link ``DIR/tt_metal/programming_examples -> DIR`` for
the examples that name their kernels from the tt-metal root. Each example is built unchanged against the mock TT-Metalium
(``tilelang-tt emulate``), run with ``TT_METAL_DPRINT_CORES=0,0``, and classified:

* ``passed``      exit status 0, and the example's own check printed no failure;
* ``check failed`` the program ran but its own check reported a failure (non-zero status, or
  "Test Failed" / "mismatch" in its output);
* ``refused``     the emulator stopped it (TT-MOCK ERROR: what hardware would not do, or an SDK
  feature the emulator does not model);
* ``build error`` the host program or a kernel does not compile against the mock;
* ``missing``     the example is not in DIR.
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tilelang_tt.runtime import emulate  # noqa: E402

# the single-device examples of tt-metal 0.81.1's programming_examples (issue 13)
EXAMPLES = [
    "add_2_integers_in_riscv", "add_2_integers_in_compute", "eltwise_binary", "eltwise_sfpu",
    "loopback", "hello_world_compute_kernel", "hello_world_datamovement_kernel",
    "hello_world_datatypes_kernel", "matmul/matmul_single_core", "matmul/matmul_multi_core",
    "matmul/matmul_multicore_reuse", "matmul/matmul_multicore_reuse_mcast", "vecadd_multi_core",
    "vecadd_sharding", "pad_multi_core", "shard_data_rm", "NoC_tile_transfer", "sfpu_eltwise_chain",
    "custom_sfpi_add", "custom_sfpi_smoothstep", "contributed/vecadd", "contributed/multicast",
]

FAILED = re.compile(r"test failed|mismatch|FAIL\b", re.IGNORECASE)


def first_line(text: str, pattern: str) -> str:
    for line in text.splitlines():
        if re.search(pattern, line):
            return line.strip()[:110]
    lines = [l for l in text.splitlines() if l.strip()]
    return lines[-1].strip()[:110] if lines else ""


def run_one(root: Path, name: str) -> tuple[str, str, float]:
    program = root / name
    if not program.is_dir():
        return "missing", "", 0.0
    t0 = time.time()
    try:
        # kernels are named relative to programming_examples/ (OVERRIDE_KERNEL_PREFIX "")
        result = emulate.run(program, root=root, env={"TT_METAL_DPRINT_CORES": "0,0"}, timeout=900)
    except emulate.EmulateError as err:
        return "build error", first_line(str(err), r"error"), time.time() - t0
    dt = time.time() - t0
    out = result.stdout + result.stderr
    if "TT-MOCK ERROR" in result.stderr:
        detail = first_line(result.stderr, r"TT-MOCK ERROR")
        if "does not compile" in result.stderr:
            return "build error", first_line(result.stderr, r"error:"), dt
        return "refused", detail, dt
    if result.returncode != 0 or FAILED.search(out):
        return "check failed", first_line(out, r"(?i)fail|mismatch|error"), dt
    return "passed", first_line(result.stdout, r"(?i)pass|result|success"), dt


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    root = Path(argv[0]).resolve()
    names = argv[1:] or EXAMPLES
    rows = [(name, *run_one(root, name)) for name in names]
    width = max(len(n) for n in names)
    print(f"| {'example'.ljust(width)} | outcome      | time (s) | detail |")
    print(f"|-{'-' * width}-|--------------|----------|--------|")
    for name, outcome, detail, dt in rows:
        print(f"| {name.ljust(width)} | {outcome.ljust(12)} | {dt:8.1f} | {detail.replace('|', '/')} |")
    passed = sum(1 for r in rows if r[1] == "passed")
    print(f"\n{passed} of {len(rows)} examples passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
