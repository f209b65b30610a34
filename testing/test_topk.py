"""TileLang's top-k (examples/topk): an int32 fragment of index values, and vectors stored into a
tensor column per iteration of a serial loop (docs/SUPPORT.md "Index values as data").

A0.1.3.1 holds the int32 fragments of index values as float32 (the host converts the int32
output back); A0.1.3.2 gathers the columns ``topk_gates[bx * blk_m + i, k] = max_val[i]`` in a
block written once after the loop.  The kernel runs on the emulator against numpy's top-k.
"""

import numpy as np
import pytest

import tilelang_tt
import tilelang_tt.language as T
from helpers import kernel_from_source
from tilelang_tt.errors import TTUnsupportedError


def topk_kernel(M, N, topk, blk_m, idx_dtype="int32"):
    @T.prim_func
    def main(logits: T.Tensor((M, N), "float32"), topk_gates: T.Tensor((M, topk), "float32"),
             topk_indices: T.Tensor((M, topk), idx_dtype)):
        with T.Kernel(T.ceildiv(M, blk_m), threads=128) as bx:
            logits_frag = T.alloc_fragment([blk_m, N], "float32")
            max_val = T.alloc_fragment([blk_m], "float32")
            expand_max_idx = T.alloc_fragment([blk_m, N], idx_dtype)
            max_idx = T.alloc_fragment([blk_m], idx_dtype)
            T.copy(logits[bx * blk_m, 0], logits_frag)
            for k in T.serial(topk):
                T.fill(expand_max_idx, -1)
                T.reduce_max(logits_frag, max_val, dim=1, clear=True)
                for i, j in T.Parallel(blk_m, N):
                    expand_max_idx[i, j] = T.if_then_else(max_val[i] == logits_frag[i, j], j,
                                                          expand_max_idx[i, j])
                T.reduce_max(expand_max_idx, max_idx, dim=1, clear=True)
                for i, j in T.Parallel(blk_m, N):
                    logits_frag[i, j] = T.if_then_else(max_val[i] == logits_frag[i, j], -10000.0,
                                                       logits_frag[i, j])
                for i in T.Parallel(blk_m):
                    topk_gates[bx * blk_m + i, k] = max_val[i]
                    topk_indices[bx * blk_m + i, k] = max_idx[i]

    return main


def test_topk_matches_numpy_with_int32_indices():
    """64 rows of 64 random float32 logits, top 5, blocks of 32 rows: gates and int32 indices
    equal numpy's exactly.  The float32 T.reduce_max runs on the vector engine
    (``sfpu_reduce``, exact: the matrix engine would read the logits as TF32 and match
    neighbours rounding to the same TF32 value) and ``max_val[i] == logits_frag[i, j]``
    compares float32 values unpacked straight to DST (``unary_bcast`` of an
    ``UnpackToDestFp32`` CB); each output is written once per block, after the loop (the
    writer's one write of its block), and the indices leave the device as float32 that the
    host converts."""
    M, N, K = 64, 64, 5
    art = tilelang_tt.compile(topk_kernel(M, N, K, 32), out_idx=[1, 2])
    rng = np.random.default_rng(0)
    x = rng.random((M, N), dtype=np.float32)
    gates, idx = art(x)
    want = np.argsort(-x, axis=1, kind="stable")[:, :K]
    assert idx.dtype == np.int32
    np.testing.assert_array_equal(idx, want)
    np.testing.assert_array_equal(gates, np.take_along_axis(x, want, axis=1))
    compute = art.sources["compute.cpp"]
    assert "sfpu_reduce<PoolType::MAX, DataFormat::Float32, ReduceDim::REDUCE_ROW>" in compute
    assert "reduce_tile<PoolType::MAX" not in compute
    plan = art.plan
    t = {e["name"]: e for e in plan["tensors"]}["topk_indices"]
    assert (t["dtype"], t["host_dtype"], t["host_convert"]) == ("float32", "int32", True)
    assert art.sources["reader.cpp"].count("-> uint32_t") >= 1  # the index values: the reader
    # one page write per output and block (64 x 5 is one tile of rows per block), after the loop
    assert art.sources["writer.cpp"].count("noc_async_write_page") == 2


