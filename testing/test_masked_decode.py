"""TileLang's GQA decoding with a key mask, as ``examples/flash_decoding/example_gqa_decode.py``
writes it (written here in the same idiom): ``mask: T.Tensor([batch, seqlen_kv, groups],
"uint8")`` (or ``"bool"``), one 1-D slice per key block along its middle dim copied into a
``uint8`` fragment, and ``T.if_then_else(mask_local[j] != 0, acc_s[i, j], -inf)``.  A0.1.5
hands the device the mask as bfloat16 (every uint8 / int8 / bool value exactly; the host
converts), A0.1.6 permutes its dims so the sliced one is last (the host transposes).  Checked
on the emulator against numpy; and a float tensor read and written as 1-D slices along its
first dim."""

import numpy as np
import pytest

pytest.importorskip("tilelang_tt.runtime.mockbuild", reason="emulator driver not installed")

import tilelang_tt
import tilelang_tt as tilelang
import tilelang_tt.language as T
from tilelang_tt.errors import TTUnsupportedError


@tilelang.jit(out_idx=[4])
def masked_gqa_decode(batch, heads, groups, seqlen_kv, dim, block_N, block_H, mask_dtype,
                      valid_len, bool_condition=False):
    scale = (1.0 / dim) ** 0.5 * 1.44269504
    dtype, accum_dtype = T.float16, T.float32
    kv_group_num = heads // groups
    valid_block_H = min(block_H, kv_group_num)

    @T.prim_func
    def main(Q: T.Tensor([batch, heads, dim], dtype),
             K: T.Tensor([batch, seqlen_kv, groups, dim], dtype),
             V: T.Tensor([batch, seqlen_kv, groups, dim], dtype),
             mask: T.Tensor([batch, seqlen_kv, groups], mask_dtype),
             Output: T.Tensor([batch, heads, dim], dtype)):
        with T.Kernel(batch, heads // valid_block_H, threads=128) as (bx, by):
            Q_shared = T.alloc_shared([block_H, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([valid_block_H, dim], dtype)
            acc_s = T.alloc_fragment([block_H, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_H, block_N], dtype)
            mask_local = T.alloc_fragment([block_N], mask_dtype)
            acc_o = T.alloc_fragment([block_H, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_H], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_H], accum_dtype)
            scores_scale = T.alloc_fragment([block_H], accum_dtype)
            scores_sum = T.alloc_fragment([block_H], accum_dtype)
            logsum = T.alloc_fragment([block_H], accum_dtype)

            cur_kv_head = by // (kv_group_num // valid_block_H)
            T.copy(Q[bx, by * valid_block_H:by * valid_block_H + block_H, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))
            for k in T.Pipelined(T.ceildiv(seqlen_kv, block_N), num_stages=2):
                T.copy(K[bx, k * block_N:(k + 1) * block_N, cur_kv_head, :], K_shared)
                T.copy(mask[bx, k * block_N:(k + 1) * block_N, cur_kv_head], mask_local)
                T.clear(acc_s)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True)
                if bool_condition:
                    for i, j in T.Parallel(block_H, block_N):
                        acc_s[i, j] = T.if_then_else(mask_local[j], acc_s[i, j],
                                                     -T.infinity(accum_dtype))
                else:
                    for i, j in T.Parallel(block_H, block_N):
                        acc_s[i, j] = T.if_then_else(
                            (mask_local[j] != 0) & (k * block_N + j < valid_len), acc_s[i, j],
                            -T.infinity(accum_dtype))
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_H):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_H):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_H):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bx, k * block_N:(k + 1) * block_N, cur_kv_head, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o)
            for i, j in T.Parallel(block_H, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o[:valid_block_H, :], O_shared)
            T.copy(O_shared, Output[bx, by * valid_block_H:(by + 1) * valid_block_H, :])

    return main


