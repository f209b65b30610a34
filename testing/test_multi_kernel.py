"""Several ``with T.Kernel(...)`` launches in one ``T.prim_func`` and ``T.alloc_global``
tensors (TileLang's flash-decoding split + combine): each launch is a TT-Metalium program of
its own, run in program order by one host program; a launch sees what an earlier one wrote."""

import json
import subprocess

import numpy as np
import pytest

import tilelang_tt
import tilelang_tt.language as T
from helpers import BF16, as_f32, matmul_reference
from tilelang_tt.errors import TTCompileError, TTUnsupportedError

pytest.importorskip("tilelang_tt.runtime.mockbuild", reason="emulator driver not installed")


def copy_chain(M, N, block=32):
    """A -> B in one launch, B -> C in a second (B a parameter)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block)) as (bx, by):
            A_s = T.alloc_shared((block, block), "float32")
            T.copy(A[by * block, bx * block], A_s)
            T.copy(A_s, B[by * block, bx * block])
        # the second launch reads B in other blocks than the first wrote them: across launches
        # this is ordered (the first launch has finished), not a race
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block)) as (bx, by):
            B_s = T.alloc_shared((block, block), "float32")
            T.copy(B[(T.ceildiv(M, block) - 1 - by) * block, bx * block], B_s)
            T.copy(B_s, C[by * block, bx * block])
    return main


def test_two_launch_copy_chain():
    M, N = 64, 96
    art = tilelang_tt.compile(copy_chain(M, N))
    assert [launch["kernel"] for launch in art.plan["launches"]] == ["main_launch0",
                                                                      "main_launch1"]
    # a launch's tensors are the ones it touches
    assert [t["name"] for t in art.plan["launches"][0]["plan"]["tensors"]] == ["A", "B"]
    assert [t["name"] for t in art.plan["launches"][1]["plan"]["tensors"]] == ["B", "C"]
    assert [t["role"] for t in art.plan["tensors"]] == ["input", "inout", "output"]
    # TileLang's kernel API: both launches' kernels
    source = art.get_kernel_source()
    assert "// ---- launch0/reader.cpp ----" in source and "// ---- launch1/writer.cpp" in source
    assert art.get_host_source().count("distributed::EnqueueMeshWorkload(") == 2
    a = np.random.default_rng(1).standard_normal((M, N)).astype(np.float32)
    b, c = np.zeros_like(a), np.zeros_like(a)
    art(a, b, c)
    np.testing.assert_array_equal(b, a)
    flipped = a.reshape(M // 32, 32, N)[::-1].reshape(M, N)
    np.testing.assert_array_equal(c, flipped)


def test_launches_with_a_dynamic_size():
    """A T.dynamic row count: one kernel per size, the global shaped by it."""
    M, N = T.dynamic("M"), 64

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        B = T.alloc_global((M, N), "float32")
        with T.Kernel(T.ceildiv(M, 32)) as bx:
            A_s = T.alloc_shared((32, N), "float32")
            T.copy(A[bx * 32, 0], A_s)
            T.copy(A_s, B[bx * 32, 0])
        with T.Kernel(T.ceildiv(M, 32)) as bx:
            B_s = T.alloc_shared((32, N), "float32")
            T.copy(B[bx * 32, 0], B_s)
            for i, j in T.Parallel(32, N):
                B_s[i, j] = B_s[i, j] + 1.0
            T.copy(B_s, C[bx * 32, 0])

    kernel = tilelang_tt.compile(main, out_idx=[1])
    for m in (64, 80):
        a = np.random.default_rng(m).standard_normal((m, N)).astype(np.float32)
        np.testing.assert_array_equal(kernel(a), a + 1.0)


def alloc_global_1d(N, block_N, dtype, launches):
    """TileLang's test_tilelang_language_alloc.alloc_global (one launch), and the same copies
    in two launches."""
    if launches == 1:
        @T.prim_func
        def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
            C = T.alloc_global((N,), dtype)
            with T.Kernel(T.ceildiv(N, block_N), threads=block_N) as bx:
                T.copy(A[bx * block_N:(bx + 1) * block_N], C[bx * block_N:(bx + 1) * block_N])
                T.copy(C[bx * block_N:(bx + 1) * block_N], B[bx * block_N:(bx + 1) * block_N])
        return main

    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        C = T.alloc_global((N,), dtype)
        with T.Kernel(T.ceildiv(N, block_N), threads=block_N) as bx:
            T.copy(A[bx * block_N:(bx + 1) * block_N], C[bx * block_N:(bx + 1) * block_N])
        with T.Kernel(T.ceildiv(N, block_N), threads=block_N) as bx:
            T.copy(C[bx * block_N:(bx + 1) * block_N], B[bx * block_N:(bx + 1) * block_N])
    return main


def test_tilelang_alloc_global_read_back_in_one_launch_is_refused():
    """One block writing the global and reading it back: the reader kernel does not wait for
    the writer's stores (docs/SUPPORT.md), refused naming the tensor and both lines."""
    with pytest.raises(TTUnsupportedError, match=r"tensor C is written at .*:\d+ .* and read "
                       r"back at .*:\d+ .* in the same block"):
        tilelang_tt.compile(alloc_global_1d(256, 64, "float32", launches=1), out_idx=[1])


