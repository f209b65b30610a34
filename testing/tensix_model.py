"""A numpy model of the Tensix matrix engine's arithmetic: the test suite's oracle.

Written from the same rules as the emulator (docs/MOCK.md "Numerics": ttsim's MVMUL / ELWADD /
ELWMUL / UNPACR / PACR and the LLK instruction order), but as plain integer numpy code, so the
emulator's vectorised C++ can be checked bit for bit against an independent implementation.

Values are fp32 bit patterns in ``int64`` arrays; tiles are 32x32 row-major (not face layout).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

PHASES = {"LoFi": 1, "HiFi2": 2, "HiFi3": 3, "HiFi4": 4}


def bits(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.int64)


def value(b) -> np.ndarray:
    return np.asarray(b, dtype=np.int64).astype(np.uint32).view(np.float32)


# ---- unpacker ------------------------------------------------------------------------------------
def unpack(x, tf32: bool) -> np.ndarray:
    """L1 data (bf16, float16 or fp32 array) -> source-register bit patterns."""
    x = np.asarray(x)
    if x.dtype in (ml_dtypes.bfloat16, np.float16):  # exact (float16: 10 mantissa bits, as TF32)
        return bits(x.astype(np.float32))
    u = bits(x)
    if tf32:
        return u & 0xFFFFE000
    u = np.where(u & 0x7F800000, u, u & 0x80000000)
    return u & 0xFFFF0000


# ---- the accumulator -------------------------------------------------------------------------------
def _align(m, d, s):
    dd = np.clip(d, 1, 30)
    shifted = (m + (np.int64(1) << (dd - 1)) - s) >> dd
    return np.where(d <= 0, m, np.where(d >= 31, 0, shifted))


def _bitlen(x):
    out = np.zeros_like(x)
    t = x.copy()
    for s in (16, 8, 4, 2, 1):
        big = t >= (np.int64(1) << s)
        out += np.where(big, s, 0)
        t = np.where(big, t >> s, t)
    return out + (t > 0)


def accumulate(terms, dst, fp32: bool):
    """DST bits + addends [(sign, exp, mantissa with 2^23 = 1.0)] -> new DST bits."""
    dst = np.asarray(dst, dtype=np.int64)
    sd = dst >> 31
    ed = (dst >> 23) & 255
    md = np.where(ed == 0, 0, (dst & 0x7FFFFF) | 0x800000)
    emax = ed.copy()
    for _, e, _ in terms:
        emax = np.maximum(emax, e)
    aligned = [(s, _align(m, emax - e, s)) for s, e, m in terms]
    md = _align(md, emax - ed, 0)
    if not fp32:
        aligned = [(s, (m + (1 << 12) - s) & ~np.int64(0x1FFF)) for s, m in aligned]
        md = (md + (1 << 12)) & ~np.int64(0x1FFF)
    man = md.copy()
    for s, m in aligned:
        man = np.where(s == sd, man + m, man - m)
    sign = np.where(man < 0, sd ^ 1, sd)
    man = np.abs(man)
    zero = (emax <= 0) | (man == 0)
    mnz = np.where(man == 0, 1, man)
    shift = 23 - (_bitlen(mnz) - 1)
    shift = np.where((sign == 1) & (mnz == 1), shift - 27, shift)
    exp = emax - shift
    if not fp32:
        shift = shift - 16
    rs = np.clip(-shift, 1, 62)
    out = np.where(shift < 0, (mnz + (np.int64(1) << (rs - 1))) >> rs, mnz << np.clip(shift, 0, 40))
    if not fp32:
        out = out << 16
    exp = np.where(out & 0x1000000, exp + 1, exp)
    out &= 0x7FFFFF
    res = (sign << 31) | np.where(exp >= 255, 0x7F800000, ((exp & 255) << 23) | out)
    return np.where(zero | (exp <= 0), 0, res)


# ---- FPU operations ------------------------------------------------------------------------------
def _fields(u, srca: bool, phase: int):
    m11 = ((u >> 13) & 0x3FF) | 0x400
    if srca:
        return ((m11 >> 1) & 31) if phase & 1 else (m11 >> 6)
    return ((m11 & 15) << 3) if phase & 2 else (m11 >> 4)


def _adjust(phase):
    return -127 - (5 if phase & 1 else 0) - (7 if phase & 2 else 0)


def mvmul(dst, b_rows, a_cols, phase: int, fp32: bool):
    """One MVMUL per output element: dst[r, c] += sum_k b_rows[r, k] * a_cols[k, c] (16 k)."""
    a = a_cols[None, :, :]  # SrcA [1, 16, N]
    b = b_rows[:, :, None]  # SrcB [M, 16, 1]
    zero = ((a & 0x7F800000) == 0) | ((b & 0x7F800000) == 0)
    exp = np.where(zero, 0, ((a >> 23) & 255) + ((b >> 23) & 255) + _adjust(phase))
    man = np.where(zero, 0, _fields(a, True, phase) * _fields(b, False, phase))
    sgn = np.where(zero, 0, (a >> 31) ^ (b >> 31))
    terms = []
    for g in range(2):
        e, m, s = exp[:, 8 * g:8 * g + 8], man[:, 8 * g:8 * g + 8], sgn[:, 8 * g:8 * g + 8]
        emax = e.max(axis=1)
        d = np.minimum(emax[:, None, :] - e, 30)
        q = ((m << 1) + (np.int64(1) << d)) >> (d + 1)
        total = np.where(s == 1, -q, q).sum(axis=1)
        valid = emax > 0
        terms.append((np.where(valid, total < 0, 0).astype(np.int64), np.where(valid, emax, 0),
                      np.where(valid, np.abs(total) << 13, 0)))
    return accumulate(terms, dst, fp32)


def matmul_tile(dst, in0, in1, fidelity: str, fp32: bool):
    """matmul_tiles: dst (32x32 bits) += in0 @ in1 in the LLK order (phases, then K halves)."""
    for p in range(PHASES[fidelity]):
        for kc in range(2):
            ks = slice(16 * kc, 16 * kc + 16)
            dst = mvmul(dst, in0[:, ks], in1[ks, :], p, fp32)
    return dst


def eltwise_add(a, b, fp32: bool, subtract=False):
    if subtract:
        b = b ^ np.int64(0x80000000)
    a = np.where(a & 0x7F800000, a, 0)
    b = np.where(b & 0x7F800000, b, 0)
    swap = ((a >> 13) & 0x3FFFF) < ((b >> 13) & 0x3FFFF)
    x, y = np.where(swap, b, a), np.where(swap, a, b)
    sx, sy = x >> 31, y >> 31
    ex, ey = (x >> 23) & 255, (y >> 23) & 255
    mx = np.where(x != 0, ((x >> 13) & 0x3FF) | 0x400, 0)
    my = np.where(y != 0, ((y >> 13) & 0x3FF) | 0x400, 0)
    d = ex - ey
    dd = np.clip(d, 1, 11)
    my = np.where(d <= 0, my, np.where(d < 12, (my + (np.int64(1) << (dd - 1))) >> dd, 0))
    man = np.where(sx == sy, mx + my, mx - my) << 13
    return accumulate([(sx, ex, man)], np.zeros_like(a), fp32)


def eltwise_mul(dst, a, b, fidelity: str, fp32: bool):
    for p in range(PHASES[fidelity]):
        zero = ((a & 0x7F800000) == 0) | ((b & 0x7F800000) == 0)
        e = ((a >> 23) & 255) + ((b >> 23) & 255) + _adjust(p)
        none = zero | (e <= 0)
        m = (_fields(a, True, p) * _fields(b, False, p)) << 13
        dst = accumulate([(np.where(none, 0, (a >> 31) ^ (b >> 31)), np.where(none, 0, e),
                           np.where(none, 0, m))], dst, fp32)
    return dst


# ---- packer ----------------------------------------------------------------------------------------
def pack_bf16(dst, fp32: bool) -> np.ndarray:
    """DST bits -> bf16 values as the packer writes them."""
    d = np.asarray(dst, dtype=np.int64)
    if fp32:
        v = np.where((d & 0x7FFFFFFF) > 0x7F800000, (d & 0x80000000) | 0x7F800000, d)
        v = ((v + 0x8000) >> 16) & 0xFFFF
    else:
        v = (d >> 16) & 0xFFFF
        v = np.where((v & 0x7FFF) > 0x7F80, (v & 0x8000) | 0x7F80, v)
    v = np.where((v & 0x7FFF) < 0x80, 0, v)
    return value(v << 16).astype(ml_dtypes.bfloat16)


def pack_fp32(dst, fp32: bool) -> np.ndarray:
    if fp32:
        return value(dst)
    return pack_bf16(dst, False).astype(np.float32)


def pack_fp16(dst) -> np.ndarray:
    """32-bit DST bits -> float16 values as the emulator packs them (the bf16 rule at 10 mantissa
    bits: magnitude half away from zero, NaN and overflow to infinity, below 2^-14 to +0)."""
    d = np.asarray(dst, dtype=np.int64)
    sign = (d >> 16) & 0x8000
    a = d & 0x7FFFFFFF
    r = a + 0x1000
    e = (r >> 23) - 127 + 15
    h = sign | (np.clip(e, 0, 31) << 10) | ((r >> 13) & 0x3FF)
    h = np.where((a >= 0x7F800000) | (e >= 31), sign | 0x7C00, h)
    h = np.where((a < 0x7F800000) & (e <= 0), 0, h)
    return h.astype(np.uint16).view(np.float16)


def gemm(a, b, fidelity: str, fp32_dst: bool, out_dtype="bfloat16"):
    """C = A @ B tile by tile, accumulating each output tile over all of K in DST."""
    tf32 = fp32_dst
    ua, ub = unpack(a, tf32), unpack(b, tf32)
    m, k = ua.shape
    n = ub.shape[1]
    out = np.zeros((m, n), dtype=np.int64)
    for i in range(0, m, 32):
        for j in range(0, n, 32):
            d = np.zeros((32, 32), dtype=np.int64)
            for kk in range(0, k, 32):
                d = matmul_tile(d, ua[i:i + 32, kk:kk + 32], ub[kk:kk + 32, j:j + 32], fidelity, fp32_dst)
            out[i:i + 32, j:j + 32] = d
    if out_dtype == "float16":
        return pack_fp16(out)
    return pack_bf16(out, fp32_dst) if out_dtype == "bfloat16" else pack_fp32(out, fp32_dst)


def reduce_sum(dst, x, scaler, dim: str, fidelity: str, fp32: bool):
    """reduce_tile SUM into a 32x32 DST tile (bits): REDUCE_ROW as MVMUL (input in SrcB, scaler
    in SrcA, phases outermost), REDUCE_COL as GAPOOL (input in SrcA, scaler in SrcB, phases
    innermost per face row), REDUCE_SCALAR as column sums of the four faces then one sum."""
    dst = np.array(dst, dtype=np.int64)
    col = np.full((16, 1), scaler, dtype=np.int64)
    row = np.full((1, 16), scaler, dtype=np.int64)
    phases = range(PHASES[fidelity])
    if dim == "REDUCE_ROW":
        out = dst[:, 0:1]
        for p in phases:
            for fc in range(2):
                out = mvmul(out, x[:, 16 * fc:16 * fc + 16], col, p, fp32)
        dst[:, 0] = out[:, 0]
    elif dim == "REDUCE_COL":
        out = dst[0:1, :]
        for fr in range(2):
            for p in phases:
                out = mvmul(out, row, x[16 * fr:16 * fr + 16, :], p, fp32)
        dst[0, :] = out[0]
    else:
        partial = np.zeros((1, 16), dtype=np.int64)
        for fr in range(2):
            for fc in range(2):
                face = x[16 * fr:16 * fr + 16, 16 * fc:16 * fc + 16]
                for p in phases:
                    partial = mvmul(partial, row, face, p, fp32)
        partial &= 0xFFFFE000 if fp32 else 0xFFFF0000
        out = dst[0:1, 0:1]
        ones = np.full((1, 16), 0x3F800000, dtype=np.int64)
        for p in phases:
            out = mvmul(out, ones, partial.reshape(16, 1), p, fp32)
        dst[0, 0] = out[0, 0]
    return dst
