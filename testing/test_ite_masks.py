"""Conditions and indices built from nested integer ``T.if_then_else`` values (TileLang's
block_causal_attention idiom).

``T.if_then_else`` of index values is a ``Select`` of index arithmetic; a comparison of one
with a value is split over its condition and folded (``T.if_then_else(q == k, 1, 0) > 0`` is
``q == k``), names bound to such values seen through; such a value is a loop extent; an ``if``
choosing between two copies of one tensor into one block is one copy from a chosen start; an
``if`` of index arithmetic around a ``T.Parallel`` store nest (``else: T.clear(dst)``, or no
``else``) is a choice per element; a copy's start chosen by a condition, in a loop whose
extent the same condition chooses, is proven inside its tensor case by case
(docs/SUPPORT.md "Masks computed from indices").  Every kernel runs on the emulator and is
compared with numpy.
"""

import numpy as np
import tvm_ffi

import tilelang_tt
import tilelang_tt.language as T
from helpers import rand
from tilelang_tt.passes.frontend.scalars import normalise_index_selects
from tvm import tirx

B, HALF, D = 32, 2, 4  # block rows, tiles per half, mask sub-block
M = 2 * HALF * B


def _allowed(i, j, diag, first):
    """1 where row i may see column j in the tile (nested integer selects)."""
    qb, kb = i // D, j // D
    return T.if_then_else(diag == 1, T.if_then_else(qb == kb, 1, 0),
                          T.if_then_else(first, T.if_then_else(qb > kb, 1, 0),
                                         T.if_then_else(qb >= kb, 1, 0)))


def forward_like():
    @T.prim_func
    def fwd(A: T.Tensor((M, B), "float32"), C: T.Tensor((M, B), "float32")):
        with T.Kernel(2 * HALF, threads=128) as bx:
            a_s = T.alloc_shared((B, B), "float32")
            t = T.alloc_fragment((B, B), "float32")
            m = T.alloc_fragment((B, B), "float32")
            acc = T.alloc_fragment((B, B), "float32")
            T.clear(acc)
            first = bx < HALF
            last = T.if_then_else(first, bx, bx - HALF)
            steps = T.if_then_else(first, bx + 2, (bx - HALF) + 1)
            for s in T.Pipelined(steps, num_stages=1):
                diag = T.if_then_else(s > last, 1, 0)
                if diag != 0:
                    T.copy(A[bx * B:(bx + 1) * B, :], a_s)
                else:
                    T.copy(A[HALF * B + s * B:HALF * B + (s + 1) * B, :], a_s)
                T.copy(a_s, t)
                need = diag + T.if_then_else(s == last, 1, 0)
                if need != 0:
                    for i, j in T.Parallel(B, B):
                        m[i, j] = T.if_then_else(_allowed(i, j, diag, first) > 0, 0, -2.0)
                else:
                    T.clear(m)
                if need != 0:
                    for i, j in T.Parallel(B, B):
                        t[i, j] = T.if_then_else(_allowed(i, j, diag, first) > 0, t[i, j], 0)
                for i, j in T.Parallel(B, B):
                    acc[i, j] += t[i, j] + m[i, j]
            T.copy(acc, C[bx * B:(bx + 1) * B, :])

    return fwd


def forward_reference(a):
    out = np.zeros_like(a)
    r = np.arange(B)
    qb, kb = r[:, None] // D, r[None, :] // D
    for bx in range(2 * HALF):
        first = bx < HALF
        last = bx if first else bx - HALF
        for s in range(bx + 2 if first else bx - HALF + 1):
            diag = s > last
            tile = a[bx * B:(bx + 1) * B] if diag else a[(HALF + s) * B:(HALF + s + 1) * B]
            if diag:
                ok = qb == kb
            elif s == last:
                ok = qb > kb if first else qb >= kb
            else:
                ok = np.ones((B, B), bool)
            out[bx * B:(bx + 1) * B] += np.where(ok, tile, 0) + np.where(ok, 0, -2.0)
    return out


def key_walk():
    """The key-parallel walk: the query tile a step reads is chosen by conditions of the block
    index and the step, the loop's extent by the same condition."""
    @T.prim_func
    def walk(A: T.Tensor((M, B), "float32"), C: T.Tensor((M, B), "float32")):
        with T.Kernel(2 * HALF, threads=128) as by:
            a_s = T.alloc_shared((B, B), "float32")
            acc = T.alloc_fragment((B, B), "float32")
            T.clear(acc)
            key_first = by < HALF
            first_q = T.if_then_else(key_first, by, by - HALF)
            span = HALF - first_q
            loop_ed = T.if_then_else(key_first, 1, span * 2)
            for step in T.Pipelined(loop_ed, num_stages=1):
                clean = first_q + T.if_then_else(step < span, step, HALF + (step - span))
                q_tile = T.if_then_else(key_first, first_q + step, clean)
                T.copy(A[q_tile * B:(q_tile + 1) * B, :], a_s)
                for i, j in T.Parallel(B, B):
                    acc[i, j] += a_s[i, j] * (step + 1)
            T.copy(acc, C[by * B:(by + 1) * B, :])

    return walk


def walk_reference(a):
    out = np.zeros_like(a)
    for by in range(2 * HALF):
        first_q = by if by < HALF else by - HALF
        span = HALF - first_q
        for step in range(1 if by < HALF else span * 2):
            q = first_q + step if by < HALF else \
                first_q + (step if step < span else HALF + step - span)
            out[by * B:(by + 1) * B] += a[q * B:(q + 1) * B] * (step + 1)
    return out


def test_select_comparisons_fold():
    i, j = tirx.Var("i", "int32"), tirx.Var("j", "int32")
    sel = tirx.if_then_else(i // 4 == j // 4, 1, 0)
    stmt = tirx.Evaluate(tirx.Cast("int32", sel > 0))
    folded = normalise_index_selects(stmt)
    assert tvm_ffi.structural_equal(folded.value.value, i // 4 == j // 4)


def test_nested_select_masks_and_chosen_copies():
    a = rand((M, B), "float32", 7)
    art = tilelang_tt.compile(forward_like(), out_idx=-1)
    np.testing.assert_allclose(art(a), forward_reference(a), rtol=1e-5, atol=1e-5)
    art = tilelang_tt.compile(key_walk(), out_idx=-1)
    np.testing.assert_allclose(art(a), walk_reference(a), rtol=1e-5, atol=1e-5)


def test_nest_alone_under_an_index_branch():
    """``if bx == 0:`` around one T.Parallel store nest (no ``else``): a select per element,
    the buffer read after the branch (was refused: written in a branch, read after it)."""
    @T.prim_func
    def branch(X: T.Tensor((64, 64), "float32"), Y: T.Tensor((64, 64), "float32")):
        with T.Kernel(2) as bx:
            X_s = T.alloc_shared((32, 64), "float32")
            T.copy(X[bx * 32, 0], X_s)
            if bx == 0:
                for i, j in T.Parallel(32, 64):
                    X_s[i, j] = X_s[i, j] * 2.0
            T.copy(X_s, Y[bx * 32, 0])

    x = rand((64, 64), "float32", 8)
    want = x.copy()
    want[:32] *= 2
    np.testing.assert_array_equal(tilelang_tt.compile(branch, out_idx=-1)(x), want)
