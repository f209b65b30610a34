"""L1 aliasing: circular buffers whose lifetimes do not overlap share one L1 region.

Automatic (D6 PlanL1AliasTT over the compute kernel's intermediates) and explicit
(``T.annotate_l1_alias`` with ``T.shared`` / ``T.distinct`` groups), the spec's compile-time
errors, and the emulator's check that two CBs of one region never hold pages at once."""

import re

import numpy as np
import pytest

import kernels
import tilelang_tt
import tilelang_tt.language as T
from helpers import as_f32, rand
from tilelang_tt import Artifact, TTRuntimeError
from tilelang_tt.errors import TTAliasError, TTCompileError

M, N = 64, 64


def regions(art) -> dict:
    return {r["name"]: r for r in art.plan["l1"]["regions"]}


def cb_ids(art) -> dict:
    return {cb["name"]: cb["id"] for cb in art.plan["circular_buffers"]}


# ---- automatic -------------------------------------------------------------------------------

def test_layernorm_intermediates_share_l1():
    art = tilelang_tt.compile(kernels.layernorm(M, 256, 32, "float32"), out_idx=-1)
    l1 = art.plan["l1"]
    ring = {cb["name"]: cb["num_pages"] * cb["page_bytes"] for cb in art.plan["circular_buffers"]}
    assert l1["cb_bytes_unaliased"] == sum(ring.values())
    # the row statistics pair up (three regions of two 8 KiB CBs); D2 (x - mean)^2, dead once
    # var is reduced, shares its L1 with a row sum (the row vectors broadcast from their CBs:
    # no block of them is made)
    assert l1["saved_bytes"] == 3 * 8 * 1024 and len(l1["regions"]) == 3
    assert any("D2" in r["names"] for r in l1["regions"])
    assert l1["cb_bytes"] == l1["cb_bytes_unaliased"] - l1["saved_bytes"]
    assert l1["saved_bytes"] == sum(r["saved_bytes"] for r in l1["regions"])
    by_name = {cb["name"]: cb for cb in art.plan["circular_buffers"]}
    for r in l1["regions"]:
        assert r["source"] == "auto" and len(r["cbs"]) >= 2
        assert r["bytes"] == max(ring[n] for n in r["names"])
        for n in r["names"]:  # only compute -> compute buffers share
            assert by_name[n]["role"] == "intermediate" and by_name[n]["region"] == r["name"]
    assert "region" not in by_name["X_s"] and "region" not in by_name["Y_s"]
    # the host configures one CB region per group: one CircularBufferConfig, several indices
    host = art.sources["main.cpp"]
    for r in l1["regions"]:
        entries = "".join(f"{{tt::CBIndex::c_{c}, tt::DataFormat::Float32}}, " for c in r["cbs"])
        assert f"CircularBufferConfig({r['bytes']}, {{{entries[:-2]}}})" in host
    x = (rand((M, 256), "float32", 71) * 3 + 1).astype(np.float32)
    xf = x.astype(np.float64)
    ref = (xf - xf.mean(axis=1, keepdims=True)) / np.sqrt(xf.var(axis=1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(as_f32(art(x)), ref, atol=5e-3, rtol=5e-3)


def test_layernorm_fits_l1_only_with_aliasing():
    # 56 fp32 tiles per row: X_s, Y_s and D2 of 448 KiB each and the row statistics need
    # 1388 KiB of CBs, over a Wormhole core's 1364 KiB; sharing the statistics' L1 brings it to
    # 1364 KiB (without aliasing, D6.1 would single-buffer D2 instead: test_l1_fit.py)
    N = 56 * 32
    with pytest.raises(tilelang_tt.TTResourceError, match=r"circular buffers need 1388 KiB of "
                                                          r"L1 but a wormhole_b0 core has 1364"):
        tilelang_tt.compile(kernels.layernorm(32, N, 32, "float32"), out_idx=-1,
                            pass_configs={"tt.l1_alias": False, "tt.l1_fit": False})
    art = tilelang_tt.compile(kernels.layernorm(32, N, 32, "float32"), out_idx=-1)
    l1 = art.plan["l1"]
    assert l1["cb_bytes_unaliased"] == 1388 * 1024 and l1["cb_bytes"] <= 1364 * 1024
    x = (rand((32, N), "float32", 5) * 3 + 1).astype(np.float32)
    xf = x.astype(np.float64)
    ref = (xf - xf.mean(axis=1, keepdims=True)) / np.sqrt(xf.var(axis=1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(as_f32(art(x)), ref, atol=5e-3, rtol=5e-3)


def test_softmax_row_statistics_share_l1():
    art = tilelang_tt.compile(kernels.softmax(96, 128, 32, "bfloat16"), out_idx=-1)
    (r,) = art.plan["l1"]["regions"]
    # the row max is popped once E is computed; the reciprocal of the row sum comes later
    assert set(r["names"]) == {"row_max", "row_sum_0"} and r["saved_bytes"] == 4096
    x = rand((96, 128), "bfloat16", 50, scale=2.0)
    xf = as_f32(x).astype(np.float64)
    e = np.exp(xf - xf.max(axis=1, keepdims=True))
    np.testing.assert_allclose(as_f32(art(x)), e / e.sum(axis=1, keepdims=True),
                               atol=4e-3, rtol=2e-2)


def test_flash_attention_intermediates_share_l1():
    import ml_dtypes

    import flash_attention as fa

    batch, heads, seq_len, dim = 1, 2, 128, 64
    art = tilelang_tt.compile(fa.flashattn(batch, heads, seq_len, dim, False, 32, 32),
                              out_idx=-1)
    l1 = art.plan["l1"]
    assert l1["saved_bytes"] >= l1["cb_bytes_unaliased"] // 3
    by_id = {cb["id"]: cb for cb in art.plan["circular_buffers"]}
    shared = {c for r in l1["regions"] for c in r["cbs"]}
    # the running max, sum and output (carried by the K/V loop) keep their own L1
    for c in shared:
        assert by_id[c]["role"] == "intermediate"
    carried = [cb for cb in by_id.values() if cb["role"] == "intermediate" and cb["id"] not in
               shared and cb["name"] in ("scores_max", "logsum", "acc_o")]
    assert len(carried) == 3
    rng = np.random.default_rng(7)
    q, k, v = [rng.standard_normal((batch * heads * seq_len, dim)).astype(ml_dtypes.bfloat16)
               for _ in range(3)]
    ref = fa.reference(q, k, v, batch, heads, seq_len, dim, False)
    np.testing.assert_allclose(as_f32(art(q, k, v)), as_f32(ref), rtol=1e-2, atol=1e-2)


def test_gemm_operands_and_results_never_share():
    # every CB of a GEMM is filled by the reader or drained by the writer
    art = tilelang_tt.compile(kernels.matmul(64, 64, 64, 32, 32, 32), out_idx=-1)
    assert art.plan["l1"]["regions"] == [] and art.plan["l1"]["saved_bytes"] == 0


# ---- explicit specs --------------------------------------------------------------------------

def chain(spec=None, size=None):
    """X * 2 -> exp -> + 1 -> * 0.5 through the block buffers A, B, C: A and C are never live
    together, B overlaps both."""

    @T.prim_func
    def k(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(M // 32) as bx:
            X_s = T.alloc_shared((32, N), "float32")
            A = T.alloc_fragment((32, N), "float32")
            B = T.alloc_fragment((32, N), "float32")
            C = T.alloc_fragment((32, N), "float32")
            Y_s = T.alloc_shared((32, N), "float32")
            if spec == "ok":
                T.annotate_l1_alias(T.distinct(B, T.shared(A, C)), size=size, name="chain")
            elif spec == "overlap":
                T.annotate_l1_alias(T.shared(A, B))
            elif spec == "reader":
                T.annotate_l1_alias(T.shared(X_s, C))
            elif spec == "tensor":
                T.annotate_l1_alias(T.shared(A, X))
            elif spec == "nesting":
                T.annotate_l1_alias(T.shared(A, T.shared(B, C)))
            elif spec == "single":
                T.annotate_l1_alias(T.shared(A))
            elif spec == "twice":
                T.annotate_l1_alias(T.shared(A, C))
                T.annotate_l1_alias(T.shared(C, Y_s))
            elif spec == "small":
                T.annotate_l1_alias(T.shared(A, C), size=size)
            T.copy(X[bx * 32, 0], X_s)
            for i, j in T.Parallel(32, N):
                A[i, j] = X_s[i, j] * 2.0
            for i, j in T.Parallel(32, N):
                B[i, j] = T.exp(A[i, j])
            for i, j in T.Parallel(32, N):
                C[i, j] = B[i, j] + 1.0
            for i, j in T.Parallel(32, N):
                Y_s[i, j] = C[i, j] * 0.5
            T.copy(Y_s, Y[bx * 32, 0])

    return k


RING = 2 * 2 * 4096  # 1 x 2 fp32 tiles, depth 2


def chain_ref(x):
    return (np.exp(x.astype(np.float64) * 2.0) + 1.0) * 0.5


def test_automatic_regions_in_the_chain():
    art = tilelang_tt.compile(chain(), out_idx=-1)
    (r,) = art.plan["l1"]["regions"]
    assert set(r["names"]) == {"A", "C"} and r["bytes"] == RING and r["source"] == "auto"


@pytest.mark.parametrize("size", [None, 2 * RING])
def test_explicit_spec_realised_as_one_region(size):
    art = tilelang_tt.compile(chain("ok", size), out_idx=-1)
    (r,) = art.plan["l1"]["regions"]
    assert r["name"] == "chain" and r["source"] == "spec"
    assert set(r["names"]) == {"A", "C"} and r["bytes"] == RING
    assert art.plan["l1"]["saved_bytes"] == RING
    ids = cb_ids(art)
    assert sorted(r["cbs"]) == sorted([ids["A"], ids["C"]])
    x = rand((M, N), "float32", 3)
    np.testing.assert_allclose(as_f32(art(x)), chain_ref(x), rtol=2e-3, atol=2e-3)


def test_member_that_does_not_fit_a_sized_spec():
    with pytest.raises(TTAliasError, match=r"buffer [AC] does not fit L1 alias spec alias0: it "
                                           rf"needs {RING} bytes .* holds 8192 bytes"):
        tilelang_tt.compile(chain("small", 8192), out_idx=-1)


def test_sized_spec_smaller_than_its_regions():
    with pytest.raises(TTAliasError, match=rf"chain holds {RING} bytes but its members need "
                                           rf"{2 * RING} bytes"):
        tilelang_tt.compile(chain("ok", RING), out_idx=-1)


def test_overlapping_lifetimes_named():
    with pytest.raises(TTAliasError, match=r"between A and B, but their lifetimes overlap "
                                           r"\(B is first used before .* last use of A") as info:
        tilelang_tt.compile(chain("overlap"), out_idx=-1)
    # the message quotes the annotation's line
    assert re.search(r"test_l1_alias\.py:\d+ `T\.annotate_l1_alias\(T\.shared\(A, B\)\)`",
                     str(info.value))


def test_reader_filled_buffer_cannot_share():
    with pytest.raises(TTAliasError, match=r"between X_s and C.*X_s may hold pages at any "
                                           r"time: the reader kernel fills it"):
        tilelang_tt.compile(chain("reader"), out_idx=-1)


def test_group_mixing_memory_kinds_tensor():
    with pytest.raises(TTAliasError, match=r"mixes memory kinds: A \(L1 circular buffers\) "
                                           r"with X \(DRAM\)"):
        tilelang_tt.compile(chain("tensor"), out_idx=-1)


def test_group_mixing_memory_kinds_accumulator():
    @T.prim_func
    def mm(A: T.Tensor((64, 64), "bfloat16"), B: T.Tensor((64, 64), "bfloat16"),
           C: T.Tensor((64, 64), "bfloat16")):
        with T.Kernel(2, 2) as (bx, by):
            A_s = T.alloc_shared((32, 32), "bfloat16")
            B_s = T.alloc_shared((32, 32), "bfloat16")
            C_l = T.alloc_fragment((32, 32), "float32")
            T.annotate_l1_alias(T.distinct(A_s, C_l))
            T.clear(C_l)
            for k in T.Pipelined(2, num_stages=2):
                T.copy(A[by * 32, k * 32], A_s)
                T.copy(B[k * 32, bx * 32], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * 32, bx * 32])

    with pytest.raises(TTAliasError, match=r"mixes memory kinds: A_s \(L1 circular buffers\) "
                                           r"with C_l \(DST\)"):
        tilelang_tt.compile(mm, out_idx=-1)


@pytest.mark.parametrize("spec,message", [
    ("nesting", r"bad nesting of L1 reuse groups: a shared group inside a shared group"),
    ("single", r"has 1 member\(s\); a reuse group relates two or more"),
    ("twice", r"buffer C appears twice in L1 alias specs"),
])
def test_spec_errors_at_parse_time(spec, message):
    with pytest.raises(TTAliasError, match=message):
        chain(spec)


def test_spec_survives_the_tvmscript_round_trip():
    func = chain("ok", 2 * RING)
    spec = func.attrs["tt.l1_alias_request"][0]
    assert spec["name"] == "chain" and int(spec["size"]) == 2 * RING
    tree = spec["group"]
    assert tree["kind"] == "distinct" and tree["members"][0] == "B"
    assert tree["members"][1]["kind"] == "shared" and list(tree["members"][1]["members"]) == ["A", "C"]


# ---- the emulator: CBs of one region never hold pages at the same time -----------------------

def test_emulator_rejects_live_pages_in_two_cbs_of_a_region():
    art = tilelang_tt.compile(chain(), out_idx=-1)
    src = art.sources["compute.cpp"]
    pop_a = re.search(r"\n\s*cb_pop_front\(A_cb, \d+\);", src).group(0)
    # A's block is freed only at the end of the work unit, after C (its region) took pages
    faulty = src.replace(pop_a, "", 1)
    last = faulty.rindex("cb_pop_front(")
    end = faulty.index(";", last) + 1
    faulty = faulty[:end] + pop_a + faulty[end:]
    sources = dict(art.sources)
    sources["compute.cpp"] = faulty
    bad = Artifact(sources=sources, plan=art.plan, module=art.module, out_idx=art.out_idx)
    with pytest.raises(TTRuntimeError) as info:
        bad(rand((M, N), "float32", 3))
    msg = str(info.value)
    ids = cb_ids(art)
    assert f"cb_reserve_back(cb={ids['C']}" in msg and "compute.cpp" in msg
    assert re.search(r"core \(?\d+\s*,\s*\d+\)?", msg)
    assert (f"CB {ids['C']} shares its L1 region with CB {ids['A']}" in msg
            and "pushed by compute.cpp (compute kernel)" in msg)


# ---- lifetimes, from hand-written compute IR -------------------------------------------------

LIFETIMES = '''
@T.prim_func
def k_compute():
    T.func_attr({"global_symbol": "k_compute"})
    a: T.let[T.int32] = T.tt.alloc_cb(24, 1, 1, 2, "float32", "a")
    b: T.let[T.int32] = T.tt.alloc_cb(25, 1, 1, 2, "float32", "b")
    c: T.let[T.int32] = T.tt.alloc_cb(26, 1, 1, 2, "float32", "c")
    d: T.let[T.int32] = T.tt.alloc_cb(27, 1, 1, 2, "float32", "d")
    with T.attr({"tt.persistent_body": 4}):
        T.tt.cb_reserve_back(a, 1)
        T.tt.cb_push_back(a, 1)
        T.tt.cb_reserve_back(b, 1)
        T.tt.cb_push_back(b, 1)
        T.tt.cb_wait_front(b, 1)
        for i in range(4):
            T.tt.cb_wait_front(a, 1)
            T.tt.cb_pop_front(a, 1)
            T.tt.cb_reserve_back(a, 1)
            T.tt.cb_push_back(a, 1)
            T.tt.cb_reserve_back(c, 1)
            T.tt.cb_push_back(c, 1)
            T.tt.cb_wait_front(c, 1)
            T.tt.copy_tile(b, 0, 0)
            T.tt.cb_pop_front(c, 1)
        T.tt.cb_wait_front(a, 1)
        T.tt.cb_pop_front(a, 1)
        T.tt.cb_pop_front(b, 1)
        T.tt.cb_reserve_back(d, 1)
        T.tt.cb_push_back(d, 1)
        T.tt.cb_wait_front(d, 1)
        T.tt.cb_pop_front(d, 1)
'''


def test_lifetimes_of_loops_and_carries():
    import tvm
    from tvm import tirx

    from tilelang_tt import ops
    from tilelang_tt.passes.common import collect, split_persistent
    from tilelang_tt.passes.compute.l1_alias import _Uses, _overlap

    func = tvm.script.from_source(LIFETIMES)
    cb_vars = {b.var: int(b.value.args[0]) for b in collect(func.body, tirx.Bind)
               if ops.tt_op_name(b.value) == "tt.alloc_cb"}
    uses = _Uses(split_persistent(func.body)[1].body, cb_vars)
    life = {cid: uses.lifetime(cid) for cid in (24, 25, 26, 27)}
    (loop,) = uses.loops
    assert life[24][1] and not any(life[c][1] for c in (25, 26, 27))  # the loop carries a
    assert life[25][0][0] < loop[0] and life[25][0][1] > loop[1]  # b: read inside, popped after
    assert loop[0] <= life[26][0][0] and life[26][0][1] <= loop[1]  # c: within one iteration
    assert _overlap(life[25][0], life[26][0]) and not _overlap(life[26][0], life[27][0])
    assert not _overlap(life[25][0], life[27][0])
