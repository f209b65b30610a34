"""The emulator's SFPU math functions (sin, cos, tan, atan, sinh, cosh, asin, acos, atanh, log1p,
erf, power, rpow, atan2, fmod) bit for bit against a second, independent model of the LLK algorithms (TT-Metalium 0.81.1,
ckernel_sfpu_trigonometry.h, ckernel_sfpu_log1p.h, ckernel_sfpu_erf.h,
ckernel_sfpu_unary_power.h, ckernel_sfpu_fmod.h): each SFPMAD is computed exactly with fractions and rounded once to float32
(nearest even, denormals to zero), as docs/MOCK.md "Numerics" states. A wrong coefficient,
reduction constant, iteration count or rounding step changes these bits; the last test checks
that a correctly rounded result (libm) is not what the device algorithm gives."""

import math
import struct
from fractions import Fraction
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from tilelang_tt.runtime import mockbuild

PROGRAM = Path(__file__).resolve().parent / "programs" / "unit_op"


@pytest.fixture(scope="module")
def exe():
    return mockbuild.build_host(PROGRAM / "main.cpp", PROGRAM)


# ---- the model: float32 values as Python floats, every operation rounded as the SFPU does ----
def bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def fl(u: int) -> float:
    return struct.unpack("<f", struct.pack("<I", u & 0xFFFFFFFF))[0]


def f32(v) -> float:
    """Fraction or float -> float32, round to nearest even; denormals to +0."""
    v = Fraction(v)
    if v == 0:
        return 0.0
    sign, v = (-1 if v < 0 else 1), abs(v)
    e = v.numerator.bit_length() - v.denominator.bit_length()
    if Fraction(2) ** e > v:
        e -= 1
    if e < -126:
        return 0.0
    m = v / Fraction(2) ** (e - 23)
    q = m.numerator // m.denominator
    rem = m - q
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and q % 2):
        q += 1
    if q == 1 << 24:
        q, e = 1 << 23, e + 1
    if e > 127:
        return sign * math.inf
    return sign * float(q * Fraction(2) ** (e - 23))


def mad(a, b, c):  # SFPMAD: one rounding, denormal operands flushed
    a, b, c = (0.0 if abs(x) < 2.0 ** -126 else x for x in (a, b, c))
    if not all(math.isfinite(x) for x in (a, b, c)):  # infinities and NaN: IEEE
        return a * b + c
    return f32(Fraction(a) * Fraction(b) + Fraction(c))


def mul(a, b):
    return mad(a, b, 0.0)


def add(a, b):
    return mad(a, 1.0, b)


def neg(x):
    return fl(bits(x) ^ 0x80000000)


def bf16_nearest(x):  # SFPSTOCHRND to BF16: half away from zero
    u = bits(x)
    if (u >> 23) & 255 == 0:
        return 0.0
    low = u & 0xFFFF
    u -= low
    return fl(u + 0x10000 if low >= 0x8000 else u)


def c(x):  # a float32 constant of the LLK source
    return f32(x)


def h(text):  # a hexadecimal float literal of the LLK source
    return float.fromhex(text)


NEG_PI = [c(h("-0x1.92p+1")), c(h("-0x1.fbp-11")), c(h("-0x1.51p-21")), c(h("-0x1.0b4612p-33"))]
NEG_PIO2 = [c(h("-0x1.92p+0")), c(h("-0x1.fbp-12")), c(h("-0x1.51p-22")), c(h("-0x1.0b4612p-34"))]
BIAS = 12582912.0


def reduce(v, j, p):
    a = v
    for k in p:
        a = mad(j, k, a)
    return a


