"""Each pipeline stage's contract, checked on real frontend IR (kernels parsed from TileLang)."""

import pytest
import tvm
from tvm import tirx

import kernels
from helpers import kernel_from_source
import tilelang_tt
import tilelang_tt.language as T
from tilelang_tt import attrs, ops
from tilelang_tt.passes import pipeline
from tilelang_tt.passes.common import buffer_scope, collect, to_py, tt_calls
from tilelang_tt.passes.frontend.eltwise_expr import apply, const, load, postfix, vector, where
import tvm_ffi


def same_tree(a, b) -> bool:
    return tvm_ffi.structural_equal(a, b)


def upto(func, stage, target="tenstorrent", pass_configs=None, **options):
    """The module after ``stage``; ``options`` are tt. pass configs by their short name."""
    configs = dict(pass_configs or {})
    configs.update({f"tt.{k}": v for k, v in options.items()})
    return tilelang_tt.lower(func, target, stop_after=stage, pass_configs=configs or None)


def only(mod):
    (f,) = mod.functions.values()
    return f


def kernel(mod, kind):
    for f in mod.functions.values():
        if str(f.attrs[attrs.KERNEL_KIND]) == kind:
            return f
    raise KeyError(kind)


def op_names(node):
    return [c.op.name for c in tt_calls(node)]


GEMM = dict(M=256, N=256, K=128)
# the stages' mechanics on K steps of one tile (CoarsenKLoopTT would make them 4 tiles wide)
ONE_TILE_K = {"pass_configs": {"tt.k_coarsen": False}}


def test_stage_list_is_complete():
    assert pipeline.stage_names() == [
        "ResolveThreadConditionsTT", "CheckAssumptionsTT", "LaunchPersistentTilesTT", "ScalarProgramTT", "CoarsenRowBlocksTT", "SerialRowsToBlockTT", "LocalBuffersToBlocksTT", "ScalarsToBindTT", "DropTrueGuardsTT", "SplitBlockRegionsTT", "BoundLoopExtentsTT", "LowerAtomicsTT", "CollapseBlockSlicesTT",
        "LowerReducersTT", "IndexFragmentsToFloatTT", "ColumnStoresToBlockTT", "StreamWideRowsTT", "ReadConditionFragmentsFromTensorsTT", "StageScalarOperandsTT",
        "IntegerInputsToFloatTT", "PermuteVectorTensorsTT",
        "LowerParallelToTileTT", "ResolveViewsTT", "ReadShortBlocksFromTensorsTT",
        "LegalizeTileOpsTT", "DropDeadBlockWritesTT", "PadTensorsTT",
        "VersionBlockBuffersTT",
        "CoarsenKLoopTT", "PadShortBlocksTT", "VerifyTileProgramTT", "InferTTLayout", "PropagateTTLayout",
        "LayoutAwareWorkPartitionTT", "GridToCoreGrid", "LowerSharedToCB",
        "LowerTTTileIntrinsics", "ForwardBlockCopiesTT", "LowerScalarReadsTT", "BuildTileDFGTT", "PlaceL1ShardsTT",
        "SplitDeviceKernel",
        "ConfigureTensorAccessorTT", "PlanMulticastTT", "LowerScalarProgramTT", "LowerCBIntrinsics", "InsertComputeInitTT",
        "InsertDSTManagementTT", "tirx.StmtSimplify", "ShareCBIdsTT", "PlanL1AliasTT", "FitL1TT", "LowerPersistentLoopTT",
        "VerifyTTIR"]
    for _, p in pipeline.STAGES:
        assert isinstance(p, tvm.transform.Pass)


def test_pipeline_is_registered_with_tvm():
    from tvm.tirx.compilation_pipeline import get_tir_pipeline

    lower_all, _, _ = get_tir_pipeline("tenstorrent")
    mod = lower_all(pipeline.prepare(kernels.elementwise_add(64, 64), "tenstorrent"))
    assert sorted(g.name_hint for g in mod.functions) == ["add_compute", "add_reader",
                                                          "add_writer"]


def test_stop_after_a_phase_tag_covers_its_sub_stages():
    f = only(upto(kernels.elementwise_add(64, 64), "A0"))
    assert to_py(f.attrs[attrs.STAGE]) == "PadShortBlocksTT"
    with pytest.raises(tilelang_tt.TTCompileError, match="unknown stage 'Z9'"):
        upto(kernels.elementwise_add(64, 64), "Z9")


def test_passes_check_their_requirements():
    from tilelang_tt.passes.dataflow.shared_to_cb import LowerSharedToCB
    from tilelang_tt.passes.common import run_pass

    mod = pipeline.prepare(kernels.matmul(**GEMM), "tenstorrent")
    with pytest.raises(tilelang_tt.TTVerifyError, match="requires GridToCoreGrid"):
        run_pass(LowerSharedToCB, mod)


