// tilelang-tt mock TT-Metalium: the vector engine (SFPU) functions on DST tiles.
//
// Each function follows its Wormhole LLK kernel in TT-Metalium 0.81.1
// (hw/ckernels/wormhole_b0/metal/llk_api/llk_sfpu/ckernel_sfpu_<name>.h): same constants, same
// polynomial / Newton steps, same bit manipulations, same final rounding. The instruction model
// follows the Tensix ISA documentation and ttsim: SFPMAD (and SFPMUL / SFPADD, which are
// SFPMAD with c = 0 / b = 1) rounds once to nearest even and flushes denormal inputs and
// outputs to zero; SFPSTOCHRND to BF16 rounds half away from zero; SFPSTORE into a 16-bit DST
// truncates. Independent implementation; docs/MOCK.md maps each function to its source.
#include "sfpu.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "fpu.hpp"

// The tile loops get a clone for CPUs with FMA (x86-64-v3): SFPMAD is a fused multiply-add, and
// without the instruction std::fma is a slow library call. Both clones round identically.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(TTMOCK_NO_CLONES)
#define SFPU_HOT __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define SFPU_HOT
#endif
// everything a tile loop calls is inlined into it, so each clone compiles it for its target
#define SINLINE inline __attribute__((always_inline))

namespace ttmock::sfpu {
namespace {

constexpr int kTileElems = 1024;

SINLINE uint32_t B(float f) { return std::bit_cast<uint32_t>(f); }
SINLINE float F(uint32_t u) { return std::bit_cast<float>(u); }
// denormals and zeros -> +0; a float compare and select, so SFPMAD chains stay in FP registers
SINLINE float flush(float x) { return std::fabs(x) < 0x1p-126f ? 0.0f : x; }

// SFPMAD: d = a * b + c, one rounding; denormals in and out become zero; a zero result is +0
SINLINE float mad(float a, float b, float c) { return flush(std::fma(flush(a), flush(b), flush(c))); }
SINLINE float mul(float a, float b) { return mad(a, b, 0.0f); }
SINLINE float add(float a, float b) { return mad(a, 1.0f, b); }

// SFPSTOCHRND FP32 -> BF16, round to nearest: ties away from zero; zero/denormal -> +0, NaN -> Inf
SINLINE float round_bf16(float x) {
    uint32_t u = B(x);
    const uint32_t e = (u >> 23) & 255;
    if (e == 0) return 0.0f;
    if (e == 255) return F(u & 0xFF800000u);
    const uint32_t low = u & 0xFFFF;
    u -= low;
    if (low >= 0x8000) u += 0x10000;
    return F(u);
}
// float32_to_bf16_rne (ckernel_sfpu_conversions.h): software round to nearest even
SINLINE float rne_bf16(float x) {
    const uint32_t u = B(x);
    return F((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000u);
}

SINLINE int32_t exexp(float x) { return static_cast<int32_t>((B(x) >> 23) & 255) - 127; }
SINLINE int32_t exexp_biased(float x) { return static_cast<int32_t>((B(x) >> 23) & 255); }
SINLINE float setexp(float x, int32_t e) { return F((B(x) & 0x807FFFFFu) | ((static_cast<uint32_t>(e) & 255) << 23)); }
SINLINE float addexp(float x, int32_t d) { return setexp(x, exexp_biased(x) + d); }
SINLINE float setsgn(float x, uint32_t s) { return F((B(x) & 0x7FFFFFFFu) | (s << 31)); }
SINLINE float copysgn(float x, float s) { return F((B(x) & 0x7FFFFFFFu) | (B(s) & 0x80000000u)); }
SINLINE float copyman(float x, float m) { return F((B(x) & 0xFF800000u) | (B(m) & 0x7FFFFFu)); }
SINLINE uint32_t shft(uint32_t v, int32_t s) {  // SFPSHFT, logical
    return s >= 32 || s <= -32 ? 0u : (s >= 0 ? v << s : v >> -s);
}
// SFPSTOCHRND float -> integer, round to nearest (ties away), sign-magnitude, saturating
SINLINE int32_t to_int_nearest(float x, int32_t max_mag) {
    const float m = std::floor(std::fabs(x) + 0.5f);
    const int32_t mag = m >= static_cast<float>(max_mag) ? max_mag : static_cast<int32_t>(m);
    return std::signbit(x) ? -mag : mag;
}
// IEEE fp32 -> fp16 bits, nearest even (how the SFPI compiler encodes vLut16 constants)
SINLINE uint16_t to_fp16(float x) {
    const uint32_t u = B(x);
    const uint32_t s = (u >> 16) & 0x8000;
    const int32_t e = static_cast<int32_t>((u >> 23) & 255) - 127 + 15;
    if ((u & 0x7FFFFFFF) == 0 || e <= 0) return static_cast<uint16_t>(s);
    uint32_t m = (u & 0x7FFFFF) | 0x800000;
    uint32_t r = (m + 0xFFF + ((m >> 13) & 1)) >> 13;  // 11 bits incl. implicit one
    int32_t ee = e;
    if (r & 0x800) { r >>= 1; ++ee; }
    return static_cast<uint16_t>(s | (static_cast<uint32_t>(ee) << 10) | (r & 0x3FF));
}
SINLINE float lut16(uint16_t x) {  // Lut16ToFp32 (SFPLUTFP32)
    const uint32_t s = x >> 15, e = (x >> 10) & 31, m = x & 0x3FF;
    return F((s << 31) | ((e == 31 ? 0 : 112 + e) << 23) | (m << 13));
}
SINLINE float lut8(float c) {  // an SFPLUT coefficient: sign, 3-bit exponent 127-e, 4-bit mantissa
    if (c == 0.0f) return 0.0f;
    const int32_t e = 127 - exexp_biased(c);
    const uint32_t m = (B(c) >> 19) & 15;
    return F((B(c) & 0x80000000u) | (static_cast<uint32_t>(127 - std::clamp(e, 0, 7)) << 23) | (m << 19));
}

// SFPLUTFP32, 6-entry FP16 table (slopes s[6], intercepts c[6], splits at .5 1 1.5 2 3)
SINLINE float lut6(float x, const float* s, const float* c, bool retain_sign) {
    const float b = std::fabs(x);
    const int i = b < 0.5f ? 0 : b < 1.0f ? 1 : b < 1.5f ? 2 : b < 2.0f ? 3 : b < 3.0f ? 4 : 5;
    const float d = mad(lut16(to_fp16(s[i])), b, lut16(to_fp16(c[i])));
    return retain_sign ? copysgn(d, x) : d;
}

// ---- exp (ckernel_sfpu_exp.h) --------------------------------------------------------------------
// _sfpu_exp_21f_bf16_: exp(x) = 2^xi * 2^xf (Moroz et al. exp_21f), 2nd-degree polynomial
SINLINE float exp_21f(float val, bool to_bf16) {
    float xlog2 = mad(val, 1.4426950216293334961f, 127.0f);
    xlog2 = std::clamp(xlog2, 0.0f, 255.0f);
    const uint32_t man = (B(xlog2) & 0x7FFFFF) | 0x800000;
    const uint32_t z = xlog2 == 0.0f ? 0u : shft(man, exexp(xlog2));
    const int32_t expo = static_cast<int32_t>((z >> 23) & 255);
    float frac = static_cast<float>(z & 0x7FFFFF);
    frac = mad(frac, mad(frac, 4.791750143340323e-15f, 7.839635491371155e-08f), 1.0017248f);
    const float y = setexp(frac, expo);
    return to_bf16 ? round_bf16(y) : y;
}

// _sfpu_exp_fp32_accurate_ (N. Juffa): round(x/ln2), two-part Cody-Waite, degree-7 polynomial
SINLINE float exp_fp32(float a) {
    float j = mul(1.442695f, a);
    const int32_t i = to_int_nearest(j, 32767);
    j = static_cast<float>(i);
    float f = mad(j, -6.93145752e-1f, a);
    f = mad(j, -1.42860677e-6f, f);
    float r = 1.37805939e-3f;
    r = mad(r, f, 8.37312452e-3f);
    r = mad(r, f, 4.16695364e-2f);
    r = mad(r, f, 1.66664720e-1f);
    r = mad(r, f, 4.99999851e-1f);
    const float y = mad(r, f, 1.0f);
    r = mad(y, f, 1.0f);
    const int32_t e = exexp_biased(r) + i;
    if (std::isnan(a)) return a;
    if (e < 1) return 0.0f;
    if (e >= 255) return std::numeric_limits<float>::infinity();
    return setexp(r, e);
}

// approximate mode (Schraudolph): bits = uint16(round(x * 256/ln2 + (127*256 - 11.2))) << 15
SINLINE float exp_approx(float x) {
    x = std::max(x, -88.5f);
    const float t = mad(x, 369.329925537109375f, 32500.818359375f);
    const int32_t q = std::clamp(to_int_nearest(t, 65535), 0, 65535);
    return F(static_cast<uint32_t>(q) << 15);
}

// ---- reciprocal (ckernel_sfpu_recip.h) --------------------------------------------------------------
struct RecipConst { float p0, p1, p2; };
constexpr RecipConst kRecipFp32{0.3232325017452239990234375f, 1.4545459747314453125f, 2.121212482452392578125f};
constexpr RecipConst kRecipBf16{0.32133400440216064453125f, 1.4514148235321044921875f, 2.1200883388519287109375f};

// sfpu_reciprocal_iter: quadratic initial estimate on the mantissa, `iters` Newton steps, scale
SINLINE float recip_iter(float in, int iters, bool to_bf16, const RecipConst& k, bool normalized = false) {
    const float nx = normalized ? setsgn(in, 1) : copyman(-1.0f, in);  // -mantissa in [1, 2)
    float y = mad(k.p0, nx, k.p1);
    const uint32_t scale_bits = ~B(in);
    y = mad(y, nx, k.p2);
    float scale = F(scale_bits & 0xFF800000u);
    float t = mad(nx, y, 1.0f);
    scale = mul(scale, 0.5f);
    if (iters >= 1) y = mad(y, t, y);
    if (iters >= 2) {
        t = mad(nx, y, 1.0f);
        y = mad(y, t, y);
    }
    if (to_bf16) y = round_bf16(y);
    if (!normalized) y = mul(y, scale);
    return copysgn(y, in);
}

// ---- sqrt / rsqrt (ckernel_sfpu_sqrt.h, _calculate_sqrt_body_) -------------------------------------
SINLINE float sqrt_body(float x, bool approx, bool reciprocal) {
    const uint32_t inf = 0x7F800000u;
    const int32_t i = static_cast<int32_t>(B(x) >> 1);
    float y = F(static_cast<uint32_t>((approx ? 0x5f0b3892 : 0x5f1110a0) - i));
    const bool nonzero = (B(x) << 1) != 0;
    const bool not_inf = B(x) != inf;
    if (approx) {
        const float c = mul(x, y);
        const float t = mad(-y, c, 1.89099014875f);
        if (reciprocal) {
            if (not_inf && nonzero) {
                y = mul(y, t);
                if (x < 0.0f) y = std::numeric_limits<float>::quiet_NaN();
            } else {
                y = F(inf - B(x));
            }
        } else {
            y = c;
            if (not_inf) y = mul(y, t);
        }
    } else {
        float xy = mul(x, y);
        const float c = mul(-y, xy);
        y = mul(y, mad(c, add(2.2533049f, c), 2.2825186f));
        xy = mul(x, y);
        const float one_minus_xyy = mad(-y, xy, 1.0f);
        if (reciprocal) {
            const float half_y = addexp(y, -1);
            if (not_inf && nonzero) {
                y = mad(one_minus_xyy, half_y, y);
                if (x < 0.0f) y = std::numeric_limits<float>::quiet_NaN();
            } else {
                y = F(inf - B(x));
            }
        } else {
            const float half_xy = mul(0.5f, xy);
            if (static_cast<int32_t>(B(x)) < static_cast<int32_t>(inf)) y = mad(one_minus_xyy, half_xy, xy);
        }
    }
    if (!reciprocal) {
        if (!nonzero) {
            y = x;
        } else if (x < 0.0f) {
            y = std::numeric_limits<float>::quiet_NaN();
        }
    }
    return y;
}

// ---- log (ckernel_sfpu_log.h, calculate_log_body; N. Juffa) ------------------------------------------
// P(m) of log(1 + m) = m + m^2 P(m): degree 8 with an fp32 DST, degree 1 with a 16-bit one (log and
// log1p share it)
SINLINE float log_poly(float m, bool fp32) {
    float r;
    if (fp32) {
        r = -0x1.92cp-5f;
        r = mad(r, m, 0x1.b84p-4f);
        r = mad(r, m, -0x1.0c4p-3f);
        r = mad(r, m, 0x1.274p-3f);
        r = mad(r, m, -0x1.55p-3f);
        r = mad(r, m, 0x1.998p-3f);
        r = mad(r, m, -0x1.00001ap-2f);
        r = mad(r, m, 0x1.555572p-2f);
        r = mad(r, m, -0.5f);
    } else {
        r = mad(-0.25f, m, 0x1.744p-2f);
        r = mad(r, m, -0x1.008p-1f);
    }
    return r;
}
SINLINE float log_body(float a, bool fp32) {
    constexpr float kLn2Scaled = 0.693147182f * 1.19209290e-7f;
    a = mad(a, 1.0f, 0.0f);
    const int32_t e = static_cast<int32_t>(B(a) - B(0.75f)) & static_cast<int32_t>(0xFF800000u);
    float m = F(B(a) - static_cast<uint32_t>(e));
    m = add(m, -1.0f);
    if (std::signbit(a)) return std::numeric_limits<float>::quiet_NaN();
    const float s = mul(m, m);
    float r = log_poly(m, fp32);
    const float a_half = addexp(a, -1);
    r = mad(r, s, m);
    float e_float = static_cast<float>(e < 0 ? -static_cast<int64_t>(e) : e);
    e_float = copysgn(e_float, F(static_cast<uint32_t>(e)));
    float result = mad(e_float, kLn2Scaled, r);
    if (exexp_biased(a_half) == 255) result = mul(result, a_half);
    return result;
}

// ---- tanh (ckernel_sfpu_tanh.h) -----------------------------------------------------------------------
SINLINE float tanh_fp32(float x) {  // _sfpu_tanh_fp32_accurate_ (N. Juffa)
    float j = mul(x, 2.0f * 1.442695f);
    float a = add(x, x);
    const int32_t i = std::min(std::abs(to_int_nearest(j, 255)), 255);
    j = static_cast<float>(i);
    a = setsgn(a, 0);
    float f = mad(j, -0.6931471805599453f, a);
    float r = 1.974105835e-04f;
    r = mad(r, f, 1.393318176e-3f);
    r = mad(r, f, 8.331298828e-3f);
    r = mad(r, f, 4.166680202e-2f);
    const float s = mul(f, f);
    r = mad(r, f, 1.666667163e-1f);
    const float w = 0.5f;
    r = mad(r, f, w);
    r = mad(r, s, f);
    const float scale = setexp(0.0f, i + 126);
    const float bias0 = add(scale, -w);
    a = F(B(a) - 1);
    const float x0 = mad(r, scale, bias0);
    float y = mad(a, 0.0f, 1.0f);
    const float x1 = add(x0, 1.0f);
    float rcp = F(0xfef30000u - B(x1));
    float t = mad(x1, rcp, 1.0f);
    if (i < 61) {
        t = mad(t, t, t);
        y = x;
        rcp = mad(rcp, t, rcp);
        const float y0 = mul(x0, rcp);
        t = mad(x1, y0, x0);
        if (exexp_biased(x) >= 115) y = mad(t, rcp, y0);
    }
    return copysgn(y, x);
}
SINLINE float tanh_poly(float x) {  // _sfpu_tanh_polynomial_x2_ (16-bit DST)
    const float a = std::fabs(x);
    float r = 5.876733921468257904052734375e-3f;
    r = mad(r, a, -6.6649019718170166015625e-2f);
    r = mad(r, a, 0.281917631626129150390625f);
    r = mad(r, a, -0.4890659749507904052734375f);
    r = mad(r, a, 3.0897438526153564453125e-2f);
    r = mad(r, a, 0.999004364013671875f);
    r = mul(r, a);
    return copysgn(std::min(r, 1.0f), x);
}
SINLINE float tanh_approx(float x) {
    static const float s[6] = {0.96191406f, 0.57617188f, 0.28710938f, 0.0964355469f, 0.0390625f, 0.0f};
    static const float c[6] = {0.0f, 0.192871094f, 0.48193359f, 0.76806641f, 0.8828125f, 1.0f};
    return lut6(x, s, c, true);
}

// ---- gelu (ckernel_sfpu_gelu.h) -------------------------------------------------------------------------
SINLINE float gelu_approx(float x) {  // calculate_gelu_appx: x/2 + piecewise-linear LUT of |x|
    static const float s[6] = {0.1928f, 0.4939f, 0.6188f, 0.6099f, 0.5402f, 0.5f};
    static const float c[6] = {-0.00010443f, -0.1604f, -0.2796f, -0.2635f, -0.1194f, 0.0f};
    return add(mul(x, 0.5f), lut6(x, s, c, false));
}
SINLINE float gelu_piecewise(float x) {  // calculate_gelu_piecewise (16-bit DST, precise mode)
    const float x2 = mul(x, x);
    if (!(x > -5.54259443f)) return 0.0f;
    const float xlog2 = mad(x2, -0.72134752044f, 127.0f);
    const uint32_t z = xlog2 <= 0.0f ? 0u : shft((B(xlog2) & 0x7FFFFF) | 0x800000, exexp(xlog2));
    float frac = static_cast<float>(z & 0x7FFFFF);
    frac = mad(frac, mad(frac, 4.791750143340323e-15f, 7.839635491371155e-08f), 1.0017248f);
    const float exp_val = setexp(frac, static_cast<int32_t>((z >> 23) & 255));
    float poly = mad(x, 7.5950479368e-04f, 1.3809983619e-02f);
    poly = mad(x, poly, 9.5413386822e-02f);
    poly = mad(x, poly, 3.0369991064e-01f);
    const float h = mul(exp_val, poly);
    const float hs = add(add(h, 0.375f), -0.375f);
    float result = mul(x, hs);
    if (x >= -3.125f) {
        const float c[7] = {3.9894227818e-01f, -6.6361041488e-02f, 9.7720050615e-03f, -1.0717806322e-03f,
                            8.1812159812e-05f, -3.8082057209e-06f, 7.9821413868e-08f};
        float p = c[6];
        for (int k = 5; k >= 0; --k) p = mad(x2, p, c[k]);
        const float phi = mad(x, p, 0.5f);
        result = mul(x, phi);
        if (x >= 2.78125f) result = x;
    }
    return result;
}
SINLINE float gelu_fp32(float x) {  // 32-bit DST, precise mode: x * (1 + erf(x / sqrt 2)) / 2
    // The LLK evaluates erf with a degree-16 rational approximation accurate to fp32 (erf(x) is
    // not modelled term by term here; libm's erff stands in, within a few fp32 ulp of it).
    if (!(x > -5.54259443f)) return x - x;
    const float scaled = std::min(mul(x, 0.7071067811865475f), 10.0f);
    const float erf_val = std::clamp(std::erf(scaled), -1.0f, 1.0f);
    if (erf_val == -1.0f) return mul(x, 2.9802322387695313e-08f);
    return mul(x, mad(0.5f, erf_val, 0.5f));
}

// ---- sigmoid (ckernel_sfpu_sigmoid.h, ckernel_sfpu_sigmoid_appx.h) ---------------------------------------
SINLINE float sigmoid(float x, bool fp32) {
    const float e = fp32 ? exp_fp32(F(B(x) ^ 0x80000000u)) : exp_21f(F(B(x) ^ 0x80000000u), false);
    return recip_iter(add(1.0f, e), fp32 ? 2 : 1, false, kRecipFp32);
}
SINLINE float sigmoid_approx(float x) {  // SFPLUT: a*|x| + c per range, sign of x, then + 0.5
    const float b = std::fabs(x);
    const float a = b < 1.0f ? 0.22656f : b < 2.0f ? 0.26562f : 0.0f;
    const float c = b < 1.0f ? 0.0f : b < 2.0f ? -0.04687f : 0.5f;
    return add(copysgn(mad(lut8(a), b, lut8(c)), x), 0.5f);
}

// ---- trigonometry (ckernel_sfpu_trigonometry.h) ------------------------------------------------------
// Rounding to an integer by adding 1.5 * 2^23 (the integer lands in the low mantissa bits), then
// a four-part Cody-Waite reduction by pi (sin) or pi/2 (cos, tan), odd polynomials on the reduced
// argument; the parity of the integer picks the sign (sin, cos) or the reciprocal branch (tan).
constexpr float kRoundBias = 12582912.0f;  // 1.5 * 2^23
constexpr float kFrac1Pi = 0.31830987334251404f, kFrac2Pi = 0.6366197466850281f;
constexpr float kPiO2 = 1.5707963705062866f;
// -pi = kPi[0] + kPi[1] + kPi[2] + kPi[3]; -pi/2 the same halved (sine_init, cosine_init)
constexpr float kNegPi[4] = {-0x1.92p+1f, -0x1.fbp-11f, -0x1.51p-21f, -0x1.0b4612p-33f};
constexpr float kNegPiO2[4] = {-0x1.92p+0f, -0x1.fbp-12f, -0x1.51p-22f, -0x1.0b4612p-34f};

SINLINE float cody_waite(float v, float j, const float* p) {
    float a = mad(j, p[0], v);
    a = mad(j, p[1], a);
    a = mad(j, p[2], a);
    return mad(j, p[3], a);
}
// sin(a) = a + a^3 (C0 + a^2 (C1 + a^2 (C2 [+ a^2 C3]))), a's sign flipped for odd quadrants
SINLINE float sin_poly(float a, uint32_t parity, bool fp32) {
    const float s = mul(a, a);
    a = F(B(a) ^ (parity << 31));
    float r;
    if (fp32) {
        r = mad(0x1.5dc908p-19f, s, -0x1.9f70fp-13f);
        r = mad(r, s, 0x1.110edap-7f);
        const float c = mul(a, s);
        r = mad(r, s, -0x1.55554cp-3f);
        return mad(r, c, a);
    }
    r = mad(-0x1.8b10a4p-13f, s, 0x1.10c2a2p-7f);
    const float c = mul(a, s);
    r = mad(r, s, -0x1.5554a4p-3f);
    return round_bf16(mad(r, c, a));
}
SINLINE float sine(float v, bool fp32) {  // calculate_sine
    float j = mad(v, kFrac1Pi, kRoundBias);
    const uint32_t q = B(j) & 1;
    j = add(j, -kRoundBias);
    return sin_poly(cody_waite(v, j, kNegPi), q, fp32);
}
SINLINE float cosine(float v, bool fp32) {  // calculate_cosine: j = 2 round(v/pi + 1/2) - 1
    float j = mad(v, kFrac1Pi, 0.5f);
    j = add(j, kRoundBias);
    const uint32_t q = B(j) & 1;
    j = add(j, -kRoundBias);
    j = mad(j, 2.0f, -1.0f);
    return sin_poly(cody_waite(v, j, kNegPiO2), q, fp32);
}
// -1/r: the reciprocal's quadratic seed on r's mantissa and one Newton step (sfpu_tan)
SINLINE float tangent(float v, bool fp32) {  // calculate_tangent
    float j = mad(v, kFrac2Pi, kRoundBias);
    const bool odd = B(j) & 1;
    j = add(j, -kRoundBias);
    const float a = cody_waite(v, j, kNegPiO2);
    const float s = mul(a, a);
    float t;
    if (fp32) {
        t = mad(0x1.fa9f82p-9f, s, 0x1.2b404p-10f);
        t = mad(t, s, 0x1.4787dp-7f);
        t = mad(t, s, 0x1.620abcp-6f);
        t = mad(t, s, 0x1.ba5716p-5f);
        t = mad(t, s, 0x1.111072p-3f);
        t = mad(t, s, 0x1.555556p-2f);
    } else {
        t = mad(0x1.4f1f4ep-4f, s, 0x1.02b98p-3f);
        t = mad(t, s, 0x1.55953p-2f);
    }
    t = mul(t, s);
    float r = mad(t, a, a);
    if (odd) {  // tan(x) = -1 / tan(a)
        float resid = 0.0f;
        if (fp32) resid = mad(t, a, mad(-1.0f, r, a));  // a + t a - r, compensated
        const float nx = copyman(-1.0f, r);
        float y = mad(kRecipFp32.p0, nx, kRecipFp32.p1);
        y = mad(y, nx, kRecipFp32.p2);
        const float scale = mul(F(~B(r) & 0xFF800000u), 0.5f);
        const float e = mad(nx, y, 1.0f);
        y = mad(y, e, y);
        y = mul(y, scale);
        if (fp32) {
            r = mad(r, y, 1.0f);
            r = mad(resid, y, r);
            r = mad(r, y, y);
        } else {
            r = y;
        }
    }
    return fp32 ? r : round_bf16(r);
}

// _sfpu_reciprocal_gt0_: 1/x for x > 0 from the seed 0xfef392e0 - bits(x) (about -1/x), one
// Newton step more with an fp32 DST, then a cubic correction y (1 + e + e^2)
SINLINE float recip_gt0(float x, bool fp32) {
    float y = F(0xfef392e0u - B(x));
    float e = mad(x, y, 1.0f);
    if (fp32) {
        y = mad(y, e, y);
        e = mad(x, y, 1.0f);
    }
    const float p = mad(e, e, e);
    y = F(B(y) ^ 0x80000000u);
    return mad(y, p, y);
}

SINLINE float atan_fp32(float x) {  // sfpu_atan_fp32: atan on [0, 1], pi/2 - atan(1/|x|) above
    const float ax = F(B(x) & 0x7FFFFFFFu);
    float a = ax;
    const int32_t e = exexp(a);
    if (e >= 0) {
        a = mul(F(B(a) - 1), 0.0f);  // 0, NaN stays NaN
        if (e < 26) a = recip_gt0(ax, true);
    }
    const float s = mul(a, a);
    float p = mad(0x1.01cp-8f, s, -0x1.4bcp-6f);
    p = mad(p, s, 0x1.93p-5f);
    p = mad(p, s, -0x1.48cp-4f);
    p = mad(p, s, 0x1.bd4p-4f);
    p = mad(p, s, -0x1.24p-3f);
    const float a3 = mul(s, a);
    p = mad(p, s, 0x1.999384p-3f);
    p = mad(p, s, -0x1.555552p-2f);
    float r = mad(p, a3, a);
    if (e >= 0) r = add(kPiO2, F(B(r) ^ 0x80000000u));
    return copysgn(r, x);
}
SINLINE float atan_bf16(float x) {  // sfpu_atan_bf16: degree-7 odd minimax, 1/|x| above 1
    if (std::isnan(x)) return std::numeric_limits<float>::quiet_NaN();
    float t0 = std::fabs(x);
    const float m1 = add(t0, -1.0f);
    const bool big = !std::signbit(m1);
    if (big) t0 = recip_iter(t0, 2, false, kRecipFp32);
    float t1 = mul(t0, t0);
    float p = mad(t1, -4.4326744973659515380859375e-2f, 0.1555790007114410400390625f);
    p = mad(t1, p, -0.325808584690093994140625f);
    p = mad(t1, p, 0.999787867069244384765625f);
    t1 = mul(p, t0);
    if (big) t1 = add(kPiO2, F(B(t1) ^ 0x80000000u));
    return round_bf16(copysgn(t1, x));
}

// _sfpu_quarter_exp_abs_ / _sfpu_quarter_expm1_abs_: |x| = j ln2 + f with j = round(|x| log2 e)
// clamped to [0, 255], a polynomial in f, scaled by 2^j / 4 (no overflow below 2^128)
SINLINE int32_t reduce_ln2(float x, float& f, bool fp32) {
    const float jf = mul(x, 1.442695f);
    const float a = std::fabs(x);
    const int32_t i = std::min(std::abs(to_int_nearest(jf, 255)), 255);
    const float j = static_cast<float>(i);
    if (fp32) {
        f = mad(j, -0.693145752f, a);
        f = mad(j, -1.42860677e-6f, f);
    } else {
        f = mad(j, -0.6931471805599453f, a);
    }
    return i;
}
SINLINE float quarter_exp_abs(float x, bool fp32) {
    float f;
    int32_t i = reduce_ln2(x, f, fp32);
    float r;
    if (fp32) {
        r = mad(1.37805939e-3f, f, 8.37312452e-3f);
        r = mad(r, f, 4.16695364e-2f);
        r = mad(r, f, 1.66664720e-1f);
        r = mad(r, f, 4.99999851e-1f);
        r = mad(r, f, 1.0f);
    } else {
        r = mad(0.038877178f, f, 0.168174848f);
        r = mad(r, f, 0.500122011f);
        r = mad(r, f, 0.999963462f);
    }
    i += 125;
    const float y = mul(std::fabs(x), std::numeric_limits<float>::infinity());
    r = mad(r, f, 1.0f);
    return i < 255 ? mul(r, F(static_cast<uint32_t>(i) << 23)) : y;
}
SINLINE float quarter_expm1_abs(float x, bool fp32) {
    float f;
    const int32_t i = reduce_ln2(x, f, fp32);
    float r, s;
    if (fp32) {
        r = mad(1.974105835e-04f, f, 1.393107930e-3f);
        r = mad(r, f, 8.333439939e-3f);
        r = mad(r, f, 4.166680202e-2f);
        s = mul(f, f);
        r = mad(r, f, 1.666667163e-1f);
        r = mad(r, f, 4.999999702e-1f);
    } else {
        r = mad(8.361816406e-03f, f, 4.177856445e-02f);
        s = mul(f, f);
        r = mad(r, f, 1.666259766e-01f);
        r = mad(r, f, 0.5f);
    }
    r = mad(r, s, f);
    const float scale = F((static_cast<uint32_t>(i) << 23) + B(0.25f));
    const float bias = add(scale, -0.25f);
    const float y = mul(std::fabs(x), std::numeric_limits<float>::infinity());
    return i < 130 ? mad(r, scale, bias) : y;
}
SINLINE float cosh_fn(float x, bool fp32) {  // calculate_cosh: e^a / 2 + 1 / (2 e^a)
    const float q = quarter_exp_abs(std::fabs(x), fp32);
    const float r = mul(recip_gt0(q, fp32), 0.125f);
    float y = add(q, q);
    if (exexp(q) < 24) y = add(y, r);
    return fp32 ? y : round_bf16(y);
}
SINLINE float sinh_fn(float x, bool fp32) {  // _sfpu_sinh_: t/2 + t/(2(t + 1)), t = expm1|x|
    const float q = quarter_expm1_abs(x, fp32);
    const float r = recip_gt0(mad(4.0f, q, 1.0f), fp32);
    float y = x;
    const int32_t qe = exexp(q);
    if (qe >= -27) {
        y = add(q, q);
        if (qe < 23) y = mad(y, r, y);
    }
    y = copysgn(y, x);
    return fp32 ? y : round_bf16(y);
}

// ---- asin / acos (ckernel_sfpu_trigonometry.h) -------------------------------------------------------
// _sfpu_sqrt_endpoint_: the precise sqrt's magic-constant seed (sqrt_init<false>), its polynomial
// correction and one step
SINLINE float sqrt_endpoint(float x) {
    float y = F(0x5f1110a0u - (B(x) >> 1));
    float xy = mul(x, y);
    const float c = mul(F(B(y) ^ 0x80000000u), xy);
    y = mul(y, mad(c, add(2.2533049f, c), 2.2825186f));
    xy = mul(x, y);
    const float e = mad(F(B(y) ^ 0x80000000u), xy, 1.0f);
    return mad(e, mul(0.5f, xy), xy);
}
// sfpu_sqrt_custom: seed 0x5f370000 - bits(x) / 2, two Newton steps of 1/sqrt, times x
SINLINE float sqrt_custom(float x) {
    if (x == 0.0f || !std::isfinite(x)) return x;
    float r = F(0x5f370000u - (B(x) >> 1));
    const float nh = mul(x, -0.5f);
    for (int i = 0; i < 2; ++i) r = mul(mad(mul(r, r), nh, 1.5f), r);
    return mul(r, x);
}
// asin(|x|) = pi/2 - 2 asin(sqrt((1 - |x|)/2)) near 1, odd minimax below
SINLINE float asin_bf16_reduced(float v) {
    const float av = std::fabs(v);
    const bool endpoint = !std::signbit(add(av, -0.625f));
    const float z = endpoint ? sqrt_custom(mul(add(1.0f, F(B(av) ^ 0x80000000u)), 0.5f)) : av;
    const float z2 = mul(z, z);
    float p = mad(z2, 0.083148844540119171142578125f, 0.06381262838840484619140625f);
    p = mad(z2, p, 0.16771225631237030029296875f);
    p = mad(z2, p, 0.999978601932525634765625f);
    float r = mul(z, p);
    if (endpoint) r = mad(r, -2.0f, kPiO2);
    return copysgn(r, v);
}
SINLINE float asin_acos_bf16(float v, bool acos) {
    if (!(std::fabs(v) <= 1.0f)) return std::numeric_limits<float>::quiet_NaN();
    const float r = asin_bf16_reduced(v);
    return round_bf16(acos ? add(kPiO2, F(B(r) ^ 0x80000000u)) : r);
}
SINLINE float asin_acos_fp32(float x, bool acos) {  // sfpu_asin_fp32 / sfpu_acos_fp32
    const float ax = std::fabs(x);
    const float half_d = mul(add(1.0f, F(B(ax) ^ 0x80000000u)), 0.5f);
    const float t = add(ax, -0.5625f);
    float z = std::signbit(t) ? ax : sqrt_endpoint(half_d);
    const float s = mul(z, z);
    float p, r;
    if (!acos) {
        p = mad(0x1.9e0000p-5f, s, 0x1.364p-6f);
        p = mad(p, s, 0x1.7dcp-5f);
        p = mad(p, s, 0x1.329a74p-4f);
        p = mad(p, s, 0x1.55578cp-3f);
        p = mul(p, s);
        r = mad(p, z, z);
        if (!std::signbit(t)) r = mad(-2.0f, r, kPiO2);
        r = copysgn(r, x);
    } else {  // the sign of z: x's xor t's; + pi/2 where that or t is negative; doubled near 1
        p = mad(0x1.830p-5f, s, 0x1.ca0000p-8f);
        p = mad(p, s, 0x1.158p-5f);
        p = mad(p, s, 0x1.6acp-5f);
        p = mad(p, s, 0x1.33411ep-4f);
        p = mad(p, s, 0x1.555552p-3f);
        p = mul(p, s);
        z = F((B(z) & 0x7FFFFFFFu) | ((B(x) ^ B(t)) & 0x80000000u));
        r = mad(p, z, z);
        if ((B(z) | B(t)) & 0x80000000u) r = add(r, kPiO2);
        if (!std::signbit(t)) r = add(r, r);
    }
    if (std::signbit(half_d)) r = std::numeric_limits<float>::quiet_NaN();
    return r;
}

// ---- log1p and the inverse hyperbolic functions (ckernel_sfpu_log1p.h, ckernel_sfpu_trigonometry.h)
// calculate_log1p_fp32 (N. Juffa): 1 + a = 2^k (1 + m) with the split at 0.75 done on the bits,
// m = (a + 1) 2^-k - 1 computed as a 2^-k + (2^-k - 1), log1p(m) = m + m^2 P(m) (degree 8 with
// fp32 DST, 1 with 16-bit), + k ln2; NaN below -1, infinity and NaN through
SINLINE float log1p_fn(float a, bool fp32) {
    const float u = add(a, 1.0f);
    if (std::signbit(u)) return std::numeric_limits<float>::quiet_NaN();
    const int32_t e = static_cast<int32_t>((B(u) - B(0.75f)) & 0xFF800000u);
    float m = F(B(a) - static_cast<uint32_t>(e));
    const float sc = F(B(-4.0f) - static_cast<uint32_t>(e));
    const float t = mad(-0.25f, sc, -1.0f);
    m = add(m, t);
    const float s = mul(m, m);
    float r = log_poly(m, fp32);
    const float ef = copysgn(static_cast<float>(e < 0 ? -static_cast<int64_t>(e) : e), F(static_cast<uint32_t>(e)));
    r = mad(r, s, m);
    r = mad(ef, 0.693147182f * 1.19209290e-7f, r);
    if (static_cast<int32_t>(B(u)) >= static_cast<int32_t>(0x7F800000u)) r = u;
    return r;
}
// the argument the inverse hyperbolic functions store to DST before log1p (a 16-bit DST keeps
// its BF16 half, truncated)
SINLINE float through_dst(float x, bool fp32) {
    const uint32_t u = B(x);
    const uint32_t r = (u & 0x7F800000u) ? u : (u & 0x80000000u);
    return F(fp32 ? r : r & 0xFFFF0000u);
}
// _sfpu_sqrt_ge0_: the rsqrt seed 0x5f1110a0, 2 Newton steps (3 with fp32 DST), x times it and
// one step on the product; 0 for 0
SINLINE float sqrt_ge0(float x, bool fp32) {
    const float hx = addexp(x, -1);
    float y = F(0x5f1110a0u - (B(x) >> 1));
    for (int i = 0; i < (fp32 ? 3 : 2); ++i) {
        y = mul(y, mad(F(B(mul(hx, y)) ^ 0x80000000u), y, 1.5f));
    }
    float a = mul(x, y);
    a = mad(mul(0.5f, mad(F(B(a) ^ 0x80000000u), a, x)), y, a);
    return x == 0.0f ? 0.0f : a;
}
constexpr float kLog1pLarge = 268435456.0f;  // 2^28
constexpr float kLn2 = 0.6931471805599453f;
SINLINE float asinh_fn(float x, bool fp32) {  // calculate_asinh
    const float ax = std::fabs(x);
    float arg = 0.0f;
    if (ax >= kLog1pLarge) {
        arg = add(ax, -1.0f);
    } else if (ax >= 0.75f) {
        const float root = sqrt_ge0(mad(x, x, 1.0f), fp32);
        arg = mad(mul(x, x), recip_gt0(add(1.0f, root), fp32), ax);
    }
    float res = log1p_fn(through_dst(arg, fp32), fp32);
    if (ax >= kLog1pLarge) res = add(res, kLn2);
    if (ax < 0.75f) {  // |x| P(x^2), degree 6
        const float s = mul(x, x);
        float p = mad(4.375355784e-03f, s, -1.484858524e-02f);
        p = mad(p, s, 2.785361186e-02f);
        p = mad(p, s, -4.417778924e-02f);
        p = mad(p, s, 7.495806366e-02f);
        p = mad(p, s, -1.666652262e-01f);
        p = mad(p, s, 1.0f);
        res = mul(ax, p);
    }
    res = copysgn(res, x);
    return fp32 ? res : round_bf16(res);
}
SINLINE float acosh_fn(float x, bool fp32) {  // calculate_acosh
    float arg = add(x, -1.0f);
    if (x < kLog1pLarge) arg = add(arg, sqrt_ge0(mul(add(x, 1.0f), arg), fp32));
    float res = log1p_fn(through_dst(arg, fp32), fp32);
    if (x >= kLog1pLarge) res = add(res, kLn2);
    if (x == 1.0f) {
        res = 0.0f;
    } else if (x < 1.0f) {
        res = std::numeric_limits<float>::quiet_NaN();
    }
    return fp32 ? res : round_bf16(res);
}
SINLINE float atanh_fn(float x, bool fp32) {  // calculate_atanh: 0.5 log1p(2a / (1 - a))
    float a = std::fabs(x);
    if (a >= 1.0f) a = 0.0f;
    const float q = mul(add(a, a), recip_gt0(add(1.0f, F(B(a) ^ 0x80000000u)), fp32));
    float res = copysgn(mul(0.5f, log1p_fn(through_dst(q, fp32), fp32)), x);
    if (std::fabs(x) > 1.0f) {
        res = std::numeric_limits<float>::quiet_NaN();
    } else if (std::fabs(x) == 1.0f) {
        res = copysgn(std::numeric_limits<float>::infinity(), x);
    }
    return fp32 ? res : round_bf16(res);
}

// ---- erf (ckernel_sfpu_erf.h, ckernel_sfpu_piecewise_rational.h) --------------------------------------
// One-segment rational P(x)/Q(x) of degree 8/8 (odd numerator, even denominator, Horner in x^2),
// x clamped to [-10, 10], times the reciprocal of Q (2 Newton steps precise, none approximate),
// clamped to [-1, 1]. The table is the LLK's BF16 one (its fp32 table needs INP_FLOAT32, which
// TT-Metalium defines for no compute kernel the generator builds); no BF16 rounding
SINLINE float erf_fn(float x, bool approx) {
    x = std::clamp(x, -10.0f, 10.0f);
    const float x2 = mul(x, x);
    float d = mad(2.4813862145e-05f, x2, 8.2844606784e-03f);
    float n = mad(7.4481184425e-04f, x2, 4.5400281738e-02f);
    d = mad(d, x2, 1.3675764810e-01f);
    n = mad(n, x2, 2.7609212279e-01f);
    d = mad(d, x2, 5.7439188334e-01f);
    n = mad(n, x2, 1.1280932447e+00f);
    d = mad(d, x2, 1.0f);
    n = mul(n, x);
    const float r = mul(n, recip_iter(d, approx ? 0 : 2, false, kRecipFp32));
    return std::clamp(r, -1.0f, 1.0f);
}

// ---- power (ckernel_sfpu_unary_power.h, ckernel_sfpu_binary_pow.h) -------------------------------------
// _float_to_int32_positive_: the integer part of a non-negative float (0 below 1, INT32_MAX at
// 2^31 and above)
SINLINE int32_t to_int32_positive(float x) {
    const int32_t e = exexp(x);
    if (e < 0) return 0;
    if (e > 30) return std::numeric_limits<int32_t>::max();
    return static_cast<int32_t>(shft((B(x) & 0x7FFFFFu) | 0x800000u, e - 23));
}
// 16-bit DST (Moroz et al. exp_21f): log2|base| = exponent + cubic in the mantissa, z = pow *
// log2 clamped at -127, 2^z from the bits z 2^23 + 0x3f800000 with a quadratic correction of
// the fraction bits, rounded to BF16 (binary: no zero-base special case beyond its own)
SINLINE float pow_21f(float base, float pw, bool binary) {
    const float absb = F(B(base) & 0x7FFFFFFFu);
    const float x = setexp(absb, 127);
    float series = mad(x, 0x2.44734p-4f, -0xd.e712ap-4f);
    series = mad(x, series, 0x2.4f5388p+0f);
    series = mad(x, series, -0x1.952992p+0f);
    const float log2v = mad(series, 1.4426950408889634f, static_cast<float>(exexp(base)));
    float z = mul(pw, log2v);
    if (z < -127.0f) z = -127.0f;
    z = addexp(z, 23);
    const uint32_t zi = static_cast<uint32_t>(to_int32_positive(add(z, 1065353216.0f)));
    const int32_t zii = static_cast<int32_t>((zi >> 23) & 255) - 127;
    const int32_t zif = static_cast<int32_t>(zi & 0x7FFFFFu);
    const float d2 = mul(0.40196114e-7f, static_cast<float>(0xf94ee7 + zif));
    const float d3 = static_cast<float>(0x560e + zif);
    const uint32_t m = static_cast<uint32_t>(to_int32_positive(mul(d2, d3)));
    float y = setexp(F(m), 127 + zii);
    const int32_t pint = to_int_nearest(pw, 32767);
    if (std::signbit(base)) {  // sign-bit test: -0 too
        y = setsgn(y, static_cast<uint32_t>(std::abs(pint)) & 1);
        if (static_cast<float>(pint) != pw) y = std::numeric_limits<float>::quiet_NaN();
    }
    if (absb == 0.0f) {
        if (binary) {
            if (pw != 0.0f) y = pw < 0.0f ? std::numeric_limits<float>::quiet_NaN() : 0.0f;
        } else if (pw >= 0.0f) {
            if (pw > 0.0f) y = 0.0f;
        } else {
            y = std::numeric_limits<float>::quiet_NaN();
        }
    }
    return round_bf16(y);
}
// fp32 DST: log(m) = 2 atanh((m - 1)/(m + 1)) with m in [sqrt 2 / 2, sqrt 2) (3 Newton steps for
// 1/(m + 1), odd series to z^11), z = pow log2|base| as an unevaluated sum (pow split by
// Veltkamp), 2^z by k = round(z) and a degree-7 Taylor polynomial (unary) or the accurate exp
// (binary)
SINLINE float pow_fp32(float base, float pw, bool binary) {
    const float absb = F(B(base) & 0x7FFFFFFFu);
    float m = setexp(absb, 127);
    int32_t ex = exexp(absb);
    if (m >= 1.4142135381698608f) {
        m = binary ? mul(m, 0.5f) : addexp(m, -1);
        ex += 1;
    }
    const float mp1 = add(m, 1.0f);
    float r = binary ? mad(mp1, -0.2426406871192851f, 1.0f) : mad(mp1, -0.244f, 1.003f);
    for (int k = 0; k < 3; ++k) r = mul(r, mad(F(B(mp1) ^ 0x80000000u), r, 2.0f));
    const float z = mul(add(m, -1.0f), r);
    const float z2 = mul(z, z);
    float p = mad(z2, 0.09090909090909091f, 0.1111111111111111f);
    p = mad(z2, p, 0.14285714285714285f);
    p = mad(z2, p, 0.2f);
    p = mad(z2, p, 0.3333333333333333f);
    p = mad(z2, p, 1.0f);
    const float ln_m = mul(2.0f, mul(z, p));
    const float ef = static_cast<float>(ex);
    const float pc = mul(pw, 4097.0f);
    const float pw_hi = add(pc, F(B(add(pc, F(B(pw) ^ 0x80000000u))) ^ 0x80000000u));
    const float pw_lo = add(pw, F(B(pw_hi) ^ 0x80000000u));
    const float z_hi = mul(pw_hi, ef);
    const float z_lo = mad(pw_lo, ef, mul(pw, mul(ln_m, 1.4426950408889634f)));
    float s = add(z_hi, z_lo);
    float e = add(z_lo, F(B(add(s, F(B(z_hi) ^ 0x80000000u))) ^ 0x80000000u));
    float y;
    if (binary) {
        if (s < -127.0f) { s = -127.0f; e = 0.0f; }
    } else {
        s = std::max(s, -0x7e.ffff8p0f);
    }
    const float tmp = add(s, kRoundBias);  // round to nearest: + (2^23 + 2^22)
    const float k = add(tmp, -kRoundBias);
    const int32_t k_int = static_cast<int32_t>(B(tmp) - B(kRoundBias));
    const float f = add(add(s, F(B(k) ^ 0x80000000u)), e);
    if (binary) {
        y = exp_fp32(mul(f, 0.693147180559945309f));
        const int32_t oe = exexp_biased(y) + k_int;
        y = oe >= 255 ? std::numeric_limits<float>::infinity() : setexp(y, oe);
    } else {
        const float rr = mad(f, 0.693359375f, mul(f, -2.12194440e-4f));
        float q = mad(rr, 1.0f / 5040.0f, 1.0f / 720.0f);
        q = mad(rr, q, 1.0f / 120.0f);
        q = mad(rr, q, 1.0f / 24.0f);
        q = mad(rr, q, 1.0f / 6.0f);
        q = mad(rr, q, 0.5f);
        q = mad(rr, q, 1.0f);
        q = mad(rr, q, 1.0f);
        y = s >= 128.0f ? std::numeric_limits<float>::infinity() : setexp(q, exexp_biased(q) + k_int);
    }
    const float apw = binary ? std::fabs(pw) : pw;
    if (std::signbit(base)) {
        const int32_t pint = to_int_nearest(apw, 32767);
        y = setsgn(y, static_cast<uint32_t>(std::abs(pint)) & 1);
        if (static_cast<float>(pint) != apw) y = std::numeric_limits<float>::quiet_NaN();
    }
    if (absb == 0.0f) {
        if (binary) {
            if (apw != 0.0f) {
                y = copysgn(pw < 0.0f ? std::numeric_limits<float>::infinity() : 0.0f, y);
            }
            if (std::isnan(pw)) y = std::numeric_limits<float>::quiet_NaN();
        } else if (pw >= 0.0f) {
            if (pw > 0.0f) y = 0.0f;
        } else {
            y = std::numeric_limits<float>::quiet_NaN();
        }
    }
    return y;
}

// ---- fmod (ckernel_sfpu_fmod.h) --------------------------------------------------------------------------
// fmod(x, c) with c and 1/c from the init: the quotient |x| (1/|c|) truncated to an integer (by
// shifting the fraction bits out), one decrement when quotient |c| exceeds |x|, |x| - quotient
// |c| with x's sign, then up to 10 subtractions of |c| while the remainder is >= |c|; a
// remainder of magnitude |c| is 0, c = 0 gives NaN
SINLINE float fmod_fn(float val, float c, float c_recip) {
    const float sv = std::fabs(c), rv = std::fabs(c_recip);
    float v = std::fabs(val);
    const float qv = mul(v, rv);
    const int32_t e = exexp(qv);
    float q;
    if (e < 0) {
        q = 0.0f;
    } else if (e < 23) {
        q = F(shft(shft(B(qv), e - 23), 23 - e));
    } else {
        q = qv;
    }
    // `quotient * s > v`: the comparison's q s - v as one SFPMAD (as the model fuses a*b+c)
    if (e < 23 && mad(q, sv, F(B(v) ^ 0x80000000u)) > 0.0f) q = add(q, -1.0f);
    v = mad(F(B(q) ^ 0x80000000u), sv, v);
    v = copysgn(v, val);
    if (sv == 0.0f) v = std::numeric_limits<float>::quiet_NaN();
    for (int l = 0; l < 10; ++l) {
        if (!std::signbit(add(v, F(B(sv) ^ 0x80000000u)))) v = add(v, F(B(sv) ^ 0x80000000u));
    }
    if (add(std::fabs(v), F(B(sv) ^ 0x80000000u)) == 0.0f) v = 0.0f;
    return v;
}

// 10^n as the LLK's PRECOMPUTED_POW10_TABLE holds it (float literals 1e-45 .. 1e38; beyond:
// infinity above, zero below)
float pow10f(int n) {
    if (n > 38) return std::numeric_limits<float>::infinity();
    if (n < -45) return 0.0f;
    static const auto table = [] {
        std::array<float, 84> t{};
        for (int k = -45; k <= 38; ++k) t[k + 45] = std::strtof(("1e" + std::to_string(k)).c_str(), nullptr);
        return t;
    }();
    return table[n + 45];
}

// ckernel_sfpu_rounding_ops.h _trunc_body_: a mask of the sign, exponent and integer bits
// (SFPEXEXP, SFPSHFT2, SFPAND)
SINLINE float trunc_bits(float x) {
    const uint32_t u = B(x);
    const int32_t e = static_cast<int32_t>((u >> 23) & 0xFFu) - 127;
    if (e < 0) return F(u & 0x80000000u);
    if (e >= 23) return x;
    return F(u & (0xFFFFFFFFu << (23 - e)));
}

// ckernel_sfpu_binary_fmod.h _sfpu_binary_fmod_: a - trunc(a (1/b)) b with the 2-step reciprocal,
// one correction by |b| when the remainder reaches |b|, one when its sign differs from a's (the
// SFPU's sign-bit comparisons: -0 counts as negative), a == b gives 0, b == 0 NaN; BF16 rounding
// with a 16-bit DST
SINLINE float fmod_binary(float a, float b, bool fp32) {
    const float babs = std::fabs(b), nbabs = F(B(babs) ^ 0x80000000u);
    const float q = trunc_bits(mul(a, recip_iter(b, 2, false, kRecipFp32)));
    float r = mad(F(B(q) ^ 0x80000000u), b, a);
    if (std::fabs(r) >= babs) r = std::signbit(r) ? add(r, babs) : add(r, nbabs);
    if (!std::signbit(a)) {
        if (std::signbit(r)) r = add(r, babs);
    } else if (!std::signbit(r) && r != 0.0f) {
        r = add(r, nbabs);
    }
    if (a == b) r = 0.0f;
    if (b == 0.0f) r = std::numeric_limits<float>::quiet_NaN();
    return fp32 ? r : round_bf16(r);
}

// ckernel_sfpu_atan2.h _sfpu_atan2_(y, x): a = min(|x|, |y|) / max(|x|, |y|) (reciprocal with
// 2 Newton steps, none with a 16-bit DST or APPROX), a + a^3 P(a^2) (degree 7 fp32, 2 16-bit),
// pi/2 - r where |y| >= |x| (pi/4 where equal, 0 where both are 0), pi - r for x < 0 (sign
// bit), BF16 rounding with a 16-bit DST, y's sign; NaN when max(|x|, |y|) is NaN
SINLINE float atan2_fn(float y, float x, bool fp32, bool approx) {
    const bool low = !fp32 || approx;
    const float ax = std::fabs(x), ay = std::fabs(y);
    const float mn = ay < ax ? ay : ax, mx = ay < ax ? ax : ay;
    const float a = mul(mn, recip_iter(mx, low ? 0 : 2, false, kRecipFp32));
    const float s = mul(a, a);
    float q;
    if (fp32) {
        q = mad(0x1.01cp-8f, s, -0x1.4bcp-6f);
        q = mad(q, s, 0x1.93p-5f);
        q = mad(q, s, -0x1.48cp-4f);
        q = mad(q, s, 0x1.bd4p-4f);
        q = mad(q, s, -0x1.24p-3f);
        q = mad(q, s, 0x1.99938ap-3f);
        q = mad(q, s, -0x1.555558p-2f);
    } else {
        q = mad(-0x1.de8p-5f, s, 0x1.668p-3f);
        q = mad(q, s, -0x1.54p-2f);
    }
    const float half_pi = 0x1.921fb6p+0f;
    float r = mad(mul(q, s), a, a);
    if (static_cast<int32_t>(B(mn)) >= static_cast<int32_t>(B(ax))) {
        r = add(half_pi, F(B(r) ^ 0x80000000u));
        if (static_cast<int32_t>(B(mn)) >= static_cast<int32_t>(B(mx))) {
            r = addexp(half_pi, -1);
            if (mx == 0.0f) r = 0.0f;
        }
    }
    if (std::signbit(x)) r = add(addexp(half_pi, 1), F(B(r) ^ 0x80000000u));
    if (!fp32) r = round_bf16(r);
    r = copysgn(r, y);
    if (static_cast<int32_t>(0x7F800000u) < static_cast<int32_t>(B(mx))) r = std::numeric_limits<float>::quiet_NaN();
    return r;
}

SINLINE float unary_one(Unary op, float x, float p, bool approx, bool fp32, float fmod_recip) {
    switch (op) {
        case Unary::Fill: return p;
        case Unary::AddScalar: return add(x, p);
        case Unary::SubScalar: return add(x, F(B(p) ^ 0x80000000u));
        case Unary::MulScalar: return mul(x, p);
        case Unary::DivScalar: return mul(x, p);  // the SDK multiplies by the given (reciprocal) scalar
        case Unary::RsubScalar: {
            const float r = add(p, F(B(x) ^ 0x80000000u));
            return fp32 ? r : rne_bf16(r);
        }
        case Unary::Exp:
            return approx ? exp_approx(x) : fp32 ? exp_fp32(x) : exp_21f(x, true);
        case Unary::Log: {
            const float r = log_body(x, fp32);
            return fp32 ? r : round_bf16(r);
        }
        case Unary::Sqrt:
        case Unary::Rsqrt: {
            const float r = sqrt_body(x, approx, op == Unary::Rsqrt);
            return fp32 ? r : round_bf16(r);
        }
        case Unary::Recip:
            return approx ? recip_iter(x, 0, false, kRecipFp32)
                          : fp32 ? recip_iter(x, 2, false, kRecipFp32) : recip_iter(x, 1, true, kRecipBf16);
        case Unary::Relu: return x > 0.0f ? x : 0.0f;
        case Unary::Gelu:
            return approx ? gelu_approx(x) : fp32 ? gelu_fp32(x) : round_bf16(gelu_piecewise(x));
        case Unary::Sigmoid: {
            if (approx) return sigmoid_approx(x);
            const float r = sigmoid(x, fp32);
            return fp32 ? r : round_bf16(r);
        }
        case Unary::Tanh:
            return approx ? tanh_approx(x) : fp32 ? tanh_fp32(x) : round_bf16(tanh_poly(x));
        case Unary::Abs: return std::fabs(x);
        case Unary::Negative: return F(B(x) ^ 0x80000000u);
        case Unary::Square: return mul(x, x);
        case Unary::Silu: {  // x * sigmoid(x) (ckernel_sfpu_silu.h)
            const float r = mul(x, sigmoid(x, fp32));
            return fp32 ? r : round_bf16(r);
        }
        // ckernel_sfpu_unary_max_min.h: SFPSWAP min/max against the fp32 scalar
        case Unary::UnaryMax: return x < p ? p : x;
        case Unary::UnaryMin: return p < x ? p : x;
        // ckernel_sfpu_comp.h calculate_comp: 1.0 or 0.0; -0 equals +0, NaN compares false
        // (nez: true)
        case Unary::Gtz: return x > 0.0f ? 1.0f : 0.0f;
        case Unary::Gez: return x >= 0.0f ? 1.0f : 0.0f;
        case Unary::Ltz: return x < 0.0f ? 1.0f : 0.0f;
        case Unary::Lez: return x <= 0.0f ? 1.0f : 0.0f;
        case Unary::Eqz: return x == 0.0f ? 1.0f : 0.0f;
        case Unary::Nez: return x != 0.0f ? 1.0f : 0.0f;
        // ckernel_sfpu_rounding_ops.h: trunc clears the fraction bits below the binary point
        // (|x| < 1 keeps the sign only: -0.5 -> -0.0; exponents from 23 up, and infinities and
        // NaN, unchanged); floor subtracts 1 from a negative value trunc changed, ceil adds 1
        // to a non-negative one (SFPMAD, exact for these integers)
        case Unary::Trunc: return trunc_bits(x);
        case Unary::Floor: {
            const float t = trunc_bits(x);
            return (B(x) & 0x80000000u) && B(t) != B(x) ? mad(t, 1.0f, -1.0f) : t;
        }
        case Unary::Ceil: {
            const float t = trunc_bits(x);
            return !(B(x) & 0x80000000u) && B(t) != B(x) ? mad(t, 1.0f, 1.0f) : t;
        }
        // _calculate_round_(decimals): 10^-decimals * round_even(x * 10^decimals), the powers
        // of ten float32 constants; round_even adds and subtracts 2^23 to |x| (SFPADD, ties to
        // even) when the exponent is below 23, keeping x's sign
        case Unary::Round: {
            const int d = static_cast<int>(p);
            const float coeff = pow10f(d), inverse = pow10f(-d);
            const float v = mul(x, coeff);
            float r = v;
            if (exexp(v) < 23) {
                const float t = add(add(F(B(v) & 0x7FFFFFFFu), 8388608.0f), -8388608.0f);
                r = F((B(t) & 0x7FFFFFFFu) | (B(v) & 0x80000000u));
            }
            return mul(inverse, r);
        }
        case Unary::Sin: return sine(x, fp32);
        case Unary::Cos: return cosine(x, fp32);
        case Unary::Tan: return tangent(x, fp32);
        case Unary::Atan: return fp32 ? atan_fp32(x) : atan_bf16(x);
        case Unary::Sinh: return sinh_fn(x, fp32);
        case Unary::Cosh: return cosh_fn(x, fp32);
        case Unary::Erf: return erf_fn(x, approx);
        case Unary::Asin: return fp32 ? asin_acos_fp32(x, false) : asin_acos_bf16(x, false);
        case Unary::Acos: return fp32 ? asin_acos_fp32(x, true) : asin_acos_bf16(x, true);
        case Unary::Asinh: return asinh_fn(x, fp32);
        case Unary::Acosh: return acosh_fn(x, fp32);
        case Unary::Atanh: return atanh_fn(x, fp32);
        case Unary::Log1p: {
            const float r = log1p_fn(x, fp32);
            return fp32 ? r : round_bf16(r);
        }
        case Unary::Power: return fp32 ? pow_fp32(x, p, false) : pow_21f(x, p, false);
        // ckernel_sfpu_rpow.h: the binary power with the scalar as the base
        case Unary::Rpow: return fp32 ? pow_fp32(p, x, true) : pow_21f(p, x, true);
        case Unary::Fmod: return fmod_fn(x, p, fmod_recip);
        case Unary::Unknown: break;
    }
    return x;
}

}  // namespace

Unary unary_from_name(const char* n) {
    static const struct { const char* name; Unary op; } kOps[] = {
        {"fill", Unary::Fill}, {"add_unary", Unary::AddScalar}, {"sub_unary", Unary::SubScalar},
        {"mul_unary", Unary::MulScalar}, {"div_unary", Unary::DivScalar},
        {"rsub_unary", Unary::RsubScalar}, {"exp", Unary::Exp}, {"log", Unary::Log},
        {"sqrt", Unary::Sqrt}, {"rsqrt", Unary::Rsqrt}, {"recip", Unary::Recip},
        {"relu", Unary::Relu}, {"gelu", Unary::Gelu}, {"sigmoid", Unary::Sigmoid},
        {"tanh", Unary::Tanh}, {"abs", Unary::Abs}, {"negative", Unary::Negative},
        {"square", Unary::Square}, {"silu", Unary::Silu},
        {"unary_max", Unary::UnaryMax}, {"unary_min", Unary::UnaryMin}, {"gtz", Unary::Gtz},
        {"gez", Unary::Gez}, {"ltz", Unary::Ltz}, {"lez", Unary::Lez}, {"eqz", Unary::Eqz},
        {"nez", Unary::Nez}, {"floor", Unary::Floor}, {"ceil", Unary::Ceil},
        {"trunc", Unary::Trunc}, {"round", Unary::Round}, {"sin", Unary::Sin},
        {"cos", Unary::Cos}, {"tan", Unary::Tan}, {"atan", Unary::Atan}, {"sinh", Unary::Sinh},
        {"cosh", Unary::Cosh}, {"erf", Unary::Erf}, {"power", Unary::Power}, {"fmod", Unary::Fmod},
        {"asin", Unary::Asin}, {"acos", Unary::Acos}, {"asinh", Unary::Asinh}, {"acosh", Unary::Acosh},
        {"atanh", Unary::Atanh}, {"log1p", Unary::Log1p}, {"rpow", Unary::Rpow}};
    for (const auto& o : kOps) {
        if (std::strcmp(o.name, n) == 0) return o.op;
    }
    return Unary::Unknown;
}

Binary binary_from_name(const char* n) {
    if (std::strcmp(n, "add") == 0) return Binary::Add;
    if (std::strcmp(n, "sub") == 0) return Binary::Sub;
    if (std::strcmp(n, "mul") == 0) return Binary::Mul;
    if (std::strcmp(n, "div") == 0) return Binary::Div;
    if (std::strcmp(n, "max") == 0) return Binary::Max;
    if (std::strcmp(n, "min") == 0) return Binary::Min;
    if (std::strcmp(n, "power") == 0) return Binary::Pow;
    if (std::strcmp(n, "fmod") == 0) return Binary::Fmod;
    if (std::strcmp(n, "atan2") == 0) return Binary::Atan2;
    return Binary::Unknown;
}

namespace {
// SFPSWAP's comparison (ISA SFPSWAP.md SignMagIsSmaller): a below b as sign-magnitude integers
SINLINE bool sign_magnitude_less(uint32_t a, uint32_t b) {
    const auto key = [](uint32_t u) {
        return static_cast<int32_t>(u ^ (static_cast<uint32_t>(static_cast<int32_t>(u) >> 31) >> 1));
    };
    return key(a) < key(b);
}
}  // namespace

namespace {
// SFPLOAD reads BF16 / FP32 exactly; SFPSTORE flushes denormals and, into a 16-bit DST, truncates
// (the LLK rounds first where the function needs it)
template <typename Fn>
SINLINE void each(uint32_t* tile, bool fp32_dst, Fn fn) {
    const uint32_t keep = fp32_dst ? 0xFFFFFFFFu : 0xFFFF0000u;
    for (int i = 0; i < kTileElems; ++i) {
        const uint32_t r = B(fn(F(tile[i])));
        tile[i] = ((r & 0x7F800000u) ? r : (r & 0x80000000u)) & keep;
    }
}
}  // namespace

SFPU_HOT void unary_reference(Unary op, uint32_t* tile, float param, bool approx, bool fp32_dst, float param2) {
    // one loop per (function, mode): the choice is made once per tile, not per element
#define SFPU_CASE(pred, expr) \
    if (pred) return each(tile, fp32_dst, [&](float x) __attribute__((always_inline)) { return (expr); })
    const bool fp32 = fp32_dst;
    switch (op) {
        case Unary::Exp:
            SFPU_CASE(approx, exp_approx(x));
            SFPU_CASE(fp32, exp_fp32(x));
            SFPU_CASE(true, exp_21f(x, true));
        case Unary::Tanh:
            SFPU_CASE(approx, tanh_approx(x));
            SFPU_CASE(fp32, tanh_fp32(x));
            SFPU_CASE(true, round_bf16(tanh_poly(x)));
        case Unary::Recip:
            SFPU_CASE(approx, recip_iter(x, 0, false, kRecipFp32));
            SFPU_CASE(fp32, recip_iter(x, 2, false, kRecipFp32));
            SFPU_CASE(true, recip_iter(x, 1, true, kRecipBf16));
        case Unary::Relu:  // (unary_one's, in a loop of its own: the matmul epilogues' relu)
            SFPU_CASE(true, x > 0.0f ? x : 0.0f);
        default:
            SFPU_CASE(true, unary_one(op, x, param, approx, fp32, param2));
    }
#undef SFPU_CASE
}

SFPU_HOT void binary_reference(Binary op, uint32_t* out, const uint32_t* a, const uint32_t* b, bool fp32_dst, bool approx) {
    for (int i = 0; i < kTileElems; ++i) {
        const float x = F(a[i]), y = F(b[i]);
        float r = 0.0f;
        switch (op) {  // ckernel_sfpu_binary.h: calculate_sfpu_binary / _mul / _div
            case Binary::Add: r = add(x, y); break;
            case Binary::Sub: r = add(x, F(B(y) ^ 0x80000000u)); break;
            case Binary::Mul:
                r = mul(x, y);
                if (!fp32_dst) r = (x == 0.0f || y == 0.0f) ? 0.0f : rne_bf16(r);
                break;
            case Binary::Div:
                if (fp32_dst) {
                    // mantissas in [1, 2), one Newton step on the quotient, exponent restored
                    const float ma = setexp(x, 127), mb = setexp(y, 127);
                    const float rb = recip_iter(mb, 1, false, kRecipFp32, true);
                    float q = mul(ma, rb);
                    const float residual = mad(q, F(B(mb) ^ 0x80000000u), ma);
                    q = mad(residual, rb, q);
                    const int32_t ea = exexp_biased(x), eb = exexp(y);
                    const int32_t expo = ea - eb + exexp_biased(q);
                    const int32_t half = static_cast<int32_t>(static_cast<uint32_t>(expo) >> 1);
                    r = mul(setexp(q, half), setexp(1.0f, expo - half));
                    if (!(ea >= 1 && ea < 255 && eb >= -126 && eb < 128)) {
                        r = mul(x, F((B(y) & 0xFF800000u) ^ 0x7F800000u));
                        if ((B(y) & 0x7FFFFFFFu) > 0x7F800000u) r = y;
                    }
                } else {
                    r = mul(x, recip_iter(y, 2, false, kRecipFp32));
                    if (y == 0.0f) {
                        r = x == 0.0f ? std::numeric_limits<float>::quiet_NaN()
                                      : copysgn(std::numeric_limits<float>::infinity(), x);
                    }
                    r = rne_bf16(r);
                }
                break;
            // ckernel_sfpu_binary_max_min.h: SFPSWAP with min/max (no arithmetic, no rounding)
            // ckernel_sfpu_binary_pow.h calculate_sfpu_binary_pow
            case Binary::Pow: r = fp32_dst ? pow_fp32(x, y, true) : pow_21f(x, y, true); break;
            case Binary::Fmod: r = fmod_binary(x, y, fp32_dst); break;
            case Binary::Atan2: r = atan2_fn(x, y, fp32_dst, approx); break;
            // SFPSWAP orders the bits as sign-magnitude integers: -NaN < -inf < -0 < +0 < +inf < +NaN
            case Binary::Max: r = sign_magnitude_less(B(x), B(y)) ? y : x; break;
            case Binary::Min: r = sign_magnitude_less(B(y), B(x)) ? y : x; break;
            case Binary::Unknown: break;
        }
        const uint32_t u = B(r);
        out[i] = ((u & 0x7F800000u) ? u : (u & 0x80000000u)) & (fp32_dst ? 0xFFFFFFFFu : 0xFFFF0000u);
    }
}

// ---- AVX-512 paths ---------------------------------------------------------------------------------
// The hot functions of attention-like kernels (exp, not approximate, the scalar ops, fill, the
// binary add / sub / mul / max / min), 16 lanes at a time with the scalar form's operations in the
// same order: SFPMAD as one fused multiply-add (vfmadd rounds once, as std::fma), the same flushes
// (a compare and a masked move), the same integer steps. unary / binary take them when the CPU
// has AVX-512 (F, DQ) and TT_MOCK_FPU does not ask for a narrower path; every other case, and
// every other CPU, runs unary_reference / binary_reference. testing/runtime/programs/fast_paths
// compares the two bit for bit.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(TTMOCK_NO_CLONES)
#define TTMOCK_SFPU512 1
#define V512 __attribute__((target("avx2,fma,avx512f,avx512dq,avx512bw,avx512vl"), always_inline)) inline
#define V512_FN __attribute__((target("avx2,fma,avx512f,avx512dq,avx512bw,avx512vl")))

namespace {
V512 __m512 vflush(__m512 x) {  // denormals and zeros -> +0 (NaN kept: the compare is ordered)
    const __m512 a = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7FFFFFFF)));
    return _mm512_maskz_mov_ps(~_mm512_cmp_ps_mask(a, _mm512_set1_ps(0x1p-126f), _CMP_LT_OQ), x);
}
V512 __m512 vmad(__m512 a, __m512 b, __m512 c) { return vflush(_mm512_fmadd_ps(vflush(a), vflush(b), vflush(c))); }
// mad of operands that are flushed already (flush is idempotent: a flushed value, or a normal
// constant, or an integer-valued float, is its own flush), so only the result is flushed
V512 __m512 vmadf(__m512 a, __m512 b, __m512 c) { return vflush(_mm512_fmadd_ps(a, b, c)); }
V512 __m512 vmadk(__m512 a, __m512 b, float c) { return vmadf(a, b, _mm512_set1_ps(c)); }
V512 __m512i vbits(__m512 x) { return _mm512_castps_si512(x); }
V512 __m512 vfloat(__m512i x) { return _mm512_castsi512_ps(x); }

