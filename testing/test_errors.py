"""Unsupported or malformed kernels get a TTCompileError naming the construct and source line."""

import pytest
import tvm

import kernels
import tilelang_tt
import tilelang_tt.language as T
from tilelang_tt import TTCompileError, TTLayoutError, TTResourceError, TTUnsupportedError

HERE = __file__


def compile_error(func, exc=TTCompileError):
    with pytest.raises(exc) as info:
        tilelang_tt.compile(func)
    return str(info.value)


def test_unsupported_parallel_body_names_line():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "bfloat16"), B: T.Tensor((64, 64), "bfloat16")):
        with T.Kernel(2, 2) as (bx, by):
            for i, j in T.Parallel(32, 32):
                B[by * 32 + i, bx * 32 + j] = T.hypot(A[by * 32 + i, bx * 32 + j], 1.0)

    msg = compile_error(k, TTUnsupportedError)
    assert "T.Parallel body" in msg and "not supported yet" in msg
    assert f"{HERE}:" in msg and "T.hypot" in msg and "T.sigmoid" in msg  # and what is supported


def test_strided_parallel_access():
    @T.prim_func
    def k(A: T.Tensor((64, 128), "bfloat16"), B: T.Tensor((64, 64), "bfloat16")):
        with T.Kernel(2, 2) as (bx, by):
            for i, j in T.Parallel(32, 32):
                B[by * 32 + i, bx * 32 + j] = A[by * 32 + i, bx * 64 + j * 2]

    assert "strided or diagonal" in compile_error(k, TTUnsupportedError)


def test_block_not_multiple_of_32():
    # the tensor's 48 columns are padded to 64 (testing/test_pad_shapes.py); blocks of 24
    # columns are not whole tiles, and 24 does not divide 32 (blocks of 16 columns run as
    # blocks of 32: testing/test_col_blocks.py); held as 32-column tiles (A0.5.1) the second
    # block would start at column 24, inside a tile
    assert "not a multiple of 32" in compile_error(kernels.elementwise_add(64, 48, 32, 24),
                                                   TTLayoutError)
    msg = compile_error(kernels.elementwise_add(64, 48, 32, 24), TTLayoutError)
    assert "multiples of 32" in msg and "A_tile has shape [32, 24]" in msg
    assert "the tensors need not be" in msg


def test_partial_blocks_are_padded():
    # 96 rows in blocks of 64: the tensors are stored padded to 128 rows (A0.3.1)
    art = tilelang_tt.compile(kernels.matmul(96, 128, 64, 64, 64, 32))
    shapes = {t["name"]: (t["shape"], t["padded_shape"]) for t in art.plan["tensors"]}
    assert shapes["A"] == ([96, 64], [128, 64]) and shapes["C"] == ([96, 128], [128, 128])


def test_misaligned_copy():
    # rows off a tile boundary are gathered row by row (testing/test_unaligned_rows.py);
    # columns must stay tile-aligned
    @T.prim_func
    def k(A: T.Tensor((64, 64), "bfloat16"), B: T.Tensor((64, 64), "bfloat16")):
        with T.Kernel(1, 1) as (bx, by):
            s = T.alloc_shared((32, 32), "bfloat16")
            T.copy(A[0, 16], s)
            T.copy(s, B[0, 0])

    msg = compile_error(k, TTLayoutError)
    assert "not a multiple of 32" in msg and "A" in msg and "T.copy(A[0, 16], s)" in msg
    assert "column" in msg


def test_unsupported_dtype_names_the_buffer_and_the_formats():
    msg = compile_error(kernels.elementwise_add(64, 64, dtype="float64"), TTUnsupportedError)
    assert "buffer A has dtype float64" in msg
    assert "bfloat16, float16, float32" in msg


def test_reduction_not_supported_yet():
    @T.prim_func
    def k(A: T.Tensor((32, 32), "float32"), B: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, 1) as (bx, by):
            s = T.alloc_shared((32, 32), "float32")
            r = T.alloc_shared((32, 32), "float32")
            T.copy(A[0, 0], s)
            T.reduce_sum(s, r, dim=1)
            T.copy(r, B[0, 0])

    msg = compile_error(k, TTUnsupportedError)
    assert "T.reduce_sum" in msg and "T.reduce_sum(s, r, dim=1)" in msg