def sin_poly(a, parity, fp32):
    s = mul(a, a)
    a = fl(bits(a) ^ (parity << 31))
    if fp32:
        r = mad(c(h("0x1.5dc908p-19")), s, c(h("-0x1.9f70fp-13")))
        r = mad(r, s, c(h("0x1.110edap-7")))
        t = mul(a, s)
        r = mad(r, s, c(h("-0x1.55554cp-3")))
        return mad(r, t, a)
    r = mad(c(h("-0x1.8b10a4p-13")), s, c(h("0x1.10c2a2p-7")))
    t = mul(a, s)
    r = mad(r, s, c(h("-0x1.5554a4p-3")))
    return bf16_nearest(mad(r, t, a))


def model_sin(v, fp32):
    j = mad(v, c(0.31830987334251404), BIAS)
    q = bits(j) & 1
    j = add(j, -BIAS)
    return sin_poly(reduce(v, j, NEG_PI), q, fp32)


def model_cos(v, fp32):
    j = add(mad(v, c(0.31830987334251404), 0.5), BIAS)
    q = bits(j) & 1
    j = mad(add(j, -BIAS), 2.0, -1.0)
    return sin_poly(reduce(v, j, NEG_PIO2), q, fp32)


K0, K1, K2 = c(0.3232325017452239990234375), c(1.4545459747314453125), c(2.121212482452392578125)


def model_tan(v, fp32):
    j = mad(v, c(0.6366197466850281), BIAS)
    odd = bits(j) & 1
    j = add(j, -BIAS)
    a = reduce(v, j, NEG_PIO2)
    s = mul(a, a)
    coeffs = ([h("0x1.fa9f82p-9"), h("0x1.2b404p-10"), h("0x1.4787dp-7"), h("0x1.620abcp-6"), h("0x1.ba5716p-5"),
               h("0x1.111072p-3"), h("0x1.555556p-2")] if fp32 else [h("0x1.4f1f4ep-4"), h("0x1.02b98p-3"),
                                                             h("0x1.55953p-2")])
    t = c(coeffs[0])
    for k in coeffs[1:]:
        t = mad(t, s, c(k))
    t = mul(t, s)
    r = mad(t, a, a)
    if odd:
        resid = mad(t, a, mad(-1.0, r, a))
        nx = fl((bits(-1.0) & 0xFF800000) | (bits(r) & 0x7FFFFF))
        y = mad(mad(K0, nx, K1), nx, K2)
        scale = mul(fl(~bits(r) & 0xFF800000), 0.5)
        y = mad(y, mad(nx, y, 1.0), y)
        y = mul(y, scale)
        if fp32:
            r = mad(mad(resid, y, mad(r, y, 1.0)), y, y)
        else:
            r = y
    return r if fp32 else bf16_nearest(r)


def recip_gt0(x, fp32):
    y = fl(0xFEF392E0 - bits(x))
    e = mad(x, y, 1.0)
    if fp32:
        y = mad(y, e, y)
        e = mad(x, y, 1.0)
    p = mad(e, e, e)
    return mad(neg(y), p, neg(y))


def model_atan_fp32(x):
    ax = abs(x)
    a = ax
    e = ((bits(a) >> 23) & 255) - 127
    if e >= 0:
        a = recip_gt0(ax, True) if e < 26 else 0.0
    s = mul(a, a)
    p = c(h("0x1.01cp-8"))
    for k in (h("-0x1.4bcp-6"), h("0x1.93p-5"), h("-0x1.48cp-4"), h("0x1.bd4p-4"), h("-0x1.24p-3")):
        p = mad(p, s, c(k))
    a3 = mul(s, a)
    p = mad(mad(p, s, c(h("0x1.999384p-3"))), s, c(h("-0x1.555552p-2")))
    r = mad(p, a3, a)
    if e >= 0:
        r = add(c(1.5707963705062866), neg(r))
    return math.copysign(r, x)