// SFPSTORE (each()): denormals to signed zero, a 16-bit DST keeps the high half
V512 __m512i vstore_bits(__m512i r, __m512i keep) {
    const __m512i sign = _mm512_and_si512(r, _mm512_set1_epi32(static_cast<int32_t>(0x80000000u)));
    const __mmask16 normal = _mm512_test_epi32_mask(r, _mm512_set1_epi32(0x7F800000));
    return _mm512_and_si512(_mm512_mask_mov_epi32(sign, normal, r), keep);
}

// _sfpu_exp_fp32_accurate_ (exp_fp32 above)
V512 __m512 vexp_fp32(__m512 a) {
    const __m512 fa = vflush(a);
    const __m512 j0 = vmadk(_mm512_set1_ps(1.442695f), fa, 0.0f);
    const __m512 absj = vfloat(_mm512_and_si512(vbits(j0), _mm512_set1_epi32(0x7FFFFFFF)));
    const __m512 m = _mm512_roundscale_ps(_mm512_add_ps(absj, _mm512_set1_ps(0.5f)), _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    const __mmask16 sat = _mm512_cmp_ps_mask(m, _mm512_set1_ps(32767.0f), _CMP_GE_OQ);
    const __m512i mag = _mm512_mask_mov_epi32(_mm512_cvttps_epi32(m), sat, _mm512_set1_epi32(32767));
    const __mmask16 neg = _mm512_movepi32_mask(vbits(j0));
    const __m512i i = _mm512_mask_sub_epi32(mag, neg, _mm512_setzero_si512(), mag);
    const __m512 j = _mm512_cvtepi32_ps(i);
    __m512 f = vmadf(j, _mm512_set1_ps(-6.93145752e-1f), fa);  // j: an integer, its own flush
    f = vmadf(j, _mm512_set1_ps(-1.42860677e-6f), f);
    __m512 r = _mm512_set1_ps(1.37805939e-3f);
    r = vmadk(r, f, 8.37312452e-3f);
    r = vmadk(r, f, 4.16695364e-2f);
    r = vmadk(r, f, 1.66664720e-1f);
    r = vmadk(r, f, 4.99999851e-1f);
    const __m512 y = vmadk(r, f, 1.0f);
    r = vmadk(y, f, 1.0f);
    const __m512i rb = vbits(r);
    const __m512i e = _mm512_add_epi32(_mm512_and_si512(_mm512_srli_epi32(rb, 23), _mm512_set1_epi32(255)), i);
    __m512i out = _mm512_or_si512(_mm512_and_si512(rb, _mm512_set1_epi32(static_cast<int32_t>(0x807FFFFFu))),
                                  _mm512_slli_epi32(_mm512_and_si512(e, _mm512_set1_epi32(255)), 23));
    out = _mm512_mask_mov_epi32(out, _mm512_cmpge_epi32_mask(e, _mm512_set1_epi32(255)), _mm512_set1_epi32(0x7F800000));
    out = _mm512_maskz_mov_epi32(_mm512_cmpge_epi32_mask(e, _mm512_set1_epi32(1)), out);
    return vfloat(_mm512_mask_mov_epi32(out, _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), vbits(a)));
}

