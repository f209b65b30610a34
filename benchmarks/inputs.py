"""Seeded inputs of the matmul benchmarks, made in row bands (no full-size float32 temporary),
and a check of a sample of the result against numpy."""

import numpy as np


def make_inputs(n, seed=0, count=3):
    import ml_dtypes

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        x = np.empty((n, n), dtype=ml_dtypes.bfloat16)
        for r in range(0, n, 256):
            x[r:r + 256] = rng.standard_normal((min(256, n - r), n), dtype=np.float32)
        out.append(x)
    return out


def check_sample(y, n, seed=0, rows=32):
    """Max error of rows of relu(A @ B + C) picked at random, relative to the result's max
    magnitude (bf16 output: about 2^-8 is exact rounding)."""
    a, b, c = make_inputs(n, seed)
    pick = np.random.default_rng(seed + 1).choice(n, size=min(rows, n), replace=False)
    ref = np.maximum(a[pick].astype(np.float32) @ b.astype(np.float32)
                     + c[pick].astype(np.float32), 0)
    got = y[pick].astype(np.float32)
    return float(np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30))
