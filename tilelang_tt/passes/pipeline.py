"""The tilelang-tt pipeline: frontend TIR -> three device kernels, verified.

Stage order (each a ``tvm.transform.Pass`` in its own module):

    A0 LowerParallelToTileTT      T.Parallel elementwise nests -> tile primitives
    V0 VerifyTensorDependenciesTT dependencies through global memory ordered or rejected
    A1 InferTTLayout              tt.layout_desc per global buffer
    A2 PropagateTTLayout          tt.cb_desc / tt.acc_desc on block-local buffers
    A3 AttachTensorAccessorTT     abstract accessor descriptors
    B1 LayoutAwareWorkPartitionTT block grid -> per-core ranges of work units
    B2 GridToCoreGrid             block indices from the core's current work unit
    C1 LowerSharedToCB            shared buffers -> CBs; copies -> tile streams
    C2 LowerTTTileIntrinsics      gemm / eltwise -> tt.mm.mma / tt.fpu.* / tt.eltwise
    C3 BuildTileDFGTT             producer -> CB -> consumer graph, CB ids, consume ranges
    D1 SplitDeviceKernel          reader / compute / writer
    D2 ConfigureTensorAccessorTT  accessors bound to compile-time and runtime args
    D3 LowerCBIntrinsics          reserve/push/wait/pop, NOC reads and writes, barriers
    D4 InsertComputeInitTT        hw start-up, per-op init, data-format reconfiguration
    D5 InsertDSTManagementTT      acquire/commit/wait/pack/release, sub-blocking, spills
    E1 FinalizePersistentSignatureTT  runtime-arg layout of the persistent kernels
    F  VerifyTTIR                 completeness and device limits
"""

from __future__ import annotations

import os
from pathlib import Path

import tvm
import tvm_ffi

from .. import attrs, ops
from ..errors import TTCompileError, TTVerifyError
from ..target import resolve_target
from .frontend.parallel_to_tile import LowerParallelToTileTT
from .layout.infer_layout import InferTTLayout
from .layout.propagate_layout import PropagateTTLayout
from .layout.attach_accessor import AttachTensorAccessorTT
from .partition.work_partition import LayoutAwareWorkPartitionTT
from .partition.grid_to_core import GridToCoreGrid
from .dataflow.shared_to_cb import LowerSharedToCB
from .dataflow.tile_intrinsics import LowerTTTileIntrinsics
from .dataflow.tile_dfg import BuildTileDFGTT
from .common import collect, run_pass
from .protocol.split_kernel import SplitDeviceKernel
from .protocol.configure_accessor import ConfigureTensorAccessorTT
from .protocol.cb_intrinsics import LowerCBIntrinsics
from .compute.compute_init import InsertComputeInitTT
from .compute.dst_management import InsertDSTManagementTT
from .protocol.persistent_signature import FinalizePersistentSignatureTT
from .verify.verify_ttir import VerifyTTIR
from .verify.tensor_dependencies import VerifyTensorDependenciesTT

STAGES = [
    ("A0", LowerParallelToTileTT),
    ("V0", VerifyTensorDependenciesTT),
    ("A1", InferTTLayout),
    ("A2", PropagateTTLayout),
    ("A3", AttachTensorAccessorTT),
    ("B1", LayoutAwareWorkPartitionTT),
    ("B2", GridToCoreGrid),
    ("C1", LowerSharedToCB),
    ("C2", LowerTTTileIntrinsics),
    ("C3", BuildTileDFGTT),
    ("D1", SplitDeviceKernel),
    ("D2", ConfigureTensorAccessorTT),
    ("D3", LowerCBIntrinsics),
    ("D4", InsertComputeInitTT),
    ("D5", InsertDSTManagementTT),
    ("E1", FinalizePersistentSignatureTT),
    ("F", VerifyTTIR),
]


def stage_names() -> list[str]:
    return [p.info.name for _, p in STAGES]


