"""Tensors whose dims are not multiples of 32 (A0.3.1 PadTensorsTT): TileLang's kernels with
``T.ceildiv`` grids whose last blocks reach past the tensors run on the emulator and match
numpy.  The device holds each such tensor padded with zeros up to what the grid's blocks
cover; main.cpp pads the inputs and crops the outputs.  TileLang reads 0 out of bounds and
skips out-of-bounds stores (its LegalizeSafeMemoryAccess and T.copy lowering), so the zeros
compute what TileLang computes."""

import numpy as np
import pytest

import tilelang_tt
import tilelang_tt.language as T
from tilelang_tt import attrs
from tilelang_tt.errors import TTCompileError
from tilelang_tt.passes.common import to_py

RNG = np.random.default_rng(11)
HIFI4 = {"tt.math_fidelity": "HiFi4"}


def matmul(M, N, K, block_M, block_N, block_K, dtype="bfloat16", accum_dtype="float32",
           num_stages=2):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main
