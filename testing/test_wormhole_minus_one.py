"""Wormhole's accumulator renormalises a partial sum of exactly -1 unit in the last place with an
exponent 27 too large (docs/MOCK.md "renormalising -1 (Wormhole)"); Blackhole does not.  The one
wrong dQ element of TileLang's examples/flash_attention/example_gqa_bwd.py at 1 x 4 heads x 1024
tokens, dims 64 / 64 (docs/SUPPORT.md "Flash attention backward") is this: its key block 7's
``T.gemm(dsT_shared, K_shared, dq, transpose_A=True)`` reaches exactly -1 unit (of 2^-32) after
the first 16 products of its second K tile, and Wormhole turns that into -2^-5.  Here the same
GEMM on the same 64 fp16 values of the dsT column and the K column that produce dQ element (885,
50) of head 1 (query block 27, row 21; key rows 896..959; column 50 = tile column 1, column 18),
the rest zero: run as compiled (Wormhole) and on the Blackhole accumulator."""

import numpy as np
import pytest

pytest.importorskip("tilelang_tt.runtime.mockbuild", reason="emulator driver not installed")

import tilelang_tt as tilelang
import tilelang_tt.language as T

# dsT_cast[896 + m, 885 - 864] and K[896 + m, 50] for m = 0..63, as fp16 bit patterns, dumped
# from the backward kernel on the emulator (torch.manual_seed(0) inputs, head 1, key block 7)
DS_BITS = """8b97 8f1e 0600 0000 8cc6 8f75 8bf2 959e 8aef 0000 9081 945c 8fc9 19b4 8aac 1a36
0c61 11d5 8c37 93c8 1265 90f3 8e9b 880b 0000 8580 8c44 0000 0944 092c 8c6d 0ea4
84ab 8e43 9487 0af4 1779 0c85 845c 9412 8d71 0000 0914 0000 0d94 8fa0 970a 92aa
1403 0bbc 9068 0000 9745 0817 950d 15d3 90d6 0ab4 97d3 8b7c 90a2 8704 9019 0b42"""
K_BITS = """bada 2ea8 b6aa ba70 3aaf b4b2 bfd1 bd6a 2bf6 b8c1 b68a bd12 bc8c b0fe 39c7 bc79
3e28 c1e1 37bd acc5 36d0 b922 bc60 3a2b b750 3463 bf2b 384b bd61 be39 3e7b b8b0
3883 3896 3baa 370b bbd0 bd21 bc69 c04d ba15 38a1 c060 c0d2 3eb5 bda8 b87e 21d4
be4b b8be 3ee2 be3c 3840 bc89 a7e2 3d72 b8ec 3b27 333a b1cd bd11 bc77 3792 3ded"""
ROW, COL = 21, 18


def _fp16(bits):
    return np.array([int(w, 16) for w in bits.split()], np.uint16).view(np.float16)


@tilelang.jit(out_idx=[2])
def dq_gemm(block_N, block_M, dim):
    """The backward's dQ GEMM: dq = dsT_shared^T @ K_shared, fp16 operands, fp32 fragment."""
    dtype, accum_dtype = T.float16, T.float32

    @T.prim_func
    def main(dsT: T.Tensor([block_M, block_N], dtype), K: T.Tensor([block_M, dim], dtype),
             dQ: T.Tensor([block_N, dim], accum_dtype)):
        with T.Kernel(1, threads=128) as bx:
            dsT_shared = T.alloc_shared([block_M, block_N], dtype)
            K_shared = T.alloc_shared([block_M, dim], dtype)
            dq = T.alloc_fragment([block_N, dim], accum_dtype)
            T.copy(dsT[0:block_M, 0:block_N], dsT_shared)
            T.copy(K[0:block_M, 0:dim], K_shared)
            T.clear(dq)
            T.gemm(dsT_shared, K_shared, dq, transpose_A=True)
            T.copy(dq, dQ[0:block_N, 0:dim])

    return main


def test_dq_partial_sum_of_minus_one_unit_on_wormhole():
    ds, k = _fp16(DS_BITS), _fp16(K_BITS)
    dsT = np.zeros((64, 32), np.float16)
    K = np.zeros((64, 32), np.float16)
    dsT[:, ROW], K[:, COL] = ds, k
    kernel = dq_gemm(32, 64, 32)
    wormhole = kernel(dsT, K)
    blackhole = kernel.run(dsT, K, arch="blackhole")
    exact = float(np.dot(ds.astype(np.float64), k.astype(np.float64)))
    # Blackhole: the dot product (HiFi4 of fp16 operands: SrcA keeps 10 of K's 11 mantissa bits)
    assert abs(blackhole[ROW, COL] - exact) < 1e-2 * abs(exact)
    # Wormhole: after the first 16 products of the second K tile DST holds -1 unit of 2^-32,
    # renormalised to -2^-5; the last 16 products are then added at that exponent
    assert abs(wormhole[ROW, COL] - blackhole[ROW, COL] + 2.0 ** -5) < 2.0 ** -20
    # nothing else is touched: every other element is a sum of zero products
    others = np.ones((32, 32), bool)
    others[ROW, COL] = False
    assert not wormhole[others].any() and not blackhole[others].any()
