"""Blocks of fewer heads than a tile's 32 rows at rows off a tile boundary (TileLang's GQA
decoding with 4 query heads per KV head: ``valid_block_H = 4`` of ``block_H = 64``).

A0.5.1 holds a ``[4, D]`` block as a 32-row tile; a copy of it to or from tensor rows starting
off a multiple of 32 keeps its 4 rows (C1: ``tt.read_rows_to_cb`` / ``tt.write_rows_from_cb``,
the store guarded to the block's first 4 rows), so neighbouring blocks' rows in the same tile
are never written.  A 1-D block's values stored as single elements (``glse[bid, hid * 4 + i,
sid] = logsum[i]``) are refused: their DRAM chunks hold other blocks' elements.  Checked on the
emulator against numpy."""

import numpy as np
import pytest

pytest.importorskip("tilelang_tt.runtime.mockbuild", reason="emulator driver not installed")

import tilelang_tt
import tilelang_tt.language as T
from tilelang_tt.errors import TTUnsupportedError
from test_masked_decode import masked_gqa_decode, masked_reference


def test_gqa_decode_four_heads_per_block():
    """32 query heads in 8 groups: each block computes 64 rows of Q read from row ``by * 4``
    (60 of them other heads' or, past the tensor, zeros) and stores its 4 heads' rows; 8
    blocks share one 32-row tile of the output."""
    B, H, G, S, D, valid = 1, 32, 8, 128, 64, 88
    rng = np.random.default_rng(11)
    q = rng.standard_normal((B, H, D)).astype(np.float16)
    k = rng.standard_normal((B, S, G, D)).astype(np.float16)
    v = rng.standard_normal((B, S, G, D)).astype(np.float16)
    mask = rng.integers(0, 2, (B, S, G)).astype(np.uint8)
    mask[:, 0] = 1
    kernel = masked_gqa_decode(B, H, G, S, D, 32, 64, "uint8", valid)
    out = kernel(q, k, v, mask)
    np.testing.assert_allclose(out.astype(np.float32), masked_reference(q, k, v, mask, valid),
                               rtol=1e-2, atol=1e-2)


@T.prim_func
def neighbouring_row_groups(A: T.Tensor((32, 64), "float16"), Out: T.Tensor((32, 64), "float16")):
    with T.Kernel(2) as bx:
        s = T.alloc_shared((4, 64), "float16")
        f = T.alloc_fragment((4, 64), "float32")
        T.copy(A[bx * 12 + 3:bx * 12 + 7, :], s)
        for i, j in T.Parallel(4, 64):
            f[i, j] = s[i, j] * 2.0
        T.copy(f, Out[8 + bx * 4:12 + bx * 4, :])


def test_neighbouring_four_row_groups_of_one_tile():
    """Two blocks read 4 rows each at rows 3 and 15 and store them doubled at rows 8 and 12 of
    one tile: each writes its 4 rows only (a whole-tile or 32-row write would put one block's
    padding over the other's rows, or over rows nobody stores, which stay 0)."""
    kernel = tilelang_tt.compile(neighbouring_row_groups)
    a = np.random.default_rng(1).standard_normal((32, 64)).astype(np.float16)
    out = np.full((32, 64), -7, np.float16)
    kernel(a, out)
    expected = np.zeros((32, 64), np.float32)  # an output's rows nobody stores read 0
    expected[8:12] = a[3:7].astype(np.float32) * 2
    expected[12:16] = a[15:19].astype(np.float32) * 2
    np.testing.assert_array_equal(out.astype(np.float32), expected)


def test_single_element_stores_refused():
    """TileLang's GQA split stores 4 of a block's 64 log-sums as elements along ``glse``'s
    middle dim; their 32-byte DRAM chunks hold the other splits' values: refused by name."""
    @T.prim_func
    def element_store(X: T.Tensor((64, 64), "float32"), L: T.Tensor((1, 32, 8), "float32")):
        with T.Kernel(8, 8) as (hid, sid):
            x = T.alloc_fragment((32, 64), "float32")
            r = T.alloc_fragment((32,), "float32")
            T.copy(X[hid // 4 * 32:hid // 4 * 32 + 32, :], x)
            T.reduce_sum(x, r, dim=1)
            for i in T.Parallel(32):
                if i < 4:
                    L[0, hid * 4 + i, sid] = r[i]

    with pytest.raises(TTUnsupportedError) as err:
        tilelang_tt.compile(element_store)
    text = str(err.value)
    assert "storing 4 values of the 1-D block buffer r into tensor L" in text, text
    assert "race" in text and "test_subtile_heads.py:" in text