def test_a0_parallel_over_globals_is_staged_through_shared():
    f = only(upto(kernels.elementwise_add(64, 64), "A0"))
    names = [c.op.name for c in collect(f.body, tirx.TilePrimitiveCall)]
    assert names == ["tirx.tile.copy", "tirx.tile.copy", "tirx.tile.add", "tirx.tile.copy"]
    staged = [a.buffer for a in collect(f.body, tirx.AllocBuffer)]
    assert [buffer_scope(b) for b in staged] == ["shared"] * 3
    assert not [l for l in collect(f.body, tirx.For) if l.kind == tirx.ForKind.PARALLEL]


def test_a0_parallel_over_shared_becomes_tile_op():
    f = only(upto(kernels.elementwise_add_shared(64, 64), "A0"))
    (add,) = [c for c in collect(f.body, tirx.TilePrimitiveCall) if c.op.name == "tirx.tile.add"]
    assert [a.source.name for a in add.args] == ["C_shared", "A_shared", "B_shared"]


@pytest.mark.parametrize("expr,fn", [
    (lambda x: T.exp(x), "exp"), (lambda x: T.max(x, 0.0), "relu"), (lambda x: T.max(0, x), "relu"),
    (lambda x: -x, "negative"), (lambda x: 1.0 / x, "recip"), (lambda x: T.abs(x), "abs")])
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_a0_unary_functions_recognised_from_structure(expr, fn, dtype):
    f = only(upto(kernels.elementwise_unary(expr, 64, 64, dtype=dtype), "A0"))
    (call,) = [c for c in collect(f.body, tirx.TilePrimitiveCall) if c.op.name == "tt.tile.expr"]
    assert same_tree(call.args[1], apply(fn, load(0)))
    assert [call.args[0].source.name, call.args[2].source.name] == ["C_tile", "A_tile"]


@pytest.mark.parametrize("expr,tree", [
    (lambda x: x * 2.0, lambda: load(0) * const(2.0)),
    (lambda x: 2.0 / x, lambda: const(2.0) / load(0)),
    (lambda x: T.exp(x) + x, lambda: apply("exp", load(0)) + load(0)),
    (lambda x: -(x * x), lambda: apply("negative", load(0) * load(0))),
    (lambda x: T.max(T.exp(x), 0.0), lambda: apply("relu", apply("exp", load(0)))),
    (lambda x: T.max(x, 1.0), lambda: tirx.Max(load(0), const(1.0))),
    (lambda x: T.exp2(x), lambda: apply("exp", load(0) * const(0.6931471805599453))),
    (lambda x: T.if_then_else(x > 0.5, x, 0.0),
     lambda: where(apply("gtz", load(0) - const(0.5)), load(0), const(0.0)))])
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_a0_expressions_become_trees(expr, tree, dtype):
    f = only(upto(kernels.elementwise_unary(expr, 64, 64, dtype=dtype), "A0"))
    (call,) = [c for c in collect(f.body, tirx.TilePrimitiveCall) if c.op.name == "tt.tile.expr"]
    assert same_tree(call.args[1], tree())
    assert [a.source.name for a in call.args[2:]] == ["A_tile"]  # equal loads share an operand


@pytest.mark.parametrize("expr", [lambda x: T.hypot(x, x), lambda x: T.nextafter(x, x)])
def test_a0_other_expressions_rejected(expr):
    with pytest.raises(tilelang_tt.TTUnsupportedError, match="not supported yet"):
        upto(kernels.elementwise_unary(expr, 64, 64, dtype="float32"), "A0")


def test_a1_layouts():
    f = only(upto(kernels.matmul(**GEMM), "A1"))
    lay = to_py(f.attrs[attrs.LAYOUT_DESC])
    a = lay[0]
    assert a == {"name": "A", "memory": "DRAM", "layout": "interleaved", "dtype": "bfloat16",
                 "tile": [32, 32], "shape": [256, 128], "logical_shape": [256, 128], "pad_value": 0.0,
                 "axes": [0, 1], "tiles": [8, 4],
                 "vector": False, "page_bytes": 2048, "shard": {}}
    assert not attrs.check(attrs.LAYOUT_DESC, a)


def test_a1_user_layout_requests_are_validated():
    f = tilelang_tt.annotate_tt_layout(kernels.matmul(**GEMM), {"A": {"layout": "sharded"}})
    with pytest.raises(tilelang_tt.TTLayoutError, match="A: a sharded layout needs shard_grid"):
        upto(f, "A1")
    f = tilelang_tt.annotate_tt_layout(kernels.matmul(**GEMM), {"B": {"halo": 1}})
    with pytest.raises(tilelang_tt.TTLayoutError, match="halo"):
        upto(f, "A1")


def test_a2_cb_depth_from_num_stages_and_acc_desc():
    f = only(upto(kernels.matmul_nt(**GEMM, num_stages=3), "A2", **ONE_TILE_K))
    descs = {a.buffer.name: to_py(a.annotations) for a in collect(f.body, tirx.AllocBuffer)}
    assert descs["A_shared"][attrs.CB_DESC] == {"rows": 4, "cols": 1, "depth": 3,
                                                "dtype": "bfloat16", "page_bytes": 2048,
                                                "vector": "none"}
    assert descs["B_shared"][attrs.CB_DESC]["depth"] == 3
    assert descs["C_shared"][attrs.CB_DESC]["depth"] == 2  # outside the pipelined loop
    assert descs["C_local"][attrs.ACC_DESC] == {"rows": 4, "cols": 4, "dtype": "float32"}
    assert attrs.CB_DESC not in descs["C_local"]


