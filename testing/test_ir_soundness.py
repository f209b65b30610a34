"""The IR is sound after every stage: well-formed (TVM's verify_well_formed: every variable
defined once in the module, before its uses; every buffer declared) and printable as
TVMScript that parses back to an equal module, for every kind of kernel the test suite
compiles (the round trip after every third stage of each kernel, a different third per kernel).  (The whole suite verifies well-formedness after every stage through
TT_VERIFY_EACH=1; TT_VERIFY_EACH=roundtrip adds the round trip to every compile.)"""

import pytest
import tvm

import kernels
import tilelang_tt.language as T
from tilelang_tt.passes import pipeline
from test_cb_share import stacked_softmax

KERNELS = {
    "gemm": lambda: kernels.matmul(256, 256, 128),
    "gemm_nt": lambda: kernels.matmul_nt(256, 128, 192, 128, 64, 32),
    "gemm_fits_dst": lambda: kernels.matmul(64, 64, 128, 64, 64, 32),
    "add_global": lambda: kernels.elementwise_add(64, 64),
    "add_shared_f32": lambda: kernels.elementwise_add_shared(64, 64, dtype="float32"),
    "add_fragment": lambda: kernels.elementwise_add_fragment(64, 64, out_dtype="float32"),
    "unary": lambda: kernels.elementwise_unary(lambda x: T.sigmoid(x), 64, 64),
    "expr": lambda: kernels.elementwise_expr(lambda a, b: T.exp(a) * 0.5 - b, 2, 64, 64),
    "softmax": lambda: kernels.softmax(64, 128, 32, "float32"),
    "rmsnorm": lambda: kernels.rmsnorm(64, 64),
    "layernorm": lambda: kernels.layernorm(64, 64),
    "reduce_min": lambda: kernels.row_reduce_broadcast(64, 64, kind="min"),
    # 38 circular buffers: D5.2 shares CB indices between intermediates
    "cb_share": lambda: stacked_softmax(64, 64, 32, 9, tail=True),
    # a mask fragment read from its tensor (a scalar tensor), carries refilled under a branch
    "blocksparse_attention": lambda: _blocksparse_attention(),
    # T.Parallel branches if-converted: nested, a condition computed into a block first
    "parallel_branches": lambda: _parallel_branches("nested"),
    "parallel_branch_condition_block": lambda: _parallel_branches("condition"),
    # T.print of scalars (the reader's DPRINT lines) and of a block (the writer's)
    "prints": lambda: _prints(),
    "block_print": lambda: _block_print(),
}


def _prints():
    from test_debug_print import copy_with_prints
    return copy_with_prints()


def _block_print():
    @T.prim_func
    def main(A: T.Tensor((64, 64), T.float32), B: T.Tensor((64, 64), T.float32)):
        with T.Kernel(2, 2) as (bx, by):
            s = T.alloc_shared((32, 32), T.float32)
            T.copy(A[by * 32, bx * 32], s)
            if bx == 1:
                T.print(s, msg="s")
            T.copy(s, B[by * 32, bx * 32])

    return main


def _parallel_branches(which):
    import test_parallel_branches as B
    return B.nested_two_buffers.get_tir(64, 64) if which == "nested" else \
        B.condition_overwritten()


def _blocksparse_attention():
    from test_blocksparse_attention import blocksparse_flashattn
    return blocksparse_flashattn.get_tir(1, 1, 256, 64, 4, True)


# TVMScript's parser takes a few tenths of a second per module: each kernel round-trips after
# every third stage (a different third for each kernel, so every stage is round-tripped for about
# a third of the kernels) and after the last; every kernel is checked well-formed after every stage.
ROUNDTRIP_EVERY = 3


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_well_formed_and_round_trips_after_every_stage(name):
    offset = sorted(KERNELS).index(name) % ROUNDTRIP_EVERY
    mod = pipeline.prepare(KERNELS[name](), "tenstorrent")
    for i, (_, p) in enumerate(pipeline.STAGES):
        mod = pipeline.run_pass(p, mod)
        tvm.tirx.analysis.verify_well_formed(mod)  # raises on ill-formed IR
        if (i + offset) % ROUNDTRIP_EVERY == 0 or i == len(pipeline.STAGES) - 1:
            pipeline.check_roundtrip(mod, p.info.name)


