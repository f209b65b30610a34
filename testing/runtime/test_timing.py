"""Modelled device time (docs/MOCK.md, "Modelled device time") against Tenstorrent's published
measurements, each within +-15%, from kernels run on the emulator:

* matrix engine: 16 / 32 / 48 / 64 cycles per 32x32x32 tile product for LoFi / HiFi2 / HiFi3 /
  HiFi4 (tt-metal tech_reports/GEMM_FLOPS/GEMM_FLOPS.md);
* DRAM: 267 GB/s with one reader per bank on a Wormhole's 12 banks
  (tech_reports/Saturating_DRAM_bandwidth); 64 cores reading interleaved pages stay below it;
* NOC: the latency of one core reading N transfers of S bytes from another core's L1
  (tt-metal noc_latencies.yaml, Wormhole, noc_index 1 rows);

and never a time below the physical roofs (FLOPs / peak, DRAM bytes / spec bandwidth).
"""

import tempfile
from pathlib import Path

import numpy as np
import pytest

from tilelang_tt.runtime import mockbuild

PROGRAM = Path(__file__).resolve().parent / "programs" / "timing"


@pytest.fixture(scope="module")
def exe():
    return mockbuild.build_host(PROGRAM / "main.cpp", PROGRAM)


def device(exe, *args, dev=None):
    stats = mockbuild.run_host(exe, [str(a) for a in args], device=dev).stats
    return stats["device"]


def within(value, reference, tol=0.15):
    return abs(value - reference) <= tol * reference


@pytest.mark.parametrize("fidelity,cycles", [("LoFi", 16), ("HiFi2", 32), ("HiFi3", 48),
                                             ("HiFi4", 64)])
def test_matrix_engine_cycles_per_tile(exe, fidelity, cycles):
    short, long = (device(exe, "matmul", fidelity, n)["cycles"] for n in (8, 72))
    per_tile = (long - short) / 64
    assert within(per_tile, cycles), (fidelity, per_tile)


def test_dram_one_reader_per_bank(exe):
    # 12 readers, reader i reads only bank i, 256 pages of 2 KB each, kept in flight (the
    # report's readers keep a block in flight with transaction ids)
    d = device(exe, "dram", 12, 256, 256, "bank")
    assert within(d["dram_gbps"], 267.0), d["dram_gbps"]
    assert d["bound"] == "DRAM"


def test_dram_single_bank_reader(exe):
    # noc_latencies.yaml (Wormhole, DRAM, noc_index 1): 256 reads of 2 KB in 23840 cycles
    d = device(exe, "dram", 1, 256, 256, "bank")
    assert within(d["cycles"], 23840), d["cycles"]


def test_dram_64_cores_interleaved(exe):
    # every core reads pages round-robin over all banks: the banks, not the readers, limit it
    d = device(exe, "dram", 64, 48, 48, "interleaved")
    one_per_bank = device(exe, "dram", 12, 256, 256, "bank")["dram_gbps"]
    assert d["dram_gbps"] <= one_per_bank * 1.001
    assert within(d["dram_gbps"], 267.0), d["dram_gbps"]


# noc_latencies.yaml, Wormhole, num_subordinates 0, noc_index 1: cycles by transfer size
NOC_SIZES = [64, 256, 1024, 2048, 8192, 65536]
NOC_LATENCY = {1: [293, 301, 333, 366, 581, 2589],
               16: [587, 587, 899, 1460, 4883, 36836],
               256: [6674, 6674, 9770, 18803, 73634, 584620]}


@pytest.mark.parametrize("n", sorted(NOC_LATENCY))
def test_noc_latency_curve(exe, n):
    for size, ref in zip(NOC_SIZES, NOC_LATENCY[n]):
        if n * size > 65536:  # the receiving ring holds 64 KB
            continue
        got = device(exe, "noc", n, size)["cycles"]
        assert within(got, ref), (n, size, got, ref)


def test_devices(exe):
    wh = device(exe, "dram", 12, 64, 8, "bank", dev="n300")
    assert wh["profile"] == "n300" and wh["clock_ghz"] == 1.0
    with pytest.raises(mockbuild.MockRuntimeError, match="p150.*blackhole"):
        device(exe, "dram", 12, 64, 8, "bank", dev="p150")
    with pytest.raises(mockbuild.MockRuntimeError, match="unknown TT_MOCK_DEVICE"):
        device(exe, "dram", 12, 64, 8, "bank", dev="n999")


def roofs_hold(dev, matmul_tiles, fidelity_phases):
    """The modelled time is never below FLOPs / peak or DRAM bytes / spec bandwidth."""
    ns = dev["device_time_ns"]
    ideal_matmul_ns = matmul_tiles * 16 * fidelity_phases / dev["grid_cores"] / dev["clock_ghz"]
    assert ns >= ideal_matmul_ns * 0.999, (ns, ideal_matmul_ns)
    assert ns >= dev["dram_bytes"] / dev["dram_spec_gbps"] * 0.999, (ns, dev["dram_bytes"])
    assert 0 <= dev["matrix_engine_utilization"] <= 1 and 0 <= dev["dram_utilization"] <= 1


