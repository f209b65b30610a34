"""Each stage run on its own, starting from parsed IR: the module before the stage is printed
as TVMScript and parsed back, the stage alone runs on the parsed module, and its result is
the one the pipeline produces and meets the stage's guarantees.  Plus stages checked on
small hand-written IR (TVMScript with T.tt ops), as MLIR tests run one pass on a textual
input."""

import textwrap

import pytest
import tvm
import tvm_ffi
from tvm import tirx

import kernels
import tilelang_tt
import tilelang_tt.language as T
from tilelang_tt import attrs, ops
from tilelang_tt.passes import pipeline
from tilelang_tt.passes.common import collect, run_pass, to_py, tt_calls
from tilelang_tt.passes.compute.cb_share import share_problems
from tilelang_tt.passes.dataflow.copy_forwarding import forward_copies
from tilelang_tt.passes.frontend.block_regions import split_block_regions
from tilelang_tt.passes.frontend.block_slices import collapse_block_slices
from tilelang_tt.passes.frontend.condition_fragments import read_condition_fragments
from tilelang_tt.passes.frontend.dead_blocks import dead_block_writes
from tilelang_tt.passes.frontend.scalar_operands import stage_scalar_operands
from tilelang_tt.passes.frontend.guards import drop_true_guards
from tilelang_tt.passes.frontend.host_formats import convertible as _convertible
from tilelang_tt.passes.frontend.host_formats import permutable as _permutable
from tilelang_tt.passes.frontend.index_fragments import column_store_loops, index_value_fragments
from tilelang_tt.passes.frontend.k_coarsen import coarsen_k_loops
from tilelang_tt.passes.frontend.loop_extents import bound_loop_extents
from tilelang_tt.passes.frontend.local_blocks import retype_local_blocks, stores_to_copies
from tilelang_tt.passes.frontend.pad_tensors import padding_needed
from tilelang_tt.passes.frontend.pad_blocks import short_block_buffers
from tilelang_tt.passes.frontend.row_blocks import coarsen_row_blocks
from tilelang_tt.passes.frontend.serial_rows import serial_rows_to_block
from tilelang_tt.passes.frontend.short_blocks import read_short_blocks
from tilelang_tt.passes.frontend.wide_rows import stream_wide_rows
from tilelang_tt.passes.verify.verify_ttir import kernels_of
from tilelang_tt.target import profile_of

KERNELS = {
    "gemm": lambda: kernels.matmul(256, 256, 128),
    "softmax": lambda: kernels.softmax(64, 128, 32, "float32"),
    "add_fragment": lambda: kernels.elementwise_add_fragment(64, 64, out_dtype="float32"),
    "reshape": lambda: _reshapes(),
    "short_blocks": lambda: _short_blocks(),
    "blocksparse": lambda: _blocksparse(),
}


def _short_blocks():
    """A GEMM of 16 rows and K = 16 over two column blocks (A0.5.1 pads its blocks; A's K
    padding would read A's columns 16..31, so it is masked; B's is B's zero padding)."""
    @T.prim_func
    def short_blocks(A: T.Tensor((16, 64), "bfloat16"), B: T.Tensor((16, 64), "bfloat16"),
                     C: T.Tensor((16, 64), "float32")):
        with T.Kernel(2) as bx:
            A_s = T.alloc_shared((16, 16), "bfloat16")
            B_s = T.alloc_shared((16, 32), "bfloat16")
            C_l = T.alloc_fragment((16, 32), "float32")
            T.copy(A[0, 0], A_s)
            T.copy(B[0, bx * 32], B_s)
            T.gemm(A_s, B_s, C_l, clear_accum=True)
            T.copy(C_l, C[0, bx * 32])

    return short_blocks


def _blocksparse():
    """TileLang's block-sparse GEMM: K steps skipped by a mask tensor's elements."""
    from test_blocksparse import blocksparse_matmul

    return blocksparse_matmul.get_tir(256, 256, 128, 128, 128, 32, dtype="bfloat16")


def _blocksparse_attention():
    """TileLang's block-sparse flash attention: a mask row copied into a fragment, K steps
    skipped by its elements, the running max / sum / output carried under the branch."""
    from test_blocksparse_attention import blocksparse_flashattn
    return blocksparse_flashattn.get_tir(1, 1, 256, 64, 4, True)