// _sfpu_exp_21f_bf16_ (exp_21f above, to_bf16), the 16-bit DST's exp
V512 __m512 vexp_21f_bf16(__m512 val) {
    __m512 xlog2 = vmadk(_mm512_set1_ps(1.4426950216293334961f), vflush(val), 127.0f);  // mad(val, c, 127)
    // std::clamp(xlog2, 0, 255): NaN passes (both compares are false)
    xlog2 = _mm512_mask_mov_ps(xlog2, _mm512_cmp_ps_mask(xlog2, _mm512_setzero_ps(), _CMP_LT_OQ), _mm512_setzero_ps());
    xlog2 = _mm512_mask_mov_ps(xlog2, _mm512_cmp_ps_mask(_mm512_set1_ps(255.0f), xlog2, _CMP_LT_OQ), _mm512_set1_ps(255.0f));
    const __m512i xb = vbits(xlog2);
    const __m512i man = _mm512_or_si512(_mm512_and_si512(xb, _mm512_set1_epi32(0x7FFFFF)), _mm512_set1_epi32(0x800000));
    const __m512i sh = _mm512_sub_epi32(_mm512_and_si512(_mm512_srli_epi32(xb, 23), _mm512_set1_epi32(255)), _mm512_set1_epi32(127));
    // SFPSHFT: left by sh >= 0, right by -sh; a count of 32 or more gives 0 (as vpsllvd / vpsrlvd)
    const __mmask16 left = _mm512_cmpge_epi32_mask(sh, _mm512_setzero_si512());
    __m512i z = _mm512_mask_mov_epi32(_mm512_srlv_epi32(man, _mm512_sub_epi32(_mm512_setzero_si512(), sh)), left,
                                      _mm512_sllv_epi32(man, sh));
    z = _mm512_maskz_mov_epi32(~_mm512_cmp_ps_mask(xlog2, _mm512_setzero_ps(), _CMP_EQ_OQ), z);
    const __m512i expo = _mm512_and_si512(_mm512_srli_epi32(z, 23), _mm512_set1_epi32(255));
    const __m512 frac0 = _mm512_cvtepi32_ps(_mm512_and_si512(z, _mm512_set1_epi32(0x7FFFFF)));  // exact; its own flush
    const __m512 inner = vmadk(frac0, _mm512_set1_ps(4.791750143340323e-15f), 7.839635491371155e-08f);
    const __m512 frac = vmadk(frac0, inner, 1.0017248f);
    // setexp(frac, expo), then round_bf16 (SFPSTOCHRND: ties away from zero; zero exponent -> +0,
    // exponent 255 -> its sign and exponent bits)
    const __m512i y = _mm512_or_si512(_mm512_and_si512(vbits(frac), _mm512_set1_epi32(static_cast<int32_t>(0x807FFFFFu))),
                                      _mm512_slli_epi32(expo, 23));
    const __m512i e = _mm512_and_si512(_mm512_srli_epi32(y, 23), _mm512_set1_epi32(255));
    const __m512i low = _mm512_and_si512(y, _mm512_set1_epi32(0xFFFF));
    __m512i r = _mm512_sub_epi32(y, low);
    r = _mm512_mask_add_epi32(r, _mm512_cmpge_epu32_mask(low, _mm512_set1_epi32(0x8000)), r, _mm512_set1_epi32(0x10000));
    r = _mm512_mask_mov_epi32(r, _mm512_cmpeq_epi32_mask(e, _mm512_set1_epi32(255)),
                              _mm512_and_si512(y, _mm512_set1_epi32(static_cast<int32_t>(0xFF800000u))));
    return vfloat(_mm512_maskz_mov_epi32(_mm512_cmpneq_epi32_mask(e, _mm512_setzero_si512()), r));
}

