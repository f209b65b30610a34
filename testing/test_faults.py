"""Faults injected into *generated* sources are diagnosed by the emulator, naming the core,
kernel, circular buffer and call - and a deadlock is reported in seconds, not hung on."""

import re
import time

import pytest

pytest.importorskip("tilelang_tt.runtime.mockbuild", reason="emulator driver not installed")

import kernels
import tilelang_tt
from helpers import rand
from tilelang_tt import Artifact, TTRuntimeError


@pytest.fixture(scope="module")
def gemm():
    # one K tile per step and per-core reads: the faults below edit that protocol's calls
    return tilelang_tt.compile(kernels.matmul(128, 128, 128, 64, 64, 32), out_idx=-1,
                               pass_configs={"tt.k_coarsen": False, "tt.multicast": False})


def inject(art, fname, old, new, count=1):
    src = art.sources[fname]
    assert old in src, f"{old!r} not in {fname}"
    sources = dict(art.sources)
    sources[fname] = src.replace(old, new, count)
    return Artifact(sources=sources, plan=art.plan, module=art.module, out_idx=art.out_idx)


def run_fault(art):
    a, b = rand((128, 128), "bfloat16", 1), rand((128, 128), "bfloat16", 2)
    t0 = time.perf_counter()
    with pytest.raises(TTRuntimeError) as info:
        art(a, b)
    return str(info.value), time.perf_counter() - t0


def names_core(msg):
    return re.search(r"core \(?\d+\s*,\s*\d+\)?", msg)


def test_dropped_push_deadlocks_with_diagnosis(gemm):
    faulty = inject(gemm, "reader.cpp", "cb_push_back(B_shared_cb, 2);", "")
    msg, _ = run_fault(faulty)
    assert "deadlock" in msg.lower()
    assert "cb_wait_front" in msg and "compute.cpp" in msg and names_core(msg)
    assert re.search(r"\b1\b", msg)  # B_shared is CB 1

    # time the diagnosis itself (the build is cached by now)
    from tilelang_tt.runtime import mockbuild

    project = faulty.project_dir()
    exe = mockbuild.build_host(project / "main.cpp", project)
    args = [str(project / f"in{i}.bin") for i in range(3)]
    for p, t in zip(args, faulty.tensors):
        rand(tuple(t["shape"]), "bfloat16").tofile(p)
    t0 = time.perf_counter()
    with pytest.raises(mockbuild.MockRuntimeError):
        mockbuild.run_host(exe, args)
    assert time.perf_counter() - t0 < 10


def test_swapped_cb_index(gemm):
    # the reader pushes B's pages to A's CB: A gets pushed more than it reserved
    faulty = inject(gemm, "reader.cpp", "cb_push_back(B_shared_cb, 2);",
                    "cb_push_back(A_shared_cb, 2);")
    msg, _ = run_fault(faulty)
    assert "cb_push_back" in msg and "reader.cpp" in msg and names_core(msg)


def test_missing_read_barrier(gemm):
    faulty = inject(gemm, "reader.cpp", "noc_async_read_barrier();", "")
    msg, _ = run_fault(faulty)
    assert "barrier" in msg and "reader.cpp" in msg and names_core(msg)


def test_missing_write_barrier(gemm):
    faulty = inject(gemm, "writer.cpp", "noc_async_write_barrier();", "")
    msg, _ = run_fault(faulty)
    assert "barrier" in msg and "writer.cpp" in msg and names_core(msg)


def test_extra_tile_regs_acquire(gemm):
    faulty = inject(gemm, "compute.cpp", "tile_regs_acquire();",
                    "tile_regs_acquire();\n    tile_regs_acquire();")
    msg, _ = run_fault(faulty)
    assert "tile_regs_acquire" in msg and "compute.cpp" in msg and names_core(msg)


def test_pop_more_than_waited(gemm):
    faulty = inject(gemm, "compute.cpp", "cb_pop_front(A_shared_cb, 2);",
                    "cb_pop_front(A_shared_cb, 3);")
    msg, _ = run_fault(faulty)
    assert "cb_pop_front" in msg and "compute.cpp" in msg and names_core(msg)


