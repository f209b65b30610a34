"""TileLang's persistent tile loop ``T.Persistent(domain, wave_size, index)``: A0.00 makes it
the launch over its domain (every tile visited once, whatever ``sm_num``), a GEMM in the idiom
of TileLang's examples/gemm/example_gemm_persistent.py, and the refusals (state carried from
one tile to the next, the block index used elsewhere, a wave size that is not the launch's)."""

import numpy as np
import pytest

import tilelang_tt as tilelang
import tilelang_tt.language as T
from tilelang_tt import TTUnsupportedError


def visit_2d(MB, NB, sm_num):
    """TileLang issue 2433's visit kernel with tiles for elements: each tile adds 1 to its
    32x32 block of ``Visited`` in place (a tile visited twice holds 2, one skipped 0)."""

    @T.prim_func
    def kernel(Visited: T.Tensor((MB * 32, NB * 32), T.float32)):
        with T.Kernel(sm_num, threads=128) as block_id:
            v = T.alloc_fragment((32, 32), T.float32)
            one = T.alloc_fragment((32, 32), T.float32)
            T.fill(one, 1.0)  # before the loop, once per block: A0.00 moves it into each tile
            for bx, by in T.Persistent([MB, NB], sm_num, block_id):
                T.copy(Visited[bx * 32, by * 32], v)
                for i, j in T.Parallel(32, 32):
                    v[i, j] = v[i, j] + one[i, j]
                T.copy(v, Visited[bx * 32, by * 32])

    return kernel


def visit_3d(D0, D1, D2, sm_num):
    @T.prim_func
    def kernel(Visited: T.Tensor((D0, D1 * 32, D2 * 32), T.float32)):
        with T.Kernel(sm_num, threads=128) as block_id:
            v = T.alloc_fragment((32, 32), T.float32)
            for i, j, k in T.Persistent([D0, D1, D2], sm_num, block_id):
                T.copy(Visited[i, j * 32:j * 32 + 32, k * 32:k * 32 + 32], v)
                for r, c in T.Parallel(32, 32):
                    v[r, c] = v[r, c] + 1.0
                T.copy(v, Visited[i, j * 32:j * 32 + 32, k * 32:k * 32 + 32])

    return kernel


@pytest.mark.parametrize("domain, sm_num", [((4, 3), 5), ((2, 3), 16), ((3, 2, 2), 4)])
def test_persistent_visits_every_tile_once(domain, sm_num):
    kernel = visit_2d(*domain, sm_num) if len(domain) == 2 else visit_3d(*domain, sm_num)
    lowered = tilelang.lower(kernel, stop_after="A0.00")
    grid = [int(a.value) for a in tilelang_tt_launches(lowered)]
    assert grid == list(domain)  # the launch is the domain; sm_num no longer matters
    shape = (domain[0] * 32, domain[1] * 32) if len(domain) == 2 else \
        (domain[0], domain[1] * 32, domain[2] * 32)
    visited = np.zeros(shape, np.float32)
    tilelang.compile(kernel)(visited)
    np.testing.assert_array_equal(visited, np.ones(shape, np.float32))


def tilelang_tt_launches(mod):
    from tilelang_tt.passes.common import launch_attrs

    (func,) = mod.functions.values()
    return launch_attrs(func.body)