def model_cosh_fp32(x):
    a = abs(x)
    jf = mul(a, c(1.442695))
    i = min(int(math.floor(abs(jf) + 0.5)), 255)
    f = mad(float(i), c(-0.693145752), a)
    f = mad(float(i), c(-1.42860677e-6), f)
    r = c(1.37805939e-3)
    for k in (8.37312452e-3, 4.16695364e-2, 1.66664720e-1, 4.99999851e-1, 1.0):
        r = mad(r, f, c(k))
    r = mad(r, f, 1.0)
    q = mul(r, fl((i + 125) << 23))
    rr = mul(recip_gt0(q, True), 0.125)
    y = add(q, q)
    if ((bits(q) >> 23) & 255) - 127 < 24:
        y = add(y, rr)
    return y


def recip_iter2(x):  # sfpu_reciprocal<false>: quadratic seed, two Newton steps
    nx = fl((bits(-1.0) & 0xFF800000) | (bits(x) & 0x7FFFFF))
    y = mad(mad(K0, nx, K1), nx, K2)
    scale = mul(fl(~bits(x) & 0xFF800000), 0.5)
    for _ in range(2):
        y = mad(y, mad(nx, y, 1.0), y)
    return math.copysign(mul(y, scale), x)


def model_erf(x):  # erf_tile<false>: the BF16 8/8 rational, reciprocal with 2 Newton steps
    x = min(max(x, -10.0), 10.0)
    x2 = mul(x, x)
    d = mad(c(2.4813862145e-05), x2, c(8.2844606784e-03))
    n = mad(c(7.4481184425e-04), x2, c(4.5400281738e-02))
    d = mad(d, x2, c(1.3675764810e-01))
    n = mad(n, x2, c(2.7609212279e-01))
    d = mad(d, x2, c(5.7439188334e-01))
    n = mad(n, x2, c(1.1280932447e+00))
    d = mad(d, x2, 1.0)
    return min(max(mul(mul(n, x), recip_iter2(d)), -1.0), 1.0)


def model_power_bf16(base, p):  # _sfpu_unary_power_21f_ for a positive base
    x = fl((bits(abs(base)) & 0x807FFFFF) | (127 << 23))
    s = mad(x, c(h("0x2.44734p-4")), c(h("-0xd.e712ap-4")))
    s = mad(x, s, c(h("0x2.4f5388p+0")))
    s = mad(x, s, c(h("-0x1.952992p+0")))
    lg = mad(s, c(1.4426950408889634), float(((bits(base) >> 23) & 255) - 127))
    z = max(mul(p, lg), -127.0)
    z = z * 2.0 ** 23 if z != 0 else fl(23 << 23)
    zi = int(add(z, 1065353216.0))
    zii, zif = ((zi >> 23) & 255) - 127, zi & 0x7FFFFF
    d2 = mul(c(0.40196114e-7), f32(0xF94EE7 + zif))
    m = int(mul(d2, float(0x560E + zif)))
    return bf16_nearest(fl((m & 0x807FFFFF) | (((127 + zii) & 255) << 23)))


def model_power_fp32(base, p):  # _sfpu_unary_power_61f_updated_ for a positive base
    m = fl((bits(base) & 0x807FFFFF) | (127 << 23))
    ex = ((bits(base) >> 23) & 255) - 127
    if m >= c(1.4142135381698608):
        m, ex = m / 2, ex + 1
    mp1 = add(m, 1.0)
    r = mad(mp1, c(-0.244), c(1.003))
    for _ in range(3):
        r = mul(r, mad(neg(mp1), r, 2.0))
    z = mul(add(m, -1.0), r)
    z2 = mul(z, z)
    q = mad(z2, c(1 / 11), c(1 / 9))
    for k in (1 / 7, 0.2, 1 / 3, 1.0):
        q = mad(z2, q, c(k))
    ln_m = mul(2.0, mul(z, q))
    pc = mul(p, 4097.0)
    p_hi = add(pc, neg(add(pc, neg(p))))
    p_lo = add(p, neg(p_hi))
    z_hi = mul(p_hi, float(ex))
    z_lo = mad(p_lo, float(ex), mul(p, mul(ln_m, c(1.4426950408889634))))
    s = max(add(z_hi, z_lo), c(h("-0x7e.ffff8p0")))
    e = add(z_lo, neg(add(add(z_hi, z_lo), neg(z_hi))))
    tmp = add(s, BIAS)
    k = add(tmp, -BIAS)
    k_int = bits(tmp) - bits(BIAS)
    f = add(add(s, neg(k)), e)
    rr = mad(f, c(0.693359375), mul(f, c(-2.12194440e-4)))
    y = mad(rr, c(1 / 5040), c(1 / 720))
    for kk in (1 / 120, 1 / 24, 1 / 6, 0.5, 1.0, 1.0):
        y = mad(rr, y, c(kk))
    return fl((bits(y) & 0x807FFFFF) | ((((bits(y) >> 23) & 255) + k_int) & 255) << 23)


