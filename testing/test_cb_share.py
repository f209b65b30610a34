"""More circular buffers than a core's 32: D5.2 ShareCBIdsTT gives the compute kernel's
intermediates whose lifetimes do not overlap one CB index; VerifyTTIR checks the shared
indices again, and the emulator (one FIFO per index) runs the result.

Results are checked against numpy on the emulator."""

import logging

import numpy as np
import pytest

import tilelang_tt
import tilelang_tt.language as T
from tilelang_tt import TTResourceError
from tilelang_tt.errors import TTVerifyError
from tilelang_tt.passes.compute import cb_share
from tilelang_tt.passes.dataflow.tile_dfg import share_key
from tilelang_tt.passes.verify.verify_ttir import kernels_of


def stacked_softmax(M, N, block_M, stages, tail=False):
    """``stages`` row softmaxes one after the other (TileLang's softmax idiom in a macro), each
    stage scaled by 4: every call writes new versions (A0.4) of ``x``, ``m``, ``e`` and ``s``,
    so each stage has four circular buffers of its own.  ``tail``: the result is then
    ``exp(x) + 2 x + (x + 1)``, three blocks of one kind alive at once."""

    @T.macro
    def softmax_rows(x, m, e, s):
        T.reduce_max(x, m, dim=1, clear=True)
        for i, j in T.Parallel(block_M, N):
            e[i, j] = T.exp(x[i, j] - m[i])
        T.reduce_sum(e, s, dim=1)
        for i, j in T.Parallel(block_M, N):
            x[i, j] = e[i, j] * 4.0 / s[i]

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            x = T.alloc_fragment((block_M, N), "float32")
            e = T.alloc_fragment((block_M, N), "float32")
            m = T.alloc_fragment((block_M,), "float32")
            s = T.alloc_fragment((block_M,), "float32")
            T.copy(A[bx * block_M, 0], x)
            softmax_rows(x, m, e, s)
            if stages > 1:
                softmax_rows(x, m, e, s)
            if stages > 2:
                softmax_rows(x, m, e, s)
            if stages > 3:
                softmax_rows(x, m, e, s)
            if stages > 4:
                softmax_rows(x, m, e, s)
            if stages > 5:
                softmax_rows(x, m, e, s)
            if stages > 6:
                softmax_rows(x, m, e, s)
            if stages > 7:
                softmax_rows(x, m, e, s)
            if stages > 8:
                softmax_rows(x, m, e, s)
            if tail:
                a = T.alloc_fragment((block_M, N), "float32")
                b = T.alloc_fragment((block_M, N), "float32")
                d = T.alloc_fragment((block_M, N), "float32")
                for i, j in T.Parallel(block_M, N):
                    a[i, j] = T.exp(x[i, j])
                for i, j in T.Parallel(block_M, N):
                    b[i, j] = x[i, j] * 2.0
                for i, j in T.Parallel(block_M, N):
                    d[i, j] = x[i, j] + 1.0
                for i, j in T.Parallel(block_M, N):
                    x[i, j] = a[i, j] + b[i, j] + d[i, j]
            T.copy(x, B[bx * block_M, 0])

    return main


def stacked_reference(a, stages, tail=False):
    x = a.astype(np.float64)
    for _ in range(stages):
        e = np.exp(x - x.max(1, keepdims=True))
        x = e * 4.0 / e.sum(1, keepdims=True)
    return np.exp(x) + 2 * x + (x + 1) if tail else x


def compute_allocs(art) -> int:
    """How many circular buffers the compute kernel allocates (several may share an index)."""
    return art.sources["compute.cpp"].count("constexpr uint32_t")


def test_stacked_softmax_over_32_cbs_shares_indices(caplog):
    M, N, stages = 64, 64, 9
    with caplog.at_level(logging.INFO, logger="tilelang_tt"):
        art = tilelang_tt.compile(stacked_softmax(M, N, 32, stages), out_idx=-1)
    cbs = art.plan["circular_buffers"]
    shared = [cb for cb in cbs if "shared" in cb]
    # four CBs per stage: more than a core's 32 before sharing, at most 32 indices after
    assert sum(len(cb["shared"]) for cb in shared) + len(cbs) - len(shared) > 32
    assert len(cbs) <= 32 and all(cb["id"] < 32 for cb in cbs)
    assert compute_allocs(art) > 32
    assert all(cb["role"] == "intermediate" for cb in shared)
    table = kernels_of(art.module)["compute"].attrs["tt.cb_share"]
    assert sorted(int(t["cb"]) for t in table) == sorted(cb["id"] for cb in shared)
    assert any("circular buffers share" in r.getMessage() for r in caplog.records)
    a = np.random.default_rng(0).standard_normal((M, N)).astype(np.float32)
    b = art(a)
    np.testing.assert_allclose(b, stacked_reference(a, stages), rtol=2e-2, atol=2e-3)


