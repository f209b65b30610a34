"""The IR is sound after every stage: well-formed (TVM's verify_well_formed: every variable
defined once in the module, before its uses; every buffer declared) and printable as
TVMScript that parses back to an equal module, for every kind of kernel the test suite
compiles.  (The whole suite verifies well-formedness after every stage through
TT_VERIFY_EACH=1; TT_VERIFY_EACH=roundtrip adds the round trip to every compile.)"""

import pytest
import tvm

import kernels
import tilelang_tt.language as T
from tilelang_tt.passes import pipeline

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
}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_well_formed_and_round_trips_after_every_stage(name):
    mod = pipeline.prepare(KERNELS[name](), "tenstorrent")
    for _, p in pipeline.STAGES:
        mod = pipeline.run_pass(p, mod)
        tvm.tirx.analysis.verify_well_formed(mod)  # raises on ill-formed IR
        pipeline.check_roundtrip(mod, p.info.name)


def test_split_kernels_have_variables_of_their_own():
    mod = pipeline.run(pipeline.prepare(kernels.matmul(64, 64, 64, 32, 32, 32), "tenstorrent"),
                       stop_after="SplitDeviceKernel")
    funcs = list(mod.functions.values())
    params = [p for f in funcs for p in f.params]
    assert len(params) == 9 and not any(
        p.same_as(q) for i, p in enumerate(params) for q in params[i + 1:])