def test_gemm_into_shared_rejected():
    @T.prim_func
    def k(A: T.Tensor((32, 32), "bfloat16"), C: T.Tensor((32, 32), "bfloat16")):
        with T.Kernel(1, 1) as (bx, by):
            a = T.alloc_shared((32, 32), "bfloat16")
            c = T.alloc_shared((32, 32), "bfloat16")
            T.copy(A[0, 0], a)
            T.gemm(a, a, c)
            T.copy(c, C[0, 0])

    assert "T.alloc_fragment" in compile_error(k, TTUnsupportedError)


def test_fill_nonzero_accumulator_rejected():
    @T.prim_func
    def k(A: T.Tensor((32, 32), "bfloat16"), C: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, 1) as (bx, by):
            a = T.alloc_shared((32, 32), "bfloat16")
            c = T.alloc_fragment((32, 32), "float32")
            T.fill(c, 1.5)
            T.copy(A[0, 0], a)
            T.gemm(a, a, c)
            T.copy(c, C[0, 0])

    msg = compile_error(k, TTUnsupportedError)
    assert "T.fill(c, " in msg and "only be cleared" in msg


def test_accumulator_without_clear():
    @T.prim_func
    def k(A: T.Tensor((32, 32), "bfloat16"), C: T.Tensor((32, 32), "bfloat16")):
        with T.Kernel(1, 1) as (bx, by):
            a = T.alloc_shared((32, 32), "bfloat16")
            c = T.alloc_fragment((32, 32), "float32")
            T.copy(A[0, 0], a)
            T.gemm(a, a, c)
            T.copy(c, C[0, 0])

    assert "cleared once (T.clear)" in compile_error(k, TTUnsupportedError)


def test_global_to_global_copy_of_a_misaligned_region():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "bfloat16"), B: T.Tensor((64, 64), "bfloat16")):
        with T.Kernel(1, 1) as (bx, by):
            T.copy(A[0:32, 16:48], B[0:32, 0:32])

    msg = compile_error(k, TTLayoutError)
    assert "A" in msg and "not a multiple of 32" in msg


def test_l1_overflow_names_buffers():
    msg = compile_error(kernels.matmul(1024, 1024, 1024, 512, 512, 64, num_stages=4),
                        TTResourceError)
    assert "A_shared" in msg and "num_stages" in msg


def test_element_access_outside_parallel():
    @T.prim_func
    def k(A: T.Tensor((32, 32), "bfloat16"), B: T.Tensor((32, 32), "bfloat16")):
        with T.Kernel(1, 1) as (bx, by):
            s = T.alloc_shared((32, 32), "bfloat16")
            T.copy(A[0, 0], s)
            T.copy(s, B[0, 0])
            B[0, 0] = A[0, 0]  # next to tile work: no scalar program

    assert "outside an elementwise T.Parallel" in compile_error(k, TTUnsupportedError)


def test_non_kernel_input():
    with pytest.raises(TTCompileError, match="expected a T.prim_func"):
        tilelang_tt.compile(lambda: None)


def test_no_tvm_internals_in_messages():
    """Errors are ours, not RuntimeErrors re-raised by TVM's pass infrastructure."""
    try:
        tilelang_tt.compile(kernels.matmul(96, 128, 64, 64, 64, 32))
    except TTCompileError as err:
        assert type(err) is TTLayoutError
        assert err.__cause__ is None


def test_scalar_parameter_rejected():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "bfloat16"), B: T.Tensor((64, 64), "bfloat16"), n: T.int32):
        with T.Kernel(2, 2) as (bx, by):
            s = T.alloc_shared((32, 32), "bfloat16")
            T.copy(A[by * 32, bx * 32], s)
            T.copy(s, B[by * 32, bx * 32])

    # tilelang_tt.compile specialises scalar parameters per call (test_dynamic_sizes.py); the
    # pipeline itself takes tensor parameters only
    with pytest.raises(TTUnsupportedError) as info:
        tilelang_tt.lower(k)
    assert "scalar kernel parameter `n`" in str(info.value)


