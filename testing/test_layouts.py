"""Layout requests (A1), partitioning from layouts (B1/B2) and the plan's record of them."""

import functools

import pytest

import kernels
import tilelang_tt
from tilelang_tt import attrs
from tilelang_tt.passes.common import to_py

L1H = {"memory": "L1", "layout": "sharded", "shard_grid": [4, 1]}


def lowered(func, layouts, stage="B2"):
    func = tilelang_tt.annotate_tt_layout(func, layouts)
    (f,) = tilelang_tt.lower(func, "tenstorrent", stop_after=stage).functions.values()
    return f


def layout(func, layouts, name):
    f = lowered(func, layouts, "A1")
    return next(d for d in to_py(f.attrs[attrs.LAYOUT_DESC]) if d["name"] == name)


def partition(func, layouts):
    return to_py(lowered(func, layouts).attrs[attrs.PARTITION])


# ---- A1: requests and their validation ------------------------------------------------------

@pytest.mark.parametrize("req, kind, grid, tiles", [
    ({"shard_grid": [4, 1]}, "height", [4, 1], [1, 4]),
    ({"shard_grid": [1, 4]}, "width", [1, 4], [4, 1]),
    ({"shard_shape": [64, 64]}, "block", [2, 2], [2, 2]),
    ({"shard_grid": [2, 2], "shard_shape": [64, 64]}, "block", [2, 2], [2, 2]),
])
def test_a1_2d_shards(req, kind, grid, tiles):
    for memory in ("L1", "DRAM"):
        d = layout(kernels.elementwise_add_shared(128, 128), {"A": {"memory": memory,
                                                                   "layout": "sharded", **req}}, "A")
        assert d["memory"] == memory and d["layout"] == "sharded"
        assert d["shard"]["kind"] == kind
        assert d["shard"]["projected_grid"] == grid
        assert d["shard"]["projected_shard_tiles"] == tiles
        assert not attrs.check(attrs.LAYOUT_DESC, d)