def test_a2_fragment_without_gemm_is_a_block_buffer():
    f = only(upto(kernels.elementwise_add_fragment(64, 64, 64, 32), "A2"))
    descs = {a.buffer.name: to_py(a.annotations) for a in collect(f.body, tirx.AllocBuffer)}
    assert buffer_scope(next(a.buffer for a in collect(f.body, tirx.AllocBuffer)
                             if a.buffer.name == "C_local")) == "local.fragment"
    assert descs["C_local"][attrs.CB_DESC] == {"rows": 2, "cols": 1, "depth": 2,
                                               "dtype": "bfloat16", "page_bytes": 2048,
                                               "vector": "none"}
    assert attrs.ACC_DESC not in descs["C_local"]


@pytest.mark.parametrize("grid_blocks,target,cores", [((2, 2), "tenstorrent", 4),
                                                       ((16, 8), "tenstorrent", 64),
                                                       ((16, 16), "tenstorrent/blackhole", 130)])
def test_b1_partition_covers_every_block_once(grid_blocks, target, cores):
    gx, gy = grid_blocks
    f = only(upto(kernels.elementwise_add(32 * gy, 32 * gx), "B1", target))
    part = to_py(f.attrs[attrs.PARTITION])
    assert part["grid"] == [gx, gy, 1] and part["num_cores"] == cores
    ids = [i for _, _, start, count in part["work"] for i in range(start, start + count)]
    assert sorted(ids) == list(range(gx * gy))
    counts = {count for *_, count in part["work"]}
    assert max(counts) - min(counts) <= 1
    assert not attrs.check(attrs.PARTITION, part)


def test_b1_schedule_request_limits_cores():
    f = tilelang_tt.annotate_tt_schedule(kernels.elementwise_add(128, 128), core_grid=(2, 1))
    part = to_py(only(upto(f, "B1")).attrs[attrs.PARTITION])
    assert part["num_cores"] == 2 and part["work"] == [[0, 0, 0, 8], [1, 0, 8, 8]]


def test_b2_block_indices_from_work_id():
    f = only(upto(kernels.matmul(**GEMM), "B2"))
    assert not [a for a in collect(f.body, tirx.AttrStmt) if str(a.attr_key) == "thread_extent"]
    (pb,) = [a for a in collect(f.body, tirx.AttrStmt) if str(a.attr_key) == attrs.PERSISTENT_BODY]
    binds = [b for b in collect(pb.body, tirx.Bind)]
    assert [b.var.name for b in binds] == ["bx", "by"]
    assert all("tt.work_id" in op_names(b.value) for b in binds)
    assert tt_calls(pb.body, "tt.work_id")
    # the body below the bindings is the original block body (tile ops still there)
    assert len(collect(pb.body, tirx.TilePrimitiveCall)) == 5


def test_c1_shared_to_cb_and_tile_streams():
    f = only(upto(kernels.matmul(**GEMM), "C1", **ONE_TILE_K))
    cbs = [b for b in collect(f.body, tirx.Bind) if ops.tt_op_name(b.value) == "tt.alloc_cb"]
    # the gemm still reads A_shared and B_shared: their allocations stay, naming their CBs
    kept = {a.buffer.name: a.annotations[attrs.CB] for a in collect(f.body, tirx.AllocBuffer)
            if buffer_scope(a.buffer) == "shared"}
    assert sorted(kept) == ["A_shared", "B_shared"]
    assert kept["A_shared"].same_as(cbs[0].var) and kept["B_shared"].same_as(cbs[1].var)
    assert [str(b.value.args[5].value) for b in cbs] == ["A_shared", "B_shared", "C_local_out"]
    reads = tt_calls(f.body, "tt.read_to_cb")
    assert [r.args[1].name for r in reads] == ["A", "B"]
    assert [int(x) for x in reads[0].args[4:]] == [4, 1]  # 128x32 block = 4x1 tiles
    (write,) = tt_calls(f.body, "tt.write_from_cb")
    assert write.args[1].name == "C" and [int(x) for x in write.args[4:]] == [4, 4]
    assert tt_calls(f.body, "tt.acc.pack")