def test_index_fragment_refusals(tmp_path):
    """An int32 fragment of index values that float32 would not hold exactly, or that is used
    otherwise than selected, reduced by max / min, copied and stored, is refused naming the
    buffer and the statement."""
    src = '''
import tilelang_tt.language as T

@T.prim_func
def k(A: T.Tensor((32, {n}), "float32"), B: T.Tensor((32,), "int32")):
    with T.Kernel(1) as bx:
        a = T.alloc_fragment((32, {n}), "float32")
        s = T.alloc_fragment((32, {n}), "int32")
        r = T.alloc_fragment((32,), "int32")
        T.copy(A[0, 0], a)
        for i, j in T.Parallel(32, {n}):
            s[i, j] = {value}
        T.{reduce}(s, r, dim=1)
        T.copy(r, B[0])
'''
    cases = [
        (64, "T.if_then_else(a[i, j] > 0, j, -1)", "reduce_sum",
         r"kernel_\w+\.py:\d+ `T.reduce_sum\(s, r, dim=1\)`: s \(int32\) holds index "
         r"values, .* but T.sum of it"),
        (64, "T.if_then_else(a[i, j] > 0, j, -16777216)", "reduce_max",
         r"\w+ \(int32\) holds index values, .* its values reach 16777216 in magnitude and it "
         r"is held as float32 \(integers exact below 2\^24\)"),
        (64, "T.if_then_else(a[i, j] > 0, j, -1) + 1", "reduce_max",
         r"kernel_\w+\.py:\d+ `s\[i, j\] = .*`: s \(int32\) holds index values, .* is not "
         r"an integer constant, an index value or a choice between them"),
    ]
    for n, value, reduce, error in cases:
        func = kernel_from_source(tmp_path, src.format(n=n, value=value, reduce=reduce))
        with pytest.raises(TTUnsupportedError, match=error):
            tilelang_tt.lower(func, stop_after="A0.1.3.1")


def test_index_choice_into_int32_tensor_and_partial_columns(tmp_path):
    """``s[i, j] = T.if_then_else(A[...] > 0, j, -1)`` into an int32 fragment copied to an int32
    tensor runs (before: refused, "no integer arithmetic"); a column store whose loop covers
    only some of the tensor's columns is left, and C1 refuses it as before (a whole-block write
    would overwrite the other columns)."""
    src = '''
import tilelang_tt.language as T

@T.prim_func
def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "int32")):
    with T.Kernel(2, 2) as (bx, by):
        s = T.alloc_fragment((32, 32), "int32")
        for i, j in T.Parallel(32, 32):
            s[i, j] = T.if_then_else(A[by * 32 + i, bx * 32 + j] > 0, bx * 32 + j, -1)
        T.copy(s, B[by * 32, bx * 32])
'''
    art = tilelang_tt.compile(kernel_from_source(tmp_path, src), out_idx=-1)
    a = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    b = art(a)
    assert b.dtype == np.int32
    np.testing.assert_array_equal(b, np.where(a > 0, np.arange(64)[None, :], -1))

    partial = '''
import tilelang_tt.language as T

@T.prim_func
def k(A: T.Tensor((32, 64), "float32"), G: T.Tensor((32, 6), "float32")):
    with T.Kernel(1) as bx:
        a = T.alloc_fragment((32, 64), "float32")
        m = T.alloc_fragment((32,), "float32")
        T.copy(A[0, 0], a)
        for k in T.serial(4):
            T.reduce_max(a, m, dim=1)
            for i in T.Parallel(32):
                G[i, k] = m[i]
'''
    with pytest.raises(TTUnsupportedError, match=r"copy between G and the 1-D buffer m"):
        tilelang_tt.compile(kernel_from_source(tmp_path, partial), out_idx=-1)


