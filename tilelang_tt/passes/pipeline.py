"""The tilelang-tt pipeline: frontend TIR -> three device kernels, verified.

Stages by phase (each a ``tvm.transform.Pass``; ours in one module each under the phase's
folder, TVM's own where they do the job):

    frontend   A0.000 ResolveThreadConditionsTT
                                               scalar code reading thread indices -> a loop
                                               over them; `if`s of thread indices around tile
                                               ops -> the arms some thread takes; other uses
                                               refused
               A0.000.1 CheckAssumptionsTT     T.assume: checked when constant, dropped
               A0.00 LaunchPersistentTilesTT   a T.Persistent tile loop -> the launch over
                                               its domain (nothing carried between tiles)
               A0.00.1 ScalarProgramTT         a launch of scalar code (locals, loops, while,
                                               element reads / stores) -> the reader's program
               A0.0 CoarsenRowBlocksTT         blocks of fewer than 32 rows -> 32-row
                                               blocks (rows computed apart)
               A0.0.1 SerialRowsToBlockTT      a serial loop over a block's rows -> the
                                               rows at once (folds -> dim=0 reductions)
               A0.0.2 LocalBuffersToBlocksTT   local buffers tile ops use -> fragments; their
                                               one element stored to a tensor -> T.copy
               A0.1 ScalarsToBindTT            scalar assignments -> Bind
               A0.1.0 DropTrueGuardsTT         bounds guards true for every block -> bodies
               A0.1.0.0 SplitBlockRegionsTT    a block buffer used by constant tile-aligned
                                               regions -> one block buffer per part
               A0.1.0.1 BoundLoopExtentsTT     loop extents that are not literals ->
                                               constants, or T.Parallel over a constant
                                               bound with the stores masked past the extent;
                                               `if`s in T.Parallel -> selects (if-conversion)
               A0.1.1 LowerAtomicsTT           atomics: conflicting blocks serialised, one
                                               read-modify-write of the target per group
               A0.1.2 CollapseBlockSlicesTT    a block buffer used one slice per iteration
                                               -> without that dimension
               A0.1.3 LowerReducersTT          reducer updates in T.Parallel -> tile
                                               reductions into the reducer (loop-carried)
               A0.1.3.1 IndexFragmentsToFloatTT
                                               integer block buffers of index values ->
                                               float32 (outputs: the host converts back)
               A0.1.3.2 ColumnStoresToBlockTT  a vector stored into tensor column k per
                                               iteration -> a block written after the loop
               A0.1.4 StreamWideRowsTT         row blocks too wide for L1 -> loops over
                                               column chunks, one per reduction level
               A0.1.4.1 ReadConditionFragmentsFromTensorsTT
                                               a block buffer copied from a tensor and read
                                               only by element in `if` conditions -> the
                                               tensor's elements
               A0.1.4.2 StageScalarOperandsTT  a tensor element every element of a
                                               T.Parallel nest reads (`Sinks[by]`) -> a [1]
                                               fragment copied before the nest
               A0.1.5 IntegerInputsToFloatTT   uint8 / int8 / bool tensors read as values
                                               -> bfloat16 (the host converts)
               A0.1.6 PermuteVectorTensorsTT   a tensor copied as 1-D slices along a dim
                                               not its last -> that dim last (host transposes)
               A0.2 LowerParallelToTileTT      T.Parallel elementwise nests -> tile primitives
               A0.2.0 ResolveViewsTT           T.reshape / T.view: tensor views -> the
                                               parameter's shape (host reshapes), block views
                                               re-indexed or spread over whole copies
               A0.2.1 ReadShortBlocksFromTensorsTT
                                               block buffers of fewer than 32 rows holding
                                               a tensor region -> reads of the tensor
               A0.3 LegalizeTileOpsTT          engine forms (staged global copies, min/abs)
               A0.3.0 DropDeadBlockWritesTT    tile ops whose results nothing reads ->
                                               dropped (a warning names them)
               A0.3.1 PadTensorsTT             tensors padded with zeros to whole tiles
                                               and to what the grid's blocks cover
               A0.4 VersionBlockBuffersTT      block buffers in single-assignment form
               A0.5 CoarsenKLoopTT             GEMM K loops: K blocks of several tiles
               A0.5.1 PadShortBlocksTT         block buffers that are not whole tiles ->
                                               padded tiles (padding masked where folded)
    verify     V0   VerifyTileProgramTT        element accesses, scopes, dependencies via DRAM
    layout     A1   InferTTLayout              tt.layout_desc per tensor parameter
               A2   PropagateTTLayout          tt.cb_desc / tt.acc_desc on block buffers
    partition  B1   LayoutAwareWorkPartitionTT block grid -> per-core ranges of work units
               B2   GridToCoreGrid             block indices from the core's current work unit
    dataflow   C1   LowerSharedToCB            block buffers -> CBs; copies -> tile streams
               C2   LowerTTTileIntrinsics      gemm / eltwise -> tt.mm.mma / tt.fpu.* / tt.eltwise
               C2.1 ForwardBlockCopiesTT       block -> block copies forwarded (optimisation)
               C2.2 LowerScalarReadsTT         tensor elements in branch conditions -> read
                                               by the reader, handed to compute through a CB
               C3   BuildTileDFGTT             producer -> CB -> consumer graph, ids, windows
               C4   PlaceL1ShardsTT            L1 shards streamed in order used in place
    protocol   D1   SplitDeviceKernel          reader / compute / writer (TVM's RemoveNoOp,
                                               ConvertSSA)
               D2   ConfigureTensorAccessorTT  accessors bound to compile-time and runtime args
               D2.1 PlanMulticastTT            blocks a core row / column shares: read once,
                                               multicast (semaphore handshake)
               D2.2 LowerScalarProgramTT       a scalar program's element reads / stores ->
                                               page reads / read-modify-writes via L1 scratch
               D3   LowerCBIntrinsics          reserve/push/wait/pop, NOC reads and writes
    compute    D4   InsertComputeInitTT        hw start-up, per-op init, format reconfiguration
               D5   InsertDSTManagementTT      acquire/commit/wait/pack/release, sub-blocking
               D5.1 StmtSimplify (TVM)         index arithmetic simplified
               D5.2 ShareCBIdsTT               more than 32 CBs: intermediates of disjoint
                                               lifetimes share one CB index
               D6   PlanL1AliasTT              CBs with disjoint lifetimes share L1 regions
               D6.1 FitL1TT                    CBs over L1: single-buffered, largest saving
                                               first, until they fit
    protocol   E1   LowerPersistentLoopTT      runtime args; the persistent loop in the IR
    verify     F    VerifyTTIR                 completeness, device limits, protocol on every path

``stop_after`` takes a tag (``"C2"``; a tag also covers its sub-stages: ``"A0"`` is the whole
frontend) or a pass name.  The pipeline is registered with TVM as the ``"tenstorrent"`` TIR
pipeline (``tvm.tirx.get_tir_pipeline("tenstorrent")``).
"""

