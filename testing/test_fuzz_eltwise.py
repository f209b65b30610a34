"""Random elementwise expressions (fixed seeds) compiled, run on the emulator and checked
against numpy: the expression compiler (A0), the DST stack machine (D5) and the emulator's
SFPU ops have to agree on every tree shape the generator makes."""

import random

import numpy as np
import pytest

import kernels
import tilelang_tt
import tilelang_tt.language as T
from helpers import as_f32, rand


def _tree(rng: random.Random, depth: int):
    """(TileLang builder, numpy builder, uses an operand) of a random expression over operands
    a and b whose values stay finite for inputs of moderate size."""
    if depth == 0 or rng.random() < 0.25:
        pick = rng.choice(["a", "b", "a", "b", "const"])
        if pick == "const":
            c = rng.choice([0.5, 1.5, -2.0, 3.0])
            return (lambda a, b: c), (lambda a, b: c), False
        k = 0 if pick == "a" else 1
        return (lambda a, b: (a, b)[k]), (lambda a, b: (a, b)[k]), True
    kind = rng.choice(["add", "sub", "mul", "div", "unary", "unary"])
    if kind == "unary":
        tl, ref, used = _tree(rng, depth - 1)
        fn = rng.choice(["tanh", "sigmoid", "abs", "relu", "negative", "exp_bounded",
                         "sqrt_abs", "log1_abs"])
        table = {
            "tanh": (lambda x: T.tanh(x), np.tanh),
            "sigmoid": (lambda x: T.sigmoid(x), lambda x: 1 / (1 + np.exp(-x))),
            "abs": (lambda x: T.abs(x), np.abs),
            "relu": (lambda x: T.max(x, 0.0), lambda x: np.maximum(x, 0)),
            "negative": (lambda x: -x, np.negative),
            "exp_bounded": (lambda x: T.exp(T.tanh(x)), lambda x: np.exp(np.tanh(x))),
            "sqrt_abs": (lambda x: T.sqrt(T.abs(x) + 0.25), lambda x: np.sqrt(np.abs(x) + 0.25)),
            "log1_abs": (lambda x: T.log(T.abs(x) + 1.0), lambda x: np.log(np.abs(x) + 1.0)),
        }
        f_tl, f_np = table[fn]
        return (lambda a, b: f_tl(tl(a, b))), (lambda a, b: f_np(ref(a, b))), used
    l_tl, l_np, l_used = _tree(rng, depth - 1)
    r_tl, r_np, r_used = _tree(rng, depth - 1)
    if kind == "div":  # keep the divisor away from zero
        return ((lambda a, b: l_tl(a, b) / (T.abs(r_tl(a, b)) + 1.0)),
                (lambda a, b: l_np(a, b) / (np.abs(r_np(a, b)) + 1.0)), l_used or r_used)
    op = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y}[kind]
    return ((lambda a, b: op(l_tl(a, b), r_tl(a, b))),
            (lambda a, b: op(l_np(a, b), r_np(a, b))), l_used or r_used)


@pytest.mark.parametrize("seed", range(10))
def test_random_expression(seed):
    rng = random.Random(seed)
    used = False
    while not used:  # a constant-only tree is not an elementwise kernel
        tl, ref, used = _tree(rng, 3)
    kernel = kernels.elementwise_expr(tl, 2, 64, 64, 32, 64, "float32")
    try:
        art = tilelang_tt.compile(kernel, out_idx=-1)
    except tilelang_tt.TTResourceError as err:  # legitimately too deep for fp32 DST
        assert "DST tiles at once" in str(err)
        return
    a, b = rand((64, 64), "float32", 2 * seed), rand((64, 64), "float32", 2 * seed + 1)
    expected = np.broadcast_to(ref(a.astype(np.float64), b.astype(np.float64)), a.shape)
    np.testing.assert_allclose(as_f32(art(a, b)), expected, rtol=2e-5, atol=2e-5)