def test_topk_stages_from_parsed_ir():
    """A0.1.3.1 and A0.1.3.2 run alone on their parsed input give the pipeline's result: no
    int32 buffer is left (the indices tensor float32, converted by the host), and the column
    stores are selects into `<T>_cols` blocks copied out after the loop."""
    import tvm
    import tvm_ffi
    from tvm import tirx

    from tilelang_tt import attrs
    from tilelang_tt.passes import pipeline
    from tilelang_tt.passes.common import buffer_dtype, collect, run_pass
    from tilelang_tt.passes.frontend.index_fragments import (column_store_loops,
                                                              index_value_fragments)

    mod = pipeline.prepare(topk_kernel(64, 64, 5, 32), "tenstorrent")
    tags = [t for t, _ in pipeline.STAGES]
    for tag, p in pipeline.STAGES[:tags.index("A0.1.3.1")]:
        mod = run_pass(p, mod)
    for tag in ("A0.1.3.1", "A0.1.3.2"):
        p = dict(pipeline.STAGES)[tag]
        out_parsed = run_pass(p, tvm.script.from_source(mod.script()))
        mod = run_pass(p, mod)
        assert tvm_ffi.structural_equal(out_parsed, mod), tag
    (func,) = mod.functions.values()
    assert not index_value_fragments(func) and not column_store_loops(func)
    allocs = {str(a.buffer.name): buffer_dtype(a.buffer) for a in collect(func.body,
                                                                          tirx.AllocBuffer)}
    assert allocs["expand_max_idx"] == allocs["max_idx"] == "float32"
    assert allocs["topk_gates_cols"] == allocs["topk_indices_cols"] == "float32"
    assert [buffer_dtype(p) for p in func.params] == ["float32"] * 3
    assert [dict(e) for e in func.attrs[attrs.HOST_FORMAT]][0]["convert"]


def _total_order_key(a):
    """float32 bits as sign-magnitude integers: SFPSWAP's order (-0 < +0)."""
    u = a.view(np.uint32).astype(np.int64)
    return np.where(u >= 2 ** 31, 2 ** 31 - 1 - u, u)


def test_float32_max_min_reductions_exact_bit_for_bit(tmp_path):
    """Softmax-style float32 row max (dim=1), column max (dim=0) and row min on the vector
    engine equal numpy bit for bit: values that differ below TF32 precision, infinities and a
    row of zeros whose max is +0 over -0 (SFPSWAP's order); a block of 8 column tiles (more
    than a 32-bit DST's 4 half-sync slots) is reduced in parts (4, 3 and 1 tiles) folded by binary_max_tile /
    binary_min_tile (SFPSWAP too); T.reduce_min is the vector engine's min (no negations)."""
    src = '''
import tilelang_tt.language as T

@T.prim_func
def k(A: T.Tensor((64, {n}), "float32"), R: T.Tensor((64,), "float32"),
      C: T.Tensor(({n},), "float32"), L: T.Tensor((64,), "float32")):
    with T.Kernel(1) as bx:
        a = T.alloc_fragment((64, {n}), "float32")
        r = T.alloc_fragment((64,), "float32")
        c = T.alloc_fragment(({n},), "float32")
        l = T.alloc_fragment((64,), "float32")
        T.copy(A[0, 0], a)
        T.reduce_max(a, r, dim=1)
        T.reduce_max(a, c, dim=0)
        T.reduce_min(a, l, dim=1)
        T.copy(r, R[0])
        T.copy(c, C[0])
        T.copy(l, L[0])
'''
    rng = np.random.default_rng(3)
    for n in (64, 256):
        art = tilelang_tt.compile(kernel_from_source(tmp_path, src.format(n=n)), out_idx=[1, 2, 3])
        # 1 + k * 2^-20: equal in TF32 (10 mantissa bits), distinct in float32
        x = (1 + rng.integers(0, 1000, (64, n)) * 2.0 ** -20).astype(np.float32)
        x *= rng.choice(np.array([1, -1, 4], np.float32), (64, n))
        x[3, 5], x[7, 9], x[8, :] = np.inf, -np.inf, -np.inf
        x[10, :] = -0.0  # SFPSWAP: +0 above -0 (also in binary_max_tile's folds, n = 256)
        x[10, 17 if n == 64 else 250] = 0.0
        r, c, l = art(x)
        key = _total_order_key(x)
        want_r = np.take_along_axis(x, key.argmax(axis=1)[:, None], axis=1)[:, 0]
        want_c = np.take_along_axis(x, key.argmax(axis=0)[None, :], axis=0)[0]
        want_l = np.take_along_axis(x, key.argmin(axis=1)[:, None], axis=1)[:, 0]
        for got, want in ((r, want_r), (c, want_c), (l, want_l)):
            np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
        assert "sfpu_reduce<PoolType::MAX, DataFormat::Float32, ReduceDim::REDUCE_COL>" in \
            art.sources["compute.cpp"]
        compute = art.sources["compute.cpp"]
        assert "sfpu_reduce<PoolType::MIN, DataFormat::Float32, ReduceDim::REDUCE_ROW>" in compute
        assert "negative_tile" not in compute
        if n == 256:
            assert "binary_max_tile(0, 1, 0)" in compute and "binary_min_tile(0, 1, 0)" in compute


