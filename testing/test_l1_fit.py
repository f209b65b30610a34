"""Circular buffers over L1: D6.1 FitL1TT single-buffers them, largest saving first, until they
fit, and says so (``TTPerformanceWarning``, the plan's ``l1.single_buffered``); kernels that
fit are untouched; when even single buffering does not fit, F refuses naming every CB.

Results are checked against numpy on the emulator, whose CB model blocks a reserve on a full
ring and reports a deadlock when no kernel can go on."""

import warnings

import numpy as np
import pytest

import kernels
import tilelang_tt
from helpers import as_f32, assert_matmul, rand
from tilelang_tt import TTPerformanceWarning, TTResourceError
from tilelang_tt.passes.compute.l1_fit import single_bufferable
from tilelang_tt.passes.verify.verify_ttir import all_cbs, kernels_of
from test_gqa_bwd import gqa_bwd, gqa_reference
from test_multicast import tilelang_gemm

NO_FIT = {"tt.l1_fit": False}


def depths(art) -> dict:
    return {cb["name"]: cb["depth"] for cb in art.plan["circular_buffers"]}


def test_gemm_fits_only_single_buffered():
    # 256x512 blocks, K blocks of 128: A 128 KiB and B 256 KiB double-buffered, the bf16 output
    # block 256 KiB x 2 and the fp32 partials 512 KiB: 1408 KiB > 1364 KiB; the output ring
    # single-buffered (the largest saving) makes 1152 KiB
    M, N, K = 256, 512, 256
    with pytest.raises(TTResourceError, match=r"circular buffers need 1408 KiB of L1 but a "
                                              r"wormhole_b0 core has 1364 KiB usable: A_shared"):
        tilelang_tt.compile(kernels.matmul(M, N, K, 256, 512, 128, num_stages=2), out_idx=-1,
                            pass_configs=NO_FIT)
    with pytest.warns(TTPerformanceWarning, match=r"gemm: single-buffered C_local_out to fit L1 "
                                                  r"\(256 KiB saved"):
        art = tilelang_tt.compile(kernels.matmul(M, N, K, 256, 512, 128, num_stages=2),
                                  out_idx=-1)
    l1 = art.plan["l1"]
    assert l1["single_buffered"] == [{"name": "C_local_out", "cb": 16, "depth": 2,
                                      "saved_bytes": 256 * 1024}]
    assert l1["cb_bytes"] == 1152 * 1024
    assert depths(art) == {"A_shared": 2, "B_shared": 2, "C_local_out": 1, "C_local_partials": 1}
    out = next(cb for cb in art.plan["circular_buffers"] if cb["name"] == "C_local_out")
    assert out["num_pages"] == 8 * 16  # one 8x16-tile block
    a, b = rand((M, K), "bfloat16", 1), rand((K, N), "bfloat16", 2)
    assert_matmul(art(a, b), a, b, art)


def test_fp32_gemm_fits_with_b_single_buffered():
    # fp32 128x512 blocks: B's ring and the output's save 256 KiB each; the first of equals
    # (B, the lower CB index) is single-buffered and the CBs fit (1152 KiB)
    M, N, K = 128, 512, 256
    kern = kernels.matmul(M, N, K, 128, 512, 128, dtype="float32", accum_dtype="float32",
                          num_stages=2)
    with pytest.warns(TTPerformanceWarning, match="single-buffered B_shared to fit L1"):
        art = tilelang_tt.compile(kern, out_idx=-1)
    assert [f["name"] for f in art.plan["l1"]["single_buffered"]] == ["B_shared"]
    assert art.plan["l1"]["cb_bytes"] == 1152 * 1024
    assert depths(art)["B_shared"] == 1 and depths(art)["A_shared"] == 2
    a, b = rand((M, K), "float32", 3), rand((K, N), "float32", 4)
    assert_matmul(art(a, b), a, b, art)