def test_c2_compute_ops():
    f = only(upto(kernels.matmul_nt(**GEMM), "C2", **ONE_TILE_K))
    (mma,) = tt_calls(f.body, "tt.mm.mma")
    assert [int(x) for x in mma.args[3:]] == [4, 4, 1, 1]  # Mt Nt Kt transpose_b
    assert len(tt_calls(f.body, "tt.acc.clear")) == 1
    assert not collect(f.body, tirx.TilePrimitiveCall)
    g = only(upto(kernels.elementwise_add(64, 64, dtype="bfloat16"), "C2"))
    assert [c.op.name for c in tt_calls(g.body) if "pu." in c.op.name] == ["tt.fpu.add"]
    h = only(upto(kernels.elementwise_add(64, 64, dtype="float32"), "C2"))
    (add,) = tt_calls(h.body, "tt.eltwise")  # fp32: the vector engine in an fp32 DST
    assert same_tree(add.args[2], load(0) + load(1)) and not tt_calls(h.body, "tt.fpu.add")
    # fragment -> shared of another dtype is a compute copy between two CBs
    k = only(upto(kernels.elementwise_add_fragment(64, 64, out_dtype="float32"), "C2"))
    (copy,) = tt_calls(k.body, "tt.eltwise")
    (add,) = tt_calls(k.body, "tt.fpu.add")
    assert same_tree(copy.args[2], load(0))
    assert copy.args[3].same_as(add.args[0]) and int(copy.args[1]) == 1
    # of the same dtype it is forwarded: the add writes the shared buffer's CB directly
    fwd = only(upto(kernels.elementwise_add_fragment(64, 64), "C2"))
    assert not tt_calls(fwd.body, "tt.eltwise")
    (add,) = tt_calls(fwd.body, "tt.fpu.add")
    names = {str(b.value.args[5].value): b.var for b in collect(fwd.body, tirx.Bind)
             if ops.tt_op_name(b.value) == "tt.alloc_cb"}
    assert "C_local" not in names and add.args[0].same_as(names["C_shared"])
    u = only(upto(kernels.elementwise_unary(lambda x: T.sigmoid(x), 64, 128, 64, 64), "C2"))
    (sig,) = tt_calls(u.body, "tt.eltwise")
    assert same_tree(sig.args[2], apply("sigmoid", load(0))) and int(sig.args[1]) == 4


def test_c3_dfg_ids_and_consume_ranges():
    f = only(upto(kernels.matmul_nt(**GEMM), "C3", **ONE_TILE_K))
    dfg = to_py(f.attrs[attrs.TILE_DFG])
    table = {e["name"]: (e["id"], e["role"], e["producer"], e["consumer"]) for e in dfg}
    assert table == {"A_shared": (0, "input", "reader", "compute"),
                     "B_shared": (1, "input", "reader", "compute"),
                     "C_shared": (16, "output", "compute", "writer")}
    begins, ends = tt_calls(f.body, "tt.consume.begin"), tt_calls(f.body, "tt.consume.end")
    assert [m.args[0].name for m in begins] == ["A_shared_cb", "B_shared_cb"]
    assert [m.args[0].name for m in ends] == ["B_shared_cb", "A_shared_cb"]
    assert all(int(m.args[1]) == 4 for m in begins + ends)
    # the window holds the K step's mma: begin, begin, mma, end, end in the loop body
    (loop,) = [l for l in collect(f.body, tirx.For) if tt_calls(l, "tt.mm.mma")]
    assert [n for n in op_names(loop.body) if n.startswith(("tt.consume", "tt.mm"))] == [
        "tt.consume.begin", "tt.consume.begin", "tt.mm.mma", "tt.consume.end", "tt.consume.end"]
    ids = [int(b.value.args[0]) for b in collect(f.body, tirx.Bind)
           if ops.tt_op_name(b.value) == "tt.alloc_cb"]
    assert ids == [0, 1, 16]


def test_d1_split_keeps_own_work_only():
    mod = upto(kernels.matmul(**GEMM), "D1")
    assert sorted(g.name_hint for g in mod.functions) == ["gemm_compute", "gemm_reader",
                                                          "gemm_writer"]
    r, c, w = kernel(mod, "reader"), kernel(mod, "compute"), kernel(mod, "writer")
    assert set(op_names(r.body)) == {"tt.alloc_cb", "tt.work_id", "tt.read_to_cb"}
    assert set(op_names(w.body)) == {"tt.alloc_cb", "tt.work_id", "tt.write_from_cb"}
    assert {"tt.mm.mma", "tt.acc.clear", "tt.acc.pack"} <= set(op_names(c.body))
    assert "tt.work_id" not in op_names(c.body)  # compute does not need block indices
    assert "tt.read_to_cb" not in op_names(c.body)


def test_d2_accessors_bound_to_args():
    mod = upto(kernels.matmul(**GEMM), "D2")
    r = kernel(mod, "reader")
    accs = to_py(r.attrs[attrs.ACCESSORS])
    assert [(a["param"], a["index"], a["addr_slot"], a["page_bytes"]) for a in accs] == [
        (0, 0, 0, 2048), (1, 1, 1, 2048)]  # pages of the layout's page size
    binds = tt_calls(r.body, "tt.tensor_accessor")
    assert [b.args[0].name for b in binds] == ["A", "B"]
    assert to_py(kernel(mod, "compute").attrs[attrs.ACCESSORS]) == []