def model_fmod(v, s):  # ckernel_sfpu_fmod.h, positive divisor s, recip = f32(1/s)
    r = f32(Fraction(1) / Fraction(s))
    av = abs(v)
    qv = mul(av, r)
    e = ((bits(qv) >> 23) & 255) - 127
    q = 0.0 if e < 0 else fl(bits(qv) >> (23 - e) << (23 - e)) if e < 23 else qv
    if e < 23 and mad(q, s, neg(av)) > 0:
        q = add(q, -1.0)
    out = math.copysign(mad(neg(q), s, av), v)
    for _ in range(10):
        if add(out, neg(s)) >= 0 and not math.copysign(1, add(out, neg(s))) < 0:
            out = add(out, neg(s))
    return 0.0 if add(abs(out), neg(s)) == 0 else out


def model_asin_acos_fp32(x, acos):  # sfpu_asin_fp32 / sfpu_acos_fp32
    ax = abs(x)
    half_d = mul(add(1.0, neg(ax)), 0.5)
    t = add(ax, -0.5625)
    if math.copysign(1, t) < 0:
        z = ax
    else:  # _sfpu_sqrt_endpoint_ (sqrt_init<false> constants)
        y = fl(0x5F1110A0 - (bits(half_d) >> 1))
        xy = mul(half_d, y)
        cc = mul(neg(y), xy)
        y = mul(y, mad(cc, add(c(2.2533049), cc), c(2.2825186)))
        xy = mul(half_d, y)
        z = mad(mad(neg(y), xy, 1.0), mul(0.5, xy), xy)
    s = mul(z, z)
    ks = ([h("0x1.9e0000p-5"), h("0x1.364p-6"), h("0x1.7dcp-5"), h("0x1.329a74p-4"),
           h("0x1.55578cp-3")] if not acos else
          [h("0x1.830p-5"), h("0x1.ca0000p-8"), h("0x1.158p-5"), h("0x1.6acp-5"),
           h("0x1.33411ep-4"), h("0x1.555552p-3")])
    p = c(ks[0])
    for k in ks[1:]:
        p = mad(p, s, c(k))
    p = mul(p, s)
    pio2 = c(1.5707963705062866)
    if not acos:
        r = mad(p, z, z)
        if math.copysign(1, t) > 0:
            r = mad(-2.0, r, pio2)
        return math.copysign(r, x)
    z = fl((bits(z) & 0x7FFFFFFF) | ((bits(x) ^ bits(t)) & 0x80000000))
    r = mad(p, z, z)
    if (bits(z) | bits(t)) & 0x80000000:
        r = add(r, pio2)
    if math.copysign(1, t) > 0:
        r = add(r, r)
    return r