def test_tilelang_alloc_global_in_two_launches():
    kernel = tilelang_tt.compile(alloc_global_1d(256, 64, "float32", launches=2), out_idx=[1])
    a = np.random.default_rng(6).standard_normal(256).astype(np.float32)
    np.testing.assert_array_equal(kernel(a), a)


def test_l1_alias_spec_belongs_to_its_launch():
    """T.annotate_l1_alias names block buffers of the launch it is stated in; the other
    launch (whose buffers have the same names) does not get it. The launches pass their data
    through a T.alloc_global; a tensor no launch touches is an unused argument."""
    M, N = 64, 64

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), Unused: T.Tensor((M, N), "float32"),
             C: T.Tensor((M, N), "float32")):
        G = T.alloc_global((M, N), "float32")
        with T.Kernel(M // 32) as bx:
            a_s = T.alloc_shared((32, N), "float32")
            b_s = T.alloc_shared((32, N), "float32")
            T.annotate_l1_alias(T.distinct(a_s, b_s), name="first")
            T.copy(A[bx * 32, 0], a_s)
            for i, j in T.Parallel(32, N):
                b_s[i, j] = a_s[i, j] * 2.0
            T.copy(b_s, G[bx * 32, 0])
        with T.Kernel(M // 32) as bx:
            a_s = T.alloc_shared((32, N), "float32")
            b_s = T.alloc_shared((32, N), "float32")
            T.copy(G[bx * 32, 0], a_s)
            for i, j in T.Parallel(32, N):
                b_s[i, j] = a_s[i, j] + 1.0
            T.copy(b_s, C[bx * 32, 0])

    art = tilelang_tt.compile(main)
    # G is a T.alloc_global: the host allocates it, no argument holds it
    assert [t["name"] for t in art.plan["tensors"]] == ["A", "Unused", "C"]
    assert [t["role"] for t in art.plan["tensors"]] == ["input", "unused", "output"]
    assert [g["name"] for g in art.plan["globals"]] == ["G"]
    specs = {gv.name_hint: [s["name"] for s in f.attrs.get("tt.l1_alias_request", [])]
             for gv, f in art.module.functions.items() if gv.name_hint.endswith("_compute")}
    assert specs == {"main_launch0_compute": ["first"], "main_launch1_compute": []}
    a = np.random.default_rng(8).standard_normal((M, N)).astype(np.float32)
    c = np.zeros_like(a)
    art(a, None, c)
    np.testing.assert_array_equal(c, a * 2.0 + 1.0)


def split_k_gemm(M, N, K, split, bm=32, bn=32, bk=32, dtype="bfloat16"):
    """Split-K GEMM: launch 0 computes the partial product of each K slice into a
    T.alloc_global buffer, launch 1 adds the partial products."""
    k_slice = K // split

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype),
             C: T.Tensor((M, N), "float32")):
        partial = T.alloc_global((split, M, N), "float32")
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), split) as (bx, by, bz):
            A_shared = T.alloc_shared((bm, bk), dtype)
            B_shared = T.alloc_shared((bk, bn), dtype)
            C_local = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_local)
            for k in T.Pipelined(k_slice // bk, num_stages=2):
                T.copy(A[by * bm, bz * k_slice + k * bk], A_shared)
                T.copy(B[bz * k_slice + k * bk, bx * bn], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, partial[bz, by * bm, bx * bn])
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm)) as (bx, by):
            P_shared = T.alloc_shared((bm, bn), "float32")
            acc = T.alloc_fragment((bm, bn), "float32")
            T.clear(acc)
            for s in T.serial(split):
                T.copy(partial[s, by * bm, bx * bn], P_shared)
                for i, j in T.Parallel(bm, bn):
                    acc[i, j] += P_shared[i, j]
            T.copy(acc, C[by * bm, bx * bn])

    return main