@pytest.mark.parametrize("kernel", ["elementwise_add", "gemm"])
def test_model_never_beats_the_roofs(kernel):
    import sys
    import tilelang_tt
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    import kernels

    if kernel == "gemm":
        art = tilelang_tt.compile(kernels.matmul(256, 256, 256, 64, 64, 32), out_idx=-1,
                                  pass_configs={"tt.math_fidelity": "LoFi"})
        phases = 1
    else:
        art = tilelang_tt.compile(kernels.elementwise_add(512, 512), out_idx=-1)
        phases = 1
    ins = [np.ones(t["shape"], dtype=np.float32) for t in art.tensors if t["role"] == "input"]
    art.run(*ins)
    stats = art.last_run_stats
    roofs_hold(stats["device"], stats["total"]["tile_ops"].get("matmul", 0), phases)


def test_calibration_runs_never_beat_the_roofs(exe):
    for args, tiles, phases in [(("matmul", "LoFi", 72), 72, 1),
                                (("dram", 12, 256, 256, "bank"), 0, 1),
                                (("dram", 64, 48, 48, "interleaved"), 0, 1)]:
        roofs_hold(device(exe, *args), tiles, phases)


def test_blackhole_p150(exe):
    # Saturating_DRAM_bandwidth_Blackhole.md: 8 readers, one per bank, 500 GB/s;
    # noc_latencies.yaml (arch 3): one 64 KB transfer in 1441 cycles
    dram = mockbuild.run_host(exe, ["dram", "8", "256", "256", "bank"], arch="blackhole").stats
    assert dram["device"]["profile"] == "p150" and dram["device"]["clock_ghz"] == 1.35
    assert within(dram["device"]["dram_gbps"], 500.0), dram["device"]["dram_gbps"]
    noc = mockbuild.run_host(exe, ["noc", "1", "65536"], arch="blackhole").stats["device"]
    assert within(noc["cycles"], 1441), noc["cycles"]


def test_reuse_multicast_matmul_matches_numpy_and_roofs():
    """benchmarks/mcast_matmul (tt-metal's reuse-multicast dataflow, the GEMM_FLOPS benchmark's
    reference kernel) on a small size: right result, and the model's time obeys the roofs."""
    import ml_dtypes

    here = Path(__file__).resolve().parents[2] / "benchmarks" / "mcast_matmul"
    prog = mockbuild.build_host(here / "main.cpp", here)
    rng = np.random.default_rng(1)
    n = 512
    a = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    with tempfile.TemporaryDirectory() as d:
        a.tofile(f"{d}/a")
        b.tofile(f"{d}/b")
        res = mockbuild.run_host(prog, [str(n), str(n), str(n), "2", "HiFi2", f"{d}/a",
                                        f"{d}/b", f"{d}/c"])
        c = np.fromfile(f"{d}/c", dtype=ml_dtypes.bfloat16).reshape(n, n).astype(np.float32)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    assert np.abs(c - ref).max() < 0.02 * np.abs(ref).max()
    total = res.stats["total"]
    assert total["multicasts"] > 0
    # A and B read from DRAM once each, C written once
    assert total["dram_bytes_read"] == 2 * n * n * 2
    roofs_hold(res.stats["device"], total["tile_ops"]["matmul"], 2)


def test_replay_between_rounds_is_the_replay_of_the_whole_log(tmp_path, monkeypatch):
    """The timing replay runs between rounds and drops what it replayed: the device section (and
    the trace) is the same as one replay over the complete logs after the run
    (TT_MOCK_REPLAY_AT_END=1), for a kernel with semaphores and multicast (benchmarks/mcast_matmul)
    and a TileLang GEMM on 8x8 cores, on two host threads, while the logs hold a part of the
    calls (cores synchronised by semaphores run in many rounds)."""
    import ml_dtypes

    import tilelang_tt
    from kernels import matmul

    here = Path(__file__).resolve().parents[2] / "benchmarks" / "mcast_matmul"
    prog = mockbuild.build_host(here / "main.cpp", here)
    rng = np.random.default_rng(3)
    n = 512
    a = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((n, n)).astype(ml_dtypes.bfloat16)
    a.tofile(tmp_path / "a")
    b.tofile(tmp_path / "b")
    m = 1024
    art = tilelang_tt.compile(matmul(m, m, m, 128, 128, 128), out_idx=-1)
    a2 = rng.standard_normal((m, m)).astype(ml_dtypes.bfloat16)
    b2 = rng.standard_normal((m, m)).astype(ml_dtypes.bfloat16)
    monkeypatch.setenv("TT_MOCK_THREADS", "2")
    runs = {}
    for at_end in ("0", "1"):
        monkeypatch.setenv("TT_MOCK_REPLAY_AT_END", at_end)
        trace = tmp_path / f"trace{at_end}.json"
        res = mockbuild.run_host(prog, [str(n), str(n), str(n), "2", "HiFi2", str(tmp_path / "a"),
                                        str(tmp_path / "b"), str(tmp_path / f"c{at_end}")],
                                 trace=str(trace))
        art(a2, b2)
        runs[at_end] = (res.stats, trace.read_text(), art.last_run_stats)
    (mc, mc_trace, tl), (mc_end, mc_trace_end, tl_end) = runs["0"], runs["1"]
    assert mc["device"] == mc_end["device"] and mc_trace == mc_trace_end
    assert tl["device"] == tl_end["device"]
    assert mc["device"]["cycles"] > 0 and tl["device"]["cycles"] > 0
    for inc, end, part in ((mc["host"], mc_end["host"], 0.5), (tl["host"], tl_end["host"], 0.75)):
        assert inc["timing_log_calls"] == end["timing_log_calls"] > 0
        assert end["timing_log_peak_calls"] == end["timing_log_calls"]
        assert inc["timing_log_peak_calls"] < part * end["timing_log_calls"]