def model_log1p(a, fp32):  # calculate_log1p_fp32
    u = add(a, 1.0)
    e = (bits(u) - bits(0.75)) & 0xFF800000
    e_signed = e - (1 << 32) if e >= 1 << 31 else e
    m = fl(bits(a) - e)
    t = mad(-0.25, fl(bits(-4.0) - e), -1.0)
    m = add(m, t)
    if fp32:
        r = c(h("-0x1.92cp-5"))
        for k in ("0x1.b84p-4", "-0x1.0c4p-3", "0x1.274p-3", "-0x1.55p-3", "0x1.998p-3",
                  "-0x1.00001ap-2", "0x1.555572p-2"):
            r = mad(r, m, c(h(k)))
        r = mad(r, m, -0.5)
    else:
        r = mad(mad(-0.25, m, c(h("0x1.744p-2"))), m, c(h("-0x1.008p-1")))
    r = mad(r, mul(m, m), m)
    return mad(float(e_signed), f32(Fraction(c(0.693147182)) * Fraction(c(1.19209290e-7))), r)


def model_atanh(x, fp32):
    a = abs(x)
    q = mul(add(a, a), recip_gt0(add(1.0, neg(a)), fp32))
    if not fp32:
        q = fl(bits(q) & 0xFFFF0000)  # stored to a 16-bit DST before log1p
    r = math.copysign(mul(0.5, model_log1p(q, fp32)), x)
    return r if fp32 else bf16_nearest(r)


def model_atan2_fp32(y, x):  # _sfpu_atan2_ with an fp32 DST (APPROX false)
    ax, ay = abs(x), abs(y)
    mn, mx = min(ax, ay), max(ax, ay)
    a = mul(mn, recip_iter2(mx))
    s = mul(a, a)
    q = c(h("0x1.01cp-8"))
    for k in ("-0x1.4bcp-6", "0x1.93p-5", "-0x1.48cp-4", "0x1.bd4p-4", "-0x1.24p-3",
              "0x1.99938ap-3", "-0x1.555558p-2"):
        q = mad(q, s, c(h(k)))
    half_pi = c(h("0x1.921fb6p+0"))
    r = mad(mul(q, s), a, a)
    if bits(mn) >= bits(ax):
        r = add(half_pi, neg(r))
        if bits(mn) >= bits(mx):
            r = half_pi / 2 if mx != 0 else 0.0
    if math.copysign(1, x) < 0:
        r = add(half_pi * 2, neg(r))
    return math.copysign(r, y)


# ---- the emulator on one tile --------------------------------------------------------------
def run(exe, tmp_path, defines, a, fp32):
    dt = np.float32 if fp32 else ml_dtypes.bfloat16
    pa, pc = tmp_path / "a.bin", tmp_path / "c.bin"
    np.asarray(a, np.float32).astype(dt).tofile(pa)
    spec = ";".join(f"{k}={v}" for k, v in defines.items())
    fmt = "f32" if fp32 else "bf16"
    mockbuild.run_host(exe, [spec, fmt, fmt, str(int(fp32)), str(int(fp32)), str(pa), str(pa),
                             str(pc)])
    return np.fromfile(pc, dtype=dt).astype(np.float32).reshape(-1)


def tile(values, dtype=np.float32):
    a = np.full(1024, 0.5, np.float32)
    a[:len(values)] = values
    if dtype != np.float32:
        a = a.astype(ml_dtypes.bfloat16).astype(np.float32)
    return a


CASES = {  # op: (model, inputs: range reduction up to |x| = 100, both parities, poles)
    "sin": (model_sin, [0.1, -1.0, 3.0, 1.5707964, 10.0, -37.25, 99.9, 100.0, 1e-3, 7.5e-5]),
    "cos": (model_cos, [0.1, -1.0, 3.0, 1.5707964, 10.0, -37.25, 99.9, 100.0, 1e-3, 7.5e-5]),
    "tan": (model_tan, [0.1, -1.0, 1.5, 1.57, 2.0, -3.0, 10.0, -77.7, 100.0, 0.7853982]),
}


