"""Layout requests (A1), partitioning from layouts (B1/B2) and the plan's record of them."""

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


# ---- B1 / B2: partitioning from layouts ----------------------------------------------------

def test_b1_global_for_dram_layouts():
    p = partition(kernels.elementwise_add_shared(128, 128),
                  {"A": {"memory": "DRAM", "layout": "sharded", "shard_grid": [4, 1]}})
    assert p["mode"] == "global" and p["shard"] == {}
    assert not attrs.check(attrs.PARTITION, p)


@pytest.mark.parametrize("grid, blocks", [([4, 1], [1, 1]), ([1, 4], [1, 1]), ([2, 2], [2, 2])])
def test_b1_local_shard_pins_blocks_to_shard_owners(grid, blocks):
    req = {"memory": "L1", "layout": "sharded", "shard_grid": grid}
    p = partition(kernels.elementwise_add_shared(128, 128), {"A": req, "C": req})
    assert p["mode"] == "local_shard"
    assert p["shard"]["grid"] == grid and p["shard"]["blocks"] == blocks
    assert p["shard"]["tensors"] == ["A", "C"]
    gy, gx = grid
    assert sorted((x, y) for x, y, _, _ in p["work"]) == sorted(
        (x, y) for y in range(gy) for x in range(gx))
    # every block runs exactly once, on the core owning its tiles of A
    f = lowered(kernels.elementwise_add_shared(128, 128), {"A": req, "C": req})
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
