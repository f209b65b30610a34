// tilelang-tt mock TT-Metalium: the SFPI vector programming interface of compute kernels
// (`#include "sfpi.h"`, namespace sfpi, as the SFPI toolchain's header that TT-Metalium 0.81.1's
// compute kernels include; the SDK's compute API headers make its names visible globally for the
// MATH thread). Written for the emulator from the interface's documented behaviour, sharing no code
// with SFPI.
//
// A vector (vFloat, vInt, vUInt) is 32 lanes. dst_reg[i] reads / writes 32 datums of DST (see
// src/sfpi.cpp for the row mapping), v_if / v_elseif / v_else / v_endif narrow the enabled lanes;
// assignments to a vector variable and to dst_reg write the enabled lanes only. Float arithmetic
// is the emulator's SFPU model (SFPMAD, one rounding, denormals flushed), computed by the emulator
// library a whole vector per call; `a * b + c` fuses into one SFPMAD, as the SFPI compiler does.
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ttmock/sfpi_rt.h"

#define sfpi_inline inline __attribute__((always_inline))

namespace sfpi {

namespace rt = ::ttmock::sfpi_rt;
constexpr int SFP_LANES = rt::kLanes;

class vFloat;
class vInt;
class vUInt;
struct vMul;
struct vCond {
    uint32_t lanes;  // bit i: lane i
};
sfpi_inline vCond operator&&(vCond a, vCond b) { return {a.lanes & b.lanes}; }
sfpi_inline vCond operator||(vCond a, vCond b) { return {a.lanes | b.lanes}; }
sfpi_inline vCond operator!(vCond a) { return {~a.lanes}; }

// Bits of 32 lanes; the vector types share them
struct vBits {
    alignas(32) uint32_t u[SFP_LANES];
    float* f() { return reinterpret_cast<float*>(u); }
    const float* f() const { return reinterpret_cast<const float*>(u); }
};

class vFloat : public vBits {
public:
    vFloat() = default;
    vFloat(const vFloat&) = default;
    vFloat(float x) { fill(x); }
    vFloat(double x) { fill(static_cast<float>(x)); }
    vFloat(int x) { fill(static_cast<float>(x)); }
    vFloat(unsigned x) { fill(static_cast<float>(x)); }
    inline vFloat(const vMul& m);
    vFloat& operator=(const vFloat& o) {
        rt::assign(u, o.u);
        return *this;
    }
    vFloat& operator=(float x) { return *this = vFloat(x); }
    inline vFloat& operator+=(const vFloat& o);
    inline vFloat& operator-=(const vFloat& o);
    inline vFloat& operator*=(const vFloat& o);

private:
    void fill(float x) {
        const uint32_t b = std::bit_cast<uint32_t>(x);
        for (int i = 0; i < SFP_LANES; ++i) u[i] = b;
    }
};

// a * b, not yet rounded: `a * b + c` is one SFPMAD
struct vMul {
    vFloat a, b;
};
sfpi_inline vFloat::vFloat(const vMul& m) { rt::mul(f(), m.a.f(), m.b.f()); }

sfpi_inline vMul operator*(const vFloat& a, const vFloat& b) { return {a, b}; }
sfpi_inline vFloat operator+(const vFloat& a, const vFloat& b) {
    vFloat d;
    rt::add(d.f(), a.f(), b.f());
    return d;
}
sfpi_inline vFloat operator-(const vFloat& a, const vFloat& b) {
    vFloat d;
    rt::sub(d.f(), a.f(), b.f());
    return d;
}
sfpi_inline vFloat operator-(const vFloat& a) {  // sign flip, exact
    vFloat d;
    for (int i = 0; i < SFP_LANES; ++i) d.u[i] = a.u[i] ^ 0x80000000u;
    return d;
}
sfpi_inline vFloat operator+(const vMul& m, const vFloat& c) {
    vFloat d;
    rt::mad(d.f(), m.a.f(), m.b.f(), c.f());
    return d;
}
sfpi_inline vFloat operator+(const vFloat& c, const vMul& m) { return m + c; }
sfpi_inline vFloat operator+(const vMul& m, const vMul& n) { return m + vFloat(n); }
sfpi_inline vFloat operator-(const vMul& m, const vFloat& c) { return m + (-c); }
sfpi_inline vFloat operator-(const vFloat& c, const vMul& m) { return vMul{-m.a, m.b} + c; }
sfpi_inline vFloat operator-(const vMul& m, const vMul& n) { return m - vFloat(n); }
sfpi_inline vFloat operator-(const vMul& m) { return vMul{-m.a, m.b}; }

sfpi_inline vFloat& vFloat::operator+=(const vFloat& o) { return *this = *this + o; }
sfpi_inline vFloat& vFloat::operator-=(const vFloat& o) { return *this = *this - o; }
sfpi_inline vFloat& vFloat::operator*=(const vFloat& o) { return *this = vFloat(*this * o); }

// Comparisons: SFPMAD a - b, then the sign / zero test of SFPSETCC
sfpi_inline vCond operator<(const vFloat& a, const vFloat& b) { return {rt::cmp(0, a.f(), b.f())}; }
sfpi_inline vCond operator<=(const vFloat& a, const vFloat& b) { return {rt::cmp(1, a.f(), b.f())}; }
sfpi_inline vCond operator>(const vFloat& a, const vFloat& b) { return {rt::cmp(2, a.f(), b.f())}; }
sfpi_inline vCond operator>=(const vFloat& a, const vFloat& b) { return {rt::cmp(3, a.f(), b.f())}; }
sfpi_inline vCond operator==(const vFloat& a, const vFloat& b) { return {rt::cmp(4, a.f(), b.f())}; }
sfpi_inline vCond operator!=(const vFloat& a, const vFloat& b) { return {rt::cmp(5, a.f(), b.f())}; }

// Integer vectors: 32-bit two's complement lanes (SFPIADD, SFPAND, SFPOR, SFPXOR, SFPNOT, SFPSHFT)
template <class Self, bool Signed>
class vIntBase : public vBits {
public:
    using T = std::conditional_t<Signed, int32_t, uint32_t>;
    vIntBase() = default;
    vIntBase(const vIntBase&) = default;
    vIntBase(int x) { fill(static_cast<uint32_t>(x)); }
    vIntBase(unsigned x) { fill(x); }
    vIntBase(long x) { fill(static_cast<uint32_t>(x)); }
    vIntBase(unsigned long x) { fill(static_cast<uint32_t>(x)); }
    vIntBase& operator=(const vIntBase& o) {
        rt::assign(u, o.u);
        return *this;
    }
    T lane(int i) const { return static_cast<T>(u[i]); }

protected:
    void fill(uint32_t x) {
        for (int i = 0; i < SFP_LANES; ++i) u[i] = x;
    }
};

class vInt : public vIntBase<vInt, true> {
public:
    using vIntBase::vIntBase;
    vInt() = default;
    vInt(const vInt&) = default;
    vInt& operator=(const vInt& o) {
        rt::assign(u, o.u);
        return *this;
    }
    inline vInt& operator+=(const vInt& o);
    inline vInt& operator-=(const vInt& o);
    inline vInt& operator&=(const vInt& o);
    inline vInt& operator|=(const vInt& o);
    inline vInt& operator^=(const vInt& o);
    inline vInt& operator<<=(int s);
    inline vInt& operator>>=(int s);
};
class vUInt : public vIntBase<vUInt, false> {
public:
    using vIntBase::vIntBase;
    vUInt() = default;
    vUInt(const vUInt&) = default;
    vUInt(const vInt& o) { std::memcpy(u, o.u, sizeof(u)); }
    vUInt& operator=(const vUInt& o) {
        rt::assign(u, o.u);
        return *this;
    }
    inline vUInt& operator+=(const vUInt& o);
    inline vUInt& operator-=(const vUInt& o);
    inline vUInt& operator&=(const vUInt& o);
    inline vUInt& operator|=(const vUInt& o);
    inline vUInt& operator^=(const vUInt& o);
    inline vUInt& operator<<=(int s);
    inline vUInt& operator>>=(int s);
};

#define SFPI_INT_BINOP(V, OP, EXPR)                                      \
    sfpi_inline V operator OP(const V& a, const V& b) {                  \
        V d;                                                             \
        for (int i = 0; i < SFP_LANES; ++i) {                            \
            const uint32_t x = a.u[i], y = b.u[i];                       \
            d.u[i] = (EXPR);                                             \
        }                                                                \
        return d;                                                        \
    }                                                                    \
    sfpi_inline V& V::operator OP##=(const V& o) { return *this = *this OP o; }
#define SFPI_INT_OPS(V)                                                                           \
    SFPI_INT_BINOP(V, +, x + y)                                                                   \
    SFPI_INT_BINOP(V, -, x - y)                                                                   \
    SFPI_INT_BINOP(V, &, x & y)                                                                   \
    SFPI_INT_BINOP(V, |, x | y)                                                                   \
    SFPI_INT_BINOP(V, ^, x ^ y)                                                                   \
    sfpi_inline V operator~(const V& a) {                                                         \
        V d;                                                                                      \
        for (int i = 0; i < SFP_LANES; ++i) d.u[i] = ~a.u[i];                                     \
        return d;                                                                                 \
    }                                                                                             \
    sfpi_inline V operator<<(const V& a, int s) {                                                 \
        V d;                                                                                      \
        for (int i = 0; i < SFP_LANES; ++i) d.u[i] = s >= 32 ? 0u : a.u[i] << s;                  \
        return d;                                                                                 \
    }                                                                                             \
    sfpi_inline V& V::operator<<=(int s) { return *this = *this << s; }                           \
    sfpi_inline V& V::operator>>=(int s) { return *this = *this >> s; }                           \
    sfpi_inline vCond operator<(const V& a, const V& b) {                                         \
        uint32_t m = 0;                                                                           \
        for (int i = 0; i < SFP_LANES; ++i) m |= uint32_t(a.lane(i) < b.lane(i)) << i;            \
        return {m};                                                                               \
    }                                                                                             \
    sfpi_inline vCond operator>=(const V& a, const V& b) { return !(a < b); }                     \
    sfpi_inline vCond operator>(const V& a, const V& b) { return b < a; }                         \
    sfpi_inline vCond operator<=(const V& a, const V& b) { return !(b < a); }                     \
    sfpi_inline vCond operator==(const V& a, const V& b) {                                        \
        uint32_t m = 0;                                                                           \
        for (int i = 0; i < SFP_LANES; ++i) m |= uint32_t(a.u[i] == b.u[i]) << i;                 \
        return {m};                                                                               \
    }                                                                                             \
    sfpi_inline vCond operator!=(const V& a, const V& b) { return !(a == b); }

// >>: arithmetic for vInt, logical for vUInt
sfpi_inline vInt operator>>(const vInt& a, int s) {
    vInt d;
    for (int i = 0; i < SFP_LANES; ++i) d.u[i] = static_cast<uint32_t>(a.lane(i) >> (s >= 32 ? 31 : s));
    return d;
}
sfpi_inline vUInt operator>>(const vUInt& a, int s) {
    vUInt d;
    for (int i = 0; i < SFP_LANES; ++i) d.u[i] = s >= 32 ? 0u : a.u[i] >> s;
    return d;
}
SFPI_INT_OPS(vInt)
SFPI_INT_OPS(vUInt)
#undef SFPI_INT_OPS
#undef SFPI_INT_BINOP

// reinterpret<T>(v): the same 32 bits per lane as another vector type
template <class T, class S>
sfpi_inline T reinterpret(const S& v) {
    static_assert(std::is_base_of_v<vBits, T> && std::is_base_of_v<vBits, S>, "reinterpret takes SFPI vectors");
    T d;
    std::memcpy(d.u, v.u, sizeof(d.u));
    return d;
}

// ---- dst_reg ----------------------------------------------------------------------------------
class vDReg {
public:
    explicit constexpr vDReg(int i) : i_(i) {}
    operator vFloat() const {
        vFloat v;
        rt::load(i_, v.u);
        return v;
    }
    const vDReg& operator=(const vFloat& v) const {
        rt::store(i_, v.u, true);
        return *this;
    }
    const vDReg& operator=(const vMul& m) const { return *this = vFloat(m); }
    const vDReg& operator=(float x) const { return *this = vFloat(x); }
    const vDReg& operator=(const vDReg& o) const { return *this = vFloat(o); }
    const vDReg& operator=(const vInt& v) const {
        rt::store(i_, v.u, false);
        return *this;
    }
    const vDReg& operator=(const vUInt& v) const {
        rt::store(i_, v.u, false);
        return *this;
    }
    const vDReg& operator+=(const vFloat& v) const { return *this = vFloat(*this) + v; }
    const vDReg& operator-=(const vFloat& v) const { return *this = vFloat(*this) - v; }
    const vDReg& operator*=(const vFloat& v) const { return *this = vFloat(vFloat(*this) * v); }

private:
    int i_;
};

class vDRegArray {
public:
    vDReg operator[](int i) const { return vDReg(i); }
    void operator++(int) const { rt::dst_incr(1); }
    void operator++() const { rt::dst_incr(1); }
    void operator+=(int n) const { rt::dst_incr(n); }
};
inline constexpr vDRegArray dst_reg{};

// ---- constants --------------------------------------------------------------------------------
// Fixed constant registers, and the programmable ones (per core; set by init functions)
struct vConstFixed {
    float value;
    operator vFloat() const { return vFloat(value); }
};
inline constexpr vConstFixed vConst0{0.0f};
inline constexpr vConstFixed vConst1{1.0f};
inline constexpr vConstFixed vConstNeg1{-1.0f};
inline constexpr vConstFixed vConst0p8373{0.8373f};

struct vConstFloatPrgm {
    int k;
    operator vFloat() const { return vFloat(std::bit_cast<float>(rt::prgm_const(k))); }
    const vConstFloatPrgm& operator=(float x) const {
        rt::set_prgm_const(k, std::bit_cast<uint32_t>(x));
        return *this;
    }
};
struct vConstIntPrgm {
    int k;
    operator vInt() const { return vInt(static_cast<int>(rt::prgm_const(k))); }
    const vConstIntPrgm& operator=(int x) const {
        rt::set_prgm_const(k, static_cast<uint32_t>(x));
        return *this;
    }
};
inline constexpr vConstFloatPrgm vConstFloatPrgm0{0}, vConstFloatPrgm1{1}, vConstFloatPrgm2{2};
inline constexpr vConstIntPrgm vConstIntPrgm0{3}, vConstIntPrgm1{4}, vConstIntPrgm2{5};

// Scalars loaded as 16-bit floats (SFPLOADI): s2vFloat16b keeps the top 16 bits of the fp32
// (BF16), s2vFloat16a rounds to IEEE half (nearest even) and widens it exactly
struct s2vFloat16b {
    float value;
    s2vFloat16b(float x) : value(std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0xFFFF0000u)) {}
    operator vFloat() const { return vFloat(value); }
};
struct s2vFloat16a {
    float value;
    s2vFloat16a(float x) {
        const uint32_t b = std::bit_cast<uint32_t>(x);
        const uint32_t s = b & 0x80000000u;
        const int32_t e = static_cast<int32_t>((b >> 23) & 255) - 127 + 15;
        uint32_t r = 0;
        if ((b & 0x7FFFFFFFu) != 0 && e > 0) {
            uint32_t m = (b & 0x7FFFFFu) | 0x800000u;
            uint32_t q = (m + 0xFFFu + ((m >> 13) & 1u)) >> 13;  // 11 bits with the implicit one
            int32_t ee = e;
            if (q & 0x800u) {
                q >>= 1;
                ++ee;
            }
            r = ee >= 31 ? 0x7F800000u : (static_cast<uint32_t>(ee - 15 + 127) << 23) | ((q & 0x3FFu) << 13);
        }
        value = std::bit_cast<float>(s | r);
    }
    operator vFloat() const { return vFloat(value); }
};
using s2vFloat16 = s2vFloat16b;

