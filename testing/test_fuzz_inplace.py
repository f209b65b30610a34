"""Random in-place chains of 2-5 elementwise statements over two or three block buffers
(shared or fragment, any order, updates in place or into another buffer): every one compiles
(no false rejection by versioning or CB placement) and, for a sample, runs on the emulator
and matches numpy.  ``TT_FUZZ_SEEDS=N`` widens the compile-only sweep (the offline run uses
300), ``TT_FUZZ_RUN_SEEDS=N`` the emulator sample."""

import os
import random

import numpy as np
import pytest

import tilelang_tt
from helpers import kernel_from_source

COMPILE_SEEDS = int(os.environ.get("TT_FUZZ_SEEDS", "40"))
RUN_SEEDS = int(os.environ.get("TT_FUZZ_RUN_SEEDS", "3"))


def chain(seed):
    """(kernel source, buffer names, [(destination, numpy expression)]) of one chain."""
    r = random.Random(seed)
    names = ["A_s", "B_s", "C_s"][:r.choice([2, 3])]
    scopes = [r.choice(["shared", "fragment"]) for _ in names]
    stmts, ref = [], []
    for _ in range(r.randint(2, 5)):
        dst = r.choice(names)
        a, b = r.choice(names), r.choice(names)
        if r.random() < 0.6:
            a = dst  # in place
        kind = r.choice(["binary", "binary", "scale", "relu", "expr"])
        if kind == "binary":
            op = r.choice(["+", "-", "*"])
            stmts.append(f"{dst}[i, j] = {a}[i, j] {op} {b}[i, j]")
            ref.append((dst, f"{a} {op} {b}"))
        elif kind == "scale":
            c = r.choice(["2.0", "0.5", "1.0", "-1.0"])
            stmts.append(f"{dst}[i, j] = {a}[i, j] * {c}")
            ref.append((dst, f"{a} * {c}"))
        elif kind == "relu":
            stmts.append(f"{dst}[i, j] = T.max({a}[i, j], 0.0)")
            ref.append((dst, f"np.maximum({a}, 0.0)"))
        else:
            stmts.append(f"{dst}[i, j] = ({a}[i, j] + {b}[i, j]) * 0.5 - {a}[i, j]")
            ref.append((dst, f"({a} + {b}) * 0.5 - {a}"))
    params = ", ".join([f'X{k}: T.Tensor((64, 64), "float32")' for k in range(len(names))]
                       + [f'Y{k}: T.Tensor((64, 64), "float32")' for k in range(len(names))])
    lines = ["import tilelang_tt.language as T", "", "@T.prim_func", f"def k({params}):",
             "    with T.Kernel(2) as bx:"]
    lines += [f'        {n} = T.alloc_{s}((32, 64), "float32")' for n, s in zip(names, scopes)]
    lines += [f"        T.copy(X{k}[bx * 32, 0], {n})" for k, n in enumerate(names)]
    for s in stmts:
        lines += ["        for i, j in T.Parallel(32, 64):", f"            {s}"]
    lines += [f"        T.copy({n}, Y{k}[bx * 32, 0])" for k, n in enumerate(names)]
    return "\n".join(lines) + "\n", names, ref


@pytest.mark.parametrize("seed", range(COMPILE_SEEDS))
def test_in_place_chain_compiles(tmp_path, seed):
    source, _, _ = chain(seed)
    tilelang_tt.lower(kernel_from_source(tmp_path, source))


@pytest.mark.parametrize("seed", range(1000, 1000 + RUN_SEEDS))
def test_in_place_chain_runs(tmp_path, seed):
    source, names, ref = chain(seed)
    art = tilelang_tt.compile(kernel_from_source(tmp_path, source),
                              out_idx=list(range(len(names), 2 * len(names))))
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal((64, 64)).astype(np.float32) for _ in names]
    env = dict(zip(names, (x.copy() for x in xs)))
    for dst, expr in ref:
        env[dst] = eval(expr, {"np": np}, env).astype(np.float32)  # noqa: S307 (generated)
    outs = art(*xs)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    for name, out in zip(names, outs):
        np.testing.assert_allclose(out, env[name], rtol=1e-5, atol=1e-5, err_msg=source)