def test_kernels_within_32_cbs_are_not_shared():
    art = tilelang_tt.compile(stacked_softmax(64, 64, 32, 2), out_idx=-1)
    assert not any("shared" in cb for cb in art.plan["circular_buffers"])
    assert "tt.cb_share" not in kernels_of(art.module)["compute"].attrs
    assert compute_allocs(art) == len(art.plan["circular_buffers"])


def _share_by_kind(compute, entries, why_not):
    """A deliberately wrong sharing: every intermediate of one kind (format, page size, block
    shape, unpacked to DST or not) in one index, whatever their lifetimes."""
    fp32 = {int(c) for c in compute.attrs["tt.compute_config"]["unpack_to_dest_fp32"]}
    groups = {}
    for e in entries:
        groups.setdefault(share_key(e) + (int(e["id"]) in fp32,), []).append(e)
    return list(groups.values())


def test_wrong_sharing_is_refused_by_the_verifier(monkeypatch):
    monkeypatch.setattr(cb_share, "_groups", _share_by_kind)
    with pytest.raises(TTVerifyError, match=r"share an index unsafely:\n  CB \d+ is shared by "
                                            r"\w+ and \w+, whose lifetimes in the compute kernel "
                                            r"overlap"):
        tilelang_tt.compile(stacked_softmax(64, 64, 32, 9), out_idx=-1)


def test_wrong_sharing_is_caught_by_the_emulator(monkeypatch):
    # the verifier's check off: a, b, d and x (one kind, alive at once) in one ring of 2 blocks
    monkeypatch.setattr(cb_share, "_groups", _share_by_kind)
    monkeypatch.setattr(cb_share, "share_problems", lambda kernels: [])
    art = tilelang_tt.compile(stacked_softmax(64, 64, 32, 9, tail=True), out_idx=-1)
    assert ["x", "a", "b", "d"] in [cb.get("shared") for cb in art.plan["circular_buffers"]]
    a = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    with pytest.raises(tilelang_tt.TTRuntimeError, match=r"TT-MOCK ERROR: deadlock(?s:.*)compute "
                                                         r"kernel\): blocked in cb_reserve_back"):
        art(a)


def test_tail_kernel_runs_when_shared_correctly():
    art = tilelang_tt.compile(stacked_softmax(64, 64, 32, 9, tail=True), out_idx=-1)
    assert not any(set(cb.get("shared", [])) & {"a", "b", "d"}
                   for cb in art.plan["circular_buffers"])
    a = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    np.testing.assert_allclose(art(a), stacked_reference(a, 9, tail=True), rtol=2e-2, atol=2e-3)


def test_still_over_32_is_refused_naming_the_cbs(monkeypatch):
    def nothing_shares(func, cb_vars):
        return {}, {v: "a loop carries its value from one iteration to the next"
                    for v in cb_vars}

    monkeypatch.setattr(cb_share, "lifetimes", nothing_shares)
    with pytest.raises(TTResourceError, match=r"the kernel needs \d+ circular buffers; a Tensix "
                                              r"core has 32, and \d+ remain when .*: x \(\d+ "
                                              r"versions\), .*not shared: .*m \(9 versions: "
                                              r"a loop carries"):
        tilelang_tt.compile(stacked_softmax(64, 64, 32, 9), out_idx=-1)


def test_sharing_from_parsed_ir_and_its_output_parses_back():
    """D5.2 from the text of its input gives the module it gives from the module itself, and
    its output prints and parses back to the same module (TT_DUMP_IR's dumps)."""
    import tvm
    import tvm_ffi

    from tilelang_tt.passes.common import run_pass

    mod = tilelang_tt.lower(stacked_softmax(64, 64, 32, 9), stop_after="D5.1")
    out = run_pass(cb_share.ShareCBIdsTT, mod)
    parsed = run_pass(cb_share.ShareCBIdsTT, tvm.script.from_source(mod.script()))
    assert tvm_ffi.structural_equal(parsed, out)
    assert tvm_ffi.structural_equal(tvm.script.from_source(out.script()), out)
    assert not cb_share.share_problems(kernels_of(out))
    # m's versions, e's, s's, x's (float32 maxima on the vector engine: x's versions all
    # unpacked straight to DST, so they share), and m with the sum's scaler
    assert len(kernels_of(out)["compute"].attrs["tt.cb_share"]) == 5