def matmul_persistent(M, N, K, block_M, block_N, block_K, sm_num, num_stages=2,
                      dtype=T.float16, accum_dtype=T.float32):
    """example_gemm_persistent.py's ``matmul_persistent`` (use_persistent_primitive=True)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(sm_num, threads=256) as block_id:
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            C_shared = T.alloc_shared((block_M, block_N), dtype)
            for bx, by in T.Persistent([T.ceildiv(M, block_M), T.ceildiv(N, block_N)], sm_num,
                                       block_id):
                T.clear(C_local)
                for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                    T.copy(A[bx * block_M, k * block_K], A_shared)
                    T.copy(B[k * block_K, by * block_N], B_shared)
                    T.gemm(A_shared, B_shared, C_local)
                T.copy(C_local, C_shared)
                T.copy(C_shared, C[bx * block_M, by * block_N])

    return main


def test_persistent_gemm_matches_numpy():
    M, N, K = 128, 192, 128
    kernel = tilelang.compile(matmul_persistent(M, N, K, 64, 64, 32, sm_num=5))
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float16)
    kernel(a, b, c)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), ref, rtol=2e-2, atol=5e-2)


def test_persistent_refusals_name_what_is_carried():
    def gemm_cleared_once():
        @T.prim_func
        def main(A: T.Tensor((64, 64), T.float16), B: T.Tensor((64, 64), T.float16),
                 C: T.Tensor((64, 64), T.float16)):
            with T.Kernel(2) as block_id:
                A_s = T.alloc_shared((32, 64), T.float16)
                B_s = T.alloc_shared((64, 32), T.float16)
                C_l = T.alloc_fragment((32, 32), T.float32)
                T.clear(C_l)  # once per block: the tiles accumulate into each other
                for bx, by in T.Persistent([2, 2], 2, block_id):
                    T.copy(A[bx * 32, 0], A_s)
                    T.copy(B[0, by * 32], B_s)
                    T.gemm(A_s, B_s, C_l)
                    T.copy(C_l, C[bx * 32, by * 32])

        return main

    def counter():
        @T.prim_func
        def main(X: T.Tensor((64, 64), T.float32), Y: T.Tensor((64, 64), T.float32)):
            with T.Kernel(3) as block_id:
                t = T.alloc_fragment((32, 32), T.float32)
                n = T.alloc_var(T.float32)
                n = 0.0
                for bx, by in T.Persistent([2, 2], 3, block_id):
                    n = n + 1.0  # how many tiles this block did so far
                    T.copy(X[bx * 32, by * 32], t)
                    for i, j in T.Parallel(32, 32):
                        t[i, j] = t[i, j] * n
                    T.copy(t, Y[bx * 32, by * 32])

        return main

    def block_id_in_body(wave):
        @T.prim_func
        def main(X: T.Tensor((64, 64), T.float32), Y: T.Tensor((64, 64), T.float32)):
            with T.Kernel(2) as block_id:
                t = T.alloc_fragment((32, 32), T.float32)
                for bx, by in T.Persistent([2, 2], wave, block_id):
                    T.copy(X[bx * 32, by * 32], t)
                    T.copy(t, Y[block_id * 32, by * 32])

        return main

    def after_loop():
        @T.prim_func
        def main(X: T.Tensor((64, 64), T.float32), Y: T.Tensor((64, 64), T.float32)):
            with T.Kernel(2) as block_id:
                t = T.alloc_fragment((32, 32), T.float32)
                for bx, by in T.Persistent([2, 2], 2, block_id):
                    T.copy(X[bx * 32, by * 32], t)
                    T.copy(t, Y[bx * 32, by * 32])
                T.copy(t, Y[0, 0])  # the last tile of each block

        return main

    cases = [(gemm_cleared_once, r"C_l is carried from one tile to the next: the statement at "
                                 r".*T\.gemm\(A_s, B_s, C_l\)"),
             (counter, r"n is carried from one tile to the next: the statement at .*n = n \+ 1"),
             (lambda: block_id_in_body(2), r"the block index block_id is used in the tile loop"),
             (lambda: block_id_in_body(4), r"wave size 4 must be the T.Kernel extent 2"),
             (after_loop, r"the statement at .*T\.copy\(t, Y\[0, 0\]\).* runs after the tile "
                          r"loop")]
    for make, match in cases:
        with pytest.raises(TTUnsupportedError, match=r"T\.Persistent at .*test_persistent\.py:\d+.*"
                                                     + match):
            tilelang.lower(make(), stop_after="A0.00")
