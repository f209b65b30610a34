"""Benchmark: flash attention forward (examples/flash_attention_4d.py, TileLang's
example_mha_fwd_bshd in our idiom), bf16, in mock mode.

For each size prints the compile time, the emulator's wall time (the run with all builds
cached), the host's thread CPU time and tile-math time, the run's tile operations by kind, and
the modelled device time; checks the output against numpy.  Not part of CI.

    python benchmarks/attention.py                      # the default sizes
    python benchmarks/attention.py --size 1x8x1024x128 --block 128 --causal
    python benchmarks/attention.py --json out.json      # also write the figures as JSON
    python benchmarks/attention.py --size 2x4096x32x128 --no-check   # example_mha_fwd_bshd's 2x32 heads
"""

import argparse
import hashlib
import json
import resource
import time

import ml_dtypes
import numpy as np
from harness import drop_cache, use_cold_cache

import tilelang_tt
from flash_attention_4d import flashattn_bshd, reference_bshd
from tilelang_tt.runtime import mockbuild

# (batch, seq_len, heads, dim), block_M = block_N, causal
DEFAULT_CASES = [
    ((1, 1024, 8, 128), 128, False),
    ((1, 4096, 8, 128), 128, False),
    ((1, 4096, 8, 128), 128, True),
    ((1, 2048, 8, 128), 64, False),
    ((1, 2048, 8, 128), 64, True),
]


def run_case(shape, block, causal, fidelity, check=True):
    batch, seq_len, heads, dim = shape
    rng = np.random.default_rng(0)
    q, k, v = [rng.standard_normal(shape).astype(ml_dtypes.bfloat16) for _ in range(3)]
    t0 = time.perf_counter()
    func = flashattn_bshd(batch, heads, seq_len, dim, block, block, is_causal=causal)
    kernel = tilelang_tt.compile(func, out_idx=-1,
                                 pass_configs={"tt.math_fidelity": fidelity})
    compile_s = time.perf_counter() - t0
    mockbuild.mock_library()
    kernel(q, k, v)                      # builds the host program, JIT-compiles the kernels
    t0 = time.perf_counter()
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = kernel(q, k, v)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    run_s = time.perf_counter() - t0
    # the host program's CPU time: unlike wall time, other load on a shared machine adds little
    process_cpu_s = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    stats = kernel.last_run_stats or {}
    err = float("nan")
    if check:  # numpy's scores take batch x heads x seq_len^2 floats
        expect = reference_bshd(q, k, v, causal)
        err = float(np.abs(out.astype(np.float32) - expect).max())
    host = stats.get("host", {})
    total = stats.get("total", {})
    return {
        "shape": list(shape), "block": block, "causal": causal, "fidelity": fidelity,
        "compile_s": compile_s, "run_s": run_s, "process_cpu_s": process_cpu_s,
        "emulator_wall_s": host.get("wall_ns", 0) / 1e9,
        "thread_cpu_s": sum(host.get("thread_cpu_ns", []) or [0]) / 1e9,
        "thread_busy_s": sum(host.get("thread_busy_ns", []) or [0]) / 1e9,
        "tile_math_s": host.get("tile_math_ns", 0) / 1e9,
        "tile_ops": host.get("tile_ops", 0),
        "overhead_ns_per_tile_op": host.get("overhead_ns_per_tile_op", 0),
        "threads": host.get("threads"),
        "ops": total.get("tile_ops", {}),
        "tile_math_ns_by_op": host.get("tile_math_ns_by_op", {}),
        "device_time_ms": stats.get("device", {}).get("device_time_ns", 0) / 1e6,
        "max_abs_error": err,
        # the output's bits: the same before and after a change that keeps numerics bit-identical
        "output_sha256": hashlib.sha256(np.ascontiguousarray(out).tobytes()).hexdigest()[:16],
    }


def print_case(r):
    b, s, h, d = r["shape"]
    print(f"BSHD {b}x{s}x{h}x{d}, {r['block']}x{r['block']} blocks, "
          f"{'causal' if r['causal'] else 'not causal'}, {r['fidelity']}")
    print(f"  compile:                 {r['compile_s']:8.3f} s")
    print(f"  run (builds cached):     {r['run_s']:8.3f} s")
    print(f"  host program CPU:        {r['process_cpu_s']:8.3f} s (user + system)")
    print(f"  emulator wall:           {r['emulator_wall_s']:8.3f} s "
          f"({r['threads']} threads)")
    print(f"  thread CPU / busy:       {r['thread_cpu_s']:8.3f} s / {r['thread_busy_s']:.3f} s")
    print(f"  tile math:               {r['tile_math_s']:8.3f} s over {r['tile_ops']} tile ops; "
          f"overhead {r['overhead_ns_per_tile_op']:.0f} ns per tile op")
    print(f"  modelled device time:    {r['device_time_ms']:8.3f} ms")
    print(f"  max abs error vs numpy:  {r['max_abs_error']:.2e} (output sha256 {r['output_sha256']})")
    ops, by_op = r["ops"], r["tile_math_ns_by_op"]
    print("  tile ops (count, host math time: total and per op, wall clock):")
    for k, v in sorted(ops.items(), key=lambda kv: -by_op.get(kv[0], 0)):
        ns = by_op.get(k)
        timed = f"{ns / 1e9:8.3f} s {ns / v:8.0f} ns" if ns is not None and v else ""
        print(f"    {k:22s} {v:9d} {timed}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", help="BxSxHxD (BSHD); default: a few sizes")
    parser.add_argument("--block", type=int, default=128, help="block_M = block_N")
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--fidelity", default="HiFi2")
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--no-check", action="store_true",
                        help="skip the numpy reference (large sizes: its scores need B*H*S^2 floats)")
    parser.add_argument("--cold", action="store_true",
                        help="use an empty cache directory (includes the emulator build)")
    args = parser.parse_args()
    cache = use_cold_cache() if args.cold else None
    if args.size:
        cases = [(tuple(int(x) for x in args.size.split("x")), args.block, args.causal)]
    else:
        cases = DEFAULT_CASES
    results = []
    for shape, block, causal in cases:
        r = run_case(shape, block, causal, args.fidelity, check=not args.no_check)
        print_case(r)
        results.append(r)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if cache:
        drop_cache(cache)


if __name__ == "__main__":
    main()