enum class VOp { Exp, Exp21f, Fill, Add, Mul };
template <VOp kOp>
V512_FN void unary512(uint32_t* tile, float param, bool fp32_dst) {
    const __m512i keep = _mm512_set1_epi32(fp32_dst ? -1 : static_cast<int32_t>(0xFFFF0000u));
    const __m512 p = _mm512_set1_ps(param);
    for (int i = 0; i < kTileElems; i += 16) {
        const __m512 x = _mm512_loadu_ps(reinterpret_cast<const float*>(tile + i));
        __m512 r;
        if constexpr (kOp == VOp::Exp) r = vexp_fp32(x);
        if constexpr (kOp == VOp::Exp21f) r = vexp_21f_bf16(x);
        if constexpr (kOp == VOp::Fill) r = p;
        if constexpr (kOp == VOp::Add) r = vmad(x, _mm512_set1_ps(1.0f), p);  // add(x, p)
        if constexpr (kOp == VOp::Mul) r = vmad(x, p, _mm512_setzero_ps());  // mul(x, p)
        _mm512_storeu_si512(tile + i, vstore_bits(vbits(r), keep));
    }
}

template <Binary kOp>
V512_FN void binary512(uint32_t* out, const uint32_t* a, const uint32_t* b, bool fp32_dst) {
    const __m512i keep = _mm512_set1_epi32(fp32_dst ? -1 : static_cast<int32_t>(0xFFFF0000u));
    const __m512i sign = _mm512_set1_epi32(static_cast<int32_t>(0x80000000u));
    for (int i = 0; i < kTileElems; i += 16) {
        const __m512 x = _mm512_loadu_ps(reinterpret_cast<const float*>(a + i));
        const __m512 y = _mm512_loadu_ps(reinterpret_cast<const float*>(b + i));
        __m512 r;
        if constexpr (kOp == Binary::Add) r = vmad(x, _mm512_set1_ps(1.0f), y);
        if constexpr (kOp == Binary::Sub) r = vmad(x, _mm512_set1_ps(1.0f), vfloat(_mm512_xor_si512(vbits(y), sign)));
        if constexpr (kOp == Binary::Mul) {
            r = vmad(x, y, _mm512_setzero_ps());
            if (!fp32_dst) {  // rne_bf16, and +0 when an operand is (+-)0
                const __m512i u = vbits(r);
                const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
                const __m512i rounded = _mm512_and_si512(
                    _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), lsb),
                    _mm512_set1_epi32(static_cast<int32_t>(0xFFFF0000u)));
                const __mmask16 zero = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ) |
                                       _mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_EQ_OQ);
                r = vfloat(_mm512_maskz_mov_epi32(~zero, rounded));
            }
        }
        if constexpr (kOp == Binary::Max || kOp == Binary::Min) {  // SFPSWAP's sign-magnitude order
            const __m512i ux = vbits(x), uy = vbits(y);
            const __m512i kx = _mm512_xor_si512(ux, _mm512_srli_epi32(_mm512_srai_epi32(ux, 31), 1));
            const __m512i ky = _mm512_xor_si512(uy, _mm512_srli_epi32(_mm512_srai_epi32(uy, 31), 1));
            r = _mm512_mask_mov_ps(x, kOp == Binary::Max ? _mm512_cmplt_epi32_mask(kx, ky)
                                                          : _mm512_cmplt_epi32_mask(ky, kx), y);
        }
        _mm512_storeu_si512(out + i, vstore_bits(vbits(r), keep));
    }
}

