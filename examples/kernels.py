"""Kernel factories in TileLang style, shared by the examples, tests and benchmarks.

Each factory returns a ``T.prim_func``; only the import differs from TileLang.
"""

import tilelang_tt.language as T


def matmul(M, N, K, block_M=128, block_N=128, block_K=32, dtype="bfloat16",
           accum_dtype="float32", num_stages=3):
    """The seed design's GEMM: C = A @ B, A (M, K), B (K, N), copy straight out of the fragment."""

    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm


def matmul_nt(M, N, K, block_M=128, block_N=128, block_K=32, dtype="bfloat16",
              accum_dtype="float32", num_stages=2):
    """TileLang's GEMM idiom: B stored (N, K), transpose_B=True, output staged in C_shared."""

    @T.prim_func
    def gemm_nt(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype),
                C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_N, block_K), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            C_shared = T.alloc_shared((block_M, block_N), dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[bx * block_N, ko * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
            T.copy(C_local, C_shared)
            T.copy(C_shared, C[by * block_M, bx * block_N])

    return gemm_nt


def elementwise_add_shared(M, N, block_M=32, block_N=32, dtype="bfloat16"):
    """The seed's elementwise add: shared copies in, T.Parallel over shared tiles, copy out."""

    @T.prim_func
    def add_shared(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype),
                   C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M)) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), dtype)
            B_shared = T.alloc_shared((block_M, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), dtype)
            T.copy(A[by * block_M, bx * block_N], A_shared)
            T.copy(B[by * block_M, bx * block_N], B_shared)
            for i, j in T.Parallel(block_M, block_N):
                C_shared[i, j] = A_shared[i, j] + B_shared[i, j]
            T.copy(C_shared, C[by * block_M, bx * block_N])

    return add_shared


def elementwise_add(M, N, block_M=32, block_N=32, dtype="bfloat16", threads=128):
    """TileLang's example form: T.Parallel directly over the global tensors."""

    @T.prim_func
    def add(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            start_x = bx * block_N
            start_y = by * block_M
            for local_y, local_x in T.Parallel(block_M, block_N):
                y = start_y + local_y
                x = start_x + local_x
                C[y, x] = A[y, x] + B[y, x]

    return add


def elementwise_add_fragment(M, N, block_M=32, block_N=32, in_dtype="bfloat16",
                             out_dtype="bfloat16", threads=128):
    """TileLang's current example form: shared copies in, the sum in a fragment, staged out
    through a shared buffer (the fragment lives in a circular buffer on Tensix)."""

    @T.prim_func
    def add_fragment(A: T.Tensor((M, N), in_dtype), B: T.Tensor((M, N), in_dtype),
                     C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), in_dtype)
            B_shared = T.alloc_shared((block_M, block_N), in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), in_dtype)
            C_shared = T.alloc_shared((block_M, block_N), out_dtype)
            T.copy(A[by * block_M, bx * block_N], A_shared)
            T.copy(B[by * block_M, bx * block_N], B_shared)
            for local_y, local_x in T.Parallel(block_M, block_N):
                C_local[local_y, local_x] = A_shared[local_y, local_x] + B_shared[local_y, local_x]
            T.copy(C_local, C_shared)
            T.copy(C_shared, C[by * block_M, bx * block_N])

    return add_fragment


def elementwise_unary(fn, M, N, block_M=32, block_N=32, dtype="bfloat16"):
    """``C = fn(A)`` in a T.Parallel nest over the global tensors; ``fn`` maps an element
    expression to an element expression (e.g. ``T.exp``, ``lambda x: T.max(x, 0)``)."""

    @T.prim_func
    def unary(A: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M)) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                C[by * block_M + i, bx * block_N + j] = fn(A[by * block_M + i, bx * block_N + j])

    return unary


def elementwise_expr(fn, n_inputs, M, N, block_M=32, block_N=32, dtype="bfloat16"):
    """``C = fn(X0, X1, ...)`` elementwise in a T.Parallel nest over the global tensors; ``fn``
    takes ``n_inputs`` (1 to 3) element expressions (e.g. ``lambda a, b: T.exp(a - b) * 0.5``)."""
    if n_inputs == 1:
        @T.prim_func
        def expr1(X0: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M)) as (bx, by):
                for i, j in T.Parallel(block_M, block_N):
                    y = by * block_M + i
                    x = bx * block_N + j
                    C[y, x] = fn(X0[y, x])

        return expr1
    if n_inputs == 2:
        @T.prim_func
        def expr2(X0: T.Tensor((M, N), dtype), X1: T.Tensor((M, N), dtype),
                  C: T.Tensor((M, N), dtype)):
            with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M)) as (bx, by):
                for i, j in T.Parallel(block_M, block_N):
                    y = by * block_M + i
                    x = bx * block_N + j
                    C[y, x] = fn(X0[y, x], X1[y, x])

        return expr2

    @T.prim_func
    def expr3(X0: T.Tensor((M, N), dtype), X1: T.Tensor((M, N), dtype),
              X2: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M)) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                y = by * block_M + i
                x = bx * block_N + j
                C[y, x] = fn(X0[y, x], X1[y, x], X2[y, x])

    return expr3