def test_d3_protocol():
    mod = upto(kernels.matmul(**GEMM), "D3", multicast=False)  # plain reads (test_multicast.py)
    r, c, w = kernel(mod, "reader"), kernel(mod, "compute"), kernel(mod, "writer")
    assert op_names(r.body).count("tt.cb_reserve_back") == 2
    assert op_names(r.body).count("tt.noc_async_read_barrier") == 1
    assert "tt.read_to_cb" not in op_names(r.body)
    assert {"tt.cb_wait_front", "tt.noc_async_write_page", "tt.noc_async_write_barrier",
            "tt.cb_pop_front"} <= set(op_names(w.body))
    waits = tt_calls(c.body, "tt.cb_wait_front")
    assert [x.args[0].name for x in waits] == ["A_shared_cb", "B_shared_cb"]
    assert not [n for n in op_names(c.body) if n.startswith("tt.consume.")]


def test_d4_init():
    mod = upto(kernels.matmul_nt(**GEMM), "D4")
    c = kernel(mod, "compute")
    names = op_names(c.body)
    assert names.index("tt.compute_kernel_hw_startup") < names.index("tt.matmul_init")
    (startup,) = tt_calls(c.body, "tt.compute_kernel_hw_startup")
    assert int(startup.args[3]) == 1  # SrcOrder::Reverse for matmul
    (init,) = tt_calls(c.body, "tt.matmul_init")
    assert int(init.args[2]) == 1  # transpose_B
    cfg = to_py(c.attrs[attrs.COMPUTE_CONFIG])
    assert cfg["fp32_dest_acc_en"] is True and not attrs.check(attrs.COMPUTE_CONFIG, cfg)
    e = kernel(upto(kernels.elementwise_add_shared(64, 64), "D4"), "compute")
    assert op_names(e.body)[:3] == ["tt.alloc_cb"] * 3
    assert "tt.add_init" in op_names(e.body)


def test_d5_accumulator_that_fits_dst():
    mod = upto(kernels.matmul(64, 64, 128, 64, 64, 32, accum_dtype="float32"), "D5")
    c = kernel(mod, "compute")
    names = op_names(c.body)
    assert not [n for n in names if ops.spec(n).family == "abstract"]
    assert names.count("tt.tile_regs_acquire") == 1 and names.count("tt.tile_regs_release") == 1
    assert to_py(c.attrs[attrs.DST_PLAN]) == [{"acc": "C_local", "tiles": 4, "capacity": 4,
                                              "subblock": [2, 2], "spill_cb": -1}]


def test_d5_accumulator_subblocks_and_spills():
    mod = upto(kernels.matmul(**GEMM), "D5",
               pass_configs={"tt.k_coarsen": False, "tt.packer_l1_acc": False})
    c = kernel(mod, "compute")
    plan = to_py(c.attrs[attrs.DST_PLAN])
    assert plan == [{"acc": "C_local", "tiles": 16, "capacity": 4, "subblock": [1, 4],
                     "spill_cb": 24}]
    spill = [e for e in to_py(c.attrs[attrs.TILE_DFG]) if e["role"] == "spill"]
    assert spill and spill[0]["dtype"] == "float32" and spill[0]["id"] == 24
    assert 24 in to_py(c.attrs[attrs.COMPUTE_CONFIG])["unpack_to_dest_fp32"]
    packs = tt_calls(c.body, "tt.pack_tile")
    assert {int(p.args[3]) for p in packs} == {0, 1}  # spill in order, output out of order
    bf16 = kernel(upto(kernels.matmul(**GEMM, accum_dtype="bfloat16"), "D5"), "compute")
    assert to_py(bf16.attrs[attrs.DST_PLAN])[0]["subblock"] == [2, 4]  # 8 tiles of 16-bit DST


def test_d5_eltwise_chunks_by_capacity():
    c = kernel(upto(kernels.elementwise_add(256, 256, 128, 128), "D5"), "compute")
    (add,) = tt_calls(c.body, "tt.add_tiles")
    (loop,) = [l for l in collect(c.body, tirx.For) if l.loop_var.same_as(add.args[4])]
    assert int(loop.extent) == 8  # 16 tiles, 8 per acquire in 16-bit half-sync DST
    f32 = kernel(upto(kernels.elementwise_add(64, 64, 64, 64, dtype="float32"), "D5"), "compute")
    assert "tt.add_binary_tile" in op_names(f32.body) and "tt.copy_tile" in op_names(f32.body)
    # a copy moves DST-capacity tiles per acquire; fp32 sources are unpacked straight to DST
    # (bf16 -> fp32 widens: the copy cannot be forwarded, its source rounds to bf16)
    cp = kernel(upto(kernels.elementwise_add_fragment(128, 128, 128, 128, "bfloat16", "float32"),
                     "D5"), "compute")
    names = op_names(cp.body)
    assert "tt.eltwise" not in names and names.count("tt.copy_tile") == 1
    (copy,) = tt_calls(cp.body, "tt.copy_tile")
    (loop,) = [l for l in collect(cp.body, tirx.For) if l.loop_var.same_as(copy.args[2])]
    assert int(loop.extent) == 4  # an fp32 result: fp32 DST, 4 tiles per acquire
    config = to_py(cp.attrs[attrs.COMPUTE_CONFIG])
    assert config["fp32_dest_acc_en"] and config["unpack_to_dest_fp32"] == []
    # an SFPU function: copied into DST, initialised, applied to each tile, packed
    ex = kernel(upto(kernels.elementwise_unary(lambda x: T.exp(x), 64, 128, 64, 64), "D5"),
                "compute")
    names = op_names(ex.body)
    order = [n for n in names if n in ("tt.copy_tile", "tt.exp_tile_init", "tt.exp_tile",
                                       "tt.pack_tile")]
    assert order == ["tt.copy_tile", "tt.exp_tile_init", "tt.exp_tile", "tt.pack_tile"]
    (exp,) = tt_calls(ex.body, "tt.exp_tile")
    (loop,) = [l for l in collect(ex.body, tirx.For) if l.loop_var.same_as(exp.args[0])]
    assert int(loop.extent) == 4  # 4 tiles, all in one 8-tile DST round
    assert not to_py(ex.attrs[attrs.COMPUTE_CONFIG])["fp32_dest_acc_en"]