bool use_avx512() {
    static const bool yes = [] {
        const char* v = std::getenv("TT_MOCK_FPU");
        const std::string_view want = v ? v : "";
        return want != "portable" && want != "avx2" && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
    }();
    return yes;
}
}  // namespace
#endif

void unary(Unary op, uint32_t* tile, float param, bool approx, bool fp32_dst, float param2) {
#ifdef TTMOCK_SFPU512
    if (use_avx512()) {
        switch (op) {
            case Unary::Exp:
                if (!approx) {
                    return fp32_dst ? unary512<VOp::Exp>(tile, param, fp32_dst)
                                    : unary512<VOp::Exp21f>(tile, param, fp32_dst);
                }
                break;
            case Unary::Fill: return unary512<VOp::Fill>(tile, param, fp32_dst);
            case Unary::AddScalar: return unary512<VOp::Add>(tile, param, fp32_dst);
            case Unary::SubScalar:
                return unary512<VOp::Add>(tile, F(B(param) ^ 0x80000000u), fp32_dst);
            case Unary::MulScalar:
            case Unary::DivScalar: return unary512<VOp::Mul>(tile, param, fp32_dst);
            default: break;
        }
    }
#endif
    unary_reference(op, tile, param, approx, fp32_dst, param2);
}

void binary(Binary op, uint32_t* out, const uint32_t* a, const uint32_t* b, bool fp32_dst, bool approx) {
#ifdef TTMOCK_SFPU512
    if (use_avx512()) {
        switch (op) {
            case Binary::Add: return binary512<Binary::Add>(out, a, b, fp32_dst);
            case Binary::Sub: return binary512<Binary::Sub>(out, a, b, fp32_dst);
            case Binary::Mul: return binary512<Binary::Mul>(out, a, b, fp32_dst);
            case Binary::Max: return binary512<Binary::Max>(out, a, b, fp32_dst);
            case Binary::Min: return binary512<Binary::Min>(out, a, b, fp32_dst);
            default: break;
        }
    }
#endif
    binary_reference(op, out, a, b, fp32_dst, approx);
}