// ---- library ----------------------------------------------------------------------------------
namespace detail {
template <class V, class Fn>
sfpi_inline V map(const vBits& a, Fn fn) {
    V d;
    for (int i = 0; i < SFP_LANES; ++i) d.u[i] = fn(a.u[i]);
    return d;
}
}  // namespace detail

sfpi_inline vFloat abs(const vFloat& v) { return detail::map<vFloat>(v, [](uint32_t x) { return x & 0x7FFFFFFFu; }); }
sfpi_inline vInt abs(const vInt& v) {
    return detail::map<vInt>(v, [](uint32_t x) { return static_cast<int32_t>(x) < 0 ? 0u - x : x; });
}
// setsgn: the magnitude of v with sign s (an integer: bit 0; a vector: its sign bit)
sfpi_inline vFloat setsgn(const vFloat& v, int s) {
    const uint32_t sign = static_cast<uint32_t>(s & 1) << 31;
    return detail::map<vFloat>(v, [sign](uint32_t x) { return (x & 0x7FFFFFFFu) | sign; });
}
sfpi_inline vFloat setsgn(const vFloat& v, const vFloat& s) {
    vFloat d;
    for (int i = 0; i < SFP_LANES; ++i) d.u[i] = (v.u[i] & 0x7FFFFFFFu) | (s.u[i] & 0x80000000u);
    return d;
}
sfpi_inline vFloat setsgn(const vFloat& v, const vInt& s) {
    vFloat d;
    for (int i = 0; i < SFP_LANES; ++i) d.u[i] = (v.u[i] & 0x7FFFFFFFu) | ((s.u[i] & 1u) << 31);
    return d;
}
// exexp: the unbiased exponent; exexp_nodebias: the biased one
sfpi_inline vInt exexp(const vFloat& v) {
    return detail::map<vInt>(v, [](uint32_t x) { return static_cast<uint32_t>(static_cast<int32_t>((x >> 23) & 255) - 127); });
}
sfpi_inline vInt exexp_nodebias(const vFloat& v) { return detail::map<vInt>(v, [](uint32_t x) { return (x >> 23) & 255; }); }
// exman8: the mantissa with its implicit one (bit 23); exman9: without
sfpi_inline vInt exman8(const vFloat& v) { return detail::map<vInt>(v, [](uint32_t x) { return (x & 0x7FFFFFu) | 0x800000u; }); }
sfpi_inline vInt exman9(const vFloat& v) { return detail::map<vInt>(v, [](uint32_t x) { return x & 0x7FFFFFu; }); }
// setexp: the biased exponent field set to e (its low 8 bits)
sfpi_inline vFloat setexp(const vFloat& v, uint32_t e) {
    return detail::map<vFloat>(v, [e](uint32_t x) { return (x & 0x807FFFFFu) | ((e & 255u) << 23); });
}
template <class V, std::enable_if_t<std::is_base_of_v<vBits, V> && !std::is_same_v<V, vFloat>, int> = 0>
sfpi_inline vFloat setexp(const vFloat& v, const V& e) {
    vFloat d;
    for (int i = 0; i < SFP_LANES; ++i) d.u[i] = (v.u[i] & 0x807FFFFFu) | ((e.u[i] & 255u) << 23);
    return d;
}
// setman: the mantissa field set to m (its low 23 bits)
sfpi_inline vFloat setman(const vFloat& v, uint32_t m) {
    return detail::map<vFloat>(v, [m](uint32_t x) { return (x & 0xFF800000u) | (m & 0x7FFFFFu); });
}
template <class V, std::enable_if_t<std::is_base_of_v<vBits, V> && !std::is_same_v<V, vFloat>, int> = 0>
sfpi_inline vFloat setman(const vFloat& v, const V& m) {
    vFloat d;
    for (int i = 0; i < SFP_LANES; ++i) d.u[i] = (v.u[i] & 0xFF800000u) | (m.u[i] & 0x7FFFFFu);
    return d;
}
// addexp: the exponent field plus n (SFPDIVP2, no overflow handling)
sfpi_inline vFloat addexp(const vFloat& v, int n) {
    return detail::map<vFloat>(v, [n](uint32_t x) {
        const uint32_t e = (((x >> 23) & 255u) + static_cast<uint32_t>(n)) & 255u;
        return (x & 0x807FFFFFu) | (e << 23);
    });
}
// lz: leading zeros of the 32-bit lane
sfpi_inline vInt lz(const vBits& v) {
    return detail::map<vInt>(v, [](uint32_t x) { return static_cast<uint32_t>(x ? __builtin_clz(x) : 32); });
}
// int32_to_float: the integer lane as a float, rounded to nearest even (SFPCAST)
sfpi_inline vFloat int32_to_float(const vInt& v, int = 0) {
    return detail::map<vFloat>(v, [](uint32_t x) {
        const float f = static_cast<float>(static_cast<int32_t>(x));
        return std::bit_cast<uint32_t>(f);
    });
}
// float_to_fp16b: rounded to BF16, ties away from zero (SFPSTOCHRND, round to nearest)
sfpi_inline vFloat float_to_fp16b(const vFloat& v, int = 0) {
    return detail::map<vFloat>(v, [](uint32_t x) {
        const uint32_t e = (x >> 23) & 255;
        if (e == 0) return 0u;
        if (e == 255) return x & 0xFF800000u;
        const uint32_t low = x & 0xFFFFu;
        x -= low;
        if (low >= 0x8000u) x += 0x10000u;
        return x;
    });
}
// vec_min_max(a, b): a gets the smaller, b the larger value of each lane (SFPSWAP)
sfpi_inline void vec_min_max(vFloat& a, vFloat& b) {
    vFloat lo, hi;
    for (int i = 0; i < SFP_LANES; ++i) {
        const float x = a.f()[i], y = b.f()[i];
        lo.f()[i] = y < x ? y : x;
        hi.f()[i] = y < x ? x : y;
    }
    a = lo;
    b = hi;
}