def test_wide_int32_reduction_is_a_clear_error(tmp_path):
    """An int32 T.reduce_max of rows too wide for L1 (A0.1.4 streams them in chunks, the
    destination filled with int32's smallest value first) no longer crashes converting -inf
    to an integer: compiling stops at the usual refusal of int32 blocks, naming the tensor."""
    src = '''
import tilelang_tt.language as T

@T.prim_func
def k(A: T.Tensor((32, 131072), "int32"), B: T.Tensor((32,), "int32")):
    with T.Kernel(1) as bx:
        a = T.alloc_fragment((32, 131072), "int32")
        r = T.alloc_fragment((32,), "int32")
        T.copy(A[0, 0], a)
        T.reduce_max(a, r, dim=1)
        T.copy(r, B[0])
'''
    func = kernel_from_source(tmp_path, src)
    tilelang_tt.lower(func, stop_after="A0.1.4")
    with pytest.raises(TTUnsupportedError, match=r"tensor A \(int32\) is read as blocks"):
        tilelang_tt.compile(func, out_idx=-1)


def test_index_vector_into_a_1d_int32_tensor(tmp_path):
    """An int32 vector of index values (a row max of ``4000 + j`` choices, above TF32's exact
    integers: exact, the float32 reduction runs on the vector engine) copied into a 1-D int32
    tensor and broadcast into a block: the device's float32 row vector (row 0 of a tile band)
    is converted back by the host (before: "the program wrote 1024 values, expected 32", and
    values above 2048 were refused)."""
    src = '''
import tilelang_tt.language as T

@T.prim_func
def k(A: T.Tensor((32, 64), "float32"), B: T.Tensor((32,), "int32"),
      C: T.Tensor((32, 64), "int32")):
    with T.Kernel(1) as bx:
        s = T.alloc_fragment((32, 64), "int32")
        r = T.alloc_fragment((32,), "int32")
        c = T.alloc_fragment((32, 64), "int32")
        for i, j in T.Parallel(32, 64):
            s[i, j] = T.if_then_else(A[i, j] > 0, 4000 + j, -1)
        T.reduce_max(s, r, dim=1)
        T.copy(r, B[0])
        for i, j in T.Parallel(32, 64):
            c[i, j] = T.if_then_else(A[i, j] < 0, r[i], -1)
        T.copy(c, C[0, 0])
'''
    art = tilelang_tt.compile(kernel_from_source(tmp_path, src), out_idx=[1, 2])
    a = np.random.default_rng(5).standard_normal((32, 64)).astype(np.float32)
    a[3] = -1.0  # no positive element: -1
    b, c = art(a)
    want = np.where(a > 0, 4000 + np.arange(64)[None, :], -1).max(axis=1)
    assert b.dtype == np.int32 and c.dtype == np.int32
    np.testing.assert_array_equal(b, want)
    # the vector broadcast into a block (unary_bcast of a CB unpacked straight to DST): exact
    np.testing.assert_array_equal(c, np.where(a < 0, want[:, None], -1))
