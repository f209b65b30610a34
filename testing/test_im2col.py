"""T.im2col: a 2-D convolution as an implicit GEMM (TileLang's examples/convolution).

The reader builds each ``[block_M, block_K]`` im2col block (C2 ``tt.im2col_to_cb``, D3: the
face rows of the image's DRAM tiles read into the block's rows, zeros outside the image); the
kernel and output are re-viewed as 2-D tensors with ``T.Tensor(shape, dtype, x.data)``.  The
inputs are small integers, so every product and sum is exact in the matrix engine and the
accumulator: the result must equal numpy's convolution exactly."""

import ml_dtypes
import numpy as np
import pytest
import tvm

import tilelang_tt as tilelang
import tilelang_tt.language as T
from tilelang_tt.errors import TTAssertionError, TTUnsupportedError


def out_size(x, K, S, D, P):
    return (x + 2 * P - D * (K - 1) - 1) // S + 1


def convolution(N, C, H, W, F, K, S, D, P, dtype, block_M=64, block_N=32, block_K=32):
    """TileLang's example_convolution kernel (its body unchanged; bf16 / fp32 operands)."""
    KH, KW = K, K
    OH, OW = out_size(H, K, S, D, P), out_size(W, K, S, D, P)

    @T.prim_func
    def main(data: T.Tensor((N, H, W, C), dtype), kernel: T.Tensor((KH, KW, C, F), dtype),
             out: T.Tensor((N, OH, OW, F), dtype)):
        with T.Kernel(T.ceildiv(F, block_N), T.ceildiv(N * OH * OW, block_M)) as (bx, by):
            data_shared = T.alloc_shared((block_M, block_K), dtype)
            kernel_shared = T.alloc_shared((block_K, block_N), dtype)
            out_local = T.alloc_fragment((block_M, block_N), "float32")
            out_shared = T.alloc_shared((block_M, block_N), dtype)

            kernel_flat = T.Tensor((KH * KW * C, F), dtype, kernel.data)
            out_flat = T.Tensor((N * OH * OW, F), dtype, out.data)

            T.clear(out_local)
            for k_iter in T.Pipelined(T.ceildiv(KH * KW * C, block_K), num_stages=2):
                T.im2col(data, data_shared, by, k_iter, KH, S, D, P)
                T.copy(kernel_flat[k_iter * block_K, bx * block_N], kernel_shared)
                T.gemm(data_shared, kernel_shared, out_local)

            T.copy(out_local, out_shared)
            T.copy(out_shared, out_flat[by * block_M, bx * block_N])

    return main


def conv_reference(a, b, S, D, P):
    """NHWC image a, (KH, KW, C, F) kernel b -> (N, OH, OW, F), in float64."""
    N, H, W, _ = a.shape
    K, F = b.shape[0], b.shape[3]
    OH, OW = out_size(H, K, S, D, P), out_size(W, K, S, D, P)
    padded = np.zeros((N, H + 2 * P, W + 2 * P, a.shape[3]))
    padded[:, P:P + H, P:P + W] = a
    out = np.zeros((N, OH, OW, F))
    for kh in range(K):
        for kw in range(K):
            taps = padded[:, kh * D:kh * D + S * (OH - 1) + 1:S, kw * D:kw * D + S * (OW - 1) + 1:S]
            out += taps @ b[kh, kw]
    return out


_NP = {"bfloat16": ml_dtypes.bfloat16, "float32": np.float32}


@pytest.mark.parametrize("N, C, H, W, F, K, S, D, P, dtype", [
    (1, 32, 6, 64, 32, 3, 1, 1, 1, "bfloat16"),  # 3x3, pad 1, stride 1; 2 tiles of W
    (2, 64, 9, 7, 32, 3, 2, 1, 1, "float32"),    # stride 2, two images, 64 channels
    (1, 32, 10, 10, 32, 3, 1, 2, 2, "bfloat16"),  # dilation 2
    (1, 32, 8, 8, 64, 1, 1, 1, 0, "float32"),    # 1x1 convolution, two column blocks
], ids=["3x3_s1_bf16", "3x3_s2_f32", "3x3_d2_bf16", "1x1_f32"])
def test_im2col_convolution(N, C, H, W, F, K, S, D, P, dtype):
    rng = np.random.default_rng(0)
    a = rng.integers(-2, 3, (N, H, W, C)).astype(_NP[dtype])
    b = rng.integers(-1, 2, (K, K, C, F)).astype(_NP[dtype])
    ref = conv_reference(a.astype(np.float64), b.astype(np.float64), S, D, P)
    assert np.abs(ref).max() <= 256  # integers: exact in bfloat16
    kernel = tilelang.compile(convolution(N, C, H, W, F, K, S, D, P, dtype), out_idx=-1)
    out = kernel(a, b)
    assert out.shape == ref.shape
    np.testing.assert_array_equal(np.asarray(out).astype(np.float64), ref)
    assert ".get_noc_addr(" in kernel.get_kernel_source()  # the reader's face-row reads
    if dtype == "bfloat16":  # the same code on Blackhole (64-byte DRAM reads: face row pairs)
        out = kernel.run(a, b, arch="blackhole")
        np.testing.assert_array_equal(np.asarray(out).astype(np.float64), ref)


def resized_view():
    @T.prim_func
    def main(A: T.Tensor((2, 32, 32), "bfloat16"), B: T.Tensor((64, 32), "bfloat16")):
        with T.Kernel(1) as _:
            A_flat = T.Tensor((128, 32), "bfloat16", A.data)  # twice A's elements
            s = T.alloc_shared((64, 32), "bfloat16")
            T.copy(A_flat[0:64, 0:32], s)
            T.copy(s, B)

    return main


def test_im2col_refusals():
    """C not a multiple of 32 is refused by name; so is a `T.Tensor(shape, dtype, A.data)`
    re-view of another size than A."""
    with pytest.raises(TTUnsupportedError, match=r"T.im2col\(data, data_shared\).*C = 16 is "
                                                 r"not a multiple of 32"):
        tilelang.compile(convolution(1, 16, 8, 8, 32, 3, 1, 1, 1, "bfloat16"), out_idx=-1)
    with pytest.raises(TTAssertionError, match=r"shape check failed: A is \[2, 32, 32\] "
                                               r"bfloat16 \(32768 bits\), the new shape "
                                               r"\[128, 32\]"):
        tilelang.compile(resized_view(), out_idx=-1)
    # the same view in hand-written TVMScript: A0.2.0 ResolveViewsTT checks it
    src = "\n".join([
        "# from tvm.script import tirx as T",
        "@T.prim_func",
        "def main(A: T.Buffer((2, 32, 32), 'bfloat16'), B: T.Buffer((64, 32), 'bfloat16')):",
        "    bx = T.launch_thread('blockIdx.x', 1)",
        "    A_flat = A.view(128, 32)",
        "    s = T.alloc_shared((64, 32), 'bfloat16')",
        "    T.tile.copy(s[0:64, 0:32], A_flat[0:64, 0:32])",
        "    T.tile.copy(B[0:64, 0:32], s[0:64, 0:32])"])
    with pytest.raises(TTAssertionError, match=r"A_flat\[128, 32\] bfloat16 views A\[2, 32, 32\]"):
        tilelang.lower(tvm.script.from_source(src))