def prepare(func, target=None) -> tvm.IRModule:
    """Wrap a frontend PrimFunc in a module tagged with the target's device profile."""
    if isinstance(func, tvm.IRModule):
        funcs = list(func.functions.items())
        if len(funcs) != 1:
            raise TTCompileError("compile one kernel at a time (the module has "
                                 f"{len(funcs)} functions)")
        gv, func = funcs[0]
        name = gv.name_hint
    else:
        if not isinstance(func, tvm.tirx.PrimFunc):
            raise TTCompileError(f"expected a T.prim_func kernel, got {type(func).__name__}")
        name = str(func.attrs["global_symbol"]) if func.attrs is not None and \
            "global_symbol" in func.attrs else getattr(func, "__name__", "kernel")
    _, profile = resolve_target(target)
    func = func.with_attr(attrs.TARGET, profile.name).with_attr("global_symbol", name)
    return tvm.IRModule({name: func})


def verify(mod: tvm.IRModule, stage: str, roundtrip: bool = False) -> None:
    """The checks run after every stage when asked (``verify_each`` / ``TT_VERIFY_EACH=1``):
    TVM's well-formedness (every variable defined once before use, buffers declared), every
    ``tt.*`` op's arity and operand kinds (the op registry); with
    ``roundtrip`` (``TT_VERIFY_EACH=roundtrip``) also that the module prints as TVMScript that
    parses back to a structurally equal module."""
    try:
        tvm.tirx.analysis.verify_well_formed(mod)
    except Exception as err:  # TVM reports ill-formed IR as ValueError / TVMError
        detail = str(err).strip().splitlines()[-1] if str(err).strip() else type(err).__name__
        raise TTVerifyError(f"the IR after {stage} is ill-formed: {detail}") from None
    for gv, func in mod.functions.items():
        problems = verify_ops(func)
        if problems:
            raise TTVerifyError(f"the IR after {stage} has malformed ops in {gv.name_hint}: "
                                + "; ".join(problems[:5]))
    if roundtrip:
        check_roundtrip(mod, stage)


def verify_ops(func) -> list[str]:
    """Arity and operand-kind problems of every ``tt.*`` op in ``func`` (calls and tile
    primitives), from the op registry."""
    problems = []
    for node in collect(func.body, (tvm.ir.Call, tvm.tirx.TilePrimitiveCall)):
        if ops.tt_op_name(node) is not None:
            problems += ops.verify_call(node)
    return problems


def check_roundtrip(mod: tvm.IRModule, stage: str) -> None:
    """The module's TVMScript parses back to a structurally equal module."""
    text = mod.script()
    try:
        parsed = tvm.script.from_source(text)
    except Exception as err:
        lines = [line for line in str(err).splitlines() if line.strip()]
        raise TTVerifyError(f"the IR after {stage} does not parse back: "
                            + " | ".join(lines[-3:])) from None
    if not tvm_ffi.structural_equal(parsed, mod):
        where = tvm_ffi.get_first_structural_mismatch(parsed, mod)
        raise TTVerifyError(f"the IR after {stage} parses back to another module: {where}")


def run(mod: tvm.IRModule, *, stop_after: str | None = None, dump_dir=None,
        verify_each: bool | None = None) -> tvm.IRModule:
    """Apply the stages in order (up to and including ``stop_after``), dumping IR if asked
    (``dump_dir`` / ``TT_DUMP_IR``) and verifying after every stage if asked."""
    if verify_each is None:
        verify_each = os.environ.get("TT_VERIFY_EACH", "") not in ("", "0")
    roundtrip = os.environ.get("TT_VERIFY_EACH", "") == "roundtrip"
    dump_dir = dump_dir or os.environ.get("TT_DUMP_IR")
    if dump_dir:
        dump_dir = Path(dump_dir)
        dump_dir.mkdir(parents=True, exist_ok=True)
        (dump_dir / "00_frontend.py").write_text(mod.script())
    for i, (tag, p) in enumerate(STAGES, start=1):
        mod = run_pass(p, mod)
        if verify_each:
            verify(mod, p.info.name, roundtrip)
        if dump_dir:
            (dump_dir / f"{i:02d}_{tag}_{p.info.name}.py").write_text(mod.script())
        if stop_after in (tag, p.info.name):
            break
    return mod