def masked_reference(q, k, v, mask, valid_len):
    heads, groups = q.shape[1], k.shape[2]
    kk = np.repeat(k.astype(np.float64).transpose(0, 2, 1, 3), heads // groups, 1)
    vv = np.repeat(v.astype(np.float64).transpose(0, 2, 1, 3), heads // groups, 1)
    mm = np.repeat(mask.transpose(0, 2, 1), heads // groups, 1)
    s = np.einsum("bhd,bhsd->bhs", q.astype(np.float64), kk) / np.sqrt(q.shape[-1])
    s = np.where((mm != 0) & (np.arange(k.shape[1]) < valid_len), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("bhs,bhsd->bhd", p / p.sum(-1, keepdims=True), vv)


# The example's uint8 mask compared (``!= 0``) and a bool mask used as the condition itself.
# A0.1.5 compares a converted element with a constant whatever its integer dtype, and the host
# converts every dtype with numpy: an int8 (-1 included) or bool mask compared ``!= 0`` takes
# the same paths (int8's every value, -128 included, is converted in
# test_integer_blocks_converted_in_an_expression).
@pytest.mark.parametrize("mask_dtype,np_dtype,bool_condition", [
    ("uint8", np.uint8, False), ("bool", np.bool_, True)])
def test_masked_gqa_decode(mask_dtype, np_dtype, bool_condition):
    """64 query heads in 2 groups of 32, 128 keys in blocks of 32; keys past 88 are masked by
    index too (``(mask_local[j] != 0) & (k * block_N + j < valid_len)``)."""
    B, H, G, S, D, valid = 1, 64, 2, 128, 64, S_VALID
    rng = np.random.default_rng(7)
    q = rng.standard_normal((B, H, D)).astype(np.float16)
    k = rng.standard_normal((B, S, G, D)).astype(np.float16)
    v = rng.standard_normal((B, S, G, D)).astype(np.float16)
    mask = rng.integers(0, 2, (B, S, G)).astype(np_dtype)
    mask[:, 0] = 1  # no row masked whole
    if bool_condition:
        valid = S
    kernel = masked_gqa_decode(B, H, G, S, D, 32, 32, mask_dtype, valid, bool_condition)
    out = kernel(q, k, v, mask)
    (spec,) = [t for t in kernel.plan["tensors"] if t["name"] == "mask"]
    # the device holds the mask as bfloat16 [batch, groups, seqlen_kv]
    assert (spec["dtype"], spec["shape"], spec["host_dtype"], spec["host_axes"]) == \
        ("bfloat16", [B, G, S], mask_dtype, [0, 2, 1])
    np.testing.assert_allclose(out.astype(np.float32), masked_reference(q, k, v, mask, valid),
                               rtol=1e-2, atol=1e-2)


S_VALID = 88


def test_integer_tensor_used_otherwise_is_left_to_the_dtype_check():
    """A uint8 tensor whose elements enter arithmetic is not converted (uint8 arithmetic
    wraps; bfloat16's would not): the expression is refused as before; int32 is not exact in
    bfloat16: as blocks it is refused by its dtype."""
    @T.prim_func
    def arith(M: T.Tensor([32, 32], "uint8"), B: T.Tensor([32, 32], T.float32)):
        with T.Kernel(1):
            m = T.alloc_fragment([32, 32], "uint8")
            b = T.alloc_fragment([32, 32], T.float32)
            T.copy(M, m)
            for i, j in T.Parallel(32, 32):
                b[i, j] = T.cast(m[i, j] + 250, "float32")
            T.copy(b, B)

    with pytest.raises(TTUnsupportedError, match=r"m\[i, j\]\) \+ 250` is not supported"):
        tilelang_tt.compile(arith)

    @T.prim_func
    def wide(M: T.Tensor([32, 32], "int32"), B: T.Tensor([32, 32], T.float32)):
        with T.Kernel(1):
            m = T.alloc_fragment([32, 32], "int32")
            b = T.alloc_fragment([32, 32], T.float32)
            T.copy(M, m)
            for i, j in T.Parallel(32, 32):
                b[i, j] = T.if_then_else(m[i, j] != 0, 1.0, 0.0)
            T.copy(b, B)

    with pytest.raises(TTUnsupportedError, match=r"tensor M \(int32\) is read as blocks"):
        tilelang_tt.compile(wide)


@tilelang.jit(out_idx=[1])
def columns_to_rows(M, N, block):
    """Each block moves column c of A[:, 1, :] (1-D slices along A's first dim) into B[1, c, :]
    and, doubled, into column c of C[:, 1, :]."""
    @T.prim_func
    def main(A: T.Tensor([M, 2, N], T.float32), B: T.Tensor([2, N, M], T.float32),
             C: T.Tensor([M, 2, N], T.float32)):
        with T.Kernel(N) as c:
            v = T.alloc_fragment([block], T.float32)
            for k in T.serial(M // block):
                T.copy(A[k * block:(k + 1) * block, 1, c], v)
                T.copy(v, B[1, c, k * block:(k + 1) * block])
                for i in T.Parallel(block):
                    v[i] = v[i] * 2.0
                T.copy(v, C[k * block:(k + 1) * block, 1, c])

    return main


def test_float_tensor_sliced_along_its_first_dim():
    """A and C are copied as 1-D slices along dim 0: the device holds them as [2, N, M] row
    vectors, the host transposes A in and C back out."""
    a = np.random.default_rng(3).standard_normal((64, 2, 4)).astype(np.float32)
    b, c = np.zeros((2, 4, 64), np.float32), np.zeros_like(a)
    kernel = columns_to_rows(64, 4, 32)
    kernel(a, b, c)
    assert [t["host_axes"] for t in kernel.plan["tensors"] if t["name"] != "B"] == [[1, 2, 0]] * 2
    np.testing.assert_array_equal(b[1], a[:, 1, :].T)
    np.testing.assert_array_equal(c[:, 1, :], 2 * a[:, 1, :])


@tilelang.jit(out_idx=[3, 4])
def scale_by_masks(M, N, block_M):
    """B = A * float(U), C = A * float(S): a 2-D uint8 and a 2-D int8 block converted to float
    in an expression."""
    @T.prim_func
    def main(A: T.Tensor([M, N], T.float32), U: T.Tensor([M, N], "uint8"),
             S: T.Tensor([M, N], "int8"), B: T.Tensor([M, N], T.float32),
             C: T.Tensor([M, N], T.float32)):
        with T.Kernel(M // block_M) as bx:
            a = T.alloc_fragment([block_M, N], T.float32)
            b = T.alloc_fragment([block_M, N], T.float32)
            c = T.alloc_fragment([block_M, N], T.float32)
            u = T.alloc_shared([block_M, N], "uint8")
            m = T.alloc_shared([block_M, N], "int8")
            T.copy(A[bx * block_M, 0], a)
            T.copy(U[bx * block_M, 0], u)
            T.copy(S[bx * block_M, 0], m)
            for i, j in T.Parallel(block_M, N):
                b[i, j] = a[i, j] * T.cast(u[i, j], T.float32)
            for i, j in T.Parallel(block_M, N):
                c[i, j] = a[i, j] * T.cast(m[i, j], T.float32)
            T.copy(b, B[bx * block_M, 0])
            T.copy(c, C[bx * block_M, 0])

    return main


def test_integer_blocks_converted_in_an_expression():
    """Every uint8 / int8 value reaches the expression exactly (bfloat16 holds them)."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((64, 64)).astype(np.float32)
    u = rng.integers(0, 256, (64, 64)).astype("uint8")
    m = rng.integers(-128, 128, (64, 64)).astype("int8")
    kernel = scale_by_masks(64, 64, 32)
    b, c = kernel(a, u, m)
    assert {t["name"]: t["host_dtype"] for t in kernel.plan["tensors"]
            if t["name"] in ("U", "S")} == {"U": "uint8", "S": "int8"}
    np.testing.assert_allclose(b, a * u.astype(np.float32), rtol=1e-6)
    np.testing.assert_allclose(c, a * m.astype(np.float32), rtol=1e-6)
