"""The emulator runs cores on several host threads (TT_MOCK_THREADS): outputs, counters, the
schedule and the errors it reports are the same, bit for bit, whatever the thread count."""

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tilelang_tt
import tilelang_tt.language as T
from tilelang_tt.runtime import mockbuild

PROGRAMS = Path(__file__).resolve().parent / "programs"
THREADS = (1, 2, 3)


def deterministic(stats):
    """The run statistics without the host's own figures (times, thread count)."""
    assert "host" in stats and "schedule" in stats
    return {k: v for k, v in stats.items() if k != "host"}


def gemm_relu(M, N, K, blk=64, blk_k=64):
    @T.prim_func
    def gemm_relu_kernel(A: T.Tensor((M, K), "bfloat16"), B: T.Tensor((K, N), "bfloat16"),
                         C: T.Tensor((M, N), "bfloat16"), Y: T.Tensor((M, N), "bfloat16")):
        with T.Kernel(T.ceildiv(N, blk), T.ceildiv(M, blk)) as (bx, by):
            A_s = T.alloc_shared((blk, blk_k), "bfloat16")
            B_s = T.alloc_shared((blk_k, blk), "bfloat16")
            C_s = T.alloc_shared((blk, blk), "bfloat16")
            acc = T.alloc_fragment((blk, blk), "float32")
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(K, blk_k), num_stages=2):
                T.copy(A[by * blk, ko * blk_k], A_s)
                T.copy(B[ko * blk_k, bx * blk], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(C[by * blk, bx * blk], C_s)
            for i, j in T.Parallel(blk, blk):
                acc[i, j] = T.max(acc[i, j] + C_s[i, j], 0.0)
            T.copy(acc, Y[by * blk, bx * blk])

    return gemm_relu_kernel


def test_multi_core_gemm_is_bit_identical_across_thread_counts(monkeypatch):
    # 5x4 blocks over 20 cores, with more than one K step: every core reads, computes, writes
    M, N, K = 320, 256, 192
    art = tilelang_tt.compile(gemm_relu(M, N, K), out_idx=-1)
    assert len(art.plan["cores"]) == 20
    rng = np.random.default_rng(7)
    a, b, c = (rng.standard_normal(s).astype(ml_dtypes.bfloat16)
               for s in ((M, K), (K, N), (M, N)))
    runs = []
    for n in THREADS:
        monkeypatch.setenv("TT_MOCK_THREADS", str(n))
        y = art(a, b, c)
        stats = art.last_run_stats
        assert stats["host"]["threads"] == n
        runs.append((y.view(np.uint16).copy(), deterministic(stats)))
    for y, stats in runs[1:]:
        np.testing.assert_array_equal(y, runs[0][0])
        assert stats == runs[0][1]
    ref = np.maximum(a.astype(np.float32) @ b.astype(np.float32) + c.astype(np.float32), 0)
    np.testing.assert_allclose(runs[0][0].view(ml_dtypes.bfloat16).astype(np.float32), ref,
                               rtol=2e-2, atol=2e-2 * np.abs(ref).max())
    host = art.last_run_stats["host"]
    assert host["tile_ops"] > 0 and host["overhead_ns_per_tile_op"] > 0
    assert len(host["thread_cpu_ns"]) == THREADS[-1]


def test_semaphores_and_multicast_across_thread_counts(tmp_path, monkeypatch):
    exe = mockbuild.build_host(PROGRAMS / "multicast" / "main.cpp", PROGRAMS / "multicast")
    tile = np.random.default_rng(1).standard_normal((32, 32)).astype(ml_dtypes.bfloat16)
    tile.tofile(tmp_path / "in.bin")
    seen = []
    for n in THREADS:
        monkeypatch.setenv("TT_MOCK_THREADS", str(n))
        out = tmp_path / f"out{n}.bin"
        result = mockbuild.run_host(exe, [str(tmp_path / "in.bin"), str(out)])
        seen.append((out.read_bytes(), deterministic(result.stats)))
    assert all(s == seen[0] for s in seen[1:])
    assert seen[0][1]["total"]["multicasts"] == 1


def test_deadlock_report_is_the_same_for_every_thread_count(tmp_path, monkeypatch):
    exe = mockbuild.build_host(PROGRAMS / "multicast" / "main.cpp", PROGRAMS / "multicast")
    np.zeros((32, 32), dtype=ml_dtypes.bfloat16).tofile(tmp_path / "in.bin")
    messages = []
    for n in THREADS:
        monkeypatch.setenv("TT_MOCK_THREADS", str(n))
        with pytest.raises(mockbuild.MockRuntimeError) as info:
            mockbuild.run_host(exe, [str(tmp_path / "in.bin"), str(tmp_path / "out.bin"), "4"])
        messages.append(str(info.value))
    assert "deadlock" in messages[0] and "noc_semaphore_wait" in messages[0]
    assert all(m == messages[0] for m in messages[1:])


def test_bad_thread_count_is_refused(tmp_path, monkeypatch):
    exe = mockbuild.build_host(PROGRAMS / "multicast" / "main.cpp", PROGRAMS / "multicast")
    np.zeros((32, 32), dtype=ml_dtypes.bfloat16).tofile(tmp_path / "in.bin")
    monkeypatch.setenv("TT_MOCK_THREADS", "zero")
    with pytest.raises(mockbuild.MockRuntimeError, match="TT_MOCK_THREADS"):
        mockbuild.run_host(exe, [str(tmp_path / "in.bin"), str(tmp_path / "out.bin")])


def test_protocol_error_on_every_core_reports_the_first_core(monkeypatch):
    # a push without its barrier: every core's reader fails; core (0,0) is reported, however the
    # cores were spread over the threads
    art = tilelang_tt.compile(gemm_relu(256, 256, 128), out_idx=-1)
    sources = dict(art.sources)
    assert sources["reader.cpp"].count("noc_async_read_barrier();") >= 1
    sources["reader.cpp"] = sources["reader.cpp"].replace("noc_async_read_barrier();", "")
    faulty = tilelang_tt.Artifact(sources=sources, plan=art.plan, module=art.module,
                                  out_idx=art.out_idx)
    x = np.zeros((256, 256), dtype=ml_dtypes.bfloat16)
    x128 = np.zeros((256, 128), dtype=ml_dtypes.bfloat16)
    messages = []
    for n in THREADS:
        monkeypatch.setenv("TT_MOCK_THREADS", str(n))
        with pytest.raises(tilelang_tt.TTRuntimeError) as info:
            faulty(x128, x128.T.copy(), x)
        messages.append(str(info.value))
    assert "core (0,0)" in messages[0] and "noc_async_read_barrier" in messages[0]
    assert all(m == messages[0] for m in messages[1:])


def test_large_tensor_host_copies_are_the_same_on_every_thread_count(monkeypatch):
    # 4 MB tensors: tilize / untilize and the buffer writes and reads run in parts on the host
    # threads (A DRAM-sharded, B and C interleaved); C = A + 0 must come back as A
    import kernels

    func = tilelang_tt.annotate_tt_layout(
        kernels.elementwise_add_shared(2048, 1024),
        {"A": {"memory": "DRAM", "layout": "sharded", "shard_grid": [4, 1]}})
    art = tilelang_tt.compile(func, out_idx=-1)
    a = np.random.default_rng(3).standard_normal((2048, 1024)).astype(ml_dtypes.bfloat16)
    b = np.zeros_like(a)
    for n in THREADS:
        monkeypatch.setenv("TT_MOCK_THREADS", str(n))
        np.testing.assert_array_equal(art(a, b).view(np.uint16), a.view(np.uint16))


@pytest.mark.parametrize("threads", THREADS)
def test_tilize_of_a_large_matrix_on_every_thread_count(tmp_path, monkeypatch, threads):
    # 1056 x 1024 float32 (4.3 MB): tilize_nfaces / untilize_nfaces copy rows of tiles in parts
    monkeypatch.setenv("TT_MOCK_THREADS", str(threads))
    exe = mockbuild.build_host(PROGRAMS / "tilize" / "main.cpp", PROGRAMS / "tilize")
    rows, cols = 1056, 1024
    x = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    x.tofile(tmp_path / "in.bin")
    mockbuild.run_host(exe, [str(rows), str(cols), str(tmp_path / "in.bin"),
                             str(tmp_path / "tiled.bin"), str(tmp_path / "back.bin")])
    # tiles row-major, each as four 16x16 faces (TL, TR, BL, BR)
    faces = x.reshape(rows // 32, 2, 16, cols // 32, 2, 16).transpose(0, 3, 1, 4, 2, 5).ravel()
    np.testing.assert_array_equal(np.fromfile(tmp_path / "tiled.bin", dtype=np.float32), faces)
    np.testing.assert_array_equal(np.fromfile(tmp_path / "back.bin", dtype=np.float32), x.ravel())


def test_overlapping_writes_of_a_round_land_in_core_order(tmp_path, monkeypatch):
    # two cores write the same L1 bytes of a third core and the same DRAM page in one round: the
    # round's effects do not commute, so they are applied in core order (core (2,0)'s last)
    # whatever the thread count; the statistics count that round
    exe = mockbuild.build_host(PROGRAMS / "overlap" / "main.cpp", PROGRAMS / "overlap")
    for n in THREADS:
        monkeypatch.setenv("TT_MOCK_THREADS", str(n))
        result = mockbuild.run_host(exe, [str(tmp_path / "out.bin")])
        out = np.fromfile(tmp_path / "out.bin", dtype=np.uint16)
        assert out.size == 2048 and (out == 2).all()
        assert result.stats["host"]["overlapping_rounds"] >= 1


def test_a_gemm_round_s_copies_commute(monkeypatch):
    # the multicast GEMM's rounds queue copies to distinct bytes: none is applied in order
    monkeypatch.setenv("TT_MOCK_THREADS", "2")
    art = tilelang_tt.compile(gemm_relu(512, 512, 128), out_idx=-1)
    assert len(art.plan["cores"]) == 64
    zeros = [np.zeros(s, dtype=ml_dtypes.bfloat16) for s in ((512, 128), (128, 512), (512, 512))]
    art(*zeros)
    assert art.last_run_stats["total"]["multicasts"] > 0
    assert art.last_run_stats["host"]["overlapping_rounds"] == 0
