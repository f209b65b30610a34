"""K blocks of several tiles (A0.5 CoarsenKLoopTT) and packer L1 accumulation of fp32 partials
(D5, dst_l1_acc): what the generated code does and that it still matches numpy."""

import pytest
from tvm import tirx

import tilelang_tt
import tilelang_tt.language as T
from tilelang_tt import attrs
from tilelang_tt.passes.common import collect, to_py
from helpers import assert_matmul, rand

pytest.importorskip("tilelang_tt.runtime.mockbuild", reason="emulator driver not installed")


def matmul(M, N, K, block_M, block_N, block_K, transpose_B=False, clear_accum=False,
           dtype="bfloat16", accum_dtype="float32"):
    b_shape = (N, K) if transpose_B else (K, N)
    bs_shape = (block_N, block_K) if transpose_B else (block_K, block_N)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared(bs_shape, dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_shared)
                if transpose_B:
                    T.copy(B[bx * block_N, k * block_K], B_shared)
                else:
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=transpose_B,
                       clear_accum=clear_accum)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def coarsened(func, **kw):
    (f,) = tilelang_tt.lower(func, stop_after="A0.5", **kw).functions.values()
    k = f.attrs[attrs.K_COARSEN] if attrs.K_COARSEN in f.attrs else None
    return f, to_py(k) if k is not None else None


def test_k_steps_of_one_tile_become_k_blocks_with_l1_accumulated_partials():
    # 24 K steps of one tile -> 3 K blocks of 8; the 4x4-tile fp32 accumulator is computed in
    # 1x4 sub-blocks: partials packed to L1 (overwrite, then L1 accumulation), reloaded once.
    # Two output blocks on one core: the partials CB starts every work unit empty
    func = tilelang_tt.annotate_tt_schedule(matmul(256, 128, 768, 128, 128, 32), core_grid=(1, 1))
    art = tilelang_tt.compile(func, out_idx=-1)
    f, rec = coarsened(func)
    assert rec == [{"factor": 8, "k_tiles": 8, "steps": 3}]
    shapes = {a.buffer.name: [int(d) for d in a.buffer.ty.shape]
              for a in collect(f.body, tirx.AllocBuffer)}
    assert shapes["A_shared"] == [128, 256] and shapes["B_shared"] == [256, 128]
    src = art.sources["compute.cpp"]
    assert "pack_reconfig_l1_acc(1);" in src and "for (uint32_t k = 0; k < 3; ++k)" in src
    assert "noc_async_read_barrier" in art.sources["reader.cpp"]
    a, b = rand((256, 768), "bfloat16", 11), rand((768, 128), "bfloat16", 12)
    c = art(a, b)
    ops = art.last_run_stats["total"]["tile_ops"]
    # per block: 16 tiles x 24 K tiles of matmul; 3 packs of the 16 tiles (2 to the partials,
    # 1 out); one reload of the partials (the last K block; one-tile K steps reloaded 23 times)
    assert ops["matmul"] == 2 * 16 * 24 and ops["pack"] == 2 * 16 * 3 and ops["copy"] == 2 * 16
    assert art.last_run_stats["total"]["noc_reads"] == 2 * 3 * (32 + 32)  # A, B: 32 tiles each
    assert_matmul(c, a, b, art)


def test_options_turn_both_off():
    kw = {"pass_configs": {"tt.k_coarsen": False, "tt.packer_l1_acc": False}}
    f, rec = coarsened(matmul(128, 128, 256, 128, 128, 32), **kw)
    assert rec is None
    src = tilelang_tt.compile(matmul(128, 128, 256, 128, 128, 32), out_idx=-1, **kw) \
        .sources["compute.cpp"]
    assert "pack_reconfig_l1_acc" not in src and "for (uint32_t k = 0; k < 8; ++k)" in src


def test_transpose_b_is_coarsened_along_its_k_dimension():
    # B_shared is (block_N, block_K): its K dimension is the second (test_mock_e2e's
    # transpose_B GEMMs run coarsened loops like this one against numpy)
    f, rec = coarsened(matmul(64, 64, 512, 64, 64, 64, transpose_B=True))
    assert rec == [{"factor": 4, "k_tiles": 8, "steps": 2}]
    shapes = {a.buffer.name: [int(d) for d in a.buffer.ty.shape]
              for a in collect(f.body, tirx.AllocBuffer)}
    assert shapes["A_shared"] == [64, 256] and shapes["B_shared"] == [64, 256]
    (loop,) = [lp for lp in collect(f.body, tirx.For)]
    assert int(loop.extent.value) == 2


def test_loops_that_are_not_the_plain_gemm_loop_are_left_alone():
    # clear_accum restarts the sum every step: K steps cannot be merged
    assert coarsened(matmul(64, 64, 256, 64, 64, 32, clear_accum=True))[1] is None
    # one K step: nothing to merge
    assert coarsened(matmul(64, 64, 32, 64, 64, 32))[1] is None


def test_k_block_limited_by_l1():
    # 512x256 fp32 accumulator (partials 512 KiB + output 256 KiB): 8-tile K blocks of A and B
    # would not fit with it, so the factor is smaller, and the kernel still passes F's L1 check
    func = matmul(1024, 1024, 1024, 512, 256, 32)
    _, rec = coarsened(func)
    assert rec and rec[0]["factor"] < 8
    regions = tilelang_tt.compile(func, out_idx=-1).plan["l1"]
    assert regions