def test_d5_expression_program_slots_and_rounds():
    # (a + b) * c: 2 DST slots per tile at most, fp32 DST of 4 -> 2 tiles per round
    f = kernels.elementwise_expr(lambda a, b, c: (a + b) * c, 3, 64, 128, 64, 128)
    c = kernel(upto(f, "D5"), "compute")
    assert to_py(c.attrs[attrs.COMPUTE_CONFIG])["fp32_dest_acc_en"]
    names = [n for n in op_names(c.body) if n.endswith("_binary_tile") or n == "tt.copy_tile"]
    assert names == ["tt.copy_tile", "tt.copy_tile", "tt.add_binary_tile", "tt.copy_tile",
                     "tt.mul_binary_tile"]
    (mul,) = tt_calls(c.body, "tt.mul_binary_tile")
    (loop,) = [l for l in collect(c.body, tirx.For) if l.loop_var.same_as(mul.args[0].a)]
    assert int(loop.extent) == 2
    # a + (b + (c + (a * b + ...))): commutative, so the deepest side goes first (2 slots)
    deep_add = kernels.elementwise_expr(lambda a, b, c: a + (b + (c + (a * b + c * 2.0))), 3,
                                        64, 64)
    c = kernel(upto(deep_add, "D5"), "compute")
    assert {int(x.args[2]) for x in tt_calls(c.body, "tt.copy_tile")} == {0, 1}
    # a - (b - (c - (a - b * 2))) holds five tiles at once: more than fp32 DST has
    deep = kernels.elementwise_expr(lambda a, b, c: a - (b - (c - (a - b * 2.0))), 3, 64, 64)
    with pytest.raises(tilelang_tt.TTResourceError, match="needs 5 DST tiles at once"):
        upto(deep, "D5")


def test_e1_signature_and_persistent_loop():
    mod = upto(kernels.matmul(**GEMM), "E1", multicast=False)
    r = kernel(mod, "reader")
    args = to_py(r.attrs[attrs.RUNTIME_ARGS])
    assert [a["kind"] for a in args] == ["buffer_addr", "buffer_addr", "start_id", "count"]
    assert to_py(r.attrs[attrs.PERSISTENT]) == {"start_slot": 2, "count_slot": 3}
    c = kernel(mod, "compute")
    assert [a["kind"] for a in to_py(c.attrs[attrs.RUNTIME_ARGS])] == ["start_id", "count"]
    for f in (r, c):  # the persistent marker is a loop over the core's work units
        assert not [a for a in collect(f.body, tirx.AttrStmt)
                    if str(a.attr_key) == attrs.PERSISTENT_BODY]
        assert not tt_calls(f.body, "tt.work_id")
        (count,) = [b for b in collect(f.body, tirx.Bind) if b.var.name == "work_count"]
        loop = [l for l in collect(f.body, tirx.For) if l.extent.same_as(count.var)]
        assert len(loop) == 1 and int(ops.named(count.value).slot) == args_slot(f, "count")
    # multicast groups add their fields after start_id / count (8 x 8 blocks on 8 x 8 cores:
    # A along rows, B down columns; on GEMM's 2 x 2 cores D2.1's timing rule reads per core)
    mc = kernel(upto(kernels.matmul(M=1024, N=1024, K=128), "E1"), "reader")
    assert [(a["kind"], a.get("group"), a.get("field"))
            for a in to_py(mc.attrs[attrs.RUNTIME_ARGS])][2:] == [
        ("start_id", None, None), ("count", None, None)] + [
        ("mcast", g, f) for g in (0, 1) for f in attrs.MCAST_FIELDS]
    # the reader reads its blocks at work_id = start_id + work_offset; compute needs no id
    assert [b.var.name for b in collect(r.body, tirx.Bind)].count("work_id") == 1
    assert "work_id" not in [b.var.name for b in collect(c.body, tirx.Bind)]


def args_slot(func, kind):
    return [a["kind"] for a in to_py(func.attrs[attrs.RUNTIME_ARGS])].index(kind)