void cumsum(uint32_t* tile, float* carry, bool first, bool fp32_dst) {
    // ckernel_sfpu_cumsum.h: SFPLOAD four rows of all 32 columns at a time, SFPTRANSP so that one
    // register holds one row, then per row SFPADD (1.0 * previous row's total + this row) - a
    // strict top-to-bottom chain per column through the 32 rows (faces 0, 1 then 2, 3) - and
    // SFPSTORE back; the last row's totals stay in a register for the next call unless `first`
    // clears them. SFPADD is SFPMAD (one rounding, denormals flushed); a 16-bit DST stores the
    // truncated BF16 of each total while the register keeps the float32 total.
    const uint32_t keep = fp32_dst ? 0xFFFFFFFFu : 0xFFFF0000u;
    if (first) std::fill(carry, carry + 32, 0.0f);
    for (uint32_t r = 0; r < 32; ++r) {
        for (uint32_t c = 0; c < 32; ++c) {
            uint32_t& d = tile[((r >> 4) * 2 + (c >> 4)) * 256 + (r & 15) * 16 + (c & 15)];
            carry[c] = add(carry[c], F(d & keep));
            const uint32_t u = B(carry[c]);
            d = ((u & 0x7F800000u) ? u : (u & 0x80000000u)) & keep;
        }
    }
}