@pytest.fixture(scope="module")
def add128():
    # 128x128 bf16 blocks: 16 tiles per block, 8 per DST acquire in 16-bit half-sync mode
    return tilelang_tt.compile(kernels.elementwise_add(128, 128, 128, 128), out_idx=-1)


def run_add(art):
    a, b = rand((128, 128), "bfloat16", 1), rand((128, 128), "bfloat16", 2)
    with pytest.raises(TTRuntimeError) as info:
        art(a, b)
    return str(info.value)


def test_dst_overflow_for_the_mode(add128):
    # with fp32 accumulation DST holds 4 tiles per acquire; the kernel uses 8
    faulty = inject(add128, "main.cpp", ".fp32_dest_acc_en = false", ".fp32_dest_acc_en = true")
    msg = run_add(faulty)
    assert "DST index 4" in msg and "holds 4 tiles" in msg and "compute.cpp" in msg


def test_l1_over_capacity(add128):
    faulty = inject(add128, "main.cpp", "CircularBufferConfig(65536,",
                    "CircularBufferConfig(2097152,")
    msg = run_add(faulty)
    assert "L1 over capacity on core (0,0)" in msg and "c_0" in msg


def test_too_many_runtime_args(add128):
    faulty = inject(add128, "main.cpp", "SetRuntimeArgs(program, compute, core, {w.start_id, w.count});",
                    "SetRuntimeArgs(program, compute, core, std::vector<uint32_t>(400, 0u));")
    assert "at most 341" in run_add(faulty)


def test_kernel_that_does_not_compile_is_reported(add128):
    faulty = inject(add128, "compute.cpp", "tile_regs_commit();", "tile_regs_commit(1);")
    msg = run_add(faulty)
    assert "compute.cpp (compute kernel) does not compile" in msg and "tile_regs_commit" in msg


def test_matrix_engine_reading_an_unpack_to_dest_cb():
    art = tilelang_tt.compile(kernels.softmax(64, 128, 32, "float32"), out_idx=-1)
    x_s = next(c["id"] for c in art.plan["circular_buffers"] if c["name"] == "X_s")
    line = ("std::vector<tt::tt_metal::UnpackToDestMode> unpack_to_dest(NUM_CIRCULAR_BUFFERS, "
            "tt::tt_metal::UnpackToDestMode::Default);")
    faulty = inject(art, "main.cpp", line,
                    line + f"\n    unpack_to_dest[{x_s}] = tt::tt_metal::UnpackToDestMode::UnpackToDestFp32;")
    with pytest.raises(TTRuntimeError) as info:
        faulty(rand((64, 128), "float32", 3))
    msg = str(info.value)
    # float32's max runs on the vector engine; the broadcast subtraction reads X_s as SrcA
    assert "UnpackToDestFp32" in msg and "sub_tiles_bcast" in msg and f"CB {x_s}" in msg
    assert "compute" in msg and names_core(msg)


# --- patterns undefined on hardware (the emulator refuses them; they used to run) -------------
def test_block_straddling_the_ring_end(gemm):
    # A_shared gets a 3-page ring for 2-page blocks: the second block would run past the ring
    faulty = inject(gemm, "main.cpp", "CircularBufferConfig(12288, {{tt::CBIndex::c_0,",
                    "CircularBufferConfig(6144, {{tt::CBIndex::c_0,")
    msg, _ = run_fault(faulty)
    assert "straddles the end of CB 0's 3-page ring" in msg
    assert "cb_reserve_back(cb=0, 2)" in msg and "reader.cpp" in msg and names_core(msg)


def test_accessor_page_past_the_buffer_end(gemm):
    # A has 16 pages; page 16 + i would land in the next buffer (B) of the same bank
    faulty = inject(gemm, "reader.cpp", "noc_async_read_page((((by * 8) + (r * 4)) + k), A_accessor",
                    "noc_async_read_page((((by * 8) + (r * 4)) + k + 16), A_accessor")
    msg, _ = run_fault(faulty)
    assert "has 16 pages of 2048 bytes" in msg and "outside its pages" in msg
    assert "reader.cpp" in msg and names_core(msg)