def test_clear_accum_must_be_constant():
    with pytest.raises(TTCompileError) as info:
        @T.prim_func
        def k(A: T.Tensor((64, 64), "bfloat16"), B: T.Tensor((64, 64), "bfloat16"),
              C: T.Tensor((64, 64), "bfloat16")):
            with T.Kernel(1, 1) as (bx, by):
                A_s = T.alloc_shared((64, 32), "bfloat16")
                B_s = T.alloc_shared((32, 64), "bfloat16")
                C_l = T.alloc_fragment((64, 64), "float32")
                for k in T.serial(2):
                    T.copy(A[0, k * 32], A_s)
                    T.copy(B[k * 32, 0], B_s)
                    T.gemm(A_s, B_s, C_l, clear_accum=(k == 0))
                T.copy(C_l, C[0, 0])
    msg = str(info.value)
    assert "clear_accum" in msg and "T.clear" in msg and f"{HERE}:" in msg


def test_symbolic_shapes_rejected():
    m = T.symbolic("m")

    @T.prim_func
    def k(A: T.Tensor((m, 64), "float32"), C: T.Tensor((m, 64), "float32")):
        with T.Kernel(2, T.ceildiv(m, 32)) as (bx, by):
            for i, j in T.Parallel(32, 32):
                C[by * 32 + i, bx * 32 + j] = A[by * 32 + i, bx * 32 + j]

    # tilelang_tt.compile specialises per call (testing/test_dynamic_sizes.py); the pipeline
    # itself takes constant shapes only
    with pytest.raises(TTCompileError) as info:
        tilelang_tt.lower(k)
    msg = str(info.value)
    assert "symbolic shape" in msg and "A" in msg


def test_loop_carried_read_before_written_rejected():
    @T.prim_func
    def k(X: T.Tensor((64, 64), "float32"), Y: T.Tensor((64, 64), "float32")):
        with T.Kernel(1) as _bx:
            X_s = T.alloc_shared((64, 32), "float32")
            S = T.alloc_fragment((64, 32), "float32")
            for ko in T.serial(2):
                T.copy(X[0, ko * 32], X_s)
                for i, j in T.Parallel(64, 32):
                    S[i, j] = S[i, j] + X_s[i, j]
            T.copy(S, Y[0, 0])

    msg = compile_error(k)
    assert "S is read in the loop" in msg and "before anything is written to it" in msg
    assert f"{HERE}:" in msg


def test_vector_copied_to_a_2d_tensor_rejected():
    @T.prim_func
    def k(X: T.Tensor((64, 64), "float32"), C: T.Tensor((64, 32), "float32")):
        with T.Kernel(2) as bx:
            X_s = T.alloc_shared((32, 64), "float32")
            R = T.alloc_fragment((32,), "float32")
            T.copy(X[bx * 32, 0], X_s)
            T.reduce_sum(X_s, R, dim=1)
            T.copy(R, C[bx * 32, 0])

    msg = compile_error(k, TTUnsupportedError)
    assert "1-D buffer R" in msg and "broadcast it into a 2-D buffer" in msg and f"{HERE}:" in msg


def test_tilelang_operation_not_supported_yet_is_named():
    with pytest.raises(TTUnsupportedError) as info:
        @T.prim_func
        def k(X: T.Tensor((64, 64), "float32")):
            with T.Kernel(2) as bx:
                X_s = T.alloc_shared((32, 64), "float32")
                R = T.alloc_fragment((32,), "float32")
                T.copy(X[bx * 32, 0], X_s)
                T.reduce_bitand(X_s, R, dim=1)
    msg = str(info.value)
    assert "T.reduce_bitand: bitwise reductions need int32 blocks" in msg and f"{HERE}:" in msg
    assert "no bitwise reduction across a tile's rows or columns" in msg


def test_scalar_assigned_in_a_branch_and_read_after_it_runs():
    """A scalar assigned in a branch and read after it (A0.1 used to leave the read after the
    branch unbound; then refused it) is integer state every kernel keeps its own copy of
    (docs/SUPPORT.md "Scalars carried across loops"): the branch on it runs (only block
    (1, 1) has ``x > 1``)."""
    import numpy as np

    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            x = T.alloc_local((1,), "int32")
            S = T.alloc_shared((32, 32), "float32")
            x[0] = 0
            if by > 0:
                x[0] = bx + 1
            if x[0] > 1:
                T.copy(A[by * 32, bx * 32], S)
                T.copy(S, C[by * 32, bx * 32])

    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    c = np.zeros_like(a)
    tilelang_tt.compile(k)(a, c)
    ref = np.zeros_like(a)
    ref[32:, 32:] = a[32:, 32:]
    np.testing.assert_array_equal(c, ref)