def test_split_k_gemm_partials_in_alloc_global():
    # N of three blocks, four K slices of two K blocks each
    M, N, K, split = 64, 96, 256, 4
    art = tilelang_tt.compile(split_k_gemm(M, N, K, split), out_idx=[2])
    assert [g["name"] for g in art.plan["globals"]] == ["partial"]
    assert art.plan["globals"][0]["shape"] == [split, M, N]
    rng = np.random.default_rng(3)
    a = rng.standard_normal((M, K)).astype(BF16)
    b = rng.standard_normal((K, N)).astype(BF16)
    c = art(a, b)
    # each K slice within the matrix engine's bound; the float32 adds of the partials exact
    # to half an ulp each
    cfg = art.plan["launches"][0]["plan"]["kernels"]["compute"]["config"]
    ks = K // split
    ref, atol = np.zeros((M, N)), np.zeros((M, N))
    for s in range(split):
        r, t = matmul_reference(a[:, s * ks:(s + 1) * ks], b[s * ks:(s + 1) * ks],
                                cfg["math_fidelity"], cfg["fp32_dest_acc_en"], "float32")
        ref, atol = ref + r, atol + t
    atol += split * np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    err = np.abs(c.astype(np.float64) - ref)
    assert (err <= atol).all(), f"worst excess {(err - atol).max():.3g}"
    # one slice alone is far from the sum: the second launch did add the partials
    assert np.abs(c - as_f32(a)[:, :ks] @ as_f32(b)[:ks]).max() > 1.0