def test_noc_read_running_into_the_next_buffer(gemm):
    # a 2-page read from A's last page in bank 0 runs into B, allocated right after A
    faulty = inject(gemm, "reader.cpp", "noc_async_read_page((((by * 8) + (r * 4)) + k), A_accessor, ((r * 2048) + A_shared_l1));",
                    "noc_async_read(A_accessor.get_noc_addr(12), A_shared_l1, 4096);")
    msg, _ = run_fault(faulty)
    assert "run past the pages of the buffer" in msg and "DRAM bank 0" in msg
    assert "noc_async_read" in msg and "reader.cpp" in msg and names_core(msg)


def test_dram_read_off_the_alignment(gemm):
    # a partial read of a page (get_noc_addr(page, offset)) must keep DRAM's 32-byte alignment
    faulty = inject(gemm, "reader.cpp", "noc_async_read_page((((by * 8) + (r * 4)) + k), A_accessor, ((r * 2048) + A_shared_l1));",
                    "noc_async_read(A_accessor.get_noc_addr((((by * 8) + (r * 4)) + k), 16), ((r * 2048) + A_shared_l1), 32);")
    msg, _ = run_fault(faulty)
    assert "must be 32-byte aligned" in msg and "noc_async_read" in msg
    assert "reader.cpp" in msg and names_core(msg)


def test_dram_read_of_a_face_row_pair_half_on_blackhole(gemm):
    # 32 bytes at offset 32 of a page (a bfloat16 face row) again after the whole page: fine on
    # Wormhole (32-byte DRAM reads), refused on Blackhole (NOC_DRAM_READ_ALIGNMENT_BYTES 64)
    old = "noc_async_read_page((((by * 8) + (r * 4)) + k), A_accessor, ((r * 2048) + A_shared_l1));"
    faulty = inject(gemm, "reader.cpp", old, old + "\n            noc_async_read(A_accessor.get_noc_addr("
                    "(((by * 8) + (r * 4)) + k), 32), ((r * 2048) + A_shared_l1 + 32), 32);")
    a, b = rand((128, 128), "bfloat16", 1), rand((128, 128), "bfloat16", 2)
    ref = a.astype("float32") @ b.astype("float32")
    assert abs(faulty(a, b).astype("float32") - ref).max() < 0.5
    with pytest.raises(TTRuntimeError) as info:
        faulty.run(a, b, arch="blackhole")
    msg = str(info.value)
    assert "must be 64-byte aligned (Blackhole's DRAM read alignment)" in msg
    assert "noc_async_read" in msg and "reader.cpp" in msg and names_core(msg)


def test_cb_page_size_not_the_tile_size(gemm):
    faulty = inject(gemm, "main.cpp", "set_page_size(tt::CBIndex::c_0, 2048)",
                    "set_page_size(tt::CBIndex::c_0, 1024)")
    msg, _ = run_fault(faulty)
    assert "CB 0 has 1024-byte pages" in msg and "Float16_b has 2048-byte tiles" in msg
    assert "compute.cpp" in msg and names_core(msg)


def test_pages_left_in_a_cb_name_the_pusher(gemm):
    faulty = inject(gemm, "writer.cpp", "cb_pop_front(C_local_out_cb, 4);", "")
    msg, _ = run_fault(faulty)
    assert "4 unconsumed page(s) in CB 16 on core (0,0)" in msg
    assert "compute.cpp (compute kernel) pushed 4 page(s)" in msg and "cb_push_back(cb=16, 4)" in msg


def test_push_larger_than_the_reservation(gemm):
    faulty = inject(gemm, "reader.cpp", "cb_push_back(A_shared_cb, 2);", "cb_push_back(A_shared_cb, 3);")
    msg, _ = run_fault(faulty)
    assert "pushes 3 pages to CB 0 but only 2 were reserved" in msg
    assert "cb_push_back(cb=0, 3)" in msg and "reader.cpp" in msg and names_core(msg)