def batched_add(B, M, N):
    import tilelang_tt.language as T

    @T.prim_func
    def badd(X: T.Tensor((B, M, N), "bfloat16"), Y: T.Tensor((B, M, N), "bfloat16"),
             Z: T.Tensor((B, M, N), "bfloat16")):
        with T.Kernel(N // 32, M // 32, B) as (bx, by, bz):
            xs = T.alloc_shared((32, 32), "bfloat16")
            ys = T.alloc_shared((32, 32), "bfloat16")
            zs = T.alloc_shared((32, 32), "bfloat16")
            T.copy(X[bz, by * 32, bx * 32], xs)
            T.copy(Y[bz, by * 32, bx * 32], ys)
            for i, j in T.Parallel(32, 32):
                zs[i, j] = xs[i, j] + ys[i, j]
            T.copy(zs, Z[bz, by * 32, bx * 32])

    return badd


def test_a1_nd_shard_projection():
    nd = {"axes": [0], "grid": [2], "shard_shape_elems": [1], "order": "row_major"}
    d = layout(batched_add(2, 64, 64), {"X": {"memory": "DRAM", "layout": "sharded",
                                              "nd_shard": nd}}, "X")
    assert d["shard"]["projected_grid"] == [2, 1]
    assert d["shard"]["projected_shard_tiles"] == [2, 2]
    assert d["shard"]["nd"] == nd
    # a shard splitting rows inside a batch and the batch axis at once is no row range
    bad = {"axes": [0, 1], "grid": [2, 2], "shard_shape_elems": [1, 32]}
    with pytest.raises(tilelang_tt.TTUnsupportedError, match="cannot be projected"):
        layout(batched_add(2, 64, 64), {"X": {"memory": "DRAM", "layout": "sharded",
                                              "nd_shard": bad}}, "X")
    uneven = {"axes": [2], "grid": [5]}
    with pytest.raises(tilelang_tt.TTLayoutError, match="evenly"):
        layout(batched_add(2, 64, 96), {"X": {"memory": "DRAM", "layout": "sharded",
                                              "nd_shard": uneven}}, "X")


@pytest.mark.parametrize("req, error, match", [
    ({"memory": "L1", "layout": "sharded", "shard_shape": [48, 128]}, tilelang_tt.TTLayoutError,
     "A: shard shape 48x128 is not tile-aligned"),
    ({"memory": "L1", "layout": "sharded", "shard_grid": [4, 1], "halo": 1},
     tilelang_tt.TTLayoutError, "A: halo unsupported"),
    ({"memory": "L1", "layout": "sharded", "shard_grid": [3, 1]}, tilelang_tt.TTLayoutError,
     "does not split the 128x128 tensor evenly"),
    ({"memory": "DRAM", "layout": "sharded", "shard_grid": [4, 4]}, tilelang_tt.TTLayoutError,
     "16 DRAM shards exceed the 12 DRAM banks"),
    ({"memory": "L1", "layout": "interleaved"}, tilelang_tt.TTUnsupportedError,
     "L1 interleaved placement is not supported"),
    ({"memory": "DRAM", "shard_grid": [4, 1]}, tilelang_tt.TTLayoutError,
     "shard parameters given for an interleaved layout"),
    ({"memory": "L1", "layout": "sharded", "shard_grid": [4, 1], "shard_shape": [64, 128]},
     tilelang_tt.TTLayoutError, "disagree"),
    ({"memory": "SRAM"}, tilelang_tt.TTLayoutError, "memory must be DRAM or L1"),
])
def test_a1_rejections(req, error, match):
    with pytest.raises(error, match=match):
        layout(kernels.elementwise_add_shared(128, 128), {"A": req}, "A")


def test_a1_grid_within_device():
    with pytest.raises(tilelang_tt.TTLayoutError, match="shard grid 16x1 .* exceeds the wormhole_b0 "
                                                       "core grid of 8x8"):
        layout(kernels.elementwise_add_shared(512, 64), {"A": {"memory": "L1", "layout": "sharded",
                                                              "shard_grid": [16, 1]}}, "A")


def test_a1_l1_overflow_names_buffer_and_bytes():
    # one 2048x1024 bf16 shard: 2048 tiles x 2048 B = 4 MiB > a Wormhole core's L1
    with pytest.raises(tilelang_tt.TTLayoutError) as e:
        layout(kernels.elementwise_add_shared(2048, 1024), {"A": {"memory": "L1", "layout": "sharded",
                                                                 "shard_grid": [1, 1]}}, "A")
    msg = str(e.value)
    assert "A:" in msg and f"needs {2048 * 2048} bytes" in msg and f"{(1464 - 100) * 1024} bytes" in msg


def test_f_l1_shard_plus_cbs_overflow():
    # A's one shard (640 tiles, 1310720 bytes) fits a core's L1 alone, not with the 96 KiB of CBs
    # (single-buffered they fit: test_l1_fit.py; here D6.1 is off)
    func = kernels.elementwise_add_shared(2560, 256, block_M=32, block_N=256)
    func = tilelang_tt.annotate_tt_layout(func, {"A": {"memory": "L1", "layout": "sharded",
                                                      "shard_grid": [1, 1]}})
    with pytest.raises(tilelang_tt.TTResourceError) as e:
        tilelang_tt.lower(func, pass_configs={"tt.l1_fit": False})
    msg = str(e.value)
    assert "A's shard needs 1310720 bytes" in msg and "98304 bytes" in msg
    assert f"{1310720 + 98304} bytes needed" in msg and f"{(1464 - 100) * 1024} bytes" in msg


# ---- B1 / B2: partitioning from layouts ----------------------------------------------------

def test_b1_global_for_dram_layouts():
    p = partition(kernels.elementwise_add_shared(128, 128),
                  {"A": {"memory": "DRAM", "layout": "sharded", "shard_grid": [4, 1]}})
    assert p["mode"] == "global" and p["shard"] == {}
    assert not attrs.check(attrs.PARTITION, p)


@pytest.mark.parametrize("grid, blocks", [([4, 1], [1, 1]), ([1, 4], [1, 1]), ([2, 2], [2, 2])])
def test_b1_local_shard_pins_blocks_to_shard_owners(grid, blocks):
    req = {"memory": "L1", "layout": "sharded", "shard_grid": grid}
    f = lowered(kernels.elementwise_add_shared(128, 128), {"A": req, "C": req})
    p = to_py(f.attrs[attrs.PARTITION])
    assert p["mode"] == "local_shard"
    assert p["shard"]["grid"] == grid and p["shard"]["blocks"] == blocks
    assert p["shard"]["tensors"] == ["A", "C"]
    gy, gx = grid
    assert sorted((x, y) for x, y, _, _ in p["work"]) == sorted(
        (x, y) for y in range(gy) for x in range(gx))
    # every block runs exactly once, on the core owning its tiles of A
    import tvm
    from tvm import tirx
    from tilelang_tt.passes.common import collect
    binds = {str(b.var.name): b.value for b in collect(f.body, tirx.Bind)}
    seen = set()
    for x, y, start, count in p["work"]:
        for w in range(start, start + count):
            vals = {}
            for name in ("bx", "by"):
                e = tvm_sub(binds[name], w)
                vals[name] = e
            bx, by = vals["bx"], vals["by"]
            sm, sn = 128 // 32 // gy, 128 // 32 // gx
            assert (by // sm, bx // sn) == (y, x)
            seen.add((bx, by))
    assert len(seen) == 16


def tvm_sub(expr, work_id):
    """Evaluate a block-index binding at a work unit id."""
    from tvm import tirx
    import tvm_ffi
    from tilelang_tt import ops
    from tilelang_tt.passes.common import simplify
    e = tvm_ffi.structural_map(expr, [(tvm.ir.Call, lambda c: tirx.IntImm("int32", work_id)
                                       if ops.tt_op_name(c) == "tt.work_id" else c)], order="post")
    return int(simplify(e))


import tvm  # noqa: E402


def test_b1_gemm_height_sharded_a_and_c():
    req = {"memory": "L1", "layout": "sharded", "shard_grid": [2, 1]}
    p = partition(kernels.matmul(128, 64, 64, block_M=32, block_N=64, block_K=32),
                  {"A": req, "C": req})
    assert p["mode"] == "local_shard" and p["shard"]["grid"] == [2, 1]
    assert p["shard"]["blocks"] == [2, 1] and p["shard"]["pins"] == [1, -1]
    assert [w[3] for w in p["work"]] == [2, 2]


def test_b1_rejects_blocks_that_cross_shards():
    # blocks of 64 rows over shards of 32 rows
    with pytest.raises(tilelang_tt.TTLayoutError, match="crosses a shard boundary"):
        partition(kernels.elementwise_add_shared(128, 128, block_M=64),
                  {"A": {"memory": "L1", "layout": "sharded", "shard_grid": [4, 1]}})
    # a width-sharded GEMM A: every block reads all of A's columns (the K loop)
    with pytest.raises(tilelang_tt.TTLayoutError, match="do not follow that axis"):
        partition(kernels.matmul(128, 64, 64, block_M=32, block_N=64, block_K=32),
                  {"A": {"memory": "L1", "layout": "sharded", "shard_grid": [1, 2]}})


def test_b1_rejects_disagreeing_shard_grids():
    with pytest.raises(tilelang_tt.TTLayoutError, match="place blocks on cores differently"):
        partition(kernels.elementwise_add_shared(128, 128),
                  {"A": {"memory": "L1", "layout": "sharded", "shard_grid": [4, 1]},
                   "B": {"memory": "L1", "layout": "sharded", "shard_grid": [2, 2]}})


# ---- end to end on the emulator: the seed's layout test matrix ------------------------------

import numpy as np  # noqa: E402

from helpers import as_f32, assert_matmul, rand  # noqa: E402
from tilelang_tt.codegen.plan import build_plan  # noqa: E402


def fpu_add(a, b, art):
    """a + b on the matrix engine (ELWADD), packed to bf16, bit for bit (the Tensix model)."""
    import tensix_model as tm
    from helpers import compute_config
    fp32 = compute_config(art)["fp32_dest_acc_en"]
    return tm.pack_bf16(tm.eltwise_add(tm.unpack(a, fp32), tm.unpack(b, fp32), fp32, False), fp32)


def sharded(memory, **kw):
    return {"memory": memory, "layout": "sharded", **kw}


# (all-interleaved DRAM, the default, is what every other end-to-end test runs; its plan and
# NOC counts are those of dram_height_block, and l1_height keeps B interleaved)
ADD_MATRIX = {
    # A and C height-sharded, B block-sharded (one compile for both DRAM shard kinds)
    "dram_height_block": {"A": sharded("DRAM", shard_grid=[4, 1]), "B": sharded("DRAM", shard_grid=[2, 2]),
                          "C": sharded("DRAM", shard_grid=[4, 1])},
    "l1_height": {"A": sharded("L1", shard_grid=[4, 1]), "C": sharded("L1", shard_grid=[4, 1])},
    "l1_width": {"A": sharded("L1", shard_grid=[1, 4]), "B": sharded("L1", shard_grid=[1, 4]),
                 "C": sharded("L1", shard_grid=[1, 4])},
    "l1_block_mixed": {"A": sharded("L1", shard_grid=[2, 2]), "B": sharded("DRAM", shard_grid=[4, 1]),
                       "C": sharded("L1", shard_grid=[2, 2])},
}


@functools.lru_cache(maxsize=None)
def add_art(case):
    """The 128x128 add of ``ADD_MATRIX[case]``, compiled once per module (the tests below that
    reuse a case each run or save the same artifact)."""
    func = tilelang_tt.annotate_tt_layout(kernels.elementwise_add_shared(128, 128), ADD_MATRIX[case])
    return tilelang_tt.compile(func, out_idx=-1)


@pytest.mark.parametrize("case", sorted(ADD_MATRIX))
def test_e2e_elementwise_layouts(case):
    req = ADD_MATRIX[case]
    art = add_art(case)
    a, b = rand((128, 128), "bfloat16", 1), rand((128, 128), "bfloat16", 2)
    c = art(a, b)
    np.testing.assert_array_equal(as_f32(c), as_f32(fpu_add(a, b, art)))
    plan = art.plan
    l1 = [n for n, r in req.items() if r["memory"] == "L1"]
    assert plan["partition"]["mode"] == plan["partition_mode"] == ("local_shard" if l1 else "global")
    for name, lay in plan["layouts"].items():
        assert lay["layout"] == req.get(name, {}).get("layout", "interleaved")
    if l1:  # the cores are the shard grid
        gy, gx = plan["partition"]["shard"]["grid"]
        assert sorted(tuple(c["core"]) for c in plan["cores"]) == sorted(
            (x, y) for y in range(gy) for x in range(gx))
        assert {x for r in plan["core_ranges"] for x in (r[0], r[2])} <= set(range(gx))
    for t in plan["tensors"]:
        want = req.get(t["name"], {})
        assert (t["memory"], t["layout"]) == (want.get("memory", "DRAM"),
                                              want.get("layout", "interleaved"))
    # L1 shards are used in place (CBs on the shards): the NOC moves the DRAM tensors only
    stats = art.last_run_stats["total"]
    in_dram = [n for n in "AB" if n not in l1]
    assert stats["dram_bytes_read"] == stats["noc_bytes_read"] == len(in_dram) * 16 * 2048
    assert stats["dram_bytes_written"] == stats["noc_bytes_written"] == \
        (0 if "C" in l1 else 16 * 2048)
    in_place = {cb["in_place"] for cb in plan["circular_buffers"] if "in_place" in cb}
    assert in_place == set(l1)
    if l1:
        assert "get_reference_buffer" in art.sources["main.cpp"]


def test_e2e_gemm_l1_height_sharded():
    req = {"A": sharded("L1", shard_grid=[2, 1]), "C": sharded("L1", shard_grid=[2, 1]),
           "B": sharded("DRAM", shard_grid=[1, 2])}
    func = tilelang_tt.annotate_tt_layout(
        kernels.matmul(128, 64, 64, block_M=32, block_N=32, block_K=32), req)
    art = tilelang_tt.compile(func, out_idx=-1)
    a, b = rand((128, 64), "bfloat16", 3), rand((64, 64), "bfloat16", 4)
    assert_matmul(art(a, b), a, b, art)
    assert art.plan["partition"]["mode"] == "local_shard"
    assert [c["count"] for c in art.plan["cores"]] == [4, 4]
    # C is written in place; A's blocks are re-read for every output block (a NOC copy from
    # the core's own L1, every page of its own shard)
    assert {cb.get("in_place") for cb in art.plan["circular_buffers"]} == {None, "C"}
    pages = build_plan(tilelang_tt.lower(func), pages=True)
    for core in pages["cores"]:
        assert {p // 2 // 2 for p in core["reads"]["A"]} == {core["core"][1]}  # 4x2 tiles, Sm = 2
        assert "C" not in core["writes"]


def test_e2e_nd_shard_rank3():
    nd = {"axes": [0], "grid": [2], "shard_shape_elems": [1], "order": "row_major"}
    ndw = {"axes": [2], "grid": [2], "shard_shape_elems": [32], "order": "row_major"}
    req = {"X": sharded("DRAM", nd_shard=nd), "Y": sharded("L1", nd_shard=ndw),
           "Z": sharded("L1", nd_shard=ndw)}
    art = tilelang_tt.compile(tilelang_tt.annotate_tt_layout(batched_add(2, 64, 64), req), out_idx=-1)
    x, y = rand((2, 64, 64), "bfloat16", 5), rand((2, 64, 64), "bfloat16", 6)
    z = art(x, y)
    for i in range(2):
        np.testing.assert_array_equal(as_f32(z[i]), as_f32(fpu_add(x[i], y[i], art)))
    shards = {t["name"]: t["shard"] for t in art.plan["tensors"]}
    assert shards["X"]["projected_grid"] == [2, 1] and shards["X"]["projected_shard_tiles"] == [2, 2]
    assert shards["Y"]["projected_grid"] == [1, 2] and shards["Y"]["projected_shard_tiles"] == [4, 1]
    assert art.plan["partition"]["mode"] == "local_shard" and len(art.plan["cores"]) == 2


# ---- the emulator is strict about sharded buffers -------------------------------------------

from tilelang_tt.runtime import mockbuild  # noqa: E402

MIXED = ADD_MATRIX["l1_block_mixed"]  # A, C block-sharded in L1; B height-sharded in DRAM


def run_patched(tmp_path, patch):
    """Save the mixed-layout add, patch one of its sources, build and run it on the emulator."""
    art = add_art("l1_block_mixed")  # each test saves and patches its own copy
    art.save(tmp_path)
    name, old, new = patch
    src = (tmp_path / name).read_text()
    assert old in src
    (tmp_path / name).write_text(src.replace(old, new, 1))
    exe = mockbuild.build_host(tmp_path / "main.cpp", tmp_path)
    args = []
    for t in art.plan["tensors"]:
        path = tmp_path / f"{t['name']}.bin"
        np.zeros((128, 128), dtype=np.float32).astype(rand((1,), "bfloat16").dtype).tofile(path)
        args.append(str(path))
    with pytest.raises(mockbuild.MockRuntimeError) as info:
        mockbuild.run_host(exe, args)
    return str(info.value)


def test_emulator_rejects_an_accessor_over_another_buffer(tmp_path):
    # B's accessor (sharded DRAM args) given C's address (an L1 buffer)
    msg = run_patched(tmp_path, ("main.cpp", "static_cast<uint32_t>(B_buffer->address())",
                                 "static_cast<uint32_t>(C_buffer->address())"))
    assert "no sharded DRAM buffer starts at that address" in msg and "reader" in msg


def test_emulator_rejects_reading_l1_of_a_core_without_a_shard(tmp_path):
    # core (7, 7) (NOC 8, 8) holds no shard of A: its L1 at A's address is not A's
    msg = run_patched(tmp_path, (
        "reader.cpp", "cb_push_back(A_shared_cb, 1);",
        "noc_async_read(get_noc_addr(8, 8, get_write_ptr(A_shared_cb)), get_write_ptr(A_shared_cb), "
        "2048); noc_async_read_barrier(); cb_push_back(A_shared_cb, 1);"))
    assert "sharded L1 buffer" in msg and "that core holds no shard there" in msg


def test_emulator_rejects_an_in_place_cb_beyond_the_shard(tmp_path):
    msg = run_patched(tmp_path, ("main.cpp", "CircularBufferConfig(8192, {{tt::CBIndex::c_0,",
                                 "CircularBufferConfig(16384, {{tt::CBIndex::c_0,"))
    assert "holds 1 of its shards (8192 bytes) and the CB needs 16384 bytes" in msg


def test_emulator_rejects_cbs_clashing_with_l1_buffers(tmp_path):
    msg = run_patched(tmp_path, ("main.cpp", "tt::tt_metal::CircularBufferConfig(4096,",
                                 "tt::tt_metal::CircularBufferConfig(4096 * 340,"))
    assert "circular buffers clash with L1 buffers" in msg


# ---- the real SDK compiles the sharded project ----------------------------------------------

from test_sdk_host_twin import sdk, sdkcheck  # noqa: E402,F401  (the sdkcheck fixture)
from tilelang_tt.codegen import accessor_args  # noqa: E402


def test_sdkcheck_sharded_project(sdk, tmp_path):  # noqa: F811
    import json
    project = add_art("l1_block_mixed").save(tmp_path / "mixed")
    plan_path = project / "tt.plan.json"
    plan = json.loads(plan_path.read_text())
    assert accessor_args.has_sharded_accessor(plan)
    plan_path.write_text(json.dumps(accessor_args.with_explicit_accessor_words(plan)))
    proc = sdkcheck("--host-include", mock_dir() / "include", project)
    assert proc.returncode == 0, proc.stdout + proc.stderr


from tilelang_tt.codegen.cmake import mock_dir  # noqa: E402


def test_c4_in_place_decided_from_structure_not_names():
    import tilelang_tt.language as T

    @T.prim_func
    def scale(X: T.Tensor((128, 64), "bfloat16"), Y: T.Tensor((128, 64), "bfloat16")):
        with T.Kernel(2, 4) as (p, q):  # p walks columns, q rows
            xs = T.alloc_shared((32, 32), "bfloat16")
            ys = T.alloc_shared((32, 32), "bfloat16")
            T.copy(X[q * 32, p * 32], xs)
            for i, j in T.Parallel(32, 32):
                ys[i, j] = xs[i, j] * 2.0
            T.copy(ys, Y[q * 32, p * 32])

    req = {"memory": "L1", "layout": "sharded", "shard_grid": [4, 1]}
    f = lowered(scale, {"X": req, "Y": req}, "C4")
    dfg = to_py(f.attrs[attrs.TILE_DFG])
    assert sorted(e["in_place"] for e in dfg if "in_place" in e) == [0, 1]
    assert all(e["depth"] == 2 for e in dfg if "in_place" in e)  # the 1x2-tile shard
    art = tilelang_tt.compile(tilelang_tt.annotate_tt_layout(scale, {"X": req, "Y": req}),
                              out_idx=-1)
    x = rand((128, 64), "bfloat16", 7)
    np.testing.assert_array_equal(as_f32(art(x)), as_f32(x) * 2)
    assert art.last_run_stats["total"]["noc_bytes_read"] == 0