def test_value_written_in_a_loop_and_read_after_it_names_the_user_buffer():
    @T.prim_func
    def branch(X: T.Tensor((64, 64), "float32"), Y: T.Tensor((64, 64), "float32"),
               Z: T.Tensor((64, 64), "float32")):
        with T.Kernel(2) as bx:
            X_s = T.alloc_shared((32, 64), "float32")
            T.copy(X[bx * 32, 0], X_s)
            if bx == 0:  # (a nest alone under the `if` is a select per element: it works)
                for i, j in T.Parallel(32, 64):
                    X_s[i, j] = X_s[i, j] * 2.0
                T.copy(X_s, Z[bx * 32, 0])
            T.copy(X_s, Y[bx * 32, 0])

    msg = compile_error(branch, TTUnsupportedError)
    assert "X_s is written inside a branch of an if at" in msg and "read after it at" in msg
    assert "X_s[i, j] = X_s[i, j] * 2.0" in msg and "T.copy(X_s, Y[bx * 32, 0])" in msg


def test_assert_in_a_kernel_names_the_line():
    """A failed ``assert`` on Python values is TileLang's AssertionError (TTAssertionError);
    one on kernel values would be a device-side check, refused."""

    def kernel(block):
        @T.prim_func
        def k(A: T.Tensor((64, 32), "float32")):
            assert block % 32 == 0, "block must be a multiple of 32"
            with T.Kernel(2) as bx:
                assert bx < 2
        return k

    with pytest.raises(tilelang_tt.TTAssertionError) as info:
        kernel(48)
    assert isinstance(info.value, AssertionError)
    assert "block must be a multiple of 32" in str(info.value) and f"{HERE}:" in str(info.value)
    with pytest.raises(TTUnsupportedError, match=r"assert bx < 2: an assertion on kernel "
                                                 r"values(.|\n)*test_errors.py:\d+"):
        kernel(32)


def test_tilelang_internals_are_refused_by_name():
    from tilelang_tt.language.eager.ast import mutate

    with pytest.raises(TTUnsupportedError, match=r"tilelang\.language\.eager\.ast\.mutate: "
                                                 r"TileLang's eager-builder"):
        mutate(None)
    with pytest.raises(TTUnsupportedError, match=r"tilelang\.transform\.LegalizeNegativeIndex: "
                                                 r"a pass of TileLang's"):
        tilelang_tt.transform.LegalizeNegativeIndex()
    from tilelang_tt.language.dtypes import _TORCH_DTYPE_TO_STR

    with pytest.raises(TTUnsupportedError, match=r"tilelang\.language\.dtypes\."
                                                 r"_TORCH_DTYPE_TO_STR: not provided"):
        _TORCH_DTYPE_TO_STR["float16"]


@T.macro
def _hypot_rows(src, dst):
    for i, j in T.Parallel(32, 32):
        dst[i, j] = T.hypot(src[i, j], 1.0)  # the line an error inside the macro names


def test_error_inside_a_macro_names_the_macros_line():
    @T.prim_func
    def k(A: T.Tensor((32, 32), "float32"), B: T.Tensor((32, 32), "float32")):
        with T.Kernel(1):
            s = T.alloc_shared((32, 32), "float32")
            d = T.alloc_shared((32, 32), "float32")
            T.copy(A, s)
            _hypot_rows(s, d)
            T.copy(d, B)

    msg = compile_error(k, TTUnsupportedError)
    assert "T.hypot" in msg and "the line an error inside the macro names" in msg


def test_gemm_warp_partition_is_refused_by_name():
    policy = T.GemmWarpPolicy.Square
    assert policy == 0  # accepted as T.gemm(policy=...)
    with pytest.raises(TTUnsupportedError, match=r"GemmWarpPolicy\.compute_warp_partition: "
                                                 r"Tensix runs each block as one program"):
        policy.compute_warp_partition(128, 128, 4)


