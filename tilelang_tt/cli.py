"""``tilelang-tt`` command line.

    tilelang-tt compile FILE.py:NAME -o DIR [--target tenstorrent/blackhole] [--dump-ir DIR]
    tilelang-tt run FILE.py:NAME [--target ...]     compile, run on the emulator with random
                                                    inputs, print the emulator's counters
    tilelang-tt emulate DIR [--root R] [-- ARGS]    build a TT-Metalium program (host .cpp and
                                                    kernels) against the emulator, run it, print
                                                    its output and the emulator's counters

``NAME`` is a ``T.prim_func`` defined in the file, or a function returning one that can be
called without arguments (a kernel factory with defaults).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np


def load_kernel(spec: str):
    import tvm

    path, sep, name = spec.rpartition(":")
    if not sep or not path:
        raise SystemExit(f"expected FILE.py:NAME, got {spec!r}")
    file = Path(path)
    if not file.exists():
        raise SystemExit(f"no such file: {file}")
    sys.path.insert(0, str(file.resolve().parent))
    module_spec = importlib.util.spec_from_file_location(file.stem, file)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    obj = getattr(module, name, None)
    if obj is None:
        raise SystemExit(f"{file} defines no {name!r}")
    if not isinstance(obj, tvm.tirx.PrimFunc) and callable(obj):
        try:
            obj = obj()
        except TypeError as err:
            raise SystemExit(f"{spec} is a function that cannot be called without arguments "
                             f"({err}); point at a T.prim_func instead") from None
    if not isinstance(obj, tvm.tirx.PrimFunc):
        raise SystemExit(f"{spec} is not a T.prim_func (nor a factory returning one)")
    return obj


def main(argv=None) -> int:
    import tilelang_tt
    from tilelang_tt.runtime.dynamic import DynamicKernel

    parser = argparse.ArgumentParser(prog="tilelang-tt", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_compile = sub.add_parser("compile", help="generate the TT-Metalium project of a kernel")
    p_compile.add_argument("kernel", help="FILE.py:NAME")
    p_compile.add_argument("-o", "--output", required=True, help="output directory")
    p_compile.add_argument("--target", default="tenstorrent")
    p_compile.add_argument("--dump-ir", default=None, help="write the IR after every stage here")
    p_run = sub.add_parser("run", help="compile and run on the emulator with random inputs")
    p_run.add_argument("kernel", help="FILE.py:NAME")
    p_run.add_argument("--target", default="tenstorrent")
    p_run.add_argument("--device", default=None, choices=["n150", "n300", "p150"],
                       help="modelled device (default: n150 for Wormhole, p150 for Blackhole)")
    p_run.add_argument("--trace", default=None, metavar="FILE",
                       help="write a Chrome / Perfetto trace of the modelled run")
    p_emu = sub.add_parser("emulate", help="build and run a TT-Metalium program on the emulator")
    p_emu.add_argument("program", help="the program's directory (or its host .cpp file)")
    p_emu.add_argument("--root", default=None,
                       help="directory kernel paths are relative to (default: the program's parent)")
    p_emu.add_argument("--arch", default="wormhole_b0", choices=["wormhole_b0", "blackhole"])
    p_emu.add_argument("args", nargs=argparse.REMAINDER, help="arguments of the program (after --)")
    args = parser.parse_args(argv)
    if args.command == "emulate":
        return emulate_command(args)

    func = load_kernel(args.kernel)
    try:
        art = tilelang_tt.compile(func, target=args.target,
                                  dump_ir=getattr(args, "dump_ir", None))
    except tilelang_tt.TTCompileError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if isinstance(art, DynamicKernel):
        print(f"error: kernel {art.name} has symbolic sizes or scalar parameters "
              f"({', '.join(art.size_names + art.scalar_names)}), compiled per call value; give "
              "the command a kernel with fixed shapes (call its factory with sizes)",
              file=sys.stderr)
        return 1
    if args.command == "compile":
        out = art.save(args.output)
        print(f"wrote {', '.join(sorted(art.sources))} to {out}")
        return 0
    from .runtime.tensors import host_shape

    rng = np.random.default_rng(0)
    inputs = []
    for t in art.plan["tensors"]:
        inputs.append(rng.standard_normal(host_shape(t)).astype(np.float32))
    try:
        art.run(*inputs, device=args.device, trace=args.trace)
    except tilelang_tt.TTRuntimeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    stats = art.last_run_stats or {}
    print(f"ran {art.name} on {len(stats.get('cores', []))} emulated cores "
          f"({stats.get('arch', args.target)}); totals:")
    print(json.dumps(stats.get("total", {}), indent=1, sort_keys=True))
    dev = stats.get("device")
    if dev:
        print(device_summary(dev, stats.get("total", {})))
        if args.trace:
            print(f"trace: {args.trace} (open in https://ui.perfetto.dev or chrome://tracing)")
    host = stats.get("host")
    if host:
        print(f"emulator: {host['threads']} host thread(s), {host['wall_ns'] / 1e6:.0f} ms, "
              f"{stats['schedule']['rounds']} round(s), {host['overhead_ns_per_tile_op']:.0f} ns of "
              f"its own per tile op (outside tile math)")
    return 0


def device_summary(dev: dict, total: dict) -> str:
    """The modelled device time of a run, its rate, bound and utilisations, as one line each."""
    ns = dev["device_time_ns"]
    flops = 2.0 * 32 ** 3 * total.get("tile_ops", {}).get("matmul", 0)
    lines = [f"modelled device time on {dev['profile']}: {ns / 1e3:.2f} us "
             f"({dev['cycles']:.0f} cycles at {dev['clock_ghz']} GHz)"]
    if flops and ns:
        lines.append(f"  {flops / ns / 1e3:.2f} TFLOP/s; matrix engine utilisation "
                     f"{100 * dev['matrix_engine_utilization']:.1f}% of {dev['grid_cores']} cores")
    if ns:
        lines.append(f"  DRAM {dev['dram_gbps']:.1f} GB/s ({100 * dev['dram_utilization']:.1f}% of "
                     f"{dev['dram_spec_gbps']:.0f} GB/s); busiest NOC port "
                     f"{100 * dev['noc_port_utilization']:.1f}%")
    lines.append(f"  bound: {dev['bound']}")
    return "\n".join(lines)


def emulate_command(args) -> int:
    from tilelang_tt.runtime import emulate

    prog_args = args.args[1:] if args.args[:1] == ["--"] else args.args
    try:
        result = emulate.run(Path(args.program), prog_args, root=args.root, arch=args.arch)
    except emulate.EmulateError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    print(emulate.summary(result.stats))
    if result.returncode != 0:
        print(f"error: the program exited with status {result.returncode}", file=sys.stderr)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
