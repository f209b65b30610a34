"""Structure of the generated sources for the foundation kernels."""

import json
import re

import pytest

import kernels
import tilelang_tt
from tilelang_tt.codegen.plan import build_plan
from helpers import assert_balanced, assert_no_tir_left

CASES = {
    "gemm_seed_256": lambda: kernels.matmul(256, 256, 128),
    "gemm_seed_rect": lambda: kernels.matmul(96, 160, 64, 32, 32, 32, num_stages=2),
    "gemm_seed_64_bf16acc": lambda: kernels.matmul(128, 128, 256, 64, 64, 64,
                                                   accum_dtype="bfloat16"),
    "gemm_nt_128": lambda: kernels.matmul_nt(256, 128, 192, 128, 64, 32),
    "gemm_one_k_step": lambda: kernels.matmul(128, 256, 32, 128, 128, 32),
    "gemm_nt_many_blocks": lambda: kernels.matmul_nt(576, 320, 64, 32, 32, 32),
    "add_shared_bf16": lambda: kernels.elementwise_add_shared(128, 96, 32, 32),
    "add_shared_f32_64": lambda: kernels.elementwise_add_shared(128, 128, 64, 64, "float32"),
    "add_global_bf16_128": lambda: kernels.elementwise_add(256, 256, 128, 128),
    "add_global_f32": lambda: kernels.elementwise_add(64, 96, dtype="float32"),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def art(request):
    return tilelang_tt.compile(CASES[request.param]())


def test_files(art):
    assert sorted(art.sources) == ["CMakeLists.txt", "compute.cpp", "main.cpp", "reader.cpp",
                                   "tt.plan.json", "writer.cpp"]
    assert json.loads(art.sources["tt.plan.json"]) == art.plan


def test_protocol_balanced(art):
    for fname in ("reader.cpp", "compute.cpp", "writer.cpp"):
        assert_balanced(art.sources[fname], fname)


def test_no_unused_constants(art):
    # the SDK's JIT builds kernels with -Werror: an unused constant (a CB the kernel never
    # names, e.g. a spill CB of a one-step K loop) fails the build on hardware
    for fname in ("reader.cpp", "compute.cpp", "writer.cpp"):
        src = art.sources[fname]
        for name in re.findall(r"constexpr (?:uint32_t|auto) (\w+) =", src):
            assert len(re.findall(rf"\b{name}\b", src)) > 1, f"{fname}: {name} is never used"


def test_no_tir_left(art):
    for fname in ("reader.cpp", "compute.cpp", "writer.cpp", "main.cpp"):
        assert_no_tir_left(art.sources[fname], fname)
        assert "kernel_main" in art.sources[fname] or fname == "main.cpp"


def test_current_api_spellings(art):
    for fname in ("reader.cpp", "writer.cpp"):
        code = art.sources[fname]
        assert '#include "api/dataflow/dataflow_api.h"' in code
        assert "noc_async_read_tile" not in code
        # pages through TensorAccessors; get_noc_addr only for a core's semaphore (multicast)
        assert not re.search(r"get_noc_addr\((?!get_arg_val)", code)
    compute = art.sources["compute.cpp"]
    assert "void MAIN" not in compute and "mm_init" not in compute and "acquire_dst" not in compute
    for call in re.findall(r"matmul_tiles\(([^;]*)\);", compute):
        assert call.count(",") == 4  # five arguments
    if "matmul_tiles" in compute:
        assert "compute_kernel_hw_startup<SrcOrder::Reverse>(" in compute
    for marker in ("tile_regs_acquire();", "tile_regs_commit();", "tile_regs_wait();",
                   "tile_regs_release();"):
        assert marker in compute
    host = art.sources["main.cpp"]
    assert "MeshDevice::create_unit_mesh(0)" in host and "EnqueueMeshWorkload" in host
    assert "TensorAccessorArgs(*" in host


def test_reader_reads_inputs_writer_writes_outputs(art):
    reader, writer = art.sources["reader.cpp"], art.sources["writer.cpp"]
    for t in art.plan["tensors"]:
        name = t["name"]
        if t["role"] in ("input", "inout"):
            assert re.search(rf"TensorAccessor\({name}_accessor_args", reader)
            assert re.search(rf"noc_async_read_page\([^;]*{name}_accessor", reader)
        if t["role"] in ("output", "inout"):
            assert re.search(rf"TensorAccessor\({name}_accessor_args", writer)
            assert re.search(rf"noc_async_write_page\([^;]*{name}_accessor", writer)
    assert "noc_async_read_barrier();" in reader and "noc_async_write_barrier();" in writer


def test_host_frees_inputs_before_reading_outputs(art):
    """main.cpp deallocates each input's device buffer after the run and before the outputs'
    host copies are made (the emulator gives those DRAM pages back); outputs and in-out
    tensors stay until read."""
    host = art.sources["main.cpp"]
    finish, read = host.index("Finish(cq);"), host.index("EnqueueReadMeshBuffer")
    for t in art.plan["tensors"]:
        call = f"{t['name']}_buffer->deallocate();"
        if t["role"] == "input":
            assert finish < host.index(call) < read
        else:
            assert call not in host


def test_every_output_page_written_exactly_once(art):
    plan = build_plan(art.module, pages=True)  # the page lists: on request only
    for t in plan["tensors"]:
        if t["role"] != "output":
            continue
        written = [p for core in plan["cores"] for p in core["writes"].get(t["name"], [])]
        assert sorted(written) == list(range(t["num_pages"])), t["name"]
    ids = [i for c in plan["cores"] for i in range(c["start_id"], c["start_id"] + c["count"])]
    assert sorted(ids) == list(range(plan["partition"]["num_blocks"]))
    assert len(plan["cores"]) <= plan["core_grid"][0] * plan["core_grid"][1]


def test_reads_stay_inside_inputs(art):
    plan = build_plan(art.module, pages=True)
    for t in plan["tensors"]:
        if t["role"] == "input":
            pages = [p for c in plan["cores"] for p in c["reads"].get(t["name"], [])]
            assert pages and min(pages) >= 0 and max(pages) < t["num_pages"]
            assert set(pages) == set(range(t["num_pages"]))  # every input page is used


def test_gemm_reuses_blocks_and_subblocks():
    art = tilelang_tt.compile(kernels.matmul(256, 256, 128))
    compute = art.sources["compute.cpp"]
    # the 4 K steps of one tile are one K block (CoarsenKLoopTT): A (4x4 tiles) and B (4x4
    # tiles) blocks are waited for once and reused by all 4 sub-blocks of 1x4 output tiles
    assert "cb_wait_front(A_shared_cb, 16);" in compute and "cb_wait_front(B_shared_cb, 16);" in compute
    assert compute.count("tile_regs_acquire();") == 1
    assert "for (uint32_t sb_m = 0; sb_m < 4; ++sb_m)" in compute
    # one K block: no partials at all, each sub-block packed straight into the output block
    assert "C_local_partials" not in compute and "pack_tile<true>(" in compute
    cbs = {c["name"]: c for c in art.plan["circular_buffers"]}
    assert cbs["A_shared"]["depth"] == 3 and cbs["A_shared"]["num_pages"] == 48


def test_num_stages_sets_cb_depth():
    for stages in (1, 2, 4):
        art = tilelang_tt.compile(kernels.matmul(128, 128, 128, 64, 64, 32, num_stages=stages),
                                  pass_configs={"tt.k_coarsen": False})
        cbs = {c["name"]: c for c in art.plan["circular_buffers"]}
        assert cbs["A_shared"]["depth"] == stages and cbs["B_shared"]["depth"] == stages
        assert f"CircularBufferConfig({2 * stages * 2048}," in art.sources["main.cpp"]


def test_blackhole_uses_its_grid():
    art = tilelang_tt.compile(kernels.elementwise_add(32 * 12, 32 * 12), target="tenstorrent/blackhole")
    assert art.plan["target"] == "blackhole" and art.plan["core_grid"] == [13, 10]
    assert len(art.plan["cores"]) == 130


def test_save_writes_project(tmp_path):
    art = tilelang_tt.compile(kernels.elementwise_add(64, 64))
    out = art.save(tmp_path / "proj")
    assert sorted(p.name for p in out.iterdir()) == sorted(art.sources)
    cmake = (out / "CMakeLists.txt").read_text()
    assert "find_package(TTMock" in cmake and "find_package(Metalium" in cmake
    assert "TT_METAL_HOME" in cmake


def test_plan_lists_no_pages_unless_asked():
    """The plan describes per-core work ranges and buffers; the page lists (which take time
    proportional to the problem) are built only on request."""
    art = tilelang_tt.compile(kernels.matmul(256, 256, 128))
    # (plus each core's multicast roles: test_multicast.py)
    assert all(set(c) - {"mcast"} == {"core", "start_id", "count"} for c in art.plan["cores"])
    assert "reads" not in art.sources["tt.plan.json"]