from __future__ import annotations

import os
from pathlib import Path

import tvm
import tvm_ffi

from .. import attrs, ops
from ..errors import TTCompileError, TTVerifyError
from ..target import resolve_target
from .common import collect, run_pass
from .compute.cb_share import ShareCBIdsTT
from .compute.compute_init import InsertComputeInitTT
from .compute.dst_management import InsertDSTManagementTT
from .compute.l1_alias import PlanL1AliasTT
from .compute.l1_fit import FitL1TT
from .dataflow.copy_forwarding import ForwardBlockCopiesTT
from .dataflow.scalar_reads import LowerScalarReadsTT
from .dataflow.shared_to_cb import LowerSharedToCB
from .dataflow.tile_dfg import BuildTileDFGTT
from .dataflow.shard_in_place import PlaceL1ShardsTT
from .dataflow.tile_intrinsics import LowerTTTileIntrinsics
from .frontend.atomics import LowerAtomicsTT
from .frontend.host_formats import IntegerInputsToFloatTT, PermuteVectorTensorsTT
from .frontend.index_fragments import ColumnStoresToBlockTT, IndexFragmentsToFloatTT
from .frontend.block_regions import SplitBlockRegionsTT
from .frontend.block_slices import CollapseBlockSlicesTT
from .frontend.dead_blocks import DropDeadBlockWritesTT
from .frontend.guards import DropTrueGuardsTT
from .frontend.loop_extents import BoundLoopExtentsTT
from .frontend.block_versions import VersionBlockBuffersTT
from .frontend.condition_fragments import ReadConditionFragmentsFromTensorsTT
from .frontend.local_blocks import LocalBuffersToBlocksTT
from .frontend.k_coarsen import CoarsenKLoopTT
from .frontend.legalize import LegalizeTileOpsTT
from .frontend.pad_blocks import PadShortBlocksTT
from .frontend.pad_tensors import PadTensorsTT
from .frontend.parallel_to_tile import LowerParallelToTileTT
from .frontend.reducers import LowerReducersTT
from .frontend.row_blocks import CoarsenRowBlocksTT
from .frontend.serial_rows import SerialRowsToBlockTT
from .frontend.views import ResolveViewsTT
from .frontend.wide_rows import StreamWideRowsTT
from .frontend.scalar_operands import StageScalarOperandsTT
from .frontend.persistent_tiles import LaunchPersistentTilesTT
from .frontend.scalar_program import ScalarProgramTT
from .frontend.scalars import ScalarsToBindTT
from .frontend.short_blocks import ReadShortBlocksFromTensorsTT
from .frontend.thread_conditions import ResolveThreadConditionsTT
from .frontend.assumptions import CheckAssumptionsTT
from .layout.infer_layout import InferTTLayout
from .layout.propagate_layout import PropagateTTLayout
from .partition.grid_to_core import GridToCoreGrid
from .partition.work_partition import LayoutAwareWorkPartitionTT
from .protocol.cb_intrinsics import LowerCBIntrinsics
from .protocol.configure_accessor import ConfigureTensorAccessorTT
from .protocol.multicast import PlanMulticastTT
from .protocol.persistent_loop import LowerPersistentLoopTT
from .protocol.scalar_program import LowerScalarProgramTT
from .protocol.split_kernel import SplitDeviceKernel
from .verify.tile_program import VerifyTileProgramTT
from .verify.verify_ttir import VerifyTTIR