def test_f_verify_rejects_l1_overflow():
    big = kernels.matmul(1024, 1024, 1024, 512, 512, 64, num_stages=4)
    with pytest.raises(tilelang_tt.TTResourceError, match="KiB of L1"):
        tilelang_tt.lower(big)


@pytest.mark.parametrize("make,marker", [
    (lambda: kernels.elementwise_add_shared(64, 64), "T.tt.add_tiles"),
    (lambda: kernels.softmax(64, 64, 32, "float32"), "T.tt.reduce_tile"),
    (lambda: kernels.elementwise_expr(lambda a, b: T.exp(a) * 0.5 - b, 2, 64, 64), "T.tt.mul_unary_tile"),
])
def test_lowered_ir_prints_and_parses_back(make, marker):
    mod = tilelang_tt.lower(make())
    text = mod.script()
    assert "T.tt.cb_wait_front" in text and marker in text
    reparsed = tvm.script.from_source(text)
    assert len(list(reparsed.functions)) == 3
    assert reparsed.script().count("T.tt.") == text.count("T.tt.")  # no op lost


def test_dump_ir_writes_every_stage(tmp_path):
    tilelang_tt.lower(kernels.elementwise_add(64, 64), dump_ir=tmp_path)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files[0] == "00_frontend.py" and len(files) == len(pipeline.STAGES) + 1
    assert files[-1] == f"{len(pipeline.STAGES):02d}_F_VerifyTTIR.py"


def test_dump_ir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TT_DUMP_IR", str(tmp_path))
    tilelang_tt.lower(kernels.matmul(64, 64, 64, 32, 32, 32))
    dumped = {p.name for p in tmp_path.iterdir()}
    assert len(dumped) == len(pipeline.STAGES) + 1
    (c1,) = [p for p in tmp_path.iterdir() if p.name.endswith("_C1_LowerSharedToCB.py")]
    assert "T.tt.read_to_cb" in c1.read_text()


def test_c2_reductions_and_derived_vectors():
    f = only(upto(kernels.softmax(64, 128, 32, "float32"), "C2"))
    names = op_names(f.body)
    # one scaler tile right before the sum; the float32 max runs on the vector engine (none)
    assert names.count("tt.const_tile") == 1 and not tt_calls(f.body, "tt.reduce.max")
    (rmax,) = tt_calls(f.body, "tt.reduce.sfpu_max")
    assert [int(x) for x in rmax.args[2:]] == [1, 4, 0]  # Mt, Nt, over_rows
    e, inv, y = tt_calls(f.body, "tt.eltwise")
    assert same_tree(inv.args[2], apply("recip", load(0)))  # 1 / row_sum[i], once per block
    assert same_tree(e.args[2], apply("exp", load(0) - vector(1, "col")))
    assert same_tree(y.args[2], load(0) * vector(1, "col"))
    assert y.args[4].same_as(inv.args[0])


def test_d4_matrix_engine_operands_are_not_unpacked_to_dest():
    c = kernel(upto(kernels.softmax(64, 128, 32, "float32"), "D4"), "compute")
    config = to_py(c.attrs[attrs.COMPUTE_CONFIG])
    dfg = {e["name"]: e["id"] for e in to_py(c.attrs[attrs.TILE_DFG])}
    assert config["fp32_dest_acc_en"]
    # X_s feeds reduce_max and the broadcast subtraction; row_sum feeds only recip's copy_tile
    assert dfg["X_s"] not in config["unpack_to_dest_fp32"]
    assert dfg["row_sum"] in config["unpack_to_dest_fp32"]


ROW_KERNEL = """
import tilelang_tt.language as T

@T.prim_func
def k(X: T.Tensor((64, 64), "float32"), Y: T.Tensor((64, 64), "float32")):
    with T.Kernel(2) as bx:
        X_s = T.alloc_shared((32, 64), "float32")
        R = T.alloc_fragment(({r},), "float32")
        Y_s = T.alloc_shared((32, 64), "float32")
        T.copy(X[bx * 32, 0], X_s)
        {reduce}
        for i, j in T.Parallel(32, 64):
            Y_s[i, j] = {expr}
        T.copy(Y_s, Y[bx * 32, 0])
"""


@pytest.mark.parametrize("reduce,r,expr,stage,error,match", [
    ("T.reduce_max(X_s, R, dim=0)", 64, "X_s[i, j] - R[i]", "A2", tilelang_tt.TTLayoutError,
     "used as a row vector .T.reduce over dim=0. and as a col vector"),
    ("T.reduce_max(X_s, R, dim=0)", 32, "X_s[i, j] - R[i]", "A0", tilelang_tt.TTLayoutError,
     r"leaves 64 values \(one per column\), so R must have shape \[64\]"),
    ("T.reduce_max(X_s, R)", 32, "X_s[i, j] - R[j % 32]", "A0", tilelang_tt.TTUnsupportedError,
     "column index"),
    ("T.reduce_max(X_s, R)", 32, "T.hypot(R[i], R[i])", "A0", tilelang_tt.TTUnsupportedError,
     "not supported yet"),
])
def test_unsupported_reductions_and_broadcasts(tmp_path, reduce, r, expr, stage, error, match):
    k = kernel_from_source(tmp_path, ROW_KERNEL.format(reduce=reduce, r=r, expr=expr))
    with pytest.raises(error, match=match):
        upto(k, stage)


