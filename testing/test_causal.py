"""Masks computed from indices (TileLang's causal mask) and causal flash attention.

A ``T.if_then_else`` condition that reads no buffer element - a function of the ``T.Parallel``
indices, the block indices and loop variables - is computed by the reader kernel as a block of
1.0 / 0.0 written straight into its circular buffer's L1 (the tiles' face layout), and the
compute kernel selects with ``where_tile``; a choice between two constants is written by the
reader as the values themselves (docs/SUPPORT.md).  Every kernel runs on the
emulator and is compared with numpy.
"""

import ml_dtypes
import numpy as np
import pytest

import tilelang_tt
import tilelang_tt.language as T
from flash_attention import flashattn, reference
from helpers import as_f32, rand
from tilelang_tt.errors import TTUnsupportedError

NEG_INF = -float("inf")


def index_masked(cond, value, M, N, block_M, block_N, dtype):
    """``C[y, x] = value(cond(y, x, bx, by), A[y, x])`` over a grid of blocks, in TileLang's
    elementwise idiom (global rows and columns bound to names)."""

    @T.prim_func
    def masked(A: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                y = by * block_M + i
                x = bx * block_N + j
                C[y, x] = value(cond(y, x, bx, by), A[y, x])

    return masked


# name: (condition of (row, col, bx, by), its numpy form of (rows, cols, block_M, block_N))
# (and/or/not of orderings of affine functions of the element's row and column, or comparisons
# of block indices alone, are decided per tile where uniform: all but checkerboard, not_min_max)
CONDITIONS = {
    "lower_triangle": (lambda y, x, bx, by: y >= x, lambda r, c, bm, bn: r >= c),
    "strictly_upper": (lambda y, x, bx, by: y < x, lambda r, c, bm, bn: r < c),
    # differences of indices are negative in half of the elements
    "band": (lambda y, x, bx, by: T.And(y - x < 40, x - y <= 20),
             lambda r, c, bm, bn: (r - c < 40) & (c - r <= 20)),
    "checkerboard": (lambda y, x, bx, by: (y // 16 + x // 16) % 2 == 0,
                     lambda r, c, bm, bn: (r // 16 + c // 16) % 2 == 0),
    "block_indices_only": (lambda y, x, bx, by: T.Or(bx == by, bx + 1 == by),
                           lambda r, c, bm, bn: (c // bn == r // bm) | (c // bn + 1 == r // bm)),
    "not_min_max": (lambda y, x, bx, by: T.Not(T.max(y, 70) <= T.min(x + 3, 90)),
                    lambda r, c, bm, bn: ~(np.maximum(r, 70) <= np.minimum(c + 3, 90))),
}
# name: (TileLang value of (condition, element), numpy form of (mask, a))
VALUES = {
    "keep_or_minus_infinity": (lambda m, a: T.if_then_else(m, a, NEG_INF),
                               lambda m, a: np.where(m, a, -np.inf)),
    "zero_or_keep": (lambda m, a: T.if_then_else(m, 0.0, a), lambda m, a: np.where(m, 0, a)),
    "scaled_or_kept": (lambda m, a: T.if_then_else(m, a * 2.0, a),
                       lambda m, a: np.where(m, a * 2, a)),
    "constants_times_element": (lambda m, a: T.if_then_else(m, 1.0, -1.0) * a,
                                lambda m, a: np.where(m, 1.0, -1.0) * a),
    # two constants alone: the reader writes the values themselves (0.1 rounds in bfloat16)
    "constants_only": (lambda m, a: T.if_then_else(m, 0.1, NEG_INF),
                       lambda m, a: np.where(m, np.float32(0.1), -np.inf) + a * 0),
}


# each condition once, each dtype with a uniform and a non-uniform one (the mask block is
# bfloat16 whatever the data's dtype)
@pytest.mark.parametrize("cond_name, dtype", [
    ("band", "bfloat16"), ("block_indices_only", "float32"), ("checkerboard", "float32"),
    ("lower_triangle", "bfloat16"), ("not_min_max", "bfloat16"), ("strictly_upper", "float32")])
def test_index_mask_conditions(cond_name, dtype):
    M, N, bm, bn = 128, 128, 64, 32
    cond, ref_cond = CONDITIONS[cond_name]
    value, ref_value = VALUES["keep_or_minus_infinity"]
    art = tilelang_tt.compile(index_masked(cond, value, M, N, bm, bn, dtype), out_idx=-1)
    # the reader writes the mask into its CB (no NOC transfer); compute selects on it
    reader = art.sources["reader.cpp"]
    assert "uint32_t*>(" in reader
    assert "where_tile<" in art.sources["compute.cpp"]
    # a tile the condition is uniform on is filled with one word (the mask is bfloat16: 512
    # words of two elements)
    uniform_fill = "< 512;" in reader
    assert uniform_fill == (cond_name not in ("checkerboard", "not_min_max"))
    a = rand((M, N), dtype, 3)
    rows, cols = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    want = ref_value(ref_cond(rows, cols, bm, bn), as_f32(a))
    np.testing.assert_array_equal(as_f32(art(a)), want)


# each value once, the dtypes in turn; the two constants alone in every dtype (the reader writes
# them in the block's dtype: 0.1 rounds differently in each)
@pytest.mark.parametrize("value_name, dtype", [
    ("constants_only", "bfloat16"), ("constants_only", "float16"), ("constants_only", "float32"),
    ("constants_times_element", "float16"), ("keep_or_minus_infinity", "float16"),
    ("scaled_or_kept", "bfloat16"), ("zero_or_keep", "float32")])
def test_index_mask_selects(value_name, dtype):
    M, N, bm, bn = 64, 96, 32, 32
    cond, ref_cond = CONDITIONS["lower_triangle"]
    value, ref_value = VALUES[value_name]
    art = tilelang_tt.compile(index_masked(cond, value, M, N, bm, bn, dtype), out_idx=-1)
    # constants alone need no compute: the reader's block goes straight to the writer
    assert ("where_tile<" in art.sources["compute.cpp"]) == (value_name != "constants_only")
    a = rand((M, N), dtype, 4)
    rows, cols = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    want = ref_value(ref_cond(rows, cols, bm, bn), as_f32(a).astype(np.float64)).astype(np.float32)
    if dtype != "float32":  # rounded to nearest even once
        want = as_f32(want.astype(a.dtype))
    np.testing.assert_array_equal(as_f32(art(a)), want)


def test_mask_from_the_pipelined_loop_variable():
    """The condition reads the T.Pipelined loop variable and a name bound before the loop: the
    reader computes one mask per iteration, in its own copy of the loop (the mask block is
    bfloat16 whatever the data's dtype; float32 data: test_index_mask_conditions)."""
    dtype = "bfloat16"
    M, N, bm, bn = 128, 128, 32, 64

    @T.prim_func
    def tril_by_blocks(A: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            A_shared = T.alloc_shared((bm, bn), dtype)
            C_local = T.alloc_fragment((bm, bn), dtype)
            row0 = bx * bm
            for k in T.Pipelined(T.ceildiv(N, bn), num_stages=2):
                T.copy(A[row0, k * bn], A_shared)
                for i, j in T.Parallel(bm, bn):
                    C_local[i, j] = T.if_then_else(row0 + i >= k * bn + j, A_shared[i, j], 0)
                T.copy(C_local, C[bx * bm, k * bn])

    art = tilelang_tt.compile(tril_by_blocks, out_idx=-1)
    reader = art.sources["reader.cpp"]
    assert reader.index("for (uint32_t k = 0;") < reader.index("cb_reserve_back(C_local_mask")
    a = rand((M, N), dtype, 5)
    np.testing.assert_array_equal(as_f32(art(a)), np.tril(as_f32(a)))


def test_two_masks_and_a_python_conditional(tmp_path):
    """Two index conditions in one expression (two mask blocks) and Python's `x if c else y`."""
    from helpers import kernel_from_source

    func = kernel_from_source(tmp_path, '''
import tilelang_tt.language as T

@T.prim_func
def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
    with T.Kernel(2, 2) as (bx, by):
        S = T.alloc_fragment((32, 32), "float32")
        R = T.alloc_fragment((32, 32), "float32")
        T.copy(A[by * 32, bx * 32], S)
        for i, j in T.Parallel(32, 32):
            R[i, j] = ((S[i, j] if by * 32 + i >= bx * 32 + j else 0.0)
                       + T.if_then_else(by * 32 + i + 8 >= bx * 32 + j, S[i, j] * 0.5, 0.0))
        T.copy(R, B[by * 32, bx * 32])
''')
    art = tilelang_tt.compile(func, out_idx=-1)
    assert art.sources["reader.cpp"].count("cb_push_back(R_mask") == 2
    a = rand((64, 64), "float32", 6)
    r, c = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    want = np.where(r >= c, a, 0) + np.where(r + 8 >= c, a * np.float32(0.5), 0)
    np.testing.assert_allclose(art(a), want, rtol=1e-6, atol=0)


def test_index_condition_with_float_arithmetic_is_refused_by_name(tmp_path):
    from helpers import kernel_from_source

    func = kernel_from_source(tmp_path, '''
import tilelang_tt.language as T

@T.prim_func
def k(A: T.Tensor((64, 64), "bfloat16"), B: T.Tensor((64, 64), "bfloat16")):
    with T.Kernel(2, 2) as (bx, by):
        S = T.alloc_fragment((32, 32), "float32")
        T.copy(A[by * 32, bx * 32], S)
        for i, j in T.Parallel(32, 32):
            S[i, j] = T.if_then_else(T.float32(i) * 0.5 >= T.float32(j), S[i, j], 0.0)
        T.copy(S, B[by * 32, bx * 32])
''')
    with pytest.raises(TTUnsupportedError, match=r"S\[\.\.\.\] = \.\.\.`: the condition .* is "
                                                 r"computed from indices, but .* is not integer "
                                                 r"arithmetic"):
        tilelang_tt.compile(func, out_idx=-1)


def test_index_condition_dividing_a_negative_value_floors():
    """``(y - x) // 16 == 0``: the difference is negative above the diagonal; the reader
    divides signed and floors, as TIR's ``//`` (truncation would keep ``y - x`` in (-16, 0)
    too)."""
    cond = lambda y, x, bx, by: (y - x) // 16 == 0  # noqa: E731
    func = index_masked(cond, VALUES["zero_or_keep"][0], 64, 64, 32, 32, "float32")
    art = tilelang_tt.compile(func, out_idx=-1)
    assert "floordiv_signed" not in art.sources["reader.cpp"]  # the registry's C++ spelling
    a = rand((64, 64), "float32", 5)
    rows, cols = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    np.testing.assert_array_equal(art(a), np.where((rows - cols) // 16 == 0, 0, a))


def test_index_condition_over_a_vector(tmp_path):
    """A 1-D nest's condition of indices over a column vector (a row max): the mask's element
    ``k`` is ``mask.index(0) + mask.index(1)``, right in the vector's orientation."""
    from helpers import kernel_from_source

    func = kernel_from_source(tmp_path, '''
import tilelang_tt.language as T

@T.prim_func
def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
    with T.Kernel(2) as bx:
        S = T.alloc_fragment((32, 64), "float32")
        m = T.alloc_fragment((32,), "float32")
        T.copy(A[bx * 32, 0], S)
        T.reduce_max(S, m, dim=1)
        for i in T.Parallel(32):
            m[i] = T.if_then_else(bx * 32 + i < 40, m[i], 0.0)
        for i, j in T.Parallel(32, 64):
            S[i, j] = S[i, j] - m[i]
        T.copy(S, B[bx * 32, 0])
''')
    art = tilelang_tt.compile(func, out_idx=-1)
    a = np.random.default_rng(7).uniform(-1, 1, (64, 64)).astype(np.float32)
    m = np.where(np.arange(64) < 40, a.max(axis=1), 0.0)
    np.testing.assert_allclose(art(a), a - m[:, None], rtol=1e-2, atol=1e-2)


# (batch, heads, seq_len, dim, block_M, block_N): block_M above and below block_N (equal blocks:
# test_causal_work_is_balanced_over_the_cores, test_pad_shapes; several heads:
# test_causal_flash_attention_on_4d_tensors)
ATTENTION_SHAPES = [(1, 1, 256, 64, 64, 32), (2, 1, 128, 32, 32, 64)]


@pytest.mark.parametrize("shape", ATTENTION_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_causal_flash_attention(shape):
    """TileLang's flash attention forward with is_causal (examples/flash_attention.py): the
    key loop stops at the diagonal block and the scores start from the index mask."""
    batch, heads, seq_len, dim, bm, bn = shape
    func = flashattn(batch, heads, seq_len, dim, is_causal=True, block_M=bm, block_N=bn)
    kernel = tilelang_tt.compile(func, out_idx=-1)
    # the mask's 0 / -inf are written by the reader into the scores' first version
    assert "where_tile" not in kernel.sources["compute.cpp"]
    assert "4286578688u" in kernel.sources["reader.cpp"]  # -inf, float32 bits
    rng = np.random.default_rng(sum(shape))
    q, k, v = [rng.standard_normal((batch * heads * seq_len, dim)).astype(ml_dtypes.bfloat16)
               for _ in range(3)]
    out = as_f32(kernel(q, k, v))
    ref = reference(q, k, v, batch, heads, seq_len, dim, True)
    np.testing.assert_allclose(out, ref, rtol=1e-2, atol=1e-2)
    # the mask matters: the non-causal result is far from this one
    assert np.abs(ref - reference(q, k, v, batch, heads, seq_len, dim, False)).max() > 0.1


# ---- the real SDK compiles a causal project ---------------------------------------------------

from test_sdk_host_twin import sdk, sdkcheck  # noqa: E402,F401  (the sdkcheck fixture)
from tilelang_tt.codegen.cmake import mock_dir  # noqa: E402


def test_sdkcheck_causal_flash_attention(sdk, tmp_path):  # noqa: F811
    """The reader's mask stores and signed comparisons, and the bx-dependent loop bound, compile
    against TT-Metalium 0.81.1 without a warning (its JIT builds kernels with -Werror)."""
    func = flashattn(1, 2, 128, 64, is_causal=True)
    project = tilelang_tt.compile(func, out_idx=-1).save(
        tmp_path / "causal")
    assert "static_cast<int32_t>(" in (project / "reader.cpp").read_text()
    proc = sdkcheck("--host-include", mock_dir() / "include", project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " 0 error(s)" in proc.stdout and " 0 warning(s)" in proc.stdout, proc.stdout


@pytest.mark.parametrize("layout", ["bhsd", "bshd"])
def test_causal_flash_attention_on_4d_tensors(layout):
    """TileLang's BHSD / BSHD flash attention with is_causal (examples/flash_attention_4d.py)."""
    import flash_attention_4d as fa4

    batch, heads, seq_len, dim = 2, 2, 128, 64
    make = fa4.flashattn_bhsd if layout == "bhsd" else fa4.flashattn_bshd
    func = make(batch, heads, seq_len, dim, block_M=64, block_N=32, is_causal=True)
    kernel = tilelang_tt.compile(func, out_idx=-1)
    shape = (batch, heads, seq_len, dim) if layout == "bhsd" else (batch, seq_len, heads, dim)
    rng = np.random.default_rng(9)
    q, k, v = [rng.standard_normal(shape).astype(ml_dtypes.bfloat16) for _ in range(3)]
    ref = (fa4.reference_bhsd if layout == "bhsd" else fa4.reference_bshd)(q, k, v, True)
    np.testing.assert_allclose(as_f32(kernel(q, k, v)), ref, rtol=1e-2, atol=1e-2)


def test_causal_work_is_balanced_over_the_cores():
    """The key loop's bound depends on bx, so B2 orders bx 0, gx-1, 1, gx-2, ...: each core's
    two consecutive work units pair a short query block with a long one, and causal attention
    takes about half the modelled time of the full one (128 blocks on n150's 64 cores)."""
    import flash_attention_4d as fa4

    batch, heads, seq_len, dim = 1, 8, 1024, 64
    rng = np.random.default_rng(10)
    q, k, v = [rng.standard_normal((batch, heads, seq_len, dim)).astype(ml_dtypes.bfloat16)
               for _ in range(3)]
    times = {}
    for causal in (False, True):
        func = fa4.flashattn_bhsd(batch, heads, seq_len, dim, 64, 64, is_causal=causal)
        kernel = tilelang_tt.compile(func, out_idx=-1)
        ref = fa4.reference_bhsd(q, k, v, causal)
        np.testing.assert_allclose(as_f32(kernel(q, k, v)), ref, rtol=1e-2, atol=1e-2)
        times[causal] = kernel.get_profiler().do_bench()
        folded = "const uint32_t bx = (((work_id % 2) == 0) ?" in kernel.sources["reader.cpp"]
        assert folded == causal
    assert times[True] < 0.65 * times[False], times