def softmax(M, N, block_M=32, dtype="bfloat16"):
    """Row softmax, one block of rows per work unit: T.reduce_max, exp of the difference to the
    row max (a column-vector broadcast), T.reduce_sum, multiply by its reciprocal."""

    @T.prim_func
    def softmax_rows(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M)) as bx:
            X_s = T.alloc_shared((block_M, N), dtype)
            row_max = T.alloc_fragment((block_M,), dtype)
            E = T.alloc_fragment((block_M, N), dtype)
            row_sum = T.alloc_fragment((block_M,), dtype)
            Y_s = T.alloc_shared((block_M, N), dtype)
            T.copy(X[bx * block_M, 0], X_s)
            T.reduce_max(X_s, row_max, dim=1)
            for i, j in T.Parallel(block_M, N):
                E[i, j] = T.exp(X_s[i, j] - row_max[i])
            T.reduce_sum(E, row_sum, dim=1)
            for i, j in T.Parallel(block_M, N):
                Y_s[i, j] = E[i, j] / row_sum[i]
            T.copy(Y_s, Y[bx * block_M, 0])

    return softmax_rows


def row_reduce_broadcast(M, N, block_M=32, kind="sum", combine="sub", dtype="float32"):
    """``Y = X combine reduce_<kind>(X, dim=1)[i]``: one reduction, one column broadcast."""
    reduce = {"sum": T.reduce_sum, "max": T.reduce_max, "min": T.reduce_min,
              "abssum": T.reduce_abssum, "absmax": T.reduce_absmax}[kind]
    fn = {"sub": lambda x, r: x - r, "add": lambda x, r: x + r, "mul": lambda x, r: x * r,
          "div": lambda x, r: x / r, "rsub": lambda x, r: r - x}[combine]

    @T.prim_func
    def row_op(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M)) as bx:
            X_s = T.alloc_shared((block_M, N), dtype)
            R = T.alloc_fragment((block_M,), dtype)
            Y_s = T.alloc_shared((block_M, N), dtype)
            T.copy(X[bx * block_M, 0], X_s)
            reduce(X_s, R, dim=1)
            for i, j in T.Parallel(block_M, N):
                Y_s[i, j] = fn(X_s[i, j], R[i])
            T.copy(Y_s, Y[bx * block_M, 0])

    return row_op


def rmsnorm(M, N, block_M=32, dtype="float32", eps=1e-6):
    """RMSNorm over rows: ``Y = X * rsqrt(mean(X * X) + eps)``; the row statistic is a 1-D
    fragment, transformed once per block and broadcast along the rows."""

    @T.prim_func
    def rms_norm(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M)) as bx:
            X_s = T.alloc_shared((block_M, N), dtype)
            X2 = T.alloc_fragment((block_M, N), dtype)
            ss = T.alloc_fragment((block_M,), dtype)
            Y_s = T.alloc_shared((block_M, N), dtype)
            T.copy(X[bx * block_M, 0], X_s)
            for i, j in T.Parallel(block_M, N):
                X2[i, j] = X_s[i, j] * X_s[i, j]
            T.reduce_sum(X2, ss, dim=1)
            for i, j in T.Parallel(block_M, N):
                Y_s[i, j] = X_s[i, j] * T.rsqrt(ss[i] * (1.0 / N) + eps)
            T.copy(Y_s, Y[bx * block_M, 0])

    return rms_norm


def layernorm(M, N, block_M=32, dtype="float32", eps=1e-5):
    """LayerNorm over rows (no affine): ``(X - mean) * rsqrt(var + eps)`` with the row mean
    and variance as 1-D fragments; ``(X - mean)`` is a broadcast, the scale a row vector used
    as a whole block."""

    @T.prim_func
    def layer_norm(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M)) as bx:
            X_s = T.alloc_shared((block_M, N), dtype)
            total = T.alloc_fragment((block_M,), dtype)
            D2 = T.alloc_fragment((block_M, N), dtype)
            var = T.alloc_fragment((block_M,), dtype)
            Y_s = T.alloc_shared((block_M, N), dtype)
            T.copy(X[bx * block_M, 0], X_s)
            T.reduce_sum(X_s, total, dim=1)
            for i, j in T.Parallel(block_M, N):
                D2[i, j] = (X_s[i, j] - total[i] * (1.0 / N)) * (X_s[i, j] - total[i] * (1.0 / N))
            T.reduce_sum(D2, var, dim=1)
            for i, j in T.Parallel(block_M, N):
                Y_s[i, j] = (X_s[i, j] - total[i] * (1.0 / N)) * T.rsqrt(var[i] * (1.0 / N) + eps)
            T.copy(Y_s, Y[bx * block_M, 0])

    return layer_norm