STAGES = [
    ("A0.000", ResolveThreadConditionsTT),
    ("A0.000.1", CheckAssumptionsTT),
    ("A0.00", LaunchPersistentTilesTT),
    ("A0.00.1", ScalarProgramTT),
    ("A0.0", CoarsenRowBlocksTT),
    ("A0.0.1", SerialRowsToBlockTT),
    ("A0.0.2", LocalBuffersToBlocksTT),
    ("A0.1", ScalarsToBindTT),
    ("A0.1.0", DropTrueGuardsTT),
    ("A0.1.0.0", SplitBlockRegionsTT),
    ("A0.1.0.1", BoundLoopExtentsTT),
    ("A0.1.1", LowerAtomicsTT),
    ("A0.1.2", CollapseBlockSlicesTT),
    ("A0.1.3", LowerReducersTT),
    ("A0.1.3.1", IndexFragmentsToFloatTT),
    ("A0.1.3.2", ColumnStoresToBlockTT),
    ("A0.1.4", StreamWideRowsTT),
    ("A0.1.4.1", ReadConditionFragmentsFromTensorsTT),
    ("A0.1.4.2", StageScalarOperandsTT),
    ("A0.1.5", IntegerInputsToFloatTT),
    ("A0.1.6", PermuteVectorTensorsTT),
    ("A0.2", LowerParallelToTileTT),
    ("A0.2.0", ResolveViewsTT),
    ("A0.2.1", ReadShortBlocksFromTensorsTT),
    ("A0.3", LegalizeTileOpsTT),
    ("A0.3.0", DropDeadBlockWritesTT),
    ("A0.3.1", PadTensorsTT),
    ("A0.4", VersionBlockBuffersTT),
    ("A0.5", CoarsenKLoopTT),
    ("A0.5.1", PadShortBlocksTT),
    ("V0", VerifyTileProgramTT),
    ("A1", InferTTLayout),
    ("A2", PropagateTTLayout),
    ("B1", LayoutAwareWorkPartitionTT),
    ("B2", GridToCoreGrid),
    ("C1", LowerSharedToCB),
    ("C2", LowerTTTileIntrinsics),
    ("C2.1", ForwardBlockCopiesTT),
    ("C2.2", LowerScalarReadsTT),
    ("C3", BuildTileDFGTT),
    ("C4", PlaceL1ShardsTT),
    ("D1", SplitDeviceKernel),
    ("D2", ConfigureTensorAccessorTT),
    ("D2.1", PlanMulticastTT),
    ("D2.2", LowerScalarProgramTT),
    ("D3", LowerCBIntrinsics),
    ("D4", InsertComputeInitTT),
    ("D5", InsertDSTManagementTT),
    ("D5.1", tvm.tirx.transform.StmtSimplify()),
    ("D5.2", ShareCBIdsTT),
    ("D6", PlanL1AliasTT),
    ("D6.1", FitL1TT),
    ("E1", LowerPersistentLoopTT),
    ("F", VerifyTTIR),
]


def _last_stage(stop_after: str | None) -> int:
    """Index of the last stage ``stop_after`` names (a tag covers its sub-stages)."""
    if stop_after is None:
        return len(STAGES) - 1
    hits = [i for i, (tag, p) in enumerate(STAGES)
            if stop_after in (tag, p.info.name) or tag.startswith(stop_after + ".")]
    if not hits:
        raise TTCompileError(f"unknown stage {stop_after!r}; stages: "
                             + ", ".join(f"{t} {p.info.name}" for t, p in STAGES))
    return hits[-1]


def stage_names() -> list[str]:
    return [p.info.name for _, p in STAGES]


def kernel_name(func) -> str:
    """A frontend PrimFunc's name (its ``global_symbol``)."""
    return str(func.attrs["global_symbol"]) if func.attrs is not None and \
        "global_symbol" in func.attrs else getattr(func, "__name__", "kernel")


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
        name = kernel_name(func)
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
    last = _last_stage(stop_after)
    for i, (tag, p) in enumerate(STAGES[:last + 1], start=1):
        mod = run_pass(p, mod)
        if verify_each:
            verify(mod, p.info.name, roundtrip)
        if dump_dir:
            (dump_dir / f"{i:02d}_{tag}_{p.info.name}.py").write_text(mod.script())
    return mod


def tenstorrent_pipeline():
    """The pipeline as TVM's TIR pipelines are registered: (lowering pass, host finalization,
    device finalization); the lowering pass takes a module of one frontend kernel tagged with
    ``prepare`` and returns its three verified device kernels."""

    @tvm.transform.module_pass(opt_level=0, name="TenstorrentPipeline")
    def lower_all(mod, _ctx):
        return run(mod)

    def identity():
        return tvm.transform.Sequential([])

    return lower_all, identity, identity


def _register_with_tvm() -> None:
    from tvm.tirx.compilation_pipeline import register_tir_pipeline

    register_tir_pipeline("tenstorrent", tenstorrent_pipeline)


_register_with_tvm()