@pytest.mark.parametrize("expr,tree,slot", [
    # a direct operand: one matrix-engine broadcast
    ("X_s[i, j] - R[i]", lambda: load(0) - vector(1, "col"), False),
    # elsewhere: broadcast into a DST slot of its own (unary_bcast), no block of it
    ("X_s[i, j] * 2.0 - R[i]", lambda: load(0) * const(2.0) - vector(1, "col"), True),
    ("T.exp(R[i])", lambda: vector(0, "col"), True),
])
def test_a0_vector_operands(tmp_path, expr, tree, slot):
    k = kernel_from_source(tmp_path, ROW_KERNEL.format(reduce="T.reduce_max(X_s, R)", r=32,
                                                         expr=expr))
    f = only(upto(k, "A0"))
    exprs = [c for c in collect(f.body, tirx.TilePrimitiveCall) if c.op.name == "tt.tile.expr"]
    assert same_tree(exprs[-1].args[1], tree())
    assert ("load_bcast", (1 if "X_s" in expr else 0, "col")) in postfix(exprs[-1].args[1]) \
        if slot else all(kind != "load_bcast" for kind, _ in postfix(exprs[-1].args[1]))
    # no block is made of the vector (the former 0 + R[i] on the matrix engine)
    assert not any(same_tree(e.args[1], load(0) + vector(1, "col")) for e in exprs)


def test_a0_in_place_updates_get_versions(tmp_path):
    src = '''
import tilelang_tt.language as T

@T.prim_func
def k(A: T.Tensor((64, 64), "bfloat16"), C: T.Tensor((64, 64), "float32")):
    with T.Kernel(1, 1) as (bx, by):
        A_s = T.alloc_shared((64, 64), "bfloat16")
        acc = T.alloc_fragment((64, 64), "float32")
        T.copy(A[0, 0], A_s)
        T.gemm(A_s, A_s, acc, clear_accum=True)
        for i, j in T.Parallel(64, 64):
            acc[i, j] = T.max(acc[i, j], 0.0)
        for i, j in T.Parallel(64, 64):
            acc[i, j] = acc[i, j] * 2.0
        T.copy(acc, C[0, 0])
'''
    f = only(upto(kernel_from_source(tmp_path, src), "A0"))
    calls = collect(f.body, tirx.TilePrimitiveCall)
    assert [c.op.name.split(".")[-1] for c in calls] == [
        "copy", "gemm", "copy", "expr", "expr", "copy"]
    bufs = [[a.source for a in c.args if isinstance(a, tvm.ir.TensorRegion)] for c in calls]
    acc, packed, relu, doubled = bufs[1][0], bufs[2][0], bufs[3][0], bufs[4][0]
    # versions keep the user's name (messages name user buffers) but are distinct buffers
    assert {b.name for b in (acc, packed, relu, doubled)} == {"acc"}
    assert len({id(b) for b in (acc, packed, relu, doubled)}) == 4 and not any(
        x.same_as(y) for i, x in enumerate((acc, packed, relu, doubled))
        for y in (acc, packed, relu, doubled)[i + 1:])
    assert bufs[2][1].same_as(acc)  # the accumulator packed once, before its first reader
    assert bufs[3][1].same_as(packed) and bufs[4][1].same_as(relu)  # each update: a version
    assert bufs[5][1].same_as(doubled)  # later statements read the newest version


def test_a0_constant_subexpressions_fold():
    f = only(upto(kernels.elementwise_unary(lambda x: x * T.sqrt(4.0) - T.exp(0.0), 64, 64,
                                            dtype="float32"), "A0"))
    (call,) = [c for c in collect(f.body, tirx.TilePrimitiveCall) if c.op.name == "tt.tile.expr"]
    assert same_tree(call.args[1], load(0) * const(2.0) - const(1.0))


def test_a1_vector_tensor_of_rank_3():
    """A [batch, heads, seq] tensor copied only as 1-D slices of its last dim (TileLang's
    lse) is stored as one row of tiles per (batch, head): values in row 0 of each."""

    @T.prim_func
    def k(X: T.Tensor((64, 64), "float32"), L: T.Tensor((2, 3, 64), "float32")):
        with T.Kernel(2, 3) as (bx, by):
            x = T.alloc_shared((64, 64), "float32")
            r = T.alloc_fragment((64,), "float32")
            T.copy(X, x)
            T.reduce_sum(x, r, dim=1)
            T.copy(r, L[bx, by, 0:64])

    lay = to_py(only(upto(k, "A1")).attrs[attrs.LAYOUT_DESC])[1]
    assert lay["vector"] and lay["tiles"] == [6, 2] and lay["axes"] == [0, 1, 2]
    assert not attrs.check(attrs.LAYOUT_DESC, lay)
