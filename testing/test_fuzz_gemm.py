"""Random GEMM configurations (fixed seeds): block shapes, grids, K steps, pipeline depth,
transpose_B, operand and accumulator dtypes - compiled, run on the emulator and checked
against numpy."""

import random

import numpy as np
import pytest

import kernels
import tilelang_tt
from helpers import as_f32, rand


def config(seed):
    r = random.Random(seed)
    bm, bn, bk = r.choice([32, 64, 96, 128]), r.choice([32, 64, 128]), r.choice([32, 64])
    return dict(M=bm * r.randint(1, 4), N=bn * r.randint(1, 4), K=bk * r.randint(1, 4),
                block_M=bm, block_N=bn, block_K=bk, num_stages=r.randint(1, 3),
                dtype=r.choice(["bfloat16", "bfloat16", "float32"]),
                accum_dtype=r.choice(["float32", "bfloat16"])), r.random() < 0.5


@pytest.mark.parametrize("seed", range(100, 108))
def test_random_gemm(seed):
    cfg, transpose_b = config(seed)
    factory = kernels.matmul_nt if transpose_b else kernels.matmul
    art = tilelang_tt.compile(factory(**cfg), out_idx=-1)
    M, N, K, dtype = cfg["M"], cfg["N"], cfg["K"], cfg["dtype"]
    a = rand((M, K), dtype, seed)
    b = rand((N, K) if transpose_b else (K, N), dtype, seed + 1000)
    ref = as_f32(a) @ (as_f32(b).T if transpose_b else as_f32(b))
    err = np.abs(as_f32(art(a, b)) - ref).max() / np.abs(ref).max()
    # bf16 accumulation rounds every K step; fp32 operands are TF32 in the matrix engine
    assert err < (5e-2 if cfg["accum_dtype"] == "bfloat16" else 1e-2), (cfg, transpose_b, err)