void reshuffle_rows(const uint32_t* in, uint32_t* out, const uint8_t* idx, bool fp32_dst) {
    // ckernel_sfpu_reshuffle_rows.h: per input row r (in order) whose index is below 32, SFPLOAD
    // the four-row groups holding input row r and output row idx[r], SFPTRANSP, SFPADD
    // (1.0 * input + output: one rounding, denormals flushed), SFPTRANSP, SFPSTORE the output group
    const uint32_t keep = fp32_dst ? 0xFFFFFFFFu : 0xFFFF0000u;
    for (uint32_t r = 0; r < 32; ++r) {
        const uint32_t d = idx[r];
        if (d >= 32) continue;
        for (uint32_t c = 0; c < 32; ++c) {
            const uint32_t col = (c >> 4), cc = c & 15;
            const float x = F(in[((r >> 4) * 2 + col) * 256 + (r & 15) * 16 + cc] & keep);
            uint32_t& o = out[((d >> 4) * 2 + col) * 256 + (d & 15) * 16 + cc];
            const uint32_t u = B(add(x, F(o & keep)));
            o = ((u & 0x7F800000u) ? u : (u & 0x80000000u)) & keep;
        }
    }
}

SFPU_HOT void where(uint32_t* out, const uint32_t* cond, const uint32_t* a, const uint32_t* b, bool fp32_dst) {
    // ckernel_sfpu_where.h: SFPSETCC LREG_EQ0 on the condition, then the selected operand's bits
    // (SFPLOAD / SFPSTORE of the data format: INT32 for Float32, LO16 for Float16_b)
    const uint32_t keep = fp32_dst ? 0xFFFFFFFFu : 0xFFFF0000u;
    for (int i = 0; i < kTileElems; ++i) {
        const uint32_t c = cond[i] & keep;
        out[i] = (c != 0 ? a[i] : b[i]) & keep;
    }
}

}  // namespace ttmock::sfpu