def test_layernorm_intermediates_single_buffered_without_aliasing():
    # 56 fp32 tiles per row need 1388 KiB of CBs unshared; without tt.l1_alias the compute
    # kernel's own intermediates (pushed and popped by it alone) are single-buffered instead
    N = 56 * 32
    with pytest.raises(TTResourceError, match="1388 KiB"):
        tilelang_tt.compile(kernels.layernorm(32, N, 32, "float32"), out_idx=-1,
                            pass_configs={"tt.l1_alias": False, "tt.l1_fit": False})
    with pytest.warns(TTPerformanceWarning, match="single-buffered"):
        art = tilelang_tt.compile(kernels.layernorm(32, N, 32, "float32"), out_idx=-1,
                                  pass_configs={"tt.l1_alias": False})
    l1 = art.plan["l1"]
    # D2 = (x - mean)^2, the compute kernel's own: chosen before X_s / Y_s of equal size (a
    # second block of an intermediate overlaps nothing)
    assert l1["regions"] == [] and l1["cb_bytes"] == 1164 * 1024
    assert [f["name"] for f in l1["single_buffered"]] == ["D2"]
    assert depths(art)["X_s"] == 2 and depths(art)["Y_s"] == 2
    roles = {cb["name"]: cb["role"] for cb in art.plan["circular_buffers"]}
    assert roles["D2"] == "intermediate"
    x = (rand((32, N), "float32", 5) * 3 + 1).astype(np.float32)
    xf = x.astype(np.float64)
    ref = (xf - xf.mean(axis=1, keepdims=True)) / np.sqrt(xf.var(axis=1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(as_f32(art(x)), ref, atol=5e-3, rtol=5e-3)


def test_l1_shard_plus_single_buffered_cbs():
    # A's one L1 shard (1280 KiB) leaves 84 KiB: the three 32 KiB double-buffered CBs (A's
    # blocks read from the shard, B's and C's) do not fit; with A's single-buffered (the first
    # of equals) they take 80 KiB
    M, N = 2560, 256
    func = kernels.elementwise_add_shared(M, N, block_M=32, block_N=256)
    func = tilelang_tt.annotate_tt_layout(func, {"A": {"memory": "L1", "layout": "sharded",
                                                      "shard_grid": [1, 1]}})
    with pytest.warns(TTPerformanceWarning, match="single-buffered"):
        art = tilelang_tt.compile(func, out_idx=-1)
    assert [f["name"] for f in art.plan["l1"]["single_buffered"]] == ["A_shared"]
    assert art.plan["l1"]["cb_bytes"] == 80 * 1024
    assert depths(art) == {"A_shared": 1, "B_shared": 2, "C_shared": 2}
    a, b = rand((M, N), "bfloat16", 7), rand((M, N), "bfloat16", 8)
    np.testing.assert_allclose(as_f32(art(a, b)), as_f32(a) + as_f32(b), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("causal", [False, True])
def test_gqa_backward_at_the_examples_blocks(causal):
    # TileLang's example_gqa_bwd blocks (block_M 128, block_N 32, dims 192 / 128): its CBs need
    # more than L1 double-buffered; single-buffered -- the compute kernel's own buffers first,
    # then the atomics' read-modify-write blocks and K / V -- they fit, and dQ / dK / dV match.
    # Causal: 33 CBs, which D5.2 first gives 27 indices (docs/SUPPORT.md "More than 32 circular
    # buffers"), then D6.1 single-buffers the shared rings as any other
    B, H, G, S, DQK, DV, bm, bn = 1, 4, 2, 128, 192, 128, 128, 32
    kern = gqa_bwd.get_tir(B, H, S, DQK, DV, bm, bn, G, causal)
    rng = np.random.default_rng(3)
    q = rng.standard_normal((B, S, H, DQK)).astype(np.float16)
    k = rng.standard_normal((B, S, H // G, DQK)).astype(np.float16)
    v = rng.standard_normal((B, S, H // G, DV)).astype(np.float16)
    do = rng.standard_normal((B, S, H, DV)).astype(np.float16)
    lse, delta, dq_ref, dk_ref, dv_ref = gqa_reference(q, k, v, do, G, causal)
    dq = np.zeros((B, S, H, DQK), np.float32)
    dk = np.zeros((B, S, H // G, DQK), np.float32)
    dv = np.zeros((B, S, H // G, DV), np.float32)
    with pytest.warns(TTPerformanceWarning, match=r"single-buffered .*dK_atomic \(\d versions\)"):
        art = tilelang_tt.compile(kern)
    assert causal == any("shared" in cb for cb in art.plan["circular_buffers"])
    l1 = art.plan["l1"]
    assert l1["cb_bytes"] <= 1364 * 1024 and len(l1["single_buffered"]) > 1
    # double-buffered they need more than L1 (what a compile with tt.l1_fit off refuses, as
    # the GEMM and layernorm tests above check; each step's saving undone gives that need)
    assert l1["cb_bytes"] + sum(f["saved_bytes"] for f in l1["single_buffered"]) > 1364 * 1024
    roles = {cb["id"]: cb["role"] for cb in art.plan["circular_buffers"]}  # (versions share names)
    first_cross = next(i for i, f in enumerate(l1["single_buffered"])
                       if roles[f["cb"]] != "intermediate")
    assert all(roles[f["cb"]] != "intermediate" for f in l1["single_buffered"][first_cross:])
    art(q, k, v, do, lse.astype(np.float32), delta.astype(np.float32), dq, dk, dv)
    for got, want in ((dq, dq_ref), (dk, dk_ref), (dv, dv_ref)):
        np.testing.assert_allclose(got, want, rtol=1e-2, atol=2e-2)


def test_refused_when_single_buffering_is_not_enough():
    # fp32 256x512 blocks with K blocks of 256: 1792 KiB even with every ring of one block
    kern = kernels.matmul(256, 512, 1024, 256, 512, 256, dtype="float32",
                          accum_dtype="float32", num_stages=2)
    with pytest.raises(TTResourceError, match=r"circular buffers need 1792 KiB .*C_local_out "
                                              r"512 KiB \(8x16 tiles x 1\).*\(already "
                                              r"single-buffered to fit: B_shared, C_local_out, A_shared\)"):
        tilelang_tt.compile(kern, out_idx=-1)


def test_multicast_operands_keep_their_rings():
    # a 4x4 grid of 128x256 blocks with K blocks of 1024: A and B are multicast along core
    # rows / columns; with one block of ring a sender would reserve a block its multicast may
    # still be reading, so they keep two and the kernel is refused saying why; without
    # multicast B's ring (1024 KiB, the larger) is single-buffered and it runs
    M, N, K = 512, 1024, 1024
    with pytest.raises(TTResourceError, match=r"(?s)circular buffers need 1600 KiB .*already "
                       r"single-buffered to fit: C_shared\); A_shared keeps its 2 blocks: the "
                       r"reader kernel's protocol needs a second block \(a multicast.*"
                       r"tt.multicast': False"):
        tilelang_tt.compile(tilelang_gemm(M, N, K, 128, 256, 1024), out_idx=-1)
    with pytest.warns(TTPerformanceWarning, match="single-buffered"):
        art = tilelang_tt.compile(tilelang_gemm(M, N, K, 128, 256, 1024), out_idx=-1,
                                  pass_configs={"tt.multicast": False})
    assert art.plan["multicast"]["groups"] == []
    assert [f["name"] for f in art.plan["l1"]["single_buffered"]] == ["B_shared"]
    assert depths(art) == {"A_shared": 2, "B_shared": 1, "C_shared": 2}
    a, b = rand((M, K), "bfloat16", 3), rand((N, K), "bfloat16", 4)
    ref = as_f32(a).astype(np.float64) @ as_f32(b).astype(np.float64).T
    np.testing.assert_allclose(as_f32(art(a, b)), ref, rtol=2e-2, atol=1.0)


def test_gemm_partials_are_not_single_buffered():
    # the fp32 partials CB is pushed and popped by the compute kernel under K-step branches:
    # its occupancy is not bounded per path, so it keeps its ring
    mod = tilelang_tt.lower(kernels.matmul(256, 512, 256, 256, 512, 128, num_stages=2),
                            stop_after="D6")
    ks = kernels_of(mod)
    verdict = {e["name"]: single_bufferable(ks, e) for e in all_cbs(ks)}
    assert verdict["A_shared"] and verdict["B_shared"] and verdict["C_local_out"]
    assert not verdict["C_local_partials"]


@pytest.mark.parametrize("make", [
    lambda: kernels.matmul(256, 256, 256),
    lambda: kernels.layernorm(64, 256, 32, "float32"),
    lambda: kernels.softmax(64, 256),
])
def test_fitting_kernels_are_byte_identical(make):
    with warnings.catch_warnings():
        warnings.simplefilter("error", TTPerformanceWarning)
        art = tilelang_tt.compile(make(), out_idx=-1)
    ref = tilelang_tt.compile(make(), out_idx=-1, pass_configs=NO_FIT)
    assert "single_buffered" not in art.plan["l1"]
    assert art.sources.keys() == ref.sources.keys()
    for name, text in ref.sources.items():
        assert art.sources[name] == text, name


def test_l1_fit_option_is_checked():
    with pytest.raises(tilelang_tt.TTCompileError, match="tt.l1_fit"):
        tilelang_tt.compile(kernels.matmul(64, 64, 64), out_idx=-1,
                            pass_configs={"tt.l1_fit": 1})