def flash_split_combine(bh, seq_q, seq_kv, dim, num_split, block_M=32, block_N=32):
    """Flash decoding: the split launch attends each query block to one slice of the keys,
    writing the slice's normalised output and per-row log2-sum-exp to T.alloc_global tensors;
    the combine launch weights the slices' outputs by exp2(lse_slice - lse_total)."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    dtype, accum_dtype = T.bfloat16, T.float32
    kv_slice = seq_kv // num_split

    @T.prim_func
    def main(Q: T.Tensor([bh * seq_q, dim], dtype), K: T.Tensor([bh * seq_kv, dim], dtype),
             V: T.Tensor([bh * seq_kv, dim], dtype), Output: T.Tensor([bh * seq_q, dim], dtype)):
        glse = T.alloc_global([bh * num_split * seq_q], accum_dtype)
        Output_partial = T.alloc_global([bh * num_split * seq_q, dim], accum_dtype)
        # split
        with T.Kernel(T.ceildiv(seq_q, block_M), bh, num_split) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            acc_s = T.alloc_fragment([block_M, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
            acc_o = T.alloc_fragment([block_M, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_M], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_M], accum_dtype)
            scores_scale = T.alloc_fragment([block_M], accum_dtype)
            scores_sum = T.alloc_fragment([block_M], accum_dtype)
            logsum = T.alloc_fragment([block_M], accum_dtype)

            T.copy(Q[by * seq_q + bx * block_M, 0], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))
            for k in T.Pipelined(kv_slice // block_N, num_stages=1):
                T.copy(K[by * seq_kv + bz * kv_slice + k * block_N, 0], K_shared)
                T.clear(acc_s)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_M):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[by * seq_kv + bz * kv_slice + k * block_N, 0], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            for i in T.Parallel(block_M):
                logsum[i] = T.log2(logsum[i]) + scores_max[i] * scale
            for i in T.Parallel(block_M):  # element stores of a vector into a global
                glse[(by * num_split + bz) * seq_q + bx * block_M + i] = logsum[i]
            T.copy(acc_o, Output_partial[(by * num_split + bz) * seq_q + bx * block_M, 0])
        # combine
        with T.Kernel(T.ceildiv(seq_q, block_M), bh) as (bx, by):
            po_shared = T.alloc_shared([block_M, dim], accum_dtype)
            o_accum = T.alloc_fragment([block_M, dim], accum_dtype)
            lse_split = T.alloc_fragment([block_M], accum_dtype)
            lse_max = T.alloc_fragment([block_M], accum_dtype)
            lse_logsum = T.alloc_fragment([block_M], accum_dtype)
            scale_split = T.alloc_fragment([block_M], accum_dtype)
            T.clear(o_accum)
            T.clear(lse_logsum)
            T.fill(lse_max, -T.infinity(accum_dtype))
            for k in T.serial(num_split):
                T.copy(glse[(by * num_split + k) * seq_q + bx * block_M], lse_split)
                for i in T.Parallel(block_M):
                    lse_max[i] = T.max(lse_max[i], lse_split[i])
            for k in T.serial(num_split):
                T.copy(glse[(by * num_split + k) * seq_q + bx * block_M], lse_split)
                for i in T.Parallel(block_M):
                    lse_logsum[i] += T.exp2(lse_split[i] - lse_max[i])
            for i in T.Parallel(block_M):
                lse_logsum[i] = T.log2(lse_logsum[i]) + lse_max[i]
            for k in T.serial(num_split):
                T.copy(glse[(by * num_split + k) * seq_q + bx * block_M], lse_split)
                T.copy(Output_partial[(by * num_split + k) * seq_q + bx * block_M, 0], po_shared)
                for i in T.Parallel(block_M):
                    scale_split[i] = T.exp2(lse_split[i] - lse_logsum[i])
                for i, j in T.Parallel(block_M, dim):
                    o_accum[i, j] += po_shared[i, j] * scale_split[i]
            T.copy(o_accum, Output[by * seq_q + bx * block_M, 0])

    return main


def attention_reference(q, k, v, bh, seq_q, seq_kv, dim):
    """softmax(Q K^T / sqrt(dim)) V per (batch, head), in float32."""
    qf = np.asarray(q).astype(np.float32).reshape(bh, seq_q, dim)
    kf, vf = [np.asarray(x).astype(np.float32).reshape(bh, seq_kv, dim) for x in (k, v)]
    s = qf @ kf.transpose(0, 2, 1) / np.sqrt(dim)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    return (p @ vf).reshape(bh * seq_q, dim)


def test_flash_decoding_split_and_combine():
    # two (batch, head)s of two query blocks; two key slices of two key blocks each
    bh, seq_q, seq_kv, dim, num_split = 2, 64, 128, 64, 2
    art = tilelang_tt.compile(flash_split_combine(bh, seq_q, seq_kv, dim, num_split),
                              out_idx=[3])
    assert [g["name"] for g in art.plan["globals"]] == ["glse", "Output_partial"]
    rng = np.random.default_rng(4)
    q = rng.standard_normal((bh * seq_q, dim)).astype(BF16)
    k = rng.standard_normal((bh * seq_kv, dim)).astype(BF16)
    v = rng.standard_normal((bh * seq_kv, dim)).astype(BF16)
    out = as_f32(art(q, k, v))
    ref = attention_reference(q, k, v, bh, seq_q, seq_kv, dim)
    np.testing.assert_allclose(out, ref, rtol=1e-2, atol=1e-2)
    # attention over the first key slice alone is far off: the combine weighed every slice
    ks = seq_kv // num_split
    first = attention_reference(q, k.reshape(bh, seq_kv, dim)[:, :ks].reshape(-1, dim),
                                v.reshape(bh, seq_kv, dim)[:, :ks].reshape(-1, dim),
                                bh, seq_q, ks, dim)
    assert np.abs(first - ref).max() > 0.1


# ---- refusals ----------------------------------------------------------------------------------

def _line_of(func, text):
    """The source line of ``text`` in this file (for messages naming it)."""
    import inspect

    lines, start = inspect.getsourcelines(func)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_alloc_global_inside_a_launch_is_refused():
    def build():
        @T.prim_func
        def main(A: T.Tensor((32, 32), "float32"), C: T.Tensor((32, 32), "float32")):
            with T.Kernel(1) as bx:
                G = T.alloc_global((32, 32), "float32")  # inside the launch
                A_s = T.alloc_shared((32, 32), "float32")
                T.copy(A[0, bx * 32], A_s)
                T.copy(A_s, G[0, bx * 32])
                T.copy(G[0, bx * 32], C[0, bx * 32])
        return main

    with pytest.raises(TTUnsupportedError) as err:
        tilelang_tt.compile(build())
    assert "T.alloc_global(G) inside a T.Kernel" in str(err.value)
    assert f":{_line_of(build, '# inside the launch')}" in str(err.value)


def test_statement_between_launches_is_refused():
    def build():
        @T.prim_func
        def main(A: T.Tensor((32, 32), "float32"), B: T.Tensor((32, 32), "float32"),
                 C: T.Tensor((32, 32), "float32")):
            with T.Kernel(1) as bx:
                A_s = T.alloc_shared((32, 32), "float32")
                T.copy(A[0, bx * 32], A_s)
                T.copy(A_s, B[0, bx * 32])
            T.copy(B, C)  # between the launches
            with T.Kernel(1) as bx:
                B_s = T.alloc_shared((32, 32), "float32")
                T.copy(B[0, bx * 32], B_s)
                T.copy(B_s, C[0, bx * 32])
        return main

    with pytest.raises(TTUnsupportedError) as err:
        tilelang_tt.compile(build())
    assert "a statement outside its `with T.Kernel(...)` launches" in str(err.value)
    assert f":{_line_of(build, '# between the launches')}" in str(err.value)


def test_tensor_with_two_device_layouts_is_refused():
    """A 48-row global the first launch covers with 32-row blocks (stored padded to 64 rows)
    and the second with one 96-row block (padded to 96): one buffer cannot be both."""
    @T.prim_func
    def main(A: T.Tensor((48, 32), "float32"), C: T.Tensor((48, 32), "float32")):
        G = T.alloc_global((48, 32), "float32")
        with T.Kernel(T.ceildiv(48, 32)) as bx:
            A_s = T.alloc_shared((32, 32), "float32")
            T.copy(A[bx * 32, 0], A_s)
            T.copy(A_s, G[bx * 32, 0])
        with T.Kernel(1) as bx:
            G_s = T.alloc_shared((96, 32), "float32")
            T.copy(G[bx * 96, 0], G_s)
            T.copy(G_s, C[bx * 96, 0])

    with pytest.raises(TTUnsupportedError, match="tensor G is used by launches main_launch0 "
                       "and main_launch1 with different device layouts"):
        tilelang_tt.compile(main)


def test_race_inside_one_launch_still_refused():
    """The race check runs per launch: blocks of one launch writing the same tile race."""
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32"),
             C: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, 2) as (bx, by):
            A_s = T.alloc_shared((32, 32), "float32")
            T.copy(A[by * 32, bx * 32], A_s)
            T.copy(A_s, B[by * 32, 0])
        with T.Kernel(2, 2) as (bx, by):
            B_s = T.alloc_shared((32, 32), "float32")
            T.copy(B[by * 32, bx * 32], B_s)
            T.copy(B_s, C[by * 32, bx * 32])

    with pytest.raises(TTCompileError, match="blocks race on tensor B"):
        tilelang_tt.compile(main)


def batch_head_copy(batch, heads, head_index, layout="bhsd"):
    """TileLang's flash-decoding indexing: batch and head of one block index,
    ``bid = by // heads``, ``hid = by % heads`` (``head_index`` maps ``by`` to the head), on
    BHSD or BSHD tensors (the head dim next to the batch's, or apart)."""
    shape = (batch, heads, 32, 32) if layout == "bhsd" else (batch, 32, heads, 32)

    @T.prim_func
    def main(A: T.Tensor(shape, "float32"), C: T.Tensor(shape, "float32")):
        with T.Kernel(batch * heads) as by:
            bid = by // heads
            hid = head_index(by)
            A_s = T.alloc_shared((32, 32), "float32")
            if layout == "bhsd":
                T.copy(A[bid, hid, 0:32, 0:32], A_s)
                T.copy(A_s, C[bid, hid, 0:32, 0:32])
            else:
                T.copy(A[bid, 0:32, hid, 0:32], A_s)
                T.copy(A_s, C[bid, 0:32, hid, 0:32])

    return main, shape


@pytest.mark.parametrize("layout", ["bhsd", "bshd"])
def test_batch_and_head_of_one_block_index_do_not_race(layout):
    """(by // H, by % H) is by: blocks write their own slices (a grid too large to compare
    block by block)."""
    batch, heads = 4, 8
    func, shape = batch_head_copy(batch, heads, lambda by: by % heads, layout)
    art = tilelang_tt.compile(func, out_idx=[1])
    a = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    np.testing.assert_array_equal(art(a), a)


@pytest.mark.parametrize("layout", ["bhsd", "bshd"])
def test_batch_and_head_that_repeat_still_race(layout):
    with pytest.raises(TTCompileError, match="blocks race on tensor C"):
        tilelang_tt.compile(batch_head_copy(4, 8, lambda by: by % 4, layout)[0], out_idx=[1])


def test_lower_of_several_launches_points_to_lower_launches(tmp_path):
    func = copy_chain(64, 64)
    with pytest.raises(TTUnsupportedError, match="lower_launches"):
        tilelang_tt.lower(func)
    mods = tilelang_tt.lower_launches(func, dump_ir=tmp_path)
    assert [sorted(gv.name_hint for gv in m.functions) for m in mods] == [
        [f"main_launch{i}_{kind}" for kind in ("compute", "reader", "writer")] for i in (0, 1)]
    assert (tmp_path / "main_launch0").is_dir() and (tmp_path / "main_launch1").is_dir()


# ---- the real SDK compiles a multi-launch project ------------------------------------------------

from test_sdk_host_twin import sdk, sdkcheck  # noqa: E402,F401  (the sdkcheck fixture)
from tilelang_tt.codegen.cmake import mock_dir  # noqa: E402


def test_sdkcheck_multi_launch_project(sdk, tmp_path, monkeypatch):  # noqa: F811
    """The saved project (TILELANG_TT_SAVE_PROJECTS) of a split-K GEMM: main.cpp compiles and
    links against TT-Metalium 0.81.1, every launch's kernels compile without a warning."""
    save = tmp_path / "saved"
    monkeypatch.setenv("TILELANG_TT_SAVE_PROJECTS", str(save))
    art = tilelang_tt.compile(split_k_gemm(64, 64, 128, 2), out_idx=[2])
    project = save / f"main-{art.digest()}"
    plan = json.loads((project / "tt.plan.json").read_text())
    launch_dirs = [project / launch["dir"] for launch in plan["launches"]]
    assert all((d / "reader.cpp").exists() and (d / "tt.plan.json").exists()
               for d in launch_dirs)
    # each launch is linked beside the project: checking the directory checks its kernels
    links = sorted(p.name for p in save.iterdir() if p.is_symlink())
    assert links == [f"{project.name}.launch0", f"{project.name}.launch1"]
    proc = sdkcheck("--host-include", mock_dir() / "include", save)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert " 0 error(s)" in proc.stdout and " 0 warning(s)" in proc.stdout, proc.stdout
    # the host program (compiled and linked) and both launches' kernels were checked
    text = proc.stdout
    assert "3 project(s)" in text and "host@link" in text, text
    for name in links:
        assert f"{name}: ok" in text, text
    assert text.count("compute@TRISC1/MATH") == 2, text
