"""The TileLang-compatible frontend parses kernels into the documented frontend TIR."""

import numpy as np
import pytest
from tvm import tirx

import kernels
import tilelang_tt
import tilelang_tt.language as T
from tilelang_tt import attrs
from tilelang_tt.passes.common import buffer_scope, collect


def tile_calls(func, name):
    return [c for c in collect(func.body, tirx.TilePrimitiveCall) if c.op.name == name]


def test_kernel_launch_and_allocations():
    f = kernels.matmul(256, 256, 128)
    launches = [a for a in collect(f.body, tirx.AttrStmt) if str(a.attr_key) == "thread_extent"]
    assert [str(a.node.thread_tag) for a in launches] == ["blockIdx.x", "blockIdx.y"]
    assert [int(a.value) for a in launches] == [2, 2]
    scopes = {a.buffer.name: buffer_scope(a.buffer) for a in collect(f.body, tirx.AllocBuffer)}
    assert scopes == {"A_shared": "shared", "B_shared": "shared", "C_local": "local.fragment"}


def test_copy_element_operand_takes_extent_from_other_side():
    f = kernels.matmul(256, 256, 128)
    copies = tile_calls(f, "tirx.tile.copy")
    dst, src = copies[0].args  # T.copy(A[by * 128, k * 32], A_shared)
    assert dst.source.name == "A_shared" and src.source.name == "A"
    assert [int(r.extent) for r in src.region] == [128, 32]
    out_dst, out_src = copies[-1].args  # T.copy(C_local, C[by * 128, bx * 128])
    assert out_dst.source.name == "C" and [int(r.extent) for r in out_dst.region] == [128, 128]


def test_copy_region_and_buffer_forms():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "bfloat16"), B: T.Tensor((64, 64), "bfloat16")):
        with T.Kernel(2, 2) as (bx, by):
            s = T.alloc_shared((32, 32), "bfloat16")
            T.copy(A[by * 32:by * 32 + 32, bx * 32:bx * 32 + 32], s)
            T.copy(s, B[by * 32, bx * 32])

    copies = tile_calls(k, "tirx.tile.copy")
    assert [c.args[0].source.name for c in copies] == ["s", "B"]
    assert [int(r.extent) for r in copies[1].args[0].region] == [32, 32]


def test_gemm_clear_and_pipelined():
    f = kernels.matmul_nt(256, 256, 128, num_stages=3)
    (gemm,) = tile_calls(f, "tirx.tile.gemm")
    d, a, b, c, ta, tb, alpha, beta = gemm.args
    assert (d.source.name, a.source.name, b.source.name) == ("C_local", "A_shared", "B_shared")
    assert (bool(ta), bool(tb), float(beta.value)) == (False, True, 1.0)
    (fill,) = tile_calls(f, "tirx.tile.fill")
    assert fill.args[0].source.name == "C_local"
    loops = [l for l in collect(f.body, tirx.For) if attrs.LOOP_NUM_STAGES in l.annotations]
    assert len(loops) == 1 and int(loops[0].annotations[attrs.LOOP_NUM_STAGES]) == 3


def test_clear_accum_sets_beta_zero():
    @T.prim_func
    def k(A: T.Tensor((32, 32), "bfloat16"), C: T.Tensor((32, 32), "bfloat16")):
        with T.Kernel(1, 1) as (bx, by):
            a = T.alloc_shared((32, 32), "bfloat16")
            c = T.alloc_fragment((32, 32), "float32")
            T.copy(A[0, 0], a)
            T.gemm(a, a, c, clear_accum=True)
            T.copy(c, C[0, 0])

    (gemm,) = tile_calls(k, "tirx.tile.gemm")
    assert float(gemm.args[7].value) == 0.0


def test_parallel_loops_are_parallel_kind():
    f = kernels.elementwise_add(64, 64)
    kinds = [l.kind for l in collect(f.body, tirx.For)]
    assert kinds == [tirx.ForKind.PARALLEL, tirx.ForKind.PARALLEL]
    serial = kernels.matmul(64, 64, 64, 32, 32, 32)
    assert all(l.kind == tirx.ForKind.SERIAL for l in collect(serial.body, tirx.For))


def test_tilelang_compat_calls_accepted():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "bfloat16"), B: T.Tensor((64, 64), "bfloat16")):
        with T.Kernel(T.ceildiv(64, 32), T.ceildiv(64, 32), threads=128) as (bx, by):
            T.use_swizzle(panel_size=10)
            s = T.alloc_shared((32, 32), "bfloat16")
            for _ in T.serial(1):
                T.copy(A[by * 32, bx * 32], s)
            T.copy(s, B[by * 32, bx * 32])

    assert isinstance(k, tirx.PrimFunc)


def test_chained_assignment_and_constant_stores():
    # TileLang accepts `A[i] = B[i] = v` (its language test chain_equal) and stores of Python
    # constants; each target gets its own store of the value
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            s = T.alloc_shared((32, 32), "float32")
            t = T.alloc_shared((32, 32), "float32")
            for i, j in T.Parallel(32, 32):
                s[i, j] = t[i, j] = 1
            T.copy(s, A[by * 32, bx * 32])
            T.copy(t, B[by * 32, bx * 32])

    stores = collect(k.body, tirx.BufferStore)
    assert sorted(st.buffer.name for st in stores) == ["s", "t"]
    assert all(float(st.value.value) == 1.0 for st in stores)


def test_kernel_without_grid_extents_is_one_block():
    # TileLang's `with T.Kernel(threads=1):` (its atomic tests): a grid of one block
    @T.prim_func
    def k(A: T.Tensor((32, 32), "float32"), B: T.Tensor((32, 32), "float32")):
        with T.Kernel(threads=1):
            s = T.alloc_shared((32, 32), "float32")
            T.copy(A[0, 0], s)
            T.copy(s, B[0, 0])

    art = tilelang_tt.compile(k, out_idx=-1)
    a = np.arange(32 * 32, dtype=np.float32).reshape(32, 32)
    np.testing.assert_array_equal(art(a), a)


def test_element_copy_is_an_element_store():
    # T.copy of two elements is `B[0, 0] = A[0, 0]`, an element store outside T.Parallel
    @T.prim_func
    def k(A: T.Tensor((64, 64), "bfloat16"), B: T.Tensor((64, 64), "bfloat16")):
        with T.Kernel(1, 1) as (bx, by):
            T.copy(A[0, 0], B[0, 0])

    assert "B[0, 0] = A[0, 0]" in k.script()
    # alone in its launch it is a scalar program (docs/SUPPORT.md "Scalar programs")
    import ml_dtypes
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64).astype(ml_dtypes.bfloat16)
    b = np.zeros((64, 64), ml_dtypes.bfloat16)
    tilelang_tt.compile(k)(a, b)
    assert float(b[0, 0]) == float(a[0, 0]) and not b.astype(np.float32)[1:].any()
