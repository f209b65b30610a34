"""Multicast reuse (D2.1 PlanMulticastTT): a block the cores of a core row / column read at the
same step is read from DRAM once and multicast; the handshake is checked by F and by the
emulator; ``pass_configs={"tt.multicast": False}`` and unmet conditions fall back to plain reads."""

import re

import numpy as np
import pytest
from tvm import tirx

import tilelang_tt
import tilelang_tt.language as T
from helpers import BF16, rand
from tilelang_tt import Artifact, TTRuntimeError, attrs, ops
from tilelang_tt.passes.analysis.protocol import protocol_problems
from tilelang_tt.passes.common import tt_map
from tilelang_tt.target import profile_of


def tilelang_gemm(M, N, K, block_M, block_N, block_K):
    """TileLang's GEMM idiom (B stored (N, K), transpose_B, output staged through shared)."""

    @T.prim_func
    def gemm(A: T.Tensor((M, K), "bfloat16"), B: T.Tensor((N, K), "bfloat16"),
             C: T.Tensor((M, N), "bfloat16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "bfloat16")
            B_shared = T.alloc_shared((block_N, block_K), "bfloat16")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            C_shared = T.alloc_shared((block_M, block_N), "bfloat16")
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[bx * block_N, ko * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C_shared)
            T.copy(C_shared, C[by * block_M, bx * block_N])

    return gemm


# 8 x 8 blocks on the 8 x 8 cores: one block per core, A shared along core rows, B along columns
SIZE, BLOCK, BLOCK_K = 256, 32, 64


@pytest.fixture(scope="module")
def mcast():
    return tilelang_tt.compile(tilelang_gemm(SIZE, SIZE, SIZE, BLOCK, BLOCK, BLOCK_K), out_idx=-1)


@pytest.fixture(scope="module")
def inputs():
    return rand((SIZE, SIZE), "bfloat16", 1), rand((SIZE, SIZE), "bfloat16", 2)


def _reference(a, b):
    return a.astype(np.float32) @ b.astype(np.float32).T


def _check(c, a, b):
    ref = _reference(a, b)
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=2e-2, atol=2e-2 * np.abs(ref).max())


def test_gemm_reads_each_block_once_and_multicasts_it(mcast, inputs):
    plan = mcast.plan["multicast"]
    assert plan["semaphores"] == 4
    assert [(g["tensor"], g["axis"], g["receivers"]) for g in plan["groups"]] == [
        ("A", "x", 7), ("B", "y", 7)]
    assert mcast.sources["main.cpp"].count("CreateSemaphore(program, cores, 0)") == 4
    reader = mcast.sources["reader.cpp"]
    assert reader.count("noc_async_write_multicast(") == 2
    a, b = inputs
    c = mcast(a, b)
    _check(c, a, b)
    total = mcast.last_run_stats["total"]
    # K steps after A0.5 merged them into K blocks (one multicast per K block)
    steps = int(mcast.module["gemm_reader"].attrs[attrs.K_COARSEN][0]["steps"])
    assert total["multicasts"] == 2 * 8 * steps  # 8 senders per operand, one block per K step
    assert total["dram_bytes_read"] == a.nbytes + b.nbytes  # every tile read once


def test_disabled_multicast_reads_per_core_with_the_same_result(mcast, inputs):
    plain = tilelang_tt.compile(tilelang_gemm(SIZE, SIZE, SIZE, BLOCK, BLOCK, BLOCK_K),
                                out_idx=-1, pass_configs={"tt.multicast": False})
    assert plain.plan["multicast"] == {"semaphores": 0, "groups": []}
    assert list(plain.module["gemm_reader"].attrs["tt.partition"]["tile"]) == []
    assert "multicast" not in plain.sources["reader.cpp"]
    assert "CreateSemaphore" not in plain.sources["main.cpp"]
    a, b = inputs
    c = plain(a, b)
    np.testing.assert_array_equal(c.view(np.uint16), mcast(a, b).view(np.uint16))
    total = plain.last_run_stats["total"]
    assert total["multicasts"] == 0
    assert total["dram_bytes_read"] == 8 * (a.nbytes + b.nbytes)


def test_a_rectangle_of_blocks_per_core_multicasts_both_operands():
    # 16 x 16 blocks on 8 x 8 cores: B1 gives each core a 2 x 2 rectangle walked in one order,
    # so a core row shares `by` and a column `bx` at every step (contiguous ranges would not)
    art = tilelang_tt.compile(tilelang_gemm(512, 512, 64, 32, 32, 32), out_idx=-1)
    partition = art.module["gemm_reader"].attrs["tt.partition"]
    assert [int(v) for v in partition["tile"]] == [2, 2, 8, 8]
    assert [(g["tensor"], g["axis"], g["receivers"]) for g in art.plan["multicast"]["groups"]] \
        == [("A", "x", 7), ("B", "y", 7)]
    a, b = rand((512, 64), "bfloat16", 3), rand((512, 64), "bfloat16", 4)
    c = art(a, b)
    _check(c, a, b)
    total = art.last_run_stats["total"]
    steps = int(art.module["gemm_reader"].attrs[attrs.K_COARSEN][0]["steps"])  # after A0.5
    assert total["multicasts"] == 2 * 8 * 4 * steps  # 8 senders per operand, 4 blocks
    # each A block is read once per block column of a core's rectangle (2), B's per row (2)
    assert total["dram_bytes_read"] == 2 * (a.nbytes + b.nbytes)


def test_fallbacks():
    # 12 x 1 blocks: 8 x 1 cores take blocks 0..11 in contiguous ranges (12 does not tile the
    # 8 cores of a row): A's block is shared by the cores whose ranges hold one `by`... none
    # here (by = 0 for all, but two blocks on some cores: groups of unequal work), B's by none
    art = tilelang_tt.compile(tilelang_gemm(32, 384, 64, 32, 32, 64), out_idx=-1)
    assert art.plan["multicast"]["groups"] == []

    # elementwise: no two cores read the same block
    @T.prim_func
    def add(A: T.Tensor((256, 256), "bfloat16"), B: T.Tensor((256, 256), "bfloat16"),
            C: T.Tensor((256, 256), "bfloat16")):
        with T.Kernel(8, 8) as (bx, by):
            for i, j in T.Parallel(32, 32):
                C[by * 32 + i, bx * 32 + j] = A[by * 32 + i, bx * 32 + j] + B[by * 32 + i, bx * 32 + j]

    assert tilelang_tt.compile(add, out_idx=-1).plan["multicast"]["groups"] == []


def test_bad_pass_config():
    with pytest.raises(tilelang_tt.TTCompileError, match="tt.multicast"):
        tilelang_tt.compile(tilelang_gemm(SIZE, SIZE, SIZE, BLOCK, BLOCK, BLOCK_K),
                            pass_configs={"tt.multicast": "yes"})


def _reader(mod):
    return next(f for gv, f in mod.functions.items() if gv.name_hint.endswith("_reader"))


def _drop(func, name, nth):
    """``func`` without the ``nth`` call of op ``name`` (in walk order)."""
    seen = []

    def on_eval(ev):
        if ops.tt_op_name(ev.value) == name:
            seen.append(ev)
            if len(seen) - 1 == nth:
                return tirx.Evaluate(tirx.IntImm("int32", 0))
        return ev

    return func.with_body(tt_map(func.body, [(tirx.Evaluate, on_eval)], order="pre"))


@pytest.mark.parametrize("name, nth, message", [
    # the receiver's wait for A's `valid` (after the senders' waits for A's and B's `ready`)
    ("tt.noc_semaphore_wait", 2, "before noc_semaphore_wait: the multicast data may not have"),
    # the sender's wait for `ready`
    ("tt.noc_semaphore_wait", 0, "without a noc_semaphore_wait for the receivers"),
    # the barrier completing the previous step's multicasts: the ring (2 blocks) wraps onto
    # blocks still being multicast
    ("tt.noc_async_write_barrier", 0, "multicast(s) may still be reading its blocks"),
    # the barrier at the end of the work unit
    ("tt.noc_async_write_barrier", 1, "1 multicast block(s) of A_shared_cb not waited for"),
])
def test_protocol_checker_rejects_a_broken_handshake(mcast, name, nth, message):
    reader = _reader(mcast.module)
    profile = profile_of("wormhole_b0")
    assert protocol_problems(reader, profile) == []
    problems = protocol_problems(_drop(reader, name, nth), profile)
    assert any(message in p for p in problems), problems


def test_emulator_rejects_a_receiver_that_pushes_before_the_data(mcast, inputs):
    # the receivers wait for the data only after pushing the block to the compute kernel
    src = mcast.sources["reader.cpp"]
    waits = ""
    for name in ("A", "B"):
        wait = (f"noc_semaphore_wait(reinterpret_cast<volatile tt_l1_ptr uint32_t*>"
                f"({name}_shared_valid), 1);")
        assert wait in src
        src = src.replace(wait, "")
        waits += f" if ({name}_shared_sender == 0) {{ {wait} }}"
    push = re.search(r"cb_push_back\(B_shared_cb, \d+\);", src).group(0)
    sources = dict(mcast.sources, **{"reader.cpp": src.replace(push, push + waits)})
    faulty = Artifact(sources=sources, plan=mcast.plan, module=mcast.module, out_idx=mcast.out_idx)
    with pytest.raises(TTRuntimeError, match="does not hold reserved"):
        faulty(*inputs)


def test_multicast_only_where_it_pays():
    # the decision is the timing model's: DRAM cycles the receivers' copies cost against the
    # multicast leg they wait for (PlanMulticastTT.multicast_pays, the profile's NOC / DRAM)
    from tilelang_tt.passes.protocol.multicast import multicast_cost, multicast_pays

    wh = profile_of("wormhole_b0")
    # the GEMM above: a 4 KB+ block to 7 receivers in each of 8 core rows pays
    assert multicast_pays(wh, 32 * 64 * 2, 7, 8)
    # one 8 KB K block per head shared by two cores (flash attention, 2 heads): it does not
    saved, handshake = multicast_cost(wh, 64 * 64 * 2, 1, 2)
    assert saved < handshake and not multicast_pays(wh, 64 * 64 * 2, 1, 2)
    # 8 KB to 7 receivers in 8 rows would pay, but not into a single-buffered CB (flash
    # attention's K / V at num_stages=1: every read is on the step's critical path)
    assert multicast_pays(wh, 64 * 64 * 2, 7, 8) and not multicast_pays(wh, 64 * 64 * 2, 7, 8, 1)

    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    from flash_attention_4d import flashattn_bhsd

    # non-causal flash attention, 1 x 2 x 128 x 64 in 64 x 64 blocks: K / V blocks are shared
    # by the two cores of a head (block_sharing finds the groups) but stay per-core reads
    # (both rules decline them)
    art = tilelang_tt.compile(flashattn_bhsd(1, 2, 128, 64, block_M=64, block_N=64,
                                             is_causal=False), out_idx=[3])
    assert art.plan["multicast"]["groups"] == []
    assert "multicast" not in next(s for n, s in art.sources.items() if n.startswith("reader"))
    # ... while the GEMM keeps both (test_gemm_reads_each_block_once_and_multicasts_it runs it)
    gemm = tilelang_tt.compile(tilelang_gemm(SIZE, SIZE, SIZE, BLOCK, BLOCK, BLOCK_K), out_idx=-1)
    assert [g["tensor"] for g in gemm.plan["multicast"]["groups"]] == ["A", "B"]


def test_profile_figures_match_the_timing_model():
    # the compiler's NOC / DRAM figures are the emulator's (timing.hpp defaults: Wormhole;
    # timing.cpp blackhole_p150)
    from pathlib import Path
    src = Path(tilelang_tt.__file__).resolve().parent / "runtime" / "mock" / "src"
    hpp, cpp = (src / "timing.hpp").read_text(), (src / "timing.cpp").read_text()
    fields = ("noc_latency", "noc_bytes_per_cycle", "mcast_latency", "mcast_per_dest",
              "mcast_occupancy_dests", "dram_bank_bytes_per_cycle", "dram_banks")
    for field in fields:
        wh = float(re.search(rf"\b{field} = ([\d.]+);", hpp).group(1))
        assert getattr(profile_of("wormhole_b0"), field) == wh, field
        m = re.search(rf"p\.{field} = ([\d.]+);", cpp)
        bh = float(m.group(1)) if m else wh
        assert getattr(profile_of("blackhole"), field) == bh, field