def test_split_kernels_have_variables_of_their_own():
    mod = pipeline.run(pipeline.prepare(kernels.matmul(64, 64, 64, 32, 32, 32), "tenstorrent"),
                       stop_after="SplitDeviceKernel")
    funcs = list(mod.functions.values())
    params = [p for f in funcs for p in f.params]
    assert len(params) == 9 and not any(
        p.same_as(q) for i, p in enumerate(params) for q in params[i + 1:])


def test_every_op_has_one_complete_registry_entry():
    from tilelang_tt import ops

    for name, s in ops.specs().items():
        assert s.family in ("tile", "expr", "abstract", "dataflow", "compute", "meta"), name
        assert all(o.kind in ops.KINDS for o in s.operands), name
        if s.family in ("abstract", "dataflow", "compute"):
            assert s.kernel in ("reader", "compute", "writer", "any") and s.engine, name
        if s.family in ("dataflow", "compute"):
            assert s.cpp, name
        if s.family == "compute":
            assert s.header and s.header.startswith("api/compute/"), name
        if any(o.kind == "dst" for o in s.operands):
            assert s.dst in ("math", "pack"), name
        if s.init:  # the init it needs is an init call of its engine
            assert ops.spec(s.init).sets in ("math", "sfpu"), name
            init_ops = {o.name for o in ops.spec(s.init).operands}
            assert all(a in {o.name for o in s.operands} and b in init_ops
                       for a, b in s.init_args), name
        if "init" in s.props:
            init, names = s.props["init"]
            assert ops.spec(init).sets and all(
                n in {o.name for o in s.operands} for n in names), name
    for fn in ops.FUNCTIONS.values():
        assert ops.spec(fn.expr_op).props["function"] == fn.name
        assert ops.spec(fn.apply).init == fn.init


def test_op_verifier_checks_arity_and_operand_kinds():
    from tvm import tirx

    from tilelang_tt import ops

    cb = tirx.Var("cb", "int32")
    assert not ops.verify_call(ops.call("tt.cb_push_back", cb, tirx.IntImm("int32", 1)))
    assert "takes 2 arguments" in ops.verify_call(ops.call("tt.cb_push_back", cb))[0]
    (problem,) = ops.verify_call(ops.call("tt.pack_tile", tirx.IntImm("int32", 0), cb,
                                          tirx.IntImm("int32", 0), cb))
    assert "argument 3 (out_of_order) must be an integer constant" in problem
    tree = ops.call("tt.expr.load", tirx.IntImm("int32", 0))
    assert not ops.verify_call(ops.call("tt.eltwise", cb, tirx.IntImm("int32", 4), tree, cb, cb))
    assert ops.verify_call(ops.call("tt.eltwise", cb, tirx.IntImm("int32", 4), cb))  # no expr


def test_pipeline_rejects_a_malformed_op_after_a_stage(monkeypatch):
    """A stage that leaves an op with a wrong argument count is caught right after it."""
    import tilelang_tt
    from tilelang_tt import ops
    from tilelang_tt.passes.protocol import cb_intrinsics

    real = ops.evaluate

    def broken(name, *args, **kw):
        if name == "tt.cb_push_back":
            return real(name, args[0], args[1], args[1], **kw)
        return real(name, *args, **kw)

    monkeypatch.setattr(cb_intrinsics.ops, "evaluate", broken)
    with pytest.raises(tilelang_tt.TTVerifyError, match="after LowerCBIntrinsics has malformed "
                       "ops .* tt.cb_push_back takes 2 arguments"):
        tilelang_tt.lower(kernels.elementwise_add(64, 64), verify_each=True)