// ---- SFPI lanes (sfpi.h, ttmock/sfpi_rt.h) --------------------------------------------------------
// The vector arithmetic of a compute kernel's own SFPI code: the SFPMAD model above, 32 lanes a call.
#include "ttmock/sfpi_rt.h"

namespace ttmock::sfpi_rt {
using ttmock::sfpu::F;
using ttmock::sfpu::B;

SFPU_HOT void mad(float* d, const float* a, const float* b, const float* c) {
    for (int i = 0; i < kLanes; ++i) d[i] = ttmock::sfpu::mad(a[i], b[i], c[i]);
}
SFPU_HOT void add(float* d, const float* a, const float* b) {
    for (int i = 0; i < kLanes; ++i) d[i] = ttmock::sfpu::add(a[i], b[i]);
}
SFPU_HOT void sub(float* d, const float* a, const float* b) {
    for (int i = 0; i < kLanes; ++i) d[i] = ttmock::sfpu::add(a[i], -b[i]);
}
SFPU_HOT void mul(float* d, const float* a, const float* b) {
    for (int i = 0; i < kLanes; ++i) d[i] = ttmock::sfpu::mul(a[i], b[i]);
}
// The SFPI compiler compares two vectors as SFPMAD a - b and SFPSETCC on the result's sign and
// zero-ness (a zero or flushed denormal difference is equal, -0 is zero); NaN compares as a number
// of its sign, as the sign-bit test does.
uint32_t cmp(int op, const float* a, const float* b) {
    uint32_t m = 0;
    for (int i = 0; i < kLanes; ++i) {
        const float s = ttmock::sfpu::add(a[i], -b[i]);
        const uint32_t u = B(s);
        const bool zero = (u & 0x7FFFFFFFu) == 0, neg = (u >> 31) != 0 && !zero;
        bool r = false;
        switch (op) {
            case 0: r = neg; break;
            case 1: r = neg || zero; break;
            case 2: r = !neg && !zero; break;
            case 3: r = !neg; break;
            case 4: r = zero; break;
            default: r = !zero; break;
        }
        m |= static_cast<uint32_t>(r) << i;
    }
    return m;
}
}  // namespace ttmock::sfpi_rt