def test_cast_rounding_modifiers_are_checked_then_refused():
    x = tvm.tirx.Var("x", "float32")
    assert str(T.cast(x, T.float16).ty) == "float16"
    with pytest.raises(ValueError, match="Invalid round 'rq'"):
        T.cast(x, T.float16, round="rq")
    with pytest.raises(ValueError, match="Invalid sat 'no'"):
        T.cast(x, T.float16, sat="no")
    with pytest.raises(ValueError, match="rbits is required with round='rs'"):
        T.cast(x, T.float16, round="rs")
    with pytest.raises(ValueError, match="rbits is only valid with round='rs'"):
        T.cast(x, T.float16, round="rn", rbits=1)
    with pytest.raises(TTUnsupportedError) as info:
        @T.prim_func
        def k(A: T.Tensor((32, 32), "float32"), B: T.Tensor((32, 32), "float16")):
            with T.Kernel(1):
                for i, j in T.Parallel(32, 32):
                    B[i, j] = T.cast(A[i, j], T.float16, round="rz")

    assert "T.cast(round='rz', sat=True): PTX rounding" in str(info.value)
    assert f"{HERE}:" in str(info.value) and 'round="rz"' in str(info.value)


def _fails_without_a_message():
    raise LookupError()


def test_an_exception_without_a_message_is_named_with_its_line():
    with pytest.raises(TTCompileError, match=r"error: LookupError \(without a message\)\n"
                                             r"(.|\n)*test_errors.py:\d+"):
        @T.prim_func
        def k(A: T.Tensor((32, 32), "float32")):
            with T.Kernel(1):
                _fails_without_a_message()


def test_reduce_nan_propagate_refused_naming_the_line():
    # TileLang's `T.reduce_max(src, dst, dim=1, nan_propagate=True)`: the matrix engine's
    # max reduction does not promise a NaN row gives NaN, so the kernel is refused, not run
    def kernel(reduce, **kw):
        @T.prim_func
        def k(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64,), "float16")):
            with T.Kernel(1, threads=128):
                src = T.alloc_fragment((64, 64), "float16")
                dst = T.alloc_fragment((64,), "float16")
                T.copy(A, src)
                reduce(src, dst, dim=1, **kw)
                T.copy(dst, B)
        return k

    for reduce, name in ((T.reduce_max, "T.reduce_max"), (T.reduce_min, "T.reduce_min"),
                         (T.reduce_absmax, "T.reduce_absmax")):
        with pytest.raises(TTUnsupportedError) as info:
            kernel(reduce, nan_propagate=True)
        msg = str(info.value)
        assert f"{name}(nan_propagate=True)" in msg and "NaN" in msg
        assert f"{HERE}:" in msg and "reduce(src, dst, dim=1, **kw)" in msg
    # without it the kernel compiles
    tilelang_tt.compile(kernel(T.reduce_max))


def test_sblock_refused_naming_the_line():
    # TVM's schedulable blocks inside a TileLang kernel (TileLang's copy test nests two to
    # scope T.annotate_safe_value): refused naming T.sblock and the line, not TVM's
    # well-formedness text
    with pytest.raises(TTUnsupportedError) as info:
        @T.prim_func
        def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
            with T.Kernel(1, threads=128):
                A_shared = T.alloc_shared((64, 64), "float32")
                with T.sblock("outer"):
                    T.reads()
                    T.writes()
                    T.copy(A, A_shared)
                T.copy(A_shared, B)
    msg = str(info.value)
    assert "T.sblock" in msg and f"{HERE}:" in msg and 'with T.sblock("outer"):' in msg
    assert "well-formed" not in msg


def test_buffer_slice_with_a_step_refused_naming_the_line():
    # TileLang's frontend test `B[0:5:2] = A[0:10:2]`: our text, not TVM's C++ check
    with pytest.raises(TTUnsupportedError) as info:
        @T.prim_func
        def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 32), "float32")):
            with T.Kernel(1, threads=128):
                B[0:64, 0:32] = A[0:64, 0:64:2]
    msg = str(info.value)
    assert "slice with a step other than 1" in msg and f"{HERE}:" in msg
    assert "B[0:64, 0:32] = A[0:64, 0:64:2]" in msg and "Check failed" not in msg


def test_refused_name_used_as_a_set_is_refused():
    # TileLang's dialect test compares a set with a name of tilelang.language.tir.exports:
    # the refusal, not Python's TypeError
    from tilelang_tt.language import tir  # noqa: F401  (a TileLang module without counterpart)
    from tilelang_tt.language.tir.exports import CLASSIFIED_VENDOR_TIR_EXPORTS as names

    for use in (lambda: {"ptx_mma"} <= names, lambda: "ptx_mma" in names, lambda: len(names)):
        with pytest.raises(TTUnsupportedError, match="CLASSIFIED_VENDOR_TIR_EXPORTS"):
            use()
    assert bool(names)