@pytest.mark.parametrize("fp32", [True, False], ids=["fp32dst", "16bitdst"])
@pytest.mark.parametrize("op", sorted(CASES))
def test_trig_bits(exe, tmp_path, op, fp32):
    model, xs = CASES[op]
    a = tile(xs, np.float32 if fp32 else ml_dtypes.bfloat16)
    got = run(exe, tmp_path, {"OP_SFPU": 1, "OP_INIT": f"{op}_tile_init",
                              "OP_CALL": f"{op}_tile"}, a, fp32)
    want = [model(float(x), fp32) for x in a[:len(xs)]]
    assert [hex(bits(g)) for g in got[:len(xs)]] == [hex(bits(w)) for w in want]


@pytest.mark.parametrize("op, model, xs", [
    ("atan", model_atan_fp32, [0.1, -0.5, 1.0, 1.5, -3.0, 50.0, 1e9, 0.999]),
    ("cosh", model_cosh_fp32, [0.0, 0.1, -1.0, 2.5, 10.0, -20.0, 80.0]),
    ("erf", model_erf, [0.0, 0.1, -0.5, 1.0, 2.0, -3.0, 4.0, 12.0]),
    ("asin", lambda x: model_asin_acos_fp32(x, False), [0.1, -0.3, 0.5, 0.5625, 0.7, -0.9, 0.999, 1.0]),
    ("acos", lambda x: model_asin_acos_fp32(x, True), [0.1, -0.3, 0.5, 0.5625, 0.7, -0.9, 0.999, -1.0]),
    ("log1p", lambda x: model_log1p(x, True), [0.0, 1e-4, -0.3, 0.5, 1.0, 3.0, 100.0, -0.99]),
    ("atanh", lambda x: model_atanh(x, True), [0.0, 0.1, -0.3, 0.5, 0.75, -0.9, 0.999]),
])
def test_fp32_dst_bits(exe, tmp_path, op, model, xs):
    a = tile(xs)
    template = "<false>" if op == "erf" else ""
    got = run(exe, tmp_path, {"OP_SFPU": 1, "OP_INIT": f"{op}_tile_init{template}",
                              "OP_CALL": f"{op}_tile{template}"}, a, True)
    want = [model(float(x)) for x in a[:len(xs)]]
    assert [hex(bits(g)) for g in got[:len(xs)]] == [hex(bits(w)) for w in want]


@pytest.mark.parametrize("op, model, xs", [
    ("log1p", lambda x: bf16_nearest(model_log1p(x, False)), [0.0, 0.1, -0.3, 0.5, 3.0, 100.0]),
    ("atanh", lambda x: model_atanh(x, False), [0.0, 0.1, -0.3, 0.5, 0.75, -0.9]),
])
def test_16bit_dst_bits(exe, tmp_path, op, model, xs):
    a = tile(xs, ml_dtypes.bfloat16)
    got = run(exe, tmp_path, {"OP_SFPU": 1, "OP_INIT": f"{op}_tile_init",
                              "OP_CALL": f"{op}_tile"}, a, False)
    want = [model(float(x)) for x in a[:len(xs)]]
    assert [hex(bits(g)) for g in got[:len(xs)]] == [hex(bits(w)) for w in want]


@pytest.mark.parametrize("exponent", [2.0, 0.5, -1.5])
def test_power_bf16_bits(exe, tmp_path, exponent):
    xs = [0.25, 1.0, 1.5, 2.0, 3.0, 9.0, 100.0]
    a = tile(xs, ml_dtypes.bfloat16)
    got = run(exe, tmp_path, {"OP_SFPU_ARG": 1, "OP_INIT": "power_tile_init",
                              "OP_CALL": "power_tile", "OP_ARG": f"{bits(exponent)}u"}, a, False)
    want = [model_power_bf16(float(x), exponent) for x in a[:len(xs)]]
    assert [hex(bits(g)) for g in got[:len(xs)]] == [hex(bits(w)) for w in want]


