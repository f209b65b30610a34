"""Compile cost does not grow with the problem size (issue 9): TileLang's flash attention
forward (example_mha_fwd_bshd.py's 128x128 blocks) lowered at 1x1x256x64 (2 blocks of 2 K
steps) and at the example's default 8x32x4096x128 (8192 blocks of 32 K steps) gives kernels
of the same IR size, a plan that lists cores (at most the device's) rather than blocks or
pages, and sources of the same size.  Structural measures, not wall time, so the test cannot
flake on a loaded machine (benchmarks/compile_time.py prints the times)."""

import tvm

import flash_attention_4d as fa4
import tilelang_tt
from tilelang_tt.passes.common import collect


def compiled_size(func):
    mod = tilelang_tt.lower(func, verify_each=False)
    sources, plan = tilelang_tt.generate(mod)
    nodes = sum(len(collect(f.body, (tvm.tirx.Stmt, tvm.ir.Call)))
                for f in mod.functions.values())
    return nodes, plan, sum(len(s) for s in sources.values())


def test_flash_attention_compile_size_independent_of_problem_size():
    small_func = fa4.flashattn_bshd(1, 1, 256, 64, block_M=128, block_N=128)
    big_func = fa4.flashattn_bshd(8, 32, 4096, 128, block_M=128, block_N=128)
    small_nodes, small_plan, small_bytes = compiled_size(small_func)
    big_nodes, big_plan, big_bytes = compiled_size(big_func)
    assert big_plan["grid"] == [32, 32, 8] and small_plan["grid"] == [2, 1, 1]
    # 4096x the blocks, 16x the K steps per block: the kernels' IR is the same program (the
    # two differ only where a size is 1, e.g. a loop of one trip folded away)
    assert abs(big_nodes - small_nodes) <= 16, (small_nodes, big_nodes)
    # the plan lists each core's range of work units, never blocks or DRAM pages
    cols, rows = big_plan["core_grid"]
    assert len(big_plan["cores"]) <= cols * rows
    assert all("pages" not in core for core in big_plan["cores"])
    assert sum(core["count"] for core in big_plan["cores"]) == 32 * 32 * 8
    assert big_bytes < 1.5 * small_bytes, (small_bytes, big_bytes)