// clamp(v, lo, hi): v limited to [lo, hi], exactly (min / max, no arithmetic)
sfpi_inline vFloat clamp(const vFloat& v, const vFloat& lo, const vFloat& hi) {
    vFloat d;
    for (int i = 0; i < SFP_LANES; ++i) {
        const float x = v.f()[i], l = lo.f()[i], h = hi.f()[i];
        d.f()[i] = x < l ? l : (h < x ? h : x);
    }
    return d;
}

// ---- condition codes --------------------------------------------------------------------------
namespace detail {
struct CCScope {
    explicit CCScope(vCond c) { rt::cc_if(c.lanes); }
    ~CCScope() { rt::cc_end(); }
    CCScope(const CCScope&) = delete;
    void elseif_(vCond c) { rt::cc_elseif(c.lanes); }
    void else_() { rt::cc_else(); }
};
}  // namespace detail

}  // namespace sfpi

// v_if (cond) { ... } v_elseif (cond) { ... } v_else { ... } v_endif;
#define v_if(...) { ::sfpi::detail::CCScope sfpi_cc_scope_((__VA_ARGS__)); if (true)
#define v_elseif(...) sfpi_cc_scope_.elseif_((__VA_ARGS__)); if (true)
#define v_else sfpi_cc_scope_.else_(); if (true)
#define v_endif }
#define v_and(...) ::sfpi::rt::cc_and(::sfpi::vCond(__VA_ARGS__).lanes)