def _reshapes():
    """A tensor argument read through a 2-D view, a 3-D fragment filled and used 2-D."""
    @T.prim_func
    def reshapes(A: T.Tensor((8192,), "float32"), B: T.Tensor((128, 64), "float32")):
        with T.Kernel(2) as bx:
            A_s = T.alloc_shared((64, 64), "float32")
            acc = T.alloc_fragment((2, 32, 64), "float32")
            T.copy(T.reshape(A, [128, 64])[bx * 64, 0], A_s)
            T.fill(acc, 1.0)
            acc_2d = T.reshape(acc, [64, 64])
            out = T.alloc_fragment((64, 64), "float32")
            for i, j in T.Parallel(64, 64):
                out[i, j] = acc_2d[i, j] + A_s[i, j]
            T.copy(out, B[bx * 64, 0])

    return reshapes


def _atomic_add():
    @T.prim_func
    def atomic_add(A: T.Tensor((2, 64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, 2, 2) as (bx, by, bz):
            A_shared = T.alloc_shared((32, 32), "float32")
            T.copy(A[bz, bx * 32, by * 32], A_shared)
            for i, j in T.Parallel(32, 32):
                T.atomic_add(B[bx * 32 + i, by * 32 + j], A_shared[i, j])

    return atomic_add


def _funcs(mod):
    return list(mod.functions.values())


def _calls(mod):
    return [c for f in _funcs(mod) for c in tt_calls(f.body)]


def _tiles(mod):
    return [c for f in _funcs(mod) for c in collect(f.body, tirx.TilePrimitiveCall)]


def _names(mod):
    return {c.op.name for c in _calls(mod)} | {c.op.name for c in _tiles(mod)}


def _families(mod):
    return {ops.spec(c.op.name).family for c in _calls(mod)}


def _cb_id(func, cb_var):
    """The id tt.alloc_cb gave the CB variable ``cb_var``."""
    for b in collect(func.body, tirx.Bind):
        if b.var.same_as(cb_var) and ops.tt_op_name(b.value) == "tt.alloc_cb":
            return b.value.args[0]
    raise KeyError(cb_var)


# what each stage guarantees, checked on its output
GUARANTEES = {
    # no thread index is left (its `if`s resolved, any other use refused)
    "A0.000": lambda m: not [c for f in _funcs(m) for c in tt_calls(f.body, "tt.thread_index")],
    # no assumption is left (each checked when constant)
    "A0.000.1": lambda m: not [c for f in _funcs(m) for c in tt_calls(f.body, "tt.assume")],
    # no T.Persistent loop is left (each became the launch)
    # a scalar program stores no tensor element directly: its accesses are tt.scalar ops
    "A0.00.1": lambda m: all(attrs.SCALAR_PROGRAM not in (f.attrs or {}) or not [
        st for st in collect(f.body, tirx.BufferStore) if str(st.buffer.scope()) == "global"]
        for f in _funcs(m)),
    "A0.00": lambda m: not [lp for f in _funcs(m) for lp in collect(f.body, tirx.For)
                            if attrs.LOOP_PERSISTENT_TILES in (lp.annotations or {})],
    # no buffer is declared over another's data (T.reshape / T.view resolved)
    "A0.2.0": lambda m: not [d for f in _funcs(m) for d in collect(f.body, tirx.DeclBuffer)
                             if isinstance(d.data, tvm.ir.Call)
                             and str(d.data.op.name) == "tirx.buffer_data"
                             and not d.data.args[0].same_as(d.buffer)],
    # no block of fewer than 32 rows is left to coarsen: coarsening again changes nothing
    "A0.0": lambda m: all(not coarsen_row_blocks(f.body)[1] for f in _funcs(m)),
    # no serial loop over a block's rows is left: rewriting again changes nothing
    "A0.0.1": lambda m: all(not serial_rows_to_block(f.body)[1] for f in _funcs(m)),
    # no local buffer a tile op uses, no one-element store left to make a tile op: again a no-op
    "A0.0.2": lambda m: all(tvm_ffi.structural_equal(
        stores_to_copies(retype_local_blocks(f.body)), f.body) for f in _funcs(m)),
    # (a scalar program's locals stay: A0.00.1)
    "A0.1": lambda m: not [a for f in _funcs(m) for a in collect(f.body, tirx.AllocBuffer)
                           if str(a.buffer.scope()) == "local"
                           and attrs.SCALAR_PROGRAM not in (f.attrs or {})],
    # no always-true guard is left: dropping again changes nothing
    "A0.1.0": lambda m: all(tvm_ffi.structural_equal(drop_true_guards(f.body), f.body)
                            for f in _funcs(m)),
    # no block buffer is left with constant tile-aligned regions to split: again a no-op
    "A0.1.0.0": lambda m: all(tvm_ffi.structural_equal(split_block_regions(f.body), f.body)
                              for f in _funcs(m)),
    # every T.Parallel extent is a literal, and bounding again changes nothing
    "A0.1.0.1": lambda m: all(
        all(isinstance(lp.extent, tirx.IntImm) for lp in collect(f.body, tirx.For)
            if lp.kind == tirx.ForKind.PARALLEL)
        and tvm_ffi.structural_equal(bound_loop_extents(f), f.body) for f in _funcs(m)),
    "A0.1.1": lambda m: not [a for f in _funcs(m) for a in collect(f.body, tirx.AttrStmt)
                             if str(a.attr_key) == attrs.ATOMIC],
    # no collapsible block buffer is left: collapsing again changes nothing
    "A0.1.2": lambda m: all(tvm_ffi.structural_equal(collapse_block_slices(f.body), f.body)
                            for f in _funcs(m)),
    "A0.1.3": lambda m: not [a for f in _funcs(m) for a in collect(f.body, tirx.AttrStmt)
                             if str(a.attr_key) == attrs.REDUCER_UPDATE],
    # no integer block buffer of index values is left, nor a vector stored into a tensor
    # column per iteration of a loop over its columns (rewriting again: no-op)
    "A0.1.3.1": lambda m: all(not index_value_fragments(f) for f in _funcs(m)),
    "A0.1.3.2": lambda m: all(not column_store_loops(f) for f in _funcs(m)),
    # no row block left too wide for L1: streaming again changes nothing
    "A0.1.4": lambda m: all(stream_wide_rows(f) is None for f in _funcs(m)),
    # no block buffer copied from a tensor and read only in conditions is left: again no-op
    "A0.1.4.1": lambda m: all(read_condition_fragments(f).same_as(f) for f in _funcs(m)),
    # no T.Parallel nest reads a float tensor's element at an index of its own (all staged)
    "A0.1.4.2": lambda m: all(stage_scalar_operands(f).same_as(f) for f in _funcs(m)),
    # no uint8 / int8 / bool tensor is left that the kernel reads only as values, and no
    # tensor copied only as 1-D slices along a dim other than its last (running again: no-op)
    "A0.1.5": lambda m: all(not _convertible(f) for f in _funcs(m)),
    "A0.1.6": lambda m: all(not _permutable(f) for f in _funcs(m)),
    "A0.2": lambda m: not [lp for f in _funcs(m) for lp in collect(f.body, tirx.For)
                           if lp.kind == tirx.ForKind.PARALLEL],
    # no short block buffer holding a tensor region is left: reading them again changes nothing
    "A0.2.1": lambda m: all(tvm_ffi.structural_equal(read_short_blocks(f.body), f.body)
                            for f in _funcs(m)),
    "A0.3": lambda m: "tirx.tile.min" not in _names(m),
    # nothing dead is left: dropping again drops nothing
    "A0.3.0": lambda m: all(not dead_block_writes(f.body)[0] for f in _funcs(m)),
    # every tensor has its device shape: padding again changes nothing
    "A0.3.1": lambda m: all(not padding_needed(f) for f in _funcs(m)),
    "A0.4": lambda m: all(not any(c.args[0].source.same_as(r.source) for r in c.args[1:]
                                  if isinstance(r, tvm.ir.TensorRegion))
                          for c in _tiles(m) if c.op.name != "tirx.tile.gemm"),
    # no coarsenable K loop is left: coarsening again changes nothing
    "A0.5": lambda m: all(not coarsen_k_loops(f.body, profile_of(
        str(f.attrs[attrs.TARGET])).l1_usable_bytes)[1] for f in _funcs(m)),
    # every block buffer is whole tiles: padding again changes nothing
    "A0.5.1": lambda m: all(not short_block_buffers(f.body) for f in _funcs(m)),
    "V0": lambda m: True,
    "A1": lambda m: all(len(to_py(f.attrs[attrs.LAYOUT_DESC])) == len(f.params) for f in _funcs(m)),
    "A2": lambda m: all(attrs.CB_DESC in (a.annotations or {}) or attrs.ACC_DESC in
                        (a.annotations or {}) for f in _funcs(m) for a in collect(f.body, tirx.AllocBuffer)),
    "B1": lambda m: all(attrs.PARTITION in f.attrs for f in _funcs(m)),
    "B2": lambda m: "tt.work_id" in _names(m),
    "C1": lambda m: "tt.alloc_cb" in _names(m) and not [
        c for c in _tiles(m) if c.op.name == "tirx.tile.copy" and any(
            str(r.source.scope()) == "global" for r in c.args)],
    "C2": lambda m: not _tiles(m),
    # no forwardable copy is left: forwarding again changes nothing
    "C2.1": lambda m: all(tvm_ffi.structural_equal(forward_copies(f.body), f.body)
                          for f in _funcs(m)),
    # the tensor elements branch conditions read are each kernel's value now
    "C2.2": lambda m: not any(collect(f.body, tvm.ir.TensorLoad) for f in _funcs(m)),
    "C3": lambda m: all(int(c.args[0]) >= 0 for c in _calls(m) if c.op.name == "tt.alloc_cb"),
    # a CB on an L1 shard is published / retired without copies, and only such CBs are
    "C4": lambda m: all(
        (c.op.name in ("tt.shard_to_cb", "tt.cb_to_shard")) == (int(_cb_id(f, c.args[0])) in {
            int(e["id"]) for e in to_py(f.attrs[attrs.TILE_DFG]) if "in_place" in e})
        for f in _funcs(m) for c in tt_calls(f.body)
        if c.op.name in ("tt.shard_to_cb", "tt.cb_to_shard", "tt.read_to_cb", "tt.write_from_cb")),
    "D1": lambda m: sorted(str(f.attrs[attrs.KERNEL_KIND]) for f in _funcs(m)) == [
        "compute", "reader", "writer"],
    "D2": lambda m: "tt.tensor_accessor" in _names(m),
    # every multicast read has its group in the plan, and only the reader has a plan
    # no scalar program's element access is left abstract
    "D2.2": lambda m: not [c for f in _funcs(m) for c in collect(f.body, tvm.ir.Call)
                           if ops.tt_op_name(c) in ("tt.scalar.load", "tt.scalar.store")],
    "D2.1": lambda m: all(
        int(c.args[6]) < len(to_py(f.attrs[attrs.MCAST_PLAN])["groups"])
        for f in _funcs(m) for c in tt_calls(f.body, "tt.mcast_read_to_cb")) and all(
        str(f.attrs[attrs.KERNEL_KIND]) == "reader" for f in _funcs(m)
        if attrs.MCAST_PLAN in f.attrs),
    "D3": lambda m: not {"tt.read_to_cb", "tt.mcast_read_to_cb", "tt.write_from_cb",
                         "tt.consume.begin", "tt.shard_to_cb", "tt.cb_to_shard"} & _names(m),
    "D4": lambda m: "tt.compute_kernel_hw_startup" in _names(m),
    "D5": lambda m: "abstract" not in _families(m),
    "D5.1": lambda m: True,
    # every CB index is a core's, and an index several CBs share passes F's check
    "D5.2": lambda m: all(int(c.args[0]) < 32 for c in _calls(m) if c.op.name == "tt.alloc_cb")
    and not share_problems(kernels_of(m)),
    # every kernel lists the same regions, each of two or more compute-only CBs
    "D6": lambda m: all(
        to_py(f.attrs[attrs.L1_REGIONS]) == to_py(_funcs(m)[0].attrs[attrs.L1_REGIONS]) and all(
            len(r["cbs"]) >= 2 and all(e["role"] == "intermediate" for e in to_py(
                f.attrs[attrs.TILE_DFG]) if int(e["id"]) in {int(c) for c in r["cbs"]})
            for r in to_py(f.attrs[attrs.L1_REGIONS])) for f in _funcs(m)),
    # every CB D6.1 single-buffered has depth 1 in every kernel's tt.tile_dfg and tt.alloc_cb
    "D6.1": lambda m: all(
        all(int(e["depth"]) == 1 for e in to_py(f.attrs[attrs.TILE_DFG])
            if int(e["id"]) in fit) and all(
            int(c.args[3]) == 1 for c in tt_calls(f.body, "tt.alloc_cb") if int(c.args[0]) in fit)
        for f in _funcs(m)
        for fit in [{int(x["cb"]) for x in to_py(f.attrs.get(attrs.L1_FIT, []) or [])}]),
    "E1": lambda m: not [a for f in _funcs(m) for a in collect(f.body, tirx.AttrStmt)
                         if str(a.attr_key) == attrs.PERSISTENT_BODY],
    "F": lambda m: True,
}


def test_every_stage_has_a_guarantee_check():
    assert sorted(GUARANTEES) == sorted(tag for tag, _ in pipeline.STAGES)


def test_serial_rows_stage_output_parses_back():
    """A0.0.1's output (TileLang's layernorm backward, its row walk as a 32-row block) prints
    and parses back to the same module, which has no row walk left.  (Its input cannot: the
    one-element fragments print as scalars, which is why A0.0 / A0.0.1 run first.)"""
    import row_blocks as RB

    mod = pipeline.prepare(RB.layernorm_bwd.get_tir(64, 128), "tenstorrent")
    tags = [t for t, _ in pipeline.STAGES]
    for tag, p in pipeline.STAGES[:tags.index("A0.0.1") + 1]:  # A0.000, A0.000.1, A0.00, A0.00.1, A0.0, A0.0.1
        mod = run_pass(p, mod)
    assert attrs.SERIAL_ROWS in _funcs(mod)[0].attrs
    parsed = tvm.script.from_source(mod.script())
    assert tvm_ffi.structural_equal(parsed, mod)
    assert GUARANTEES["A0.0.1"](parsed)


def test_atomics_stage_from_parsed_ir():
    """A0.1.1 from the text of its input: the ``tt.atomic`` markers print and parse back.
    (Later stages are not compared here: A0.4's versions share the user's name, which the
    printer disambiguates, so CB names made from them differ after a parse.)"""
    mod = pipeline.prepare(_atomic_add(), "tenstorrent")
    # A0.000, A0.000.1, A0.00, A0.00.1, A0.0, A0.0.1, A0.0.2 (nothing to do here), A0.1, A0.1.0, A0.1.0.0, A0.1.0.1 (nothing
    # to do here), A0.1.1
    for tag, p in pipeline.STAGES[:[t for t, _ in pipeline.STAGES].index("A0.1.1") + 1]:
        parsed = tvm.script.from_source(mod.script())
        out_parsed = run_pass(p, parsed)
        mod = run_pass(p, mod)
        assert tvm_ffi.structural_equal(out_parsed, mod), tag
        assert GUARANTEES[tag](out_parsed), tag
    # blockIdx.z (the split, unused by B's index) is now a serial loop of its extent
    func = _funcs(mod)[0]
    tags = [str(a.node.thread_tag) for a in collect(func.body, tirx.AttrStmt)
            if str(a.attr_key) == "thread_extent"]
    assert tags == ["blockIdx.x", "blockIdx.y"]
    assert [int(lp.extent) for lp in collect(func.body, tirx.For)
            if lp.kind == tirx.ForKind.SERIAL] == [2]


def test_persistent_stage_from_parsed_ir():
    """A0.00 from the text of its input: the ``tt.persistent_tiles`` annotation (holding the
    block index) prints and parses back, and the output is the launch over the domain."""
    import test_persistent as P

    mod = pipeline.prepare(P.matmul_persistent(64, 96, 64, 32, 32, 32, sm_num=4), "tenstorrent")
    tag, p = next(s for s in pipeline.STAGES if s[0] == "A0.00")
    parsed = tvm.script.from_source(mod.script())
    assert tvm_ffi.structural_equal(parsed, mod)
    out_parsed = run_pass(p, parsed)
    mod = run_pass(p, mod)
    assert tvm_ffi.structural_equal(out_parsed, mod)
    assert GUARANTEES[tag](out_parsed)
    func = _funcs(mod)[0]
    assert [(str(a.node.thread_tag), int(a.value)) for a in collect(func.body, tirx.AttrStmt)
            if str(a.attr_key) == "thread_extent"] == [("blockIdx.x", 2), ("blockIdx.y", 3)]


def test_wide_rows_stage_from_parsed_ir():
    """A0.1.4 from the text of its input (32-row blocks of 8192 float32 columns, streamed in
    chunks of 1024), and the frontend after it up to A0.3.  (From A0.4 on, versions share the
    user's name and CB names made from them differ after a parse, as in the atomics test.)"""
    import row_blocks

    mod = pipeline.prepare(row_blocks.rms_norm.get_tir(M=64, N=8192, blk_m=32), "tenstorrent")
    streamed = False
    for tag, p in pipeline.STAGES:
        if tag == "A0.3.1":
            break
        parsed = tvm.script.from_source(mod.script())
        out_parsed = run_pass(p, parsed)
        mod = run_pass(p, mod)
        assert tvm_ffi.structural_equal(out_parsed, mod), tag
        assert GUARANTEES[tag](out_parsed), tag
        streamed = streamed or attrs.COL_STREAM in _funcs(mod)[0].attrs
    assert streamed


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_each_stage_from_parsed_ir(name):
    # TVMScript's parser is most of this test's time: each kernel runs every other stage from its
    # parsed input (alternate stages for alternate kernels, so each stage runs from parsed IR for
    # half of the kernels); every stage's guarantee is checked on every kernel
    offset = sorted(KERNELS).index(name) % 2
    mod = pipeline.prepare(KERNELS[name](), "tenstorrent")
    for i, (tag, p) in enumerate(pipeline.STAGES):
        if (i + offset) % 2 == 0:
            parsed = tvm.script.from_source(mod.script())  # the stage's input, as text
            out_parsed = run_pass(p, parsed)
            mod = run_pass(p, mod)
            assert tvm_ffi.structural_equal(out_parsed, mod), (name, tag)
        else:
            mod = run_pass(p, mod)
        assert GUARANTEES[tag](mod), (name, tag)


def test_blocksparse_attention_frontend_from_parsed_ir():
    """The frontend stages of block-sparse attention (its mask fragment read from the tensor,
    its carries refilled under the branch), each from parsed IR.  (From C1 on, parsing back
    renames the versions' CBs, as for any kernel with versions: not compared.)"""
    mod = pipeline.prepare(_blocksparse_attention(), "tenstorrent")
    for tag, p in pipeline.STAGES:
        parsed = tvm.script.from_source(mod.script())
        out_parsed = run_pass(p, parsed)
        mod = run_pass(p, mod)
        assert tvm_ffi.structural_equal(out_parsed, mod), tag
        assert GUARANTEES[tag](out_parsed), tag
        if tag == "V0":
            break
    func = _funcs(mod)[0]
    assert not [a for a in collect(func.body, tirx.AllocBuffer) if a.buffer.name == "block_mask"]
    branch = collect(func.body, tirx.IfThenElse)[0]
    assert [ld.source.name for ld in collect(branch.condition, tvm.ir.TensorLoad)] == \
        ["BlockSparseMask"]
    # the branch's then arm ends refilling the three carries
    last = list(branch.then_case.seq)[-3:]
    assert [c.args[0].source.name for c in last] == ["scores_max", "logsum", "acc_o"]


# --- hand-written IR ----------------------------------------------------------------------
_DFG = ", ".join(
    f'{{"id": {i}, "name": "{n}", "dtype": "bfloat16", "rows": 1, "cols": 1, "depth": 2, '
    f'"page_bytes": 2048, "producer": "{p}", "consumer": "{c}", "role": "{r}"}}'
    for i, n, p, c, r in ((0, "a", "reader", "compute", "input"),
                          (1, "b", "reader", "compute", "input"),
                          (16, "m", "compute", "writer", "output"),
                          (17, "c", "compute", "writer", "output")))
COMPUTE = '''
@T.prim_func
def k_compute():
    T.func_attr({{"global_symbol": "k_compute", "tt.kernel_kind": "compute",
                 "tt.target": "wormhole_b0", "tt.tile_dfg": [''' + _DFG.replace("{", "{{").replace("}", "}}") + '''],
                 "tt.stage_log": ["SplitDeviceKernel", "ConfigureTensorAccessorTT",
                                  "LowerCBIntrinsics"]}})
    a: T.let[T.int32] = T.tt.alloc_cb(0, 1, 1, 2, "bfloat16", "a")
    b: T.let[T.int32] = T.tt.alloc_cb(1, 1, 1, 2, "bfloat16", "b")
    m: T.let[T.int32] = T.tt.alloc_cb(16, 1, 1, 2, "bfloat16", "m")
    c: T.let[T.int32] = T.tt.alloc_cb(17, 1, 1, 2, "bfloat16", "c")
    with T.attr({{"tt.persistent_body": 4}}):
        bx: T.let[T.int32] = T.tt.work_id() % 2
        T.tt.cb_wait_front(a, 1)
        T.tt.cb_wait_front(b, 1)
{body}
        T.tt.cb_pop_front(b, 1)
        T.tt.cb_pop_front(a, 1)
'''


def parse(template, body):
    return tvm.script.from_source(template.format(
        body=textwrap.indent(textwrap.dedent(body).strip(), " " * 8)))


def d4(body):
    func = parse(COMPUTE, body)
    return run_pass(pipeline.InsertComputeInitTT, tvm.IRModule({"k_compute": func}))["k_compute"]


def _init_positions(func):
    """Where each mul_init is: "then" / "else" of the branch, or "top" outside it."""
    ifs = collect(func.body, tirx.IfThenElse)
    where = []
    for c in tt_calls(func.body, "tt.mul_init"):
        if any(c.same_as(x) for i in ifs for x in tt_calls(i.then_case, "tt.mul_init")):
            where.append("then")
        elif any(i.else_case is not None and any(c.same_as(x) for x in
                                                 tt_calls(i.else_case, "tt.mul_init"))
                 for i in ifs):
            where.append("else")
        else:
            where.append("top")
    return where


def test_d4_init_joins_the_paths_of_a_branch():
    """The D4 miscompile of issue 7: the mul after `if bx == 0: mul` needs its own init."""
    f = d4("""
        if bx == 0:
            T.tt.fpu.mul(m, a, b, 1)
        T.tt.fpu.mul(c, a, b, 1)
    """)
    assert _init_positions(f) == ["then", "top"]
    # both paths configure the engine before the second mul: nothing more to insert
    f = d4("""
        if bx == 0:
            T.tt.fpu.mul(m, a, b, 1)
        else:
            T.tt.fpu.mul(m, a, b, 1)
        T.tt.fpu.mul(c, a, b, 1)
    """)
    assert _init_positions(f) == ["then", "else"]


def test_d4_one_init_before_a_loop_that_needs_one_configuration():
    f = d4("""
        for i in range(4):
            T.tt.fpu.mul(c, a, b, 1)
    """)
    loop = collect(f.body, tirx.For)[0]
    assert len(tt_calls(f.body, "tt.mul_init")) == 1 and not tt_calls(loop, "tt.mul_init")
    # a self-configuring op in the loop: the init goes inside, every iteration
    f = d4("""
        for i in range(4):
            T.tt.fpu.mul(c, a, b, 1)
            T.tt.eltwise(m, 1, T.tt.expr.exp(T.tt.expr.load(0)), a)
    """)
    loop = collect(f.body, tirx.For)[0]
    assert len(tt_calls(loop, "tt.mul_init")) == 1


def test_c2_1_forwards_a_copy_from_ir():
    src = '''
@T.prim_func
def k():
    T.func_attr({"global_symbol": "k", "tt.stage_log": ["LowerTTTileIntrinsics"]})
    a: T.let[T.int32] = T.tt.alloc_cb(-1, 1, 1, 2, "bfloat16", "a")
    t: T.let[T.int32] = T.tt.alloc_cb(-1, 1, 1, 2, "float32", "t")
    o: T.let[T.int32] = T.tt.alloc_cb(-1, 1, 1, 2, "bfloat16", "o")
    with T.attr({"tt.persistent_body": 1}):
        T.tt.eltwise(t, 1, T.tt.expr.exp(T.tt.expr.load(0)), a)
        T.tt.eltwise(o, 1, T.tt.expr.load(0), t)
'''
    mod = tvm.IRModule({"k": tvm.script.from_source(src)})
    out = run_pass(pipeline.ForwardBlockCopiesTT, mod)["k"]
    (only,) = tt_calls(out.body, "tt.eltwise")
    assert ops.named(only).out.name == "o"  # the exp writes o directly (fp32 -> bf16 rounds once)
    assert [str(b.value.args[5].value) for b in collect(out.body, tirx.Bind)] == ["a", "o"]


def test_c2_1_forwards_a_copy_to_its_reader_from_ir():
    """The copy's source has another reader (it cannot be retargeted); its destination's one
    reader, a compute op, reads the source instead.  Not when the dtypes differ."""
    src = '''
@T.prim_func
def k():
    T.func_attr({"global_symbol": "k", "tt.stage_log": ["LowerTTTileIntrinsics"]})
    a: T.let[T.int32] = T.tt.alloc_cb(-1, 1, 1, 2, "float32", "a")
    m: T.let[T.int32] = T.tt.alloc_cb(-1, 1, 1, 2, "float32", "m")
    t: T.let[T.int32] = T.tt.alloc_cb(-1, 1, 1, 2, "DT", "t")
    o: T.let[T.int32] = T.tt.alloc_cb(-1, 1, 1, 2, "float32", "o")
    r: T.let[T.int32] = T.tt.alloc_cb(-1, 1, 1, 2, "float32", "r")
    with T.attr({"tt.persistent_body": 1}):
        T.tt.eltwise(m, 1, T.tt.expr.exp(T.tt.expr.load(0)), a)
        T.tt.eltwise(t, 1, T.tt.expr.load(0), m)
        T.tt.eltwise(r, 1, T.tt.expr.load(0) * T.float32(2.0), m)
        T.tt.eltwise(o, 1, T.tt.expr.load_t(0), t)
'''
    for dtype, forwarded in (("float32", True), ("bfloat16", False)):
        mod = tvm.IRModule({"k": tvm.script.from_source(src.replace("DT", dtype))})
        out = run_pass(pipeline.ForwardBlockCopiesTT, mod)["k"]
        names = [str(b.value.args[5].value) for b in collect(out.body, tirx.Bind)]
        last = ops.named(tt_calls(out.body, "tt.eltwise")[-1])
        if forwarded:
            assert "t" not in names and last.ins[0].name == "m"
        else:
            assert "t" in names and last.ins[0].name == "t"


def test_e1_persistent_loop_from_ir():
    src = '''
@T.prim_func
def k_reader(A: T.Buffer((64, 64), "bfloat16")):
    T.func_attr({"global_symbol": "k_reader", "tt.kernel_kind": "reader", "tt.target": "wormhole_b0",
                 "tt.accessors": [{"param": 0, "index": 0, "addr_slot": 0, "page_bytes": 2048}],
                 "tt.stage_log": ["ConfigureTensorAccessorTT", "LowerCBIntrinsics",
                                  "InsertComputeInitTT", "InsertDSTManagementTT"]})
    a: T.let[T.int32] = T.tt.alloc_cb(0, 1, 1, 2, "bfloat16", "a")
    acc: T.let[T.handle] = T.tt.tensor_accessor(A, 0, 0, 2048)
    with T.attr({"tt.persistent_body": 4}):
        T.tt.cb_reserve_back(a, 1)
        l1: T.let[T.int32] = T.tt.get_write_ptr(a)
        T.tt.noc_async_read_page(T.tt.work_id(), acc, l1)
        T.tt.noc_async_read_barrier()
        T.tt.cb_push_back(a, 1)
'''
    mod = tvm.IRModule({"k_reader": tvm.script.from_source(src)})
    out = run_pass(pipeline.LowerPersistentLoopTT, mod)["k_reader"]
    assert to_py(out.attrs[attrs.RUNTIME_ARGS]) == [
        {"kind": "buffer_addr", "param": 0}, {"kind": "start_id"}, {"kind": "count"}]
    (loop,) = collect(out.body, tirx.For)
    binds = {b.var.name: b for b in collect(out.body, tirx.Bind)}
    assert loop.extent.same_as(binds["work_count"].var)
    assert int(binds["work_count"].value.args[0]) == 2 and int(binds["start_id"].value.args[0]) == 1
    (read,) = tt_calls(out.body, "tt.noc_async_read_page")
    assert read.args[0].same_as(binds["work_id"].var)  # tt.work_id() is the loop's work unit