@pytest.mark.parametrize("exponent", [2.0, 0.5, -1.5, 7.25])
def test_power_fp32_bits(exe, tmp_path, exponent):
    xs = [0.25, 1.0, 1.5, 2.0, 3.0, 9.0, 100.0, 1.4142135]
    a = tile(xs)
    got = run(exe, tmp_path, {"OP_SFPU_ARG": 1, "OP_INIT": "power_tile_init",
                              "OP_CALL": "power_tile", "OP_ARG": f"{bits(exponent)}u"}, a, True)
    want = [model_power_fp32(float(x), exponent) for x in a[:len(xs)]]
    assert [hex(bits(g)) for g in got[:len(xs)]] == [hex(bits(w)) for w in want]


def test_rpow_bf16_bits(exe, tmp_path):
    # rpow_tile: the binary power with the scalar as the base (exp_21f with a 16-bit DST)
    xs = [0.0, 1.0, -1.0, 0.5, 2.5, -3.0, 7.0]
    a = tile(xs, ml_dtypes.bfloat16)
    got = run(exe, tmp_path, {"OP_SFPU_ARG": 1, "OP_INIT": "rpow_tile_init",
                              "OP_CALL": "rpow_tile", "OP_ARG": f"{bits(2.5)}u"}, a, False)
    want = [model_power_bf16(2.5, float(x)) for x in a[:len(xs)]]
    assert [hex(bits(g)) for g in got[:len(xs)]] == [hex(bits(w)) for w in want]


def test_atan2_fp32_bits(exe, tmp_path):
    ys = [0.0, 1.0, -1.0, 2.0, -3.0, 0.5, 10.0, -0.01, 3.0]
    xs = [0.0, 1.0, -1.0, -2.0, 0.0, 7.0, -0.3, -5.0, 2.9]
    a, b = tile(ys), tile(xs)
    pa, pb, pc = tmp_path / "a.bin", tmp_path / "b.bin", tmp_path / "c.bin"
    a.tofile(pa)
    b.tofile(pb)
    spec = "OP_SFPU_BINARY=1;OP_INIT=atan2_binary_tile_init;OP_CALL=atan2_binary_tile"
    mockbuild.run_host(exe, [spec, "f32", "f32", "1", "1", str(pa), str(pb), str(pc)])
    got = np.fromfile(pc, dtype=np.float32)
    want = [model_atan2_fp32(float(y), float(x)) for y, x in zip(ys, xs)]
    assert [hex(bits(g)) for g in got[:len(ys)]] == [hex(bits(w)) for w in want]


def test_fmod_bits(exe, tmp_path):
    s = 0.3
    xs = [0.0, 0.3, 0.6, 0.9, -1.0, 2.95, 17.0, -40.7, 1e6]
    a = tile(xs)
    got = run(exe, tmp_path, {"OP_SFPU_INIT_ARGS": 1, "OP_INIT": "fmod_tile_init",
                              "OP_CALL": "fmod_tile", "OP_ARG": f"{bits(f32(s))}u",
                              "OP_ARG2": f"{bits(f32(Fraction(1) / Fraction(f32(s))))}u"},
              a, True)
    want = [model_fmod(float(x), f32(s)) for x in a[:len(xs)]]
    assert [hex(bits(g)) for g in got[:len(xs)]] == [hex(bits(w)) for w in want]


def test_the_device_algorithm_is_not_libm(exe, tmp_path):
    # the pinned bits are the algorithm's: some differ from the correctly rounded result
    xs = np.random.default_rng(1).uniform(-100, 100, 1024).astype(np.float32)
    got = run(exe, tmp_path, {"OP_SFPU": 1, "OP_INIT": "sin_tile_init", "OP_CALL": "sin_tile"},
              xs, True)
    exact = np.sin(xs.astype(np.float64)).astype(np.float32)
    assert 0 < np.count_nonzero(got != exact) < 1024 // 2
    assert [bits(model_sin(float(x), True)) for x in xs[:64]] == [bits(g) for g in got[:64]]
