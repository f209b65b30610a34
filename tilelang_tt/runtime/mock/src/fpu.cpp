// tilelang-tt mock TT-Metalium: arithmetic of the Tensix matrix engine (FPU), unpacker and packer.
//
// The rules follow ttsim's functional model of Wormhole (tenstorrent/ttsim src/tensix.cpp:
// MVMUL / ELWADD / ELWMUL / GAPOOL / GMPOOL, UNPACR, PACR) and the LLK instruction sequences
// (tt-llk llk_math_matmul.h, llk_math_eltwise_binary.h, llk_math_reduce.h); docs/MOCK.md lists
// each rule with its source. This is an independent implementation written for speed: whole
// tiles, branch-free loops over contiguous arrays that the compiler vectorises, no state.
#include "fpu.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <string_view>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

// Hot loops get an AVX2 clone next to the baseline one (picked at load time); both compute the
// same integer / exact-float operations, so results do not depend on the clone.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(TTMOCK_NO_CLONES)
#define TTMOCK_HOT __attribute__((target_clones("avx2", "default")))
#else
#define TTMOCK_HOT
#endif
// vector helpers are always inlined, so each clone gets its own copy (and no vector-ABI calls)
#define VINLINE inline __attribute__((always_inline))

namespace ttmock::fpu {
namespace {

constexpr uint32_t kExpMask = 0x7F800000u;
constexpr int32_t kZeroExp = -(1 << 20);  // exponent of a zero operand: never the group maximum

// Wormhole's accumulator renormalises a result of exactly -1 with a leading-sign count 27 too
// large (ttsim models it for Wormhole only; Blackhole fixed it). Read-only while kernels run.
bool g_wormhole_minus_one = true;

inline uint32_t face_index(uint32_t r, uint32_t c) {
    return ((r >> 4) * 2 + (c >> 4)) * 256 + (r & 15) * 16 + (c & 15);
}
inline float as_float(uint32_t u) { return std::bit_cast<float>(u); }
inline uint32_t as_bits(float f) { return std::bit_cast<uint32_t>(f); }

// ---- 8-lane vectors (GCC/Clang vector extensions: AVX2 in the avx2 clone, SSE pairs otherwise) ----
constexpr int kLanes = 8;
typedef int32_t vi __attribute__((vector_size(32)));
typedef uint32_t vu __attribute__((vector_size(32)));
typedef float vf __attribute__((vector_size(32)));

template <typename V, typename T>
VINLINE V load(const T* p) {
    V v;
    std::memcpy(&v, p, sizeof(V));
    return v;
}
template <typename V, typename T>
VINLINE void store(T* p, V v) {
    std::memcpy(p, &v, sizeof(V));
}
VINLINE vi vmax(vi a, vi b) { return a > b ? a : b; }
VINLINE vi vmin(vi a, vi b) { return a < b ? a : b; }
VINLINE vi vclamp(vi a, int32_t lo, int32_t hi) { return vmin(vmax(a, vi{} + lo), vi{} + hi); }

// floor(log2(x)) for 1 <= x < 2^31 (int -> float conversion rounds; correct the round-ups)
VINLINE vi ilog2(vi x) {
    const vi e = (vi)(((vu)__builtin_convertvector(x, vf) >> 23) & 255u) - 127;
    const vi low = (x >> vmin(e, vi{} + 30)) == 0;  // -1 where the float rounded up to 2^e
    return e + ((e > 30) | low);
}

// Round m / 2^d, ties toward +infinity of the signed value (s = 1: m is a negative magnitude):
// how the FPU aligns an addend to the accumulator exponent. d >= 0.
VINLINE vi align(vi m, vi d, vi s) {
    const vi dd = vclamp(d, 1, 30);
    const vi shifted = (m + ((vi{} + 1) << (dd - 1)) - s) >> dd;
    return d <= 0 ? m : (d >= 31 ? vi{} : shifted);
}

// The FPU accumulator: DST value `dst` plus two addends (sign s, biased exponent e, mantissa m
// with 2^23 = 1.0), aligned to the largest exponent, summed, normalised and rounded half away
// from zero to fp32, or, with a 16-bit DST, to 10 bits before and BF16 after the sum.
template <bool kFp32>
VINLINE vu accumulate(vi s0, vi e0, vi m0, vi s1, vi e1, vi m1, vu dst) {
    const vi sd = (vi)(dst >> 31);
    const vi ed = (vi)((dst >> 23) & 255u);
    vi md = ed != 0 ? (vi)((dst & 0x7FFFFFu) | 0x800000u) : vi{};
    const vi emax = vmax(vmax(e0, e1), ed);
    m0 = align(m0, emax - e0, s0);
    m1 = align(m1, emax - e1, s1);
    md = align(md, emax - ed, vi{});
    if (!kFp32) {
        m0 = (m0 + (1 << 12) - s0) & ~0x1FFF;
        m1 = (m1 + (1 << 12) - s1) & ~0x1FFF;
        md = (md + (1 << 12)) & ~0x1FFF;
    }
    vi man = md + (s0 == sd ? m0 : -m0) + (s1 == sd ? m1 : -m1);
    const vi neg = man < 0;
    const vi sign = sd ^ (neg & 1);
    man = neg ? -man : man;
    const vi zero = (emax <= 0) | (man == 0);
    const vi mnz = man | (man == 0 & 1);
    vi shift = 23 - ilog2(mnz);
    shift -= ((sign != 0) & (mnz == 1)) & (g_wormhole_minus_one ? 27 : 0);  // Wormhole's -1 (above)
    vi exp = emax - shift;
    if (!kFp32) shift -= 16;
    const vi rs = vclamp(-shift, 1, 31), ls = vclamp(shift, 0, 31);
    vi out = shift < 0 ? (vi)(((vu)mnz + ((vu{} + 1u) << (vu)(rs - 1))) >> (vu)rs) : (mnz << ls);
    if (!kFp32) out <<= 16;
    exp += (out >> 24) & 1;
    out &= 0x7FFFFF;
    const vu bits = ((vu)sign << 31) |
                    (exp >= 255 ? (vu{} + 0x7F800000u) : ((vu)(exp & 255) << 23) | (vu)out);
    return (zero | (exp <= 0)) ? vu{} : bits;
}

// One lane of the accumulator (reductions)
template <bool kFp32>
uint32_t accumulate1(int32_t s0, int32_t e0, int32_t m0, int32_t s1, int32_t e1, int32_t m1,
                     uint32_t dst) {
    return accumulate<kFp32>(vi{} + s0, vi{} + e0, vi{} + m0, vi{} + s1, vi{} + e1, vi{} + m1,
                             vu{} + dst)[0];
}

// ---- operand decoding for the multiplier --------------------------------------------------------
// The multiplier consumes 5 bits of a SrcA mantissa (implicit one + 4, or the next 5) and 7 bits
// of a SrcB mantissa (implicit one + 6, or the last 4 shifted left by 3) per fidelity phase.
struct Operand {
    int32_t e[kTileElems];     // biased exponent, kZeroExp for a zero datum
    float hi[kTileElems];      // signed mantissa field of the phases without the low bits
    float lo[kTileElems];      // signed mantissa field of the phases with the low bits
};

TTMOCK_HOT void decode(const uint32_t* src, Operand& op, bool srca) {
    for (int i = 0; i < kTileElems; i += kLanes) {
        const vu u = load<vu>(src + i);
        const vi zero = (vi)((u & kExpMask) == 0);
        const vi m11 = (vi)(((u >> 13) & 0x3FFu) | 0x400u);
        const vi hi = srca ? (m11 >> 6) : (m11 >> 4);
        const vi lo = srca ? ((m11 >> 1) & 31) : ((m11 & 15) << 3);
        const vu sgn = u & 0x80000000u;
        store(op.e + i, zero ? vi{} + kZeroExp : (vi)((u >> 23) & 255u));
        store(op.hi + i, (vf)(zero ? vu{} : ((vu)__builtin_convertvector(hi, vf) | sgn)));
        store(op.lo + i, (vf)(zero ? vu{} : ((vu)__builtin_convertvector(lo, vf) | sgn)));
    }
}

inline int32_t product_exp_adjust(int phase) {
    return -127 - ((phase & 1) ? 5 : 0) - ((phase & 2) ? 7 : 0);
}

// Per DST face row and K chunk (16 lanes = two groups of 8): the group exponents and the power of
// two that aligns each lane's product to its group maximum. Independent of the fidelity phase.
struct RowPlan {
    int32_t emax[2][16];     // per group, per column: max lane exponent (sum of operand exponents)
    float scale[16][16];     // per lane, per column: 2^-(emax - lane exponent), at least 2^-31
};

TTMOCK_HOT void plan_row(RowPlan& plan, const int32_t* ea /* 16x16 face [k][c] */,
                         const int32_t* eb /* 16 lanes */) {
    for (int h = 0; h < 16; h += kLanes) {
        for (int g = 0; g < 2; ++g) {
            vi em = vi{} + 2 * kZeroExp;
            for (int k = 8 * g; k < 8 * g + 8; ++k) em = vmax(em, load<vi>(ea + k * 16 + h) + eb[k]);
            for (int k = 8 * g; k < 8 * g + 8; ++k) {
                const vi d = vmin(em - (load<vi>(ea + k * 16 + h) + eb[k]), vi{} + 31);
                store(&plan.scale[k][h], (vf)((127 - d) << 23));
            }
            store(&plan.emax[g][h], em);
        }
    }
}

// One MVMUL row: DST row (16 columns) += B row (16 lanes) @ A face (16x16), one fidelity phase.
// Each product (exact: 5 x 7 bits) is aligned to its group's largest exponent, rounding half
// away from zero; the two group sums then go through the accumulator with the DST value.
template <bool kFp32>
TTMOCK_HOT void mvmul_row(uint32_t* drow, const RowPlan& plan, const float* fa /* [k][c] */,
                          const float* fb /* 16 lanes */, int32_t adj) {
    for (int h = 0; h < 16; h += kLanes) {
        vi sum[2];
        for (int g = 0; g < 2; ++g) {
            vi acc{};
            for (int k = 8 * g; k < 8 * g + 8; ++k) {
                const vf v = load<vf>(fa + k * 16 + h) * fb[k] * load<vf>(&plan.scale[k][h]);
                const vf half = (vf)(((vu)v & 0x80000000u) | 0x3F000000u);  // copysign(0.5, v)
                acc += __builtin_convertvector(v + half, vi);              // truncates
            }
            sum[g] = acc;
        }
        const vi e0 = load<vi>(&plan.emax[0][h]) + adj, e1 = load<vi>(&plan.emax[1][h]) + adj;
        const vi v0 = e0 > 0, v1 = e1 > 0;  // a group whose exponent underflows contributes nothing
        const vi m0 = v0 & ((sum[0] < 0 ? -sum[0] : sum[0]) << 13);
        const vi m1 = v1 & ((sum[1] < 0 ? -sum[1] : sum[1]) << 13);
        const vu out = accumulate<kFp32>(v0 & (sum[0] < 0) & 1, v0 & e0, m0, v1 & (sum[1] < 0) & 1,
                                         v1 & e1, m1, load<vu>(drow + h));
        store(drow + h, out);
    }
}

template <bool kFp32>
void matmul_impl(uint32_t* dst, const uint32_t* in0, const uint32_t* in1, int phases) {
    // in1 feeds SrcA, in0 SrcB (MVMUL computes Dst += SrcB @ SrcA)
    Operand a, b;
    decode(in1, a, true);
    decode(in0, b, false);
    RowPlan plans[2];
    for (int fr = 0; fr < 2; ++fr) {
        for (int fc = 0; fc < 2; ++fc) {
            uint32_t* dface = dst + (fr * 2 + fc) * 256;
            for (int r = 0; r < 16; ++r) {
                // K chunk kc: SrcB = in0 face (fr, kc) row r, SrcA = in1 face (kc, fc)
                for (int kc = 0; kc < 2; ++kc) {
                    plan_row(plans[kc], a.e + (kc * 2 + fc) * 256, b.e + (fr * 2 + kc) * 256 + r * 16);
                }
                // LLK order (llk_math_matmul.h): fidelity phases outermost, then the K chunks
                for (int p = 0; p < phases; ++p) {
                    const int32_t adj = product_exp_adjust(p);
                    for (int kc = 0; kc < 2; ++kc) {
                        const float* fa = ((p & 1) ? a.lo : a.hi) + (kc * 2 + fc) * 256;
                        const float* fb = ((p & 2) ? b.lo : b.hi) + (fr * 2 + kc) * 256 + r * 16;
                        mvmul_row<kFp32>(dface + r * 16, plans[kc], fa, fb, adj);
                    }
                }
            }
        }
    }
}

// ---- MVMUL on 16-bit lanes (x86 with AVX2) ----------------------------------------------------------
// The same rule as mvmul_row, computed exactly in 16-bit integers, 16 output columns per vector: a
// product p of the 5-bit SrcA and 7-bit SrcB fields is below 2^12. SrcA is kept as byte pairs
// (4 sa fa, sa) and SrcB as (|fb|, 1) (sa, sb: the operands' signs), so one vpmaddubsw gives
// x = sa (4 |p| + 1); with m = sb 2^(13 - d) (0 for d > 13), mulhrs(x, m) = floor(s (|p| + 1/4) /
// 2^d + 1/2), s the sign of p: the 1/4 (below the 2^-d step of |p| / 2^d) turns a negative
// product's tie downwards, so this is |p| / 2^d rounded half away from zero times s, the group
// alignment rule (d > 13 gives 0 as it must). A product costs three instructions instead of eight.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(TTMOCK_NO_CLONES)
#define TTMOCK_MVMUL16 1
#define AVX2_FN __attribute__((target("avx2")))
typedef int16_t vh __attribute__((vector_size(32)));
typedef int16_t vh8 __attribute__((vector_size(16)));
constexpr int16_t kZeroExp16 = -8192;  // sums of two stay above -2^15; never a group maximum

struct Operand16 {
    alignas(32) int16_t e[kTileElems];     // biased exponent, kZeroExp16 for a zero datum
    // byte pairs of the mantissa fields (hi, lo): SrcA (4 sa fa, sa), SrcB (|fb|, 1)
    alignas(32) int16_t f[2][kTileElems];
    alignas(32) int16_t s[kTileElems];     // sign (+1 for zero)
};

AVX2_FN void decode16(const uint32_t* src, Operand16& op, bool srca) {
    for (int i = 0; i < kTileElems; i += kLanes) {
        const vu u = load<vu>(src + i);
        const vi zero = (vi)((u & kExpMask) == 0);
        const vi neg = (vi)(u >> 31) != 0;
        const vi m11 = (vi)(((u >> 13) & 0x3FFu) | 0x400u);
        vi hi = srca ? (m11 >> 6) << 2 : (m11 >> 4);
        vi lo = srca ? ((m11 >> 1) & 31) << 2 : ((m11 & 15) << 3);
        const vi sgn = (zero | ~neg) ? vi{} + 1 : vi{} - 1;
        hi = zero ? vi{} : (srca ? hi * sgn : hi);
        lo = zero ? vi{} : (srca ? lo * sgn : lo);
        hi = (hi & 0xFF) | ((srca ? sgn : vi{} + 1) & 0xFF) << 8;
        lo = (lo & 0xFF) | ((srca ? sgn : vi{} + 1) & 0xFF) << 8;
        const vi e = zero ? vi{} + kZeroExp16 : (vi)((u >> 23) & 255u);
        store(op.e + i, __builtin_convertvector(e, vh8));
        store(op.s + i, __builtin_convertvector(sgn, vh8));
        store(op.f[0] + i, __builtin_convertvector(hi, vh8));
        store(op.f[1] + i, __builtin_convertvector(lo, vh8));
    }
}

struct RowPlan16 {
    alignas(32) int32_t emax[2][16];  // per group, per column: max lane exponent
    alignas(32) int16_t mul[16][16];  // per lane, per column: sb 2^(13 - d), 0 for d >= 14
};

// 2^(14 - d) for d = 0..15 by one byte lookup (pshufb, per 128-bit half): the table holds
// 2^(14 - i) for i = 7..14 (128 .. 1) and 0 elsewhere; the low byte of a lane looks up d, the
// high byte d + 0x78, which selects entry d + 8 (2^(6 - d)) for d <= 7 and has bit 7 set (zero)
// for d >= 8.
AVX2_FN inline __m256i pow2_14_minus(__m256i d) {
    const __m256i tab = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, -128, 64, 32, 16, 8, 4, 2, 1, 0,
                                         0, 0, 0, 0, 0, 0, 0, -128, 64, 32, 16, 8, 4, 2, 1, 0);
    const __m256i idx = _mm256_add_epi16(_mm256_mullo_epi16(d, _mm256_set1_epi16(0x0101)),
                                         _mm256_set1_epi16(0x7800));
    return _mm256_shuffle_epi8(tab, idx);
}

AVX2_FN void plan_row16(RowPlan16& plan, const int16_t* ea /* 16x16 face [k][c] */,
                        const int16_t* eb /* 16 lanes */, const int16_t* sb /* 16 lanes */) {
    for (int g = 0; g < 2; ++g) {
        __m256i e[8];
        __m256i em = _mm256_set1_epi16(-32768);
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) {
            e[k] = _mm256_add_epi16(load<__m256i>(ea + (8 * g + k) * 16), _mm256_set1_epi16(eb[8 * g + k]));
            em = _mm256_max_epi16(em, e[k]);
        }
        const __m256i fifteen = _mm256_set1_epi16(15), em1 = _mm256_add_epi16(em, _mm256_set1_epi16(1));
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) {  // 2^(14 - (d + 1)), signed by the SrcB datum
            const __m256i d1 = _mm256_min_epi16(_mm256_sub_epi16(em1, e[k]), fifteen);
            store(&plan.mul[8 * g + k][0], _mm256_sign_epi16(pow2_14_minus(d1), _mm256_set1_epi16(sb[8 * g + k])));
        }
        store(&plan.emax[g][0], _mm256_cvtepi16_epi32(_mm256_castsi256_si128(em)));
        store(&plan.emax[g][8], _mm256_cvtepi16_epi32(_mm256_extracti128_si256(em, 1)));
    }
}

// The accumulator of `accumulate` for two MVMUL group sums, in AVX2 integer and float
// instructions, on signed values. Each addend comes doubled (a group sum x, |x| < 2^15, as
// x * 2^14; the DST significand m as 2m): aligning it by d with rounding is ((2v >> d) + 1) >> 1,
// which is floor(v / 2^d + 1/2) (ties toward +infinity: a group sum's rule) for any d >= 0, and
// 0 for every d >= 29, where the shift leaves 0 or -1 (so no cap on d); the DST value is aligned
// on its magnitude (ties away from zero). The exact sum T (|T| < 2^30) is normalised and rounded
// half away from zero by an int -> float conversion: with a 32-bit DST of 2|T| + a sticky bit
// (the sticky bit turns a tie, which the conversion would round to even, into a round up; only
// set from 2^24 on, where the conversion drops at least two bits); with a 16-bit DST T is a
// multiple of 2^13, T / 2^13 converts exactly, then the packer-style + 0x8000 rounds to BF16.
// The float's exponent is then moved to the accumulator's: emax + float exponent - bias - scaling.
// An addend whose group exponent underflowed comes as x = 0 (its exponent <= 0 never wins).
template <bool kFp32>
AVX2_FN inline __m256i accumulate_avx2(__m256i x0, __m256i e0, __m256i x1, __m256i e1, __m256i dst) {
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i ed = _mm256_and_si256(_mm256_srli_epi32(dst, 23), _mm256_set1_epi32(255));
    __m256i md = _mm256_or_si256(_mm256_and_si256(_mm256_slli_epi32(dst, 1), _mm256_set1_epi32(0xFFFFFE)),
                                 _mm256_set1_epi32(0x1000000));  // 2m
    md = _mm256_andnot_si256(_mm256_cmpeq_epi32(ed, _mm256_setzero_si256()), md);
    const __m256i emax = _mm256_max_epi32(_mm256_max_epi32(e0, e1), ed);
    md = _mm256_srli_epi32(_mm256_add_epi32(_mm256_srlv_epi32(md, _mm256_sub_epi32(emax, ed)), one), 1);
    x0 = _mm256_srai_epi32(_mm256_add_epi32(_mm256_srav_epi32(x0, _mm256_sub_epi32(emax, e0)), one), 1);
    x1 = _mm256_srai_epi32(_mm256_add_epi32(_mm256_srav_epi32(x1, _mm256_sub_epi32(emax, e1)), one), 1);
    if (!kFp32) {  // each addend rounded to 10 mantissa bits (ties toward +infinity; DST half up)
        const __m256i half = _mm256_set1_epi32(1 << 12), grid = _mm256_set1_epi32(~0x1FFF);
        x0 = _mm256_and_si256(_mm256_add_epi32(x0, half), grid);
        x1 = _mm256_and_si256(_mm256_add_epi32(x1, half), grid);
        md = _mm256_and_si256(_mm256_add_epi32(md, half), grid);
    }
    const __m256i xd = _mm256_sign_epi32(md, dst);  // dst as int32: negative iff its sign bit is set
    const __m256i t = _mm256_add_epi32(_mm256_add_epi32(x0, x1), xd);
    const __m256i mag = _mm256_abs_epi32(t);
    __m256i fb, bias;
    if (kFp32) {
        const __m256i big = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32((1 << 24) - 1));
        const __m256i v = _mm256_or_si256(_mm256_add_epi32(mag, mag), _mm256_and_si256(big, one));
        fb = _mm256_castps_si256(_mm256_cvtepi32_ps(v));
        // Wormhole renormalises -1 wrongly (ttsim models it): exponent emax + 4, mantissa 0
        fb = _mm256_add_epi32(fb, _mm256_and_si256(_mm256_cmpeq_epi32(t, _mm256_set1_epi32(-1)),
                                                   _mm256_set1_epi32(g_wormhole_minus_one ? 27 << 23 : 0)));
        bias = _mm256_sub_epi32(emax, _mm256_set1_epi32(127 + 23 + 1));
    } else {
        fb = _mm256_castps_si256(_mm256_cvtepi32_ps(_mm256_srli_epi32(mag, 13)));
        fb = _mm256_and_si256(_mm256_add_epi32(fb, _mm256_set1_epi32(0x8000)), _mm256_set1_epi32(0xFFFF0000));
        bias = _mm256_sub_epi32(emax, _mm256_set1_epi32(127 + 23 - 13));
    }
    const __m256i exp = _mm256_add_epi32(_mm256_srli_epi32(fb, 23), bias);
    const __m256i sign = _mm256_and_si256(t, _mm256_set1_epi32(static_cast<int32_t>(0x80000000u)));
    __m256i out = _mm256_or_si256(_mm256_add_epi32(fb, _mm256_slli_epi32(bias, 23)), sign);
    const __m256i inf = _mm256_or_si256(sign, _mm256_set1_epi32(0x7F800000));
    out = _mm256_blendv_epi8(out, inf, _mm256_cmpgt_epi32(exp, _mm256_set1_epi32(254)));
    const __m256i zero = _mm256_or_si256(_mm256_cmpeq_epi32(t, _mm256_setzero_si256()),
                                         _mm256_cmpgt_epi32(one, exp));
    return _mm256_andnot_si256(zero, out);
}

template <bool kFp32>
AVX2_FN void mvmul_row16(uint32_t* drow, const RowPlan16& plan, const int16_t* fa /* [k][c] */,
                         const int16_t* fb /* 16 lanes */, int32_t adj) {
    // the two groups' products interleaved, two partial sums each (independent dependency chains)
    __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                      _mm256_setzero_si256()};
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
#pragma GCC unroll 2
        for (int g = 0; g < 2; ++g) {
            const int kk = 8 * g + k;
            const __m256i x = _mm256_maddubs_epi16(_mm256_set1_epi16(fb[kk]), load<__m256i>(fa + kk * 16));
            acc[2 * g + (k & 1)] = _mm256_add_epi16(acc[2 * g + (k & 1)],
                                                    _mm256_mulhrs_epi16(x, load<__m256i>(&plan.mul[kk][0])));
        }
    }
    const __m256i sum[2] = {_mm256_add_epi16(acc[0], acc[1]), _mm256_add_epi16(acc[2], acc[3])};
    const __m256i vadj = _mm256_set1_epi32(adj), zero = _mm256_setzero_si256();
    for (int h = 0; h < 16; h += kLanes) {
        const __m128i h0 = h ? _mm256_extracti128_si256(sum[0], 1) : _mm256_castsi256_si128(sum[0]);
        const __m128i h1 = h ? _mm256_extracti128_si256(sum[1], 1) : _mm256_castsi256_si128(sum[1]);
        const __m256i e0 = _mm256_add_epi32(load<__m256i>(&plan.emax[0][h]), vadj);
        const __m256i e1 = _mm256_add_epi32(load<__m256i>(&plan.emax[1][h]), vadj);
        // a group whose exponent underflows contributes nothing; sums doubled (x * 2^13 * 2)
        const __m256i x0 = _mm256_and_si256(_mm256_slli_epi32(_mm256_cvtepi16_epi32(h0), 14),
                                            _mm256_cmpgt_epi32(e0, zero));
        const __m256i x1 = _mm256_and_si256(_mm256_slli_epi32(_mm256_cvtepi16_epi32(h1), 14),
                                            _mm256_cmpgt_epi32(e1, zero));
        store(drow + h, accumulate_avx2<kFp32>(x0, e0, x1, e1, load<__m256i>(drow + h)));
    }
}

template <bool kFp32>
AVX2_FN void matmul16_impl(uint32_t* dst, const uint32_t* in0, const uint32_t* in1, int phases) {
    Operand16 a, b;  // in1 feeds SrcA, in0 SrcB
    decode16(in1, a, true);
    decode16(in0, b, false);
    RowPlan16 plans[2];
    for (int fr = 0; fr < 2; ++fr) {
        for (int fc = 0; fc < 2; ++fc) {
            uint32_t* dface = dst + (fr * 2 + fc) * 256;
            for (int r = 0; r < 16; ++r) {
                for (int kc = 0; kc < 2; ++kc) {
                    plan_row16(plans[kc], a.e + (kc * 2 + fc) * 256, b.e + (fr * 2 + kc) * 256 + r * 16,
                               b.s + (fr * 2 + kc) * 256 + r * 16);
                }
                for (int p = 0; p < phases; ++p) {  // as matmul_impl: phases, then K chunks
                    const int32_t adj = product_exp_adjust(p);
                    for (int kc = 0; kc < 2; ++kc) {
                        mvmul_row16<kFp32>(dface + r * 16, plans[kc], a.f[p & 1] + (kc * 2 + fc) * 256,
                                           b.f[(p >> 1) & 1] + (fr * 2 + kc) * 256 + r * 16, adj);
                    }
                }
            }
        }
    }
}


// ---- MVMUL on 512-bit vectors (x86 with AVX-512 BW/DQ) ------------------------------------------
// The rule of mvmul_row16, a whole 32-column DST row (both column faces) per vector, with fewer
// instructions per product:
// - SrcA (in1) is kept row-major as byte pairs (4 * sa * fa, sa) and SrcB (in0) as (|fb|, 1), so
//   one vpmaddubsw gives x = sa * (4 |fa| |fb| + 1) (sa, sb: the operands' signs).
// - With m = sb * 2^(13 - d) (0 for d > 13), mulhrs(x, m) = floor(s (|p| + 1/4) / 2^d + 1/2), s
//   the sign of the product p: the 1/4 (below the 2^-d step of |p| / 2^d) turns the tie of a
//   negative product downwards, so this is |p| / 2^d rounded half away from zero times s, exactly
//   the group alignment rule; d > 13 gives 0 as it must (|p| < 2^12). m is one variable shift,
//   sb << (e - (emax - 13)): a count outside 0..15 gives 0.
// - The plan (exponent sums, group maxima, m) lives in registers across the fidelity phases.
// The accumulator: dst32_step on a DST row kept decoded across the tile's MVMULs. Two rows are
// batched so that their accumulator chains overlap.
#define TTMOCK_MVMUL512 1
#define AVX512_FN __attribute__((target("avx2,avx512f,avx512bw,avx512dq,avx512vl")))

struct SrcA512 {  // SrcA (in1), row-major [k][c]
    alignas(64) int16_t ea[kTileElems];        // exponents
    alignas(64) int16_t a[2][kTileElems];      // [field] (4 sa fa, sa) pairs
};
struct SrcB512 {  // SrcB (in0), face layout, each 16-bit value twice per word
    alignas(64) int32_t eb[kTileElems];        // exponents
    alignas(64) int32_t b[2][kTileElems];      // [field] (|fb|, 1) pairs
    alignas(64) int32_t sb[kTileElems];        // signs (+1 for zero)
};

// Word indices for vpermt2w / vpermw: the high and the low halves of 32 dwords, and each of 16
// words twice (the first or the second 16).
alignas(64) constexpr uint16_t kHighWords[32] = {1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31,
                                                 33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63};
alignas(64) constexpr uint16_t kTwice[2][32] = {
    {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15},
    {16, 16, 17, 17, 18, 18, 19, 19, 20, 20, 21, 21, 22, 22, 23, 23,
     24, 24, 25, 25, 26, 26, 27, 27, 28, 28, 29, 29, 30, 30, 31, 31}};

// 32 source-register values (two runs of 16) on 16-bit lanes: the high half (sign, exponent,
// 7 mantissa bits), the low half (its top 3 bits are the TF32 mantissa's last; 0 for BF16 data),
// the non-zero lanes (exponent field not 0) and the negative non-zero ones.
struct Words512 {
    __m512i hw, lw;
    __mmask32 nz, neg;
};
AVX512_FN inline Words512 words_of(__m512i hw, __m512i lw) {
    Words512 w;
    w.hw = hw;
    w.lw = lw;
    w.nz = _mm512_test_epi16_mask(w.hw, _mm512_set1_epi16(0x7F80));
    w.neg = _mm512_movepi16_mask(w.hw) & w.nz;
    return w;
}
AVX512_FN inline Words512 words512(const uint32_t* p0, const uint32_t* p1) {  // fp32 source registers
    const __m512i u0 = _mm512_loadu_si512(p0), u1 = _mm512_loadu_si512(p1);
    const __m512i hi_idx = _mm512_load_si512(kHighWords);
    return words_of(_mm512_permutex2var_epi16(u0, hi_idx, u1),
                    _mm512_permutex2var_epi16(u0, _mm512_sub_epi16(hi_idx, _mm512_set1_epi16(1)), u1));
}
AVX512_FN inline Words512 words512(const uint16_t* p0, const uint16_t* p1) {  // BF16 data
    const __m512i hw = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p0))),
                                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p1)), 1);
    return words_of(hw, _mm512_setzero_si512());
}
AVX512_FN inline __m512i exponent512(const Words512& w) {  // kZeroExp16 for a zero datum
    return _mm512_mask_mov_epi16(_mm512_set1_epi16(kZeroExp16), w.nz,
                                 _mm512_and_si512(_mm512_srli_epi16(w.hw, 7), _mm512_set1_epi16(0xFF)));
}

// SrcA from in1 (32-bit source-register values or BF16 data, T = uint32_t or uint16_t)
template <typename T>
AVX512_FN void decode_a512(const T* in1, SrcA512& op) {
    const __m512i zero = _mm512_setzero_si512(), low_byte = _mm512_set1_epi16(0xFF);
    for (int k = 0; k < 32; ++k) {  // SrcA: tile row k (both column faces), row-major
        const T* face_row = in1 + (k >> 4) * 512 + (k & 15) * 16;
        const Words512 w = words512(face_row, face_row + 256);
        // 4 fa: hi = implicit one and 4 mantissa bits, lo = the next 5 (m11 bits 5..1)
        const __m512i hi4 = _mm512_ternarylogic_epi32(_mm512_srli_epi16(w.hw, 1), _mm512_set1_epi16(0x3C),
                                                      _mm512_set1_epi16(0x40), 0xEA);  // (a & b) | c
        const __m512i lo = sizeof(T) == 2 ? _mm512_and_si512(_mm512_slli_epi16(w.hw, 2), _mm512_set1_epi16(0x1C))
                                          : _mm512_ternarylogic_epi32(_mm512_slli_epi16(w.hw, 2), _mm512_srli_epi16(w.lw, 14),
                                                                      _mm512_set1_epi16(0x1C), 0xE4);  // c ? a : b
        const __m512i fields[2] = {hi4, _mm512_slli_epi16(lo, 2)};
        // high byte of a pair: the datum's sign (+1 for zero)
        const __m512i sgn = _mm512_mask_mov_epi16(_mm512_set1_epi16(0x0100), w.neg, _mm512_set1_epi16(-256));
        for (int f = 0; f < 2; ++f) {
            const __m512i x = _mm512_maskz_mov_epi16(w.nz, _mm512_mask_sub_epi16(fields[f], w.neg, zero, fields[f]));
            _mm512_store_si512(op.a[f] + k * 32, _mm512_ternarylogic_epi32(x, low_byte, sgn, 0xEA));
        }
        _mm512_store_si512(op.ea + k * 32, exponent512(w));
    }
}

// SrcB from in0 (as decode_a512); the field of the low mantissa bits (b[1]) only when the
// fidelity phases 2 and 3 read it (with_lo)
template <typename T>
AVX512_FN void decode_b512(const T* in0, SrcB512& op, bool with_lo) {
    const __m512i twice0 = _mm512_load_si512(kTwice[0]), twice1 = _mm512_load_si512(kTwice[1]);
    for (int i = 0; i < kTileElems; i += 32) {  // SrcB, face layout
        const Words512 w = words512(in0 + i, in0 + i + 16);
        // |fb| | 0x100: hi = implicit one and 6 mantissa bits, lo = the last 4 (m11 bits 3..0) * 8
        const __m512i pair = _mm512_set1_epi16(0x100);
        const __m512i hi = _mm512_ternarylogic_epi32(_mm512_srli_epi16(w.hw, 1), _mm512_set1_epi16(0x3F),
                                                     _mm512_set1_epi16(0x40), 0xEA);
        const __m512i lo = sizeof(T) == 2 ? _mm512_and_si512(_mm512_slli_epi16(w.hw, 6), _mm512_set1_epi16(0x40))
                                          : _mm512_ternarylogic_epi32(_mm512_slli_epi16(w.hw, 6),
                                                                      _mm512_slli_epi16(_mm512_srli_epi16(w.lw, 13), 3),
                                                                      _mm512_set1_epi16(0x40), 0xE4);
        const __m512i vals[4] = {_mm512_mask_mov_epi16(pair, w.nz, _mm512_or_si512(hi, pair)),
                                 _mm512_mask_mov_epi16(pair, w.nz, _mm512_or_si512(lo, pair)), exponent512(w),
                                 _mm512_mask_mov_epi16(_mm512_set1_epi16(1), w.neg, _mm512_set1_epi16(-1))};
        int32_t* outs[4] = {op.b[0] + i, op.b[1] + i, op.eb + i, op.sb + i};
        for (int v = 0; v < 4; ++v) {
            if (v == 1 && !with_lo) continue;
            _mm512_store_si512(outs[v], _mm512_permutexvar_epi16(twice0, vals[v]));
            _mm512_store_si512(outs[v] + 16, _mm512_permutexvar_epi16(twice1, vals[v]));
        }
    }
}

// A DST row kept decoded across the MVMULs of one tile matmul: the exponent field e and
// x = 8 m (m the 24-bit significand with its implicit one; 0 for a zero or denormal value), ~x
// (= -x - 1) for a negative value, so that an arithmetic shift rounds its magnitude half away
// from zero as the accumulator aligns it: (sra(~x, d) + 4) >> 3 = -floor(m / 2^d + 1/2).
struct Dst32 {
    __m512i e, x;
};

AVX512_FN inline Dst32 dst32_decode(__m512i d) {
    const __mmask16 nz = _mm512_test_epi32_mask(d, _mm512_set1_epi32(static_cast<int32_t>(kExpMask)));
    const __m512i e = _mm512_maskz_and_epi32(nz, _mm512_srli_epi32(d, 23), _mm512_set1_epi32(255));
    const __m512i x = _mm512_maskz_ternarylogic_epi32(nz, _mm512_slli_epi32(d, 3), _mm512_set1_epi32(0x7FFFFF << 3),
                                                      _mm512_set1_epi32(1 << 26), 0xEA);  // (a & b) | c
    return {e, _mm512_mask_ternarylogic_epi32(x, _mm512_movepi32_mask(d) & nz, x, x, 0x0F)};  // ~a
}

AVX512_FN inline __m512i dst32_encode(Dst32 s) {
    const __m512i m8 = _mm512_xor_si512(s.x, _mm512_srai_epi32(s.x, 31));
    const __m512i out = _mm512_ternarylogic_epi32(_mm512_srli_epi32(m8, 3), _mm512_set1_epi32(0x7FFFFF),
                                                  _mm512_slli_epi32(s.e, 23), 0xEA);
    return _mm512_mask_or_epi32(out, _mm512_movepi32_mask(s.x), out,
                                _mm512_set1_epi32(static_cast<int32_t>(0x80000000u)));
}

// accumulate_avx2 on a decoded DST: group sums as x * 2^16 (three guard bits below the
// alignment grid: (sra(v, d) + 4) >> 3 rounds ties toward +infinity; 0 for a group whose exponent
// underflows), group exponents e0, e1 and their maximum em01 without the phase's exponent
// adjustment adj, and the DST exponent field less adj. With a 16-bit DST each addend is then
// rounded to 10 mantissa bits as accumulate_avx2 does: the group sums a second time (ties toward
// +infinity), the DST value a second time, half away from zero; the sum, a multiple of 2^13
// below 2^30, converts exactly and is rounded to BF16.
template <bool kFp32>
AVX512_FN inline Dst32 dst32_step(Dst32 s, __m512i x0, __m512i e0, __m512i x1, __m512i e1, __m512i em01,
                                  int32_t adj) {
    const __m512i one = _mm512_set1_epi32(1), four = _mm512_set1_epi32(4);
    const __m512i ed = s.e;
    const __m512i emax = _mm512_max_epi32(em01, ed);
    __m512i a0 = _mm512_srai_epi32(_mm512_add_epi32(_mm512_srav_epi32(x0, _mm512_sub_epi32(emax, e0)), four), 3);
    __m512i a1 = _mm512_srai_epi32(_mm512_add_epi32(_mm512_srav_epi32(x1, _mm512_sub_epi32(emax, e1)), four), 3);
    __m512i ad;
    if (kFp32) {
        ad = _mm512_srai_epi32(_mm512_add_epi32(_mm512_srav_epi32(s.x, _mm512_sub_epi32(emax, ed)), four), 3);
    } else {
        const __m512i half = _mm512_set1_epi32(1 << 12), grid = _mm512_set1_epi32(~0x1FFF);
        a0 = _mm512_and_si512(_mm512_add_epi32(a0, half), grid);
        a1 = _mm512_and_si512(_mm512_add_epi32(a1, half), grid);
        // the DST value rounded a second time, its magnitude half away from zero: 1 less before
        // the floor turns a negative value's tie downwards
        ad = _mm512_srai_epi32(_mm512_add_epi32(_mm512_srav_epi32(s.x, _mm512_sub_epi32(emax, ed)), four), 3);
        ad = _mm512_and_si512(_mm512_add_epi32(_mm512_add_epi32(ad, half), _mm512_srai_epi32(s.x, 31)), grid);
    }
    const __m512i t = _mm512_add_epi32(_mm512_add_epi32(a0, a1), ad);
    const __m512i mag = _mm512_abs_epi32(t);
    __m512i fb, exp;
    if (kFp32) {
        const __m512i twice = _mm512_add_epi32(mag, mag);
        const __mmask16 big = _mm512_cmpgt_epi32_mask(mag, _mm512_set1_epi32((1 << 24) - 1));
        __m512i v = _mm512_mask_or_epi32(twice, big, twice, one);
        // Wormhole renormalises -1 wrongly (ttsim models it): exponent emax + 4, mantissa 0 (as 2^28)
        const __mmask16 minus_one = g_wormhole_minus_one ? _mm512_cmpeq_epi32_mask(t, _mm512_set1_epi32(-1)) : 0;
        v = _mm512_mask_mov_epi32(v, minus_one, _mm512_set1_epi32(1 << 28));
        fb = _mm512_castps_si512(_mm512_cvtepi32_ps(v));
        exp = _mm512_add_epi32(_mm512_srli_epi32(fb, 23), _mm512_add_epi32(emax, _mm512_set1_epi32(-127 - 23 - 1)));
    } else {
        fb = _mm512_castps_si512(_mm512_cvtepi32_ps(mag));
        fb = _mm512_and_si512(_mm512_add_epi32(fb, _mm512_set1_epi32(0x8000)), _mm512_set1_epi32(0xFFFF0000));
        exp = _mm512_add_epi32(_mm512_srli_epi32(fb, 23), _mm512_add_epi32(emax, _mm512_set1_epi32(-127 - 23)));
    }
    const __mmask16 keep = _mm512_cmpneq_epi32_mask(t, _mm512_setzero_si512()) &
                           _mm512_cmpgt_epi32_mask(exp, _mm512_set1_epi32(-adj));
    const __mmask16 inf = _mm512_mask_cmpgt_epi32_mask(keep, exp, _mm512_set1_epi32(254 - adj));
    Dst32 out;
    out.e = _mm512_mask_min_epi32(_mm512_set1_epi32(-adj), keep, exp, _mm512_set1_epi32(255 - adj));
    __m512i m8 = _mm512_maskz_ternarylogic_epi32(keep, _mm512_slli_epi32(fb, 3), _mm512_set1_epi32(0x7FFFFF << 3),
                                                 _mm512_set1_epi32(1 << 26), 0xEA);
    m8 = _mm512_mask_mov_epi32(m8, inf, _mm512_set1_epi32(1 << 26));  // infinity: mantissa 0
    out.x = _mm512_mask_ternarylogic_epi32(m8, _mm512_movepi32_mask(t) & keep, m8, m8, 0x0F);
    return out;
}


// dst32_step with a 32-bit DST where no result can leave the exponent range [1, 254] (a batch
// that range_safe512 accepted): without the flush to zero and infinity selects. A sum of 0 or +-1
// (a zero result, Wormhole's -1 renormalisation) is not handled either: `low` keeps the smallest
// 2|sum| seen, and a batch where it was below 4 is computed again with dst32_step. The sticky bit
// that turns the conversion's ties into round-ups is |sum| >> 24 here (non-zero from 2^24 on,
// below half the dropped bits' unit, and or-ed in, so it never carries into them).
AVX512_FN inline void dst32_step_fast(Dst32& s, __m512i x0, __m512i e0, __m512i x1, __m512i e1, __m512i em01,
                                      __m512i& low) {
    const __m512i four = _mm512_set1_epi32(4);
    const __m512i emax = _mm512_max_epi32(em01, s.e);
    const __m512i a0 = _mm512_srai_epi32(_mm512_add_epi32(_mm512_srav_epi32(x0, _mm512_sub_epi32(emax, e0)), four), 3);
    const __m512i a1 = _mm512_srai_epi32(_mm512_add_epi32(_mm512_srav_epi32(x1, _mm512_sub_epi32(emax, e1)), four), 3);
    const __m512i ad = _mm512_srai_epi32(_mm512_add_epi32(_mm512_srav_epi32(s.x, _mm512_sub_epi32(emax, s.e)), four), 3);
    const __m512i t = _mm512_add_epi32(_mm512_add_epi32(a0, a1), ad);
    const __m512i mag = _mm512_abs_epi32(t);
    const __m512i v = _mm512_or_si512(_mm512_add_epi32(mag, mag), _mm512_srli_epi32(mag, 24));
    low = _mm512_min_epu32(low, v);
    const __m512i fb = _mm512_castps_si512(_mm512_cvtepi32_ps(v));
    s.e = _mm512_add_epi32(_mm512_srli_epi32(fb, 23), _mm512_sub_epi32(emax, _mm512_set1_epi32(127 + 23 + 1)));
    const __m512i m8 = _mm512_ternarylogic_epi32(_mm512_slli_epi32(fb, 3), _mm512_set1_epi32(0x7FFFFF << 3),
                                                 _mm512_set1_epi32(1 << 26), 0xEA);
    s.x = _mm512_xor_si512(m8, _mm512_srai_epi32(t, 31));  // ~m8 for a negative sum
}

// One DST row's MVMUL work before the accumulator: the group maxima of each K chunk (emax, int16
// per column) and the group sums of each fidelity phase and K chunk (sums, int16 per column).
struct RowSums512 {
    __m512i sums[4][2][2];  // [phase][K chunk][group]
    __m512i emax[2][2];     // [K chunk][group]
};

// The group sums of one fidelity phase and K chunk: 16 products per column (SrcA fields fa [k][c],
// SrcB pairs fb per k), aligned by mul, in two groups of 8.
AVX512_FN inline void group_sums512(__m512i& s0, __m512i& s1, const int16_t* fa, const int32_t* fb,
                                    const __m512i* mul) {
    __m512i acc[4];
#pragma GCC unroll 16
    for (int kk = 0; kk < 16; ++kk) {
        const __m512i x = _mm512_maddubs_epi16(_mm512_set1_epi32(fb[kk]), _mm512_load_si512(fa + kk * 32));
        const __m512i y = _mm512_mulhrs_epi16(x, mul[kk]);
        const int i = (kk >> 3) * 2 + (kk & 1);
        acc[i] = kk < 2 || (kk >= 8 && kk < 10) ? y : _mm512_add_epi16(acc[i], y);
    }
    s0 = _mm512_add_epi16(acc[0], acc[1]);
    s1 = _mm512_add_epi16(acc[2], acc[3]);
}

// group_sums512 of the two fidelity phases that share the SrcB field (phases 2 bf and 2 bf + 1,
// SrcA fields 0 and 1): each SrcB broadcast serves both.
AVX512_FN inline void group_sums512_pair(__m512i (&s)[2][2], const int16_t* fa0, const int16_t* fa1,
                                         const int32_t* fb, const __m512i* mul) {
#pragma GCC unroll 16
    for (int kk = 0; kk < 16; ++kk) {
        const __m512i b = _mm512_set1_epi32(fb[kk]);
        const __m512i y0 = _mm512_mulhrs_epi16(_mm512_maddubs_epi16(b, _mm512_load_si512(fa0 + kk * 32)), mul[kk]);
        const __m512i y1 = _mm512_mulhrs_epi16(_mm512_maddubs_epi16(b, _mm512_load_si512(fa1 + kk * 32)), mul[kk]);
        const int g = kk >> 3;
        s[0][g] = (kk & 7) == 0 ? y0 : _mm512_add_epi16(s[0][g], y0);
        s[1][g] = (kk & 7) == 0 ? y1 : _mm512_add_epi16(s[1][g], y1);
    }
}

template <int phases>
AVX512_FN inline void row_sums512(RowSums512& out, const SrcA512& opa, const SrcB512& opb, int row) {
    const int fr = row >> 4, r = row & 15;
    for (int kc = 0; kc < 2; ++kc) {
        const int bi = (fr * 2 + kc) * 256 + r * 16;  // SrcB lanes of this row and K chunk
        const int16_t* ea = opa.ea + kc * 16 * 32;
        const int32_t* eb = opb.eb + bi;
        const int32_t* sb = opb.sb + bi;
        __m512i mul[16];
#pragma GCC unroll 2
        for (int g = 0; g < 2; ++g) {
            __m512i e[8];
            e[0] = _mm512_add_epi16(_mm512_load_si512(ea + 8 * g * 32), _mm512_set1_epi32(eb[8 * g]));
            __m512i em = e[0];
#pragma GCC unroll 8
            for (int k = 1; k < 8; ++k) {
                e[k] = _mm512_add_epi16(_mm512_load_si512(ea + (8 * g + k) * 32), _mm512_set1_epi32(eb[8 * g + k]));
                em = _mm512_max_epi16(em, e[k]);
            }
            const __m512i em13 = _mm512_sub_epi16(em, _mm512_set1_epi16(13));
#pragma GCC unroll 8
            for (int k = 0; k < 8; ++k) {
                mul[8 * g + k] = _mm512_sllv_epi16(_mm512_set1_epi32(sb[8 * g + k]), _mm512_sub_epi16(e[k], em13));
            }
            out.emax[kc][g] = em;
        }
        constexpr int kMaxPair = 2;
        for (int p = 0; p < phases; p += kMaxPair) {
            __m512i s[2][2];
            const int32_t* fb = opb.b[(p >> 1) & 1] + bi;
            const int n = std::min(kMaxPair, phases - p);
            if (n == 2) {
                group_sums512_pair(s, opa.a[0] + kc * 16 * 32, opa.a[1] + kc * 16 * 32, fb, mul);
            } else {
                group_sums512(s[0][0], s[0][1], opa.a[p & 1] + kc * 16 * 32, fb, mul);
            }
            for (int q = 0; q < n; ++q) {
                // a group whose exponent underflows (emax + adj <= 0) contributes nothing
                const __m512i floor = _mm512_set1_epi16(static_cast<int16_t>(-product_exp_adjust(p + q)));
                out.sums[p + q][kc][0] = _mm512_maskz_mov_epi16(_mm512_cmpgt_epi16_mask(out.emax[kc][0], floor), s[q][0]);
                out.sums[p + q][kc][1] = _mm512_maskz_mov_epi16(_mm512_cmpgt_epi16_mask(out.emax[kc][1], floor), s[q][1]);
            }
        }
    }
}

// The accumulator for a batch of rows (independent dependency chains), in the LLK order:
// fidelity phases, then K chunks.
// Whether no dst32_step of a batch of rows can give an exponent outside [1, 254] (then
// dst32_step_fast computes it): a result that is not 0 or +-1 has an exponent within
// [emax - 22, emax + 6] of its step's largest addend exponent emax (the sum is below 2^30 units of
// 2^-23 at emax, and at least 2). emax is at least the group maxima em01, so group maxima whose
// exponent (with each phase's product adjustment) is at least 23 rule out underflow; and with
// every group maximum and every DST exponent at most 254 - 6 S (S: the batch's steps) no
// exponent grows past 254 in S steps.
template <int kRows>
AVX512_FN inline bool range_safe512(const RowSums512* rs, const Dst32 (*st)[2], int phases) {
    int32_t adj_min = 0;
    for (int p = 0; p < phases; ++p) adj_min = std::min(adj_min, product_exp_adjust(p));
    const int32_t top = 254 - 6 * 2 * phases;  // 2 K chunks per phase
    const __m512i lo = _mm512_set1_epi16(static_cast<int16_t>(23 - adj_min));
    const __m512i hi = _mm512_set1_epi16(static_cast<int16_t>(top - product_exp_adjust(0)));
    __mmask32 bad = 0;
    __mmask16 bad_dst = 0;
    for (int j = 0; j < kRows; ++j) {
        for (int kc = 0; kc < 2; ++kc) {
            const __m512i em01 = _mm512_max_epi16(rs[j].emax[kc][0], rs[j].emax[kc][1]);
            bad |= _mm512_cmplt_epi16_mask(em01, lo) | _mm512_cmpgt_epi16_mask(em01, hi);
        }
        for (int h = 0; h < 2; ++h) bad_dst |= _mm512_cmpgt_epi32_mask(st[j][h].e, _mm512_set1_epi32(top));
    }
    return (bad | bad_dst) == 0;
}

// The accumulator steps of a batch of rows in the LLK order (fidelity phases, then K chunks):
// dst32_step_fast (kFast; returns the lanes where a sum was 0 or +-1) or dst32_step.
template <bool kFp32, int kRows, bool kFast>
AVX512_FN inline __mmask16 batch_steps512(Dst32 (&st)[kRows][2], const RowSums512* rs, const __m512i (&e)[kRows][2][2][2],
                                          const __m512i (&em01)[kRows][2][2], int phases) {
    const __m512i odd = _mm512_set1_epi32(static_cast<int32_t>(0xFFFF0000u));
    __m512i low = _mm512_set1_epi32(-1);
    for (int p = 0; p < phases; ++p) {
        const int32_t adj = product_exp_adjust(p);
        // the DST exponent relative to this phase's product exponent adjustment
        const __m512i move = _mm512_set1_epi32((p ? product_exp_adjust(p - 1) : 0) - adj);
        for (int j = 0; j < kRows; ++j) {
            st[j][0].e = _mm512_add_epi32(st[j][0].e, move);
            st[j][1].e = _mm512_add_epi32(st[j][1].e, move);
        }
        for (int kc = 0; kc < 2; ++kc) {
#pragma GCC unroll 4
            for (int j = 0; j < kRows; ++j) {
                const __m512i* s = rs[j].sums[p][kc];
#pragma GCC unroll 2
                for (int h = 0; h < 2; ++h) {
                    // a group sum x 2^16: the even columns (h = 0) or the odd ones
                    const __m512i x0 = h ? _mm512_and_si512(s[0], odd) : _mm512_slli_epi32(s[0], 16);
                    const __m512i x1 = h ? _mm512_and_si512(s[1], odd) : _mm512_slli_epi32(s[1], 16);
                    if (kFast) {
                        dst32_step_fast(st[j][h], x0, e[j][kc][0][h], x1, e[j][kc][1][h], em01[j][kc][h], low);
                    } else {
                        st[j][h] = dst32_step<kFp32>(st[j][h], x0, e[j][kc][0][h], x1, e[j][kc][1][h],
                                                     em01[j][kc][h], adj);
                    }
                }
            }
        }
    }
    return _mm512_cmplt_epu32_mask(low, _mm512_set1_epi32(4));
}

template <bool kFp32, int kRows>
AVX512_FN inline void accumulate_rows512(uint32_t* dst, const RowSums512* rs, int row0, int phases) {
    uint32_t* drow[kRows][2];
    for (int j = 0; j < kRows; ++j) {
        const int fr = (row0 + j) >> 4, r = (row0 + j) & 15;
        drow[j][0] = dst + (fr * 2) * 256 + r * 16;
        drow[j][1] = dst + (fr * 2 + 1) * 256 + r * 16;
    }
    // the even columns of a row in the first half (h = 0), the odd ones in the second: the 16-bit
    // lanes of a 32-column vector as the low and the high halves of its 32-bit lanes
    const __m512i even_cols = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd_cols = _mm512_add_epi32(even_cols, _mm512_set1_epi32(1));
    Dst32 st0[kRows][2], st[kRows][2];  // the rows' DST values before the batch, and now
    __m512i e[kRows][2][2][2], em01[kRows][2][2];  // [row][K chunk][group][even / odd], [row][K chunk][even / odd]
    for (int j = 0; j < kRows; ++j) {
        const __m512i d0 = _mm512_loadu_si512(drow[j][0]), d1 = _mm512_loadu_si512(drow[j][1]);
        st0[j][0] = dst32_decode(_mm512_permutex2var_epi32(d0, even_cols, d1));
        st0[j][1] = dst32_decode(_mm512_permutex2var_epi32(d0, odd_cols, d1));
        for (int kc = 0; kc < 2; ++kc) {
            for (int g = 0; g < 2; ++g) {
                e[j][kc][g][0] = _mm512_srai_epi32(_mm512_slli_epi32(rs[j].emax[kc][g], 16), 16);
                e[j][kc][g][1] = _mm512_srai_epi32(rs[j].emax[kc][g], 16);
            }
            for (int h = 0; h < 2; ++h) em01[j][kc][h] = _mm512_max_epi32(e[j][kc][0][h], e[j][kc][1][h]);
        }
    }
    // fp32: the fast steps when the batch's exponents stay in range, again with the full ones
    // when a sum was 0 or +-1
    for (int j = 0; j < kRows; ++j) st[j][0] = st0[j][0], st[j][1] = st0[j][1];
    if (!kFp32 || !range_safe512<kRows>(rs, st0, phases) ||
        batch_steps512<kFp32, kRows, true>(st, rs, e, em01, phases) != 0) {
        for (int j = 0; j < kRows; ++j) st[j][0] = st0[j][0], st[j][1] = st0[j][1];
        batch_steps512<kFp32, kRows, false>(st, rs, e, em01, phases);
    }
    const __m512i to_d0 = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i to_d1 = _mm512_add_epi32(to_d0, _mm512_set1_epi32(8));
    const __m512i back = _mm512_set1_epi32(product_exp_adjust(phases - 1));
    for (int j = 0; j < kRows; ++j) {
        st[j][0].e = _mm512_add_epi32(st[j][0].e, back);
        st[j][1].e = _mm512_add_epi32(st[j][1].e, back);
        const __m512i lo = dst32_encode(st[j][0]), hi = dst32_encode(st[j][1]);
        _mm512_storeu_si512(drow[j][0], _mm512_permutex2var_epi32(lo, to_d0, hi));
        _mm512_storeu_si512(drow[j][1], _mm512_permutex2var_epi32(lo, to_d1, hi));
    }
}

template <bool kFp32, int kPhases>
AVX512_FN void matmul512_rows(uint32_t* dst, const SrcA512& opa, const SrcB512& opb) {
    constexpr int kRows = 2;
    for (int row = 0; row < 32; row += kRows) {
        RowSums512 rs[kRows];
        for (int j = 0; j < kRows; ++j) row_sums512<kPhases>(rs[j], opa, opb, row + j);
        accumulate_rows512<kFp32, kRows>(dst, rs, row, kPhases);
    }
}

template <bool kFp32>
AVX512_FN void matmul512_rows(uint32_t* dst, const SrcA512& opa, const SrcB512& opb, int phases) {
    switch (phases) {  // the fidelity loops unrolled
        case 1: matmul512_rows<kFp32, 1>(dst, opa, opb); break;
        case 2: matmul512_rows<kFp32, 2>(dst, opa, opb); break;
        case 3: matmul512_rows<kFp32, 3>(dst, opa, opb); break;
        default: matmul512_rows<kFp32, 4>(dst, opa, opb); break;
    }
}

template <bool kFp32>
AVX512_FN void matmul512_impl(uint32_t* dst, const uint32_t* in0, const uint32_t* in1, int phases) {
    SrcA512 opa;  // in1 feeds SrcA, in0 SrcB
    SrcB512 opb;
    decode_a512(in1, opa);
    decode_b512(in0, opb, phases > 2);
    matmul512_rows<kFp32>(dst, opa, opb, phases);
}

// The decoded operands of the last BF16 tiles each host thread multiplied, by their data: matmul_tiles
// calls that share an operand tile (an in0 tile times a row of in1 tiles, a block of in1 tiles
// times each in0 tile) decode it once. A hit compares the whole tile, so results cannot depend on it.
constexpr int kSrcACacheSlots = 32;
struct DecodedBf16 {
    struct A {
        alignas(64) uint16_t key[kTileElems];
        bool valid = false;
        SrcA512 op;
    } a[kSrcACacheSlots];
    struct B {
        alignas(64) uint16_t key[kTileElems];
        bool valid = false;
        bool lo = false;  // op.b[1] decoded
        SrcB512 op;
    } b;
};

template <typename Slot>
inline bool cached(Slot& slot, const uint16_t* data) {
    if (slot.valid && std::memcmp(slot.key, data, sizeof slot.key) == 0) return true;
    std::memcpy(slot.key, data, sizeof slot.key);
    slot.valid = true;
    return false;
}

// The transpose within the tile of a BF16 in1 tile (matmul_tiles with transpose: the unpacker's
// exact BF16 copy transposed, so matmul of it is matmul of the transposed unpacked tile), kept
// per host thread by the tile's data like the decoding above: an in1 tile multiplied by several
// in0 tiles is transposed once, and its transposed copy keeps its place (so its decoding hits).
struct TransposedBf16 {
    struct Slot {
        alignas(64) uint16_t key[kTileElems];
        alignas(64) uint16_t t[kTileElems];
        bool valid = false;
    } slot[kSrcACacheSlots];
};
const uint16_t* transposed_bf16(const uint16_t* in1) {
    static thread_local std::unique_ptr<TransposedBf16> cache = std::make_unique<TransposedBf16>();
    auto& s = cache->slot[(reinterpret_cast<uintptr_t>(in1) / (kTileElems * 2)) % kSrcACacheSlots];
    if (!cached(s, in1)) {  // face (fr, fc) is face (fc, fr) transposed
        for (uint32_t f = 0; f < 4; ++f) {
            const uint16_t* src = in1 + ((f & 1) * 2 + (f >> 1)) * 256;
            uint16_t* out = s.t + f * 256;
            for (uint32_t i = 0; i < 16; ++i)
                for (uint32_t j = 0; j < 16; ++j) out[i * 16 + j] = src[j * 16 + i];
        }
    }
    return s.t;
}

AVX512_FN void matmul512_bf16(uint32_t* dst, const uint16_t* in0, const uint16_t* in1, int phases, bool fp32_dst) {
    static thread_local std::unique_ptr<DecodedBf16> decoded = std::make_unique<DecodedBf16>();
    auto& a = decoded->a[(reinterpret_cast<uintptr_t>(in1) / (kTileElems * 2)) % kSrcACacheSlots];
    if (!cached(a, in1)) decode_a512(in1, a.op);
    auto& b = decoded->b;
    if (!cached(b, in0) || (phases > 2 && !b.lo)) {
        b.lo = phases > 2;
        decode_b512(in0, b.op, b.lo);
    }
    if (fp32_dst) {
        matmul512_rows<true>(dst, a.op, b.op, phases);
    } else {
        matmul512_rows<false>(dst, a.op, b.op, phases);
    }
}

// ELWMUL on 16 lanes through dst32_step, the DST kept decoded across the fidelity phases: each
// product is an addend with exponent ex + ey and "group sum" fx * fy (accumulate's rule for one
// addend: a zero operand or an underflowing exponent contributes nothing).
// kChains independent 16-lane chains from element i0 (eltwise_mul512: 4 at a time; a single one
// for the 16 lanes eltwise_mul512_exact leaves)
template <bool kFp32, int kChains>
AVX512_FN inline void eltwise_mul512_lanes(uint32_t* dst, const uint32_t* a, const uint32_t* b, int phases, int i0) {
    const __m512i exp_mask = _mm512_set1_epi32(static_cast<int32_t>(kExpMask));
    const __m512i low10 = _mm512_set1_epi32(0x3FF), implicit = _mm512_set1_epi32(0x400);
    const __m512i byte = _mm512_set1_epi32(255), zero = _mm512_setzero_si512();
    {
        __mmask16 nz[kChains], neg[kChains];
        __m512i mx[kChains], my[kChains], e[kChains];
        Dst32 st[kChains];
        for (int c = 0; c < kChains; ++c) {
            const int i = i0 + 16 * c;
            const __m512i x = _mm512_loadu_si512(a + i), y = _mm512_loadu_si512(b + i);
            nz[c] = _mm512_test_epi32_mask(x, exp_mask) & _mm512_test_epi32_mask(y, exp_mask);
            neg[c] = _mm512_movepi32_mask(_mm512_xor_si512(x, y));
            mx[c] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(x, 13), low10), implicit);
            my[c] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(y, 13), low10), implicit);
            e[c] = _mm512_add_epi32(_mm512_and_si512(_mm512_srli_epi32(x, 23), byte),
                                    _mm512_and_si512(_mm512_srli_epi32(y, 23), byte));
            st[c] = dst32_decode(_mm512_loadu_si512(dst + i));
        }
        for (int p = 0; p < phases; ++p) {
            const int32_t adj = product_exp_adjust(p);
            const __m512i move = _mm512_set1_epi32((p ? product_exp_adjust(p - 1) : 0) - adj);
#pragma GCC unroll 4
            for (int c = 0; c < kChains; ++c) {
                st[c].e = _mm512_add_epi32(st[c].e, move);
                const __m512i fx = (p & 1) ? _mm512_and_si512(_mm512_srli_epi32(mx[c], 1), _mm512_set1_epi32(31))
                                           : _mm512_srli_epi32(mx[c], 6);
                const __m512i fy = (p & 2) ? _mm512_slli_epi32(_mm512_and_si512(my[c], _mm512_set1_epi32(15)), 3)
                                           : _mm512_srli_epi32(my[c], 4);
                const __mmask16 valid = nz[c] & _mm512_cmpgt_epi32_mask(e[c], _mm512_set1_epi32(-adj));
                __m512i prod = _mm512_slli_epi32(_mm512_mullo_epi32(fx, fy), 16);
                prod = _mm512_maskz_mov_epi32(valid, _mm512_mask_sub_epi32(prod, neg[c], zero, prod));
                const __m512i ev = _mm512_mask_mov_epi32(_mm512_set1_epi32(-adj), valid, e[c]);
                st[c] = dst32_step<kFp32>(st[c], prod, ev, zero, ev, ev, adj);
            }
        }
        for (int c = 0; c < kChains; ++c) {
            st[c].e = _mm512_add_epi32(st[c].e, _mm512_set1_epi32(product_exp_adjust(phases - 1)));
            _mm512_storeu_si512(dst + i0 + 16 * c, dst32_encode(st[c]));
        }
    }
}

template <bool kFp32>
AVX512_FN void eltwise_mul512(uint32_t* dst, const uint32_t* a, const uint32_t* b, int phases) {
    for (int i0 = 0; i0 < kTileElems; i0 += 64) eltwise_mul512_lanes<kFp32, 4>(dst, a, b, phases, i0);
}

// ELWMUL onto a 32-bit DST holding +0 (mul_tiles after tile_regs_acquire), as one exact product:
// the phases' addends fx fy (at most 12 bits each, exponents 5, 7, 12 below the first) sum to
// P = Xhi Yhi 2^9 + Xlo Yhi 2^4 + Xhi Ylo 2^5 + Xlo Ylo (X = the SrcA operand's top 10 significand
// bits, Xhi / Xlo its two 5-bit fields; Yhi = the SrcB operand's top 7, Ylo its last 4; the terms
// of the phases run), below 2^21: each step of the accumulator sums values of at most 21
// significant bits, so nothing is rounded, and the result is P 2^(ex + ey - 254 - 19) exactly --
// when no phase's exponent underflows and the result stays normal: ex + ey in [kMulSafeLo,
// kMulSafeHi] (with margin) or a zero operand (then +0). 16 lanes where one is outside that or
// the DST is not +0 are computed step by step (eltwise_mul512_lanes).
constexpr int32_t kMulSafeLo = 150, kMulSafeHi = 370;
AVX512_FN void eltwise_mul512_exact(uint32_t* dst, const uint32_t* a, const uint32_t* b, int phases) {
    const __m512i exp_mask = _mm512_set1_epi32(static_cast<int32_t>(kExpMask)), byte = _mm512_set1_epi32(255);
    const __m512i low10 = _mm512_set1_epi32(0x3FF), implicit = _mm512_set1_epi32(0x400);
    const __m512i lo_mask5 = _mm512_set1_epi32(31), lo_mask4 = _mm512_set1_epi32(15);
    for (int i = 0; i < kTileElems; i += 16) {
        const __m512i x = _mm512_loadu_si512(a + i), y = _mm512_loadu_si512(b + i);
        const __mmask16 nz = _mm512_test_epi32_mask(x, exp_mask) & _mm512_test_epi32_mask(y, exp_mask);
        const __m512i s = _mm512_add_epi32(_mm512_and_si512(_mm512_srli_epi32(x, 23), byte),
                                           _mm512_and_si512(_mm512_srli_epi32(y, 23), byte));
        const __mmask16 bad = _mm512_test_epi32_mask(_mm512_loadu_si512(dst + i), _mm512_set1_epi32(-1)) |
                              (nz & (_mm512_cmplt_epi32_mask(s, _mm512_set1_epi32(kMulSafeLo)) |
                                     _mm512_cmpgt_epi32_mask(s, _mm512_set1_epi32(kMulSafeHi))));
        if (bad) {
            eltwise_mul512_lanes<true, 1>(dst, a, b, phases, i);
            continue;
        }
        const __m512i mx = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(x, 13), low10), implicit);
        const __m512i my = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(y, 13), low10), implicit);
        const __m512i xhi = _mm512_srli_epi32(mx, 6), xlo = _mm512_and_si512(_mm512_srli_epi32(mx, 1), lo_mask5);
        const __m512i yhi = _mm512_srli_epi32(my, 4), ylo = _mm512_and_si512(my, lo_mask4);
        __m512i p = _mm512_slli_epi32(_mm512_mullo_epi32(xhi, yhi), 9);
        if (phases > 1) p = _mm512_add_epi32(p, _mm512_slli_epi32(_mm512_mullo_epi32(xlo, yhi), 4));
        if (phases > 2) p = _mm512_add_epi32(p, _mm512_slli_epi32(_mm512_mullo_epi32(xhi, ylo), 5));
        if (phases > 3) p = _mm512_add_epi32(p, _mm512_mullo_epi32(xlo, ylo));
        const __m512i f = _mm512_castps_si512(_mm512_cvtepi32_ps(p));  // exact: P < 2^21
        __m512i v = _mm512_add_epi32(f, _mm512_slli_epi32(_mm512_sub_epi32(s, _mm512_set1_epi32(254 + 19)), 23));
        v = _mm512_ternarylogic_epi32(v, _mm512_xor_si512(x, y), _mm512_set1_epi32(static_cast<int32_t>(0x80000000u)),
                                      0xF8);  // a | (b & c): the product's sign
        _mm512_storeu_si512(dst + i, _mm512_maskz_mov_epi32(nz, v));
    }
}

// ELWADD / ELWSUB on 16 lanes, the rule of eltwise_add_impl: the smaller operand (by exponent and
// mantissa) aligned to the larger rounding half up, the 12-bit mantissa sum or difference (the
// larger operand's sign) normalised by an exact int -> float conversion (with a 16-bit DST then
// rounded half away from zero to BF16).
template <bool kFp32>
AVX512_FN void eltwise_add512(uint32_t* dst, const uint32_t* a_in, const uint32_t* b_in, uint32_t negate) {
    const __m512i exp_mask = _mm512_set1_epi32(static_cast<int32_t>(kExpMask));
    const __m512i key_mask = _mm512_set1_epi32(0x3FFFF), low10 = _mm512_set1_epi32(0x3FF);
    const __m512i implicit = _mm512_set1_epi32(0x400), byte = _mm512_set1_epi32(255), one = _mm512_set1_epi32(1);
    const __m512i zero = _mm512_setzero_si512();
    for (int i = 0; i < kTileElems; i += 16) {
        __m512i a = _mm512_loadu_si512(a_in + i);
        __m512i b = _mm512_xor_si512(_mm512_loadu_si512(b_in + i), _mm512_set1_epi32(static_cast<int32_t>(negate)));
        a = _mm512_maskz_mov_epi32(_mm512_test_epi32_mask(a, exp_mask), a);  // denormals and zeros: +0
        b = _mm512_maskz_mov_epi32(_mm512_test_epi32_mask(b, exp_mask), b);
        const __mmask16 swap = _mm512_cmplt_epu32_mask(_mm512_and_si512(_mm512_srli_epi32(a, 13), key_mask),
                                                       _mm512_and_si512(_mm512_srli_epi32(b, 13), key_mask));
        const __m512i x = _mm512_mask_blend_epi32(swap, a, b), y = _mm512_mask_blend_epi32(swap, b, a);
        const __m512i ex = _mm512_and_si512(_mm512_srli_epi32(x, 23), byte);
        const __m512i ey = _mm512_and_si512(_mm512_srli_epi32(y, 23), byte);
        const __m512i mx = _mm512_maskz_or_epi32(_mm512_test_epi32_mask(x, x),
                                                 _mm512_and_si512(_mm512_srli_epi32(x, 13), low10), implicit);
        __m512i my = _mm512_maskz_or_epi32(_mm512_test_epi32_mask(y, y),
                                           _mm512_and_si512(_mm512_srli_epi32(y, 13), low10), implicit);
        // floor(my / 2^d + 1/2) = ((2 my >> d) + 1) >> 1 (0 for d >= 12, as 2 my < 2^12)
        my = _mm512_srli_epi32(_mm512_add_epi32(_mm512_srlv_epi32(_mm512_slli_epi32(my, 1), _mm512_sub_epi32(ex, ey)), one), 1);
        const __mmask16 differ = _mm512_movepi32_mask(_mm512_xor_si512(x, y));
        const __m512i sum = _mm512_mask_sub_epi32(_mm512_add_epi32(mx, my), differ, mx, my);  // >= 0
        __m512i fb = _mm512_castps_si512(_mm512_cvtepi32_ps(sum));
        if (!kFp32) fb = _mm512_and_si512(_mm512_add_epi32(fb, _mm512_set1_epi32(0x8000)), _mm512_set1_epi32(0xFFFF0000));
        // exponent: ex - 10 + floor(log2 sum) (sum at 2^10 = 1.0)
        const __m512i bias = _mm512_sub_epi32(ex, _mm512_set1_epi32(127 + 10));
        const __m512i exp = _mm512_add_epi32(_mm512_srli_epi32(fb, 23), bias);
        const __m512i sign = _mm512_and_si512(x, _mm512_set1_epi32(static_cast<int32_t>(0x80000000u)));
        __m512i out = _mm512_or_si512(_mm512_add_epi32(fb, _mm512_slli_epi32(bias, 23)), sign);
        out = _mm512_mask_or_epi32(out, _mm512_cmpgt_epi32_mask(exp, _mm512_set1_epi32(254)), sign,
                                   _mm512_set1_epi32(0x7F800000));
        const __mmask16 keep = _mm512_cmpneq_epi32_mask(sum, zero) & _mm512_cmpgt_epi32_mask(exp, zero);
        _mm512_storeu_si512(dst + i, _mm512_maskz_mov_epi32(keep, out));
    }
}

// The matmul path: the widest the CPU has (AVX-512 BW/DQ, then AVX2, then portable), unless
// TT_MOCK_FPU=avx2 or TT_MOCK_FPU=portable asks for a narrower one (to compare them).
enum class FpuPath { kPortable, kAvx2, kAvx512 };
FpuPath fpu_path() {
    static const FpuPath path = [] {
        const char* v = std::getenv("TT_MOCK_FPU");
        const std::string_view want = v ? v : "";
        if (want == "portable" || !__builtin_cpu_supports("avx2")) return FpuPath::kPortable;
        if (want == "avx2" || !(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                                __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))) {
            return FpuPath::kAvx2;
        }
        return FpuPath::kAvx512;
    }();
    return path;
}
#endif

// Broadcast SrcB operand as the FPU reads it, face by face: ROW copies row 0 of the face's column
// half into each of its 16 rows, COL fills each face row with column 0 of that row, SCALAR fills
// the tile with [0][0] (testing/runtime/programs/fast_paths checks it against the tile written
// out element by element)
void broadcast(const uint32_t* b, int bcast, uint32_t* out) {
    if (bcast != kBcastRow && bcast != kBcastCol && bcast != kBcastScalar) {
        std::memcpy(out, b, kTileElems * sizeof(uint32_t));
        return;
    }
    for (uint32_t f = 0; f < 4; ++f) {
        const uint32_t fr = f >> 1, fc = f & 1;
        for (uint32_t i = 0; i < 16; ++i) {
            uint32_t* row = out + f * 256 + i * 16;
            if (bcast == kBcastRow) {
                std::memcpy(row, b + fc * 256, 16 * sizeof(uint32_t));
            } else {
                const uint32_t v = bcast == kBcastCol ? b[fr * 512 + i * 16] : b[0];
                for (uint32_t j = 0; j < 16; ++j) row[j] = v;
            }
        }
    }
}

template <bool kFp32>
TTMOCK_HOT void eltwise_add_impl(uint32_t* dst, const uint32_t* a_in, const uint32_t* b_in,
                                 uint32_t negate) {
    for (int i = 0; i < kTileElems; i += kLanes) {
        vu a = load<vu>(a_in + i), b = load<vu>(b_in + i) ^ negate;
        a = (a & kExpMask) != 0 ? a : vu{};
        b = (b & kExpMask) != 0 ? b : vu{};
        const vi swap = (vi)(((a >> 13) & 0x3FFFFu) < ((b >> 13) & 0x3FFFFu));  // keep |a| >= |b|
        const vu x = swap ? b : a, y = swap ? a : b;
        const vi sx = (vi)(x >> 31), sy = (vi)(y >> 31);
        const vi ex = (vi)((x >> 23) & 255u), ey = (vi)((y >> 23) & 255u);
        const vi mx = x != 0 ? (vi)(((x >> 13) & 0x3FFu) | 0x400u) : vi{};
        vi my = y != 0 ? (vi)(((y >> 13) & 0x3FFu) | 0x400u) : vi{};
        const vi d = ex - ey;  // the smaller operand aligned to the larger, rounding half up
        const vi dd = vclamp(d, 1, 11);
        my = d <= 0 ? my : (d < 12 ? (my + ((vi{} + 1) << (dd - 1))) >> dd : vi{});
        const vi man = (sx == sy ? mx + my : mx - my) << 13;
        store(dst + i, accumulate<kFp32>(sx, ex, man, vi{}, vi{}, vi{}, vu{}));
    }
}

template <bool kFp32>
TTMOCK_HOT void eltwise_mul_impl(uint32_t* dst, const uint32_t* a, const uint32_t* b, int phase) {
    const int32_t adj = product_exp_adjust(phase);
    for (int i = 0; i < kTileElems; i += kLanes) {
        const vu x = load<vu>(a + i), y = load<vu>(b + i);
        const vi zero = (vi)((x & kExpMask) == 0) | (vi)((y & kExpMask) == 0);
        const vi mx = (vi)(((x >> 13) & 0x3FFu) | 0x400u);
        const vi my = (vi)(((y >> 13) & 0x3FFu) | 0x400u);
        const vi fx = (phase & 1) ? ((mx >> 1) & 31) : (mx >> 6);
        const vi fy = (phase & 2) ? ((my & 15) << 3) : (my >> 4);
        const vi e = (vi)((x >> 23) & 255u) + (vi)((y >> 23) & 255u) + adj;
        const vi keep = ~(zero | (e <= 0));
        const vu out = accumulate<kFp32>(keep & (vi)((x ^ y) >> 31), keep & e, keep & ((fx * fy) << 13),
                                         vi{}, vi{}, vi{}, load<vu>(dst + i));
        store(dst + i, out);
    }
}

// One 16-lane dot product as MVMUL / GAPOOL compute it (scalar; used by reductions):
// dst + sum over lanes of srca[k] * srcb[k], one fidelity phase.
template <bool kFp32>
uint32_t dot16(uint32_t dst, const uint32_t* srca, const uint32_t* srcb, int phase) {
    const int32_t adj = product_exp_adjust(phase);
    int32_t e[16], m[16], s[16];
    for (int k = 0; k < 16; ++k) {
        const uint32_t x = srca[k], y = srcb[k];
        const bool zero = (x & kExpMask) == 0 || (y & kExpMask) == 0;
        const int32_t mx = static_cast<int32_t>(((x >> 13) & 0x3FF) | 0x400);
        const int32_t my = static_cast<int32_t>(((y >> 13) & 0x3FF) | 0x400);
        const int32_t fx = (phase & 1) ? ((mx >> 1) & 31) : (mx >> 6);
        const int32_t fy = (phase & 2) ? ((my & 15) << 3) : (my >> 4);
        e[k] = zero ? 0 : static_cast<int32_t>((x >> 23) & 255) + static_cast<int32_t>((y >> 23) & 255) + adj;
        m[k] = zero ? 0 : fx * fy;
        s[k] = zero ? 0 : static_cast<int32_t>((x ^ y) >> 31);
    }
    int32_t gs[2] = {0, 0}, ge[2] = {0, 0}, gm[2] = {0, 0};
    for (int g = 0; g < 2; ++g) {
        int32_t emax = e[8 * g];
        for (int k = 8 * g + 1; k < 8 * g + 8; ++k) emax = std::max(emax, e[k]);
        if (emax <= 0) continue;
        int32_t total = 0;
        for (int k = 8 * g; k < 8 * g + 8; ++k) {
            const int32_t d = std::min(emax - e[k], 30);
            const int32_t v = ((m[k] << 1) + (1 << d)) >> (d + 1);
            total += s[k] ? -v : v;
        }
        gs[g] = total < 0;
        gm[g] = std::abs(total) << 13;
        ge[g] = emax;
    }
    return accumulate1<kFp32>(gs[0], ge[0], gm[0], gs[1], ge[1], gm[1], dst);
}

template <bool kFp32>
void reduce_sum_impl(uint32_t* dst, const uint32_t* a, const uint32_t* scaler, int dim, int phases) {
    uint32_t lanes[16], scale[kTileElems];
    std::fill(std::begin(scale), std::end(scale), scaler[0]);
    if (dim == 0 || dim == 1) {
        // Through the MVMUL row kernel, 16 outputs at a time. REDUCE_ROW (MVMUL): the input rows
        // are SrcB and the scaler SrcA, phases outermost; its outputs (column 0) are the rows, so
        // the input face is transposed to [k][row]. REDUCE_COL (GAPOOL): the input is SrcA and the
        // scaler SrcB, phases innermost per face row; its outputs (row 0) are the columns.
        const bool row = dim == 0;
        Operand in, sc;
        decode(a, in, !row);
        decode(scale, sc, row);  // the scaler in every lane
        RowPlan plans[2];
        int32_t e[2][256];
        float hi[2][256], lo[2][256];
        auto face_operand = [&](int slot, int face) {  // [k][out] arrays of one input face
            for (int i = 0; i < 16; ++i) {
                for (int j = 0; j < 16; ++j) {
                    const int src = face * 256 + (row ? j * 16 + i : i * 16 + j);
                    e[slot][i * 16 + j] = in.e[src];
                    hi[slot][i * 16 + j] = in.hi[src];
                    lo[slot][i * 16 + j] = in.lo[src];
                }
            }
        };
        if (row) {
            for (int fr = 0; fr < 2; ++fr) {
                uint32_t out[16];
                for (int r = 0; r < 16; ++r) out[r] = dst[face_index(fr * 16 + r, 0)];
                for (int fc = 0; fc < 2; ++fc) {
                    face_operand(fc, fr * 2 + fc);
                    plan_row(plans[fc], e[fc], sc.e);
                }
                for (int p = 0; p < phases; ++p) {
                    for (int fc = 0; fc < 2; ++fc) {
                        mvmul_row<kFp32>(out, plans[fc], (p & 2) ? lo[fc] : hi[fc],
                                         (p & 1) ? sc.lo : sc.hi, product_exp_adjust(p));
                    }
                }
                for (int r = 0; r < 16; ++r) dst[face_index(fr * 16 + r, 0)] = out[r];
            }
        } else {
            for (int fc = 0; fc < 2; ++fc) {
                for (int fr = 0; fr < 2; ++fr) {
                    face_operand(0, fr * 2 + fc);
                    plan_row(plans[0], e[0], sc.e);
                    for (int p = 0; p < phases; ++p) {
                        mvmul_row<kFp32>(dst + fc * 256, plans[0], (p & 1) ? lo[0] : hi[0],
                                         (p & 2) ? sc.lo : sc.hi, product_exp_adjust(p));
                    }
                }
            }
        }
    } else {  // REDUCE_SCALAR: column sums of all four faces, then one sum of the 16 partials
        uint32_t partial[16] = {};
        for (uint32_t f = 0; f < 4; ++f) {
            for (uint32_t c = 0; c < 16; ++c) {
                for (uint32_t k = 0; k < 16; ++k) lanes[k] = a[f * 256 + k * 16 + c];
                for (int p = 0; p < phases; ++p) partial[c] = dot16<kFp32>(partial[c], lanes, scale, p);
            }
        }
        // the partials reach SrcA through MOVD2B: BF16 (16-bit DST) or TF32 (32-bit DST)
        for (uint32_t& v : partial) v &= kFp32 ? 0xFFFFE000u : 0xFFFF0000u;
        uint32_t one[16];
        std::fill(std::begin(one), std::end(one), 0x3F800000u);
        uint32_t& out = dst[0];
        for (int p = 0; p < phases; ++p) out = dot16<kFp32>(out, partial, one, p);
    }
}

// GMPOOL compares sign-magnitude values in total order
inline int32_t total_order(uint32_t x) {
    return (x & 0x80000000u) ? static_cast<int32_t>(x ^ 0x7FFFFFFFu) : static_cast<int32_t>(x);
}

uint16_t l1_acc_bf16(uint16_t old, uint16_t add) {
    if ((old == 0x7F80 && add == 0xFF80) || (old == 0xFF80 && add == 0x7F80)) return 0x7FC0;
    if ((old & 0x7FFF) < 0x80) old &= 0x8000;
    if ((add & 0x7FFF) < 0x80) add &= 0x8000;
    auto widen = [](uint16_t v) {
        if ((v & 0x7FFF) > 0x7F80) {  // the packer reads a NaN as a very large finite value
            return std::bit_cast<double>((static_cast<uint64_t>(v & 0x8000) << 48) |
                                         (static_cast<uint64_t>(255 - 127 + 1023) << 52) |
                                         (static_cast<uint64_t>(v & 0x7F) << 45));
        }
        return static_cast<double>(as_float(static_cast<uint32_t>(v) << 16));
    };
    const uint64_t sum = std::bit_cast<uint64_t>(widen(old) + widen(add));
    const uint32_t s = static_cast<uint32_t>(sum >> 63);
    const int32_t e = static_cast<int32_t>((sum >> 52) & 0x7FF) - 1023 + 127;
    const uint64_t m = sum & ((1ull << 52) - 1);
    if (e <= 0) return static_cast<uint16_t>(s << 15);
    if (e >= 255) return static_cast<uint16_t>((s << 15) | 0x7F80);
    const uint64_t rounded = (m + (1ull << 44) - 1 + ((m >> 45) & 1)) >> 45;  // nearest even
    return static_cast<uint16_t>((s << 15) | ((static_cast<uint32_t>(e) << 7) + rounded));
}

inline uint32_t flush_denormal(uint32_t u) { return (u & kExpMask) ? u : (u & 0x80000000u); }

// What the packer reads for a BF16 output: 16-bit DST as is, 32-bit DST rounded half away from
// zero (the packer adds half an ulp to the magnitude); NaN becomes infinity, denormals zero.
inline uint16_t packed_bf16(uint32_t d, bool fp32_dst) {
    uint32_t v;
    if (fp32_dst) {
        v = (d & 0x7FFFFFFF) > 0x7F800000 ? ((d & 0x80000000u) | 0x7F800000u) : d;
        v = (v + 0x8000) >> 16;
    } else {
        v = d >> 16;
        v = (v & 0x7FFF) > 0x7F80 ? ((v & 0x8000) | 0x7F80) : v;
    }
    return static_cast<uint16_t>((v & 0x7FFF) < 0x80 ? 0 : v);
}

// What the packer writes for a Float16 output from a 32-bit DST: the BF16 rule at 10 mantissa
// bits (magnitude rounded half away from zero; NaN and overflow become infinity; results below
// the smallest normal half, 2^-14, become +0). Not checked against the hardware (docs/MOCK.md).
inline uint16_t packed_fp16(uint32_t d) {
    const uint32_t s = (d >> 16) & 0x8000u;
    uint32_t a = d & 0x7FFFFFFFu;
    if (a >= 0x7F800000u) return static_cast<uint16_t>(s | 0x7C00u);
    a += 0x1000u;  // half an ulp of the 13 dropped mantissa bits
    const int32_t e = static_cast<int32_t>(a >> 23) - 127 + 15;
    if (e <= 0) return 0;
    if (e >= 31) return static_cast<uint16_t>(s | 0x7C00u);
    return static_cast<uint16_t>(s | (static_cast<uint32_t>(e) << 10) | ((a >> 13) & 0x3FFu));
}

inline uint32_t fp16_to_fp32(uint16_t h) {
    const uint32_t s = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1Fu, m = h & 0x3FFu;
    if (e == 31) return s | 0x7F800000u | (m << 13);
    if (e != 0) return s | ((e + 127 - 15) << 23) | (m << 13);
    return s | as_bits(static_cast<float>(m) * 0x1p-24f);  // zero or a denormal: exact
}

}  // namespace

// ---- unpacker ---------------------------------------------------------------------------------
void unpack_fp16(const uint16_t* l1, uint32_t* src) {
    for (int i = 0; i < kTileElems; ++i) src[i] = fp16_to_fp32(l1[i]);
}
void unpack_bf16(const uint16_t* l1, uint32_t* src) {
    for (int i = 0; i < kTileElems; ++i) src[i] = static_cast<uint32_t>(l1[i]) << 16;
}
void unpack_fp32(const uint32_t* l1, uint32_t* src, bool to_tf32) {
    for (int i = 0; i < kTileElems; ++i) {
        src[i] = to_tf32 ? (l1[i] & 0xFFFFE000u) : (flush_denormal(l1[i]) & 0xFFFF0000u);
    }
}
void unpack_fp32_to_dst(const uint32_t* l1, uint32_t* dst) { std::memcpy(dst, l1, kTileElems * 4); }

// ---- matrix engine -------------------------------------------------------------------------------
namespace {
// MOVA2D flushes denormals (a mask, not a select: the baseline clone vectorises it)
TTMOCK_HOT void datacopy_rows(uint32_t* dst, const uint32_t* src, uint32_t keep) {
    for (int i = 0; i < kTileElems; i += kLanes) {
        const vi v = load<vi>(src + i);
        store(dst + i, v & ((v & static_cast<int32_t>(kExpMask)) != 0) & static_cast<int32_t>(keep));
    }
}
}  // namespace

void datacopy(uint32_t* dst, const uint32_t* src, bool transpose, bool fp32_dst) {
    const uint32_t keep = fp32_dst ? 0xFFFFFFFFu : 0xFFFF0000u;
    if (!transpose) {
        datacopy_rows(dst, src, keep);
        return;
    }
    for (uint32_t r = 0; r < 32; ++r) {
        for (uint32_t c = 0; c < 32; ++c) {
            const uint32_t v = src[face_index(c, r)];
            dst[face_index(r, c)] = (v & kExpMask) ? (v & keep) : 0;
        }
    }
}

void transpose_in_dst(uint32_t* dst, const uint32_t* unpacked) {
    for (uint32_t r = 0; r < 32; ++r) {
        for (uint32_t c = 0; c < 32; ++c) dst[face_index(r, c)] = unpacked[face_index(c, r)];
    }
}

void set_wormhole_accumulator(bool wormhole) { g_wormhole_minus_one = wormhole; }

const char* matmul_path() {
#ifdef TTMOCK_MVMUL16
    switch (fpu_path()) {
        case FpuPath::kAvx512: return "avx512";
        case FpuPath::kAvx2: return "avx2";
        case FpuPath::kPortable: break;
    }
#endif
    return "portable";
}

void matmul(uint32_t* dst, const uint32_t* in0, const uint32_t* in1, bool transpose, int phases,
            bool fp32_dst) {
    uint32_t in1t[kTileElems];
    if (transpose) {
        for (uint32_t r = 0; r < 32; ++r)
            for (uint32_t c = 0; c < 32; ++c) in1t[face_index(r, c)] = in1[face_index(c, r)];
        in1 = in1t;
    }
#ifdef TTMOCK_MVMUL16
    if (fpu_path() == FpuPath::kAvx512) {
        if (fp32_dst) {
            matmul512_impl<true>(dst, in0, in1, phases);
        } else {
            matmul512_impl<false>(dst, in0, in1, phases);
        }
        return;
    }
    if (fpu_path() == FpuPath::kAvx2) {
        if (fp32_dst) {
            matmul16_impl<true>(dst, in0, in1, phases);
        } else {
            matmul16_impl<false>(dst, in0, in1, phases);
        }
        return;
    }
#endif
    if (fp32_dst) {
        matmul_impl<true>(dst, in0, in1, phases);
    } else {
        matmul_impl<false>(dst, in0, in1, phases);
    }
}

void matmul_bf16(uint32_t* dst, const uint16_t* in0, const uint16_t* in1, bool transpose, int phases,
                 bool fp32_dst) {
#ifdef TTMOCK_MVMUL512
    if (fpu_path() == FpuPath::kAvx512) {
        matmul512_bf16(dst, in0, transpose ? transposed_bf16(in1) : in1, phases, fp32_dst);
        return;
    }
#endif
    uint32_t a[kTileElems], b[kTileElems];
    unpack_bf16(in0, a);
    unpack_bf16(in1, b);
    matmul(dst, a, b, transpose, phases, fp32_dst);
}

void broadcast_tile(const uint32_t* b, int bcast, uint32_t* out) { broadcast(b, bcast, out); }

void eltwise_add(uint32_t* dst, const uint32_t* a, const uint32_t* b, bool subtract, int bcast,
                 bool fp32_dst) {
    uint32_t bb[kTileElems];
    if (bcast != kBcastNone) {
        broadcast(b, bcast, bb);
        b = bb;
    }
    const uint32_t negate = subtract ? 0x80000000u : 0u;
#ifdef TTMOCK_MVMUL512
    if (fpu_path() == FpuPath::kAvx512) {
        if (fp32_dst) {
            eltwise_add512<true>(dst, a, b, negate);
        } else {
            eltwise_add512<false>(dst, a, b, negate);
        }
        return;
    }
#endif
    if (fp32_dst) {
        eltwise_add_impl<true>(dst, a, b, negate);
    } else {
        eltwise_add_impl<false>(dst, a, b, negate);
    }
}

void eltwise_mul(uint32_t* dst, const uint32_t* a, const uint32_t* b, int bcast, int phases,
                 bool fp32_dst) {
    uint32_t bb[kTileElems];
    if (bcast != kBcastNone) {
        broadcast(b, bcast, bb);
        b = bb;
    }
#ifdef TTMOCK_MVMUL512
    if (fpu_path() == FpuPath::kAvx512) {
        if (fp32_dst) {
            eltwise_mul512_exact(dst, a, b, phases);
        } else {
            eltwise_mul512<false>(dst, a, b, phases);
        }
        return;
    }
#endif
    for (int p = 0; p < phases; ++p) {
        if (fp32_dst) {
            eltwise_mul_impl<true>(dst, a, b, p);
        } else {
            eltwise_mul_impl<false>(dst, a, b, p);
        }
    }
}

#ifdef TTMOCK_MVMUL512
namespace {
// reduce_tile SUM on 16 lanes (the rule of reduce_sum_impl's MVMUL / GAPOOL rows, every lane's
// product with the one scaler value): per K chunk of 16 products, two groups of 8 aligned to their
// largest exponent (|p| / 2^d rounded half away from zero, in integers: (2 |p| + 2^d) >> (d + 1)),
// their signed sums (below 2^15) through dst32_step with the DST kept decoded, in the LLK order
// (REDUCE_ROW: phases outermost, then the two column faces; REDUCE_COL: per face, phases innermost).
// Lanes: REDUCE_ROW the 16 rows of a face row (input read transposed by a gather), REDUCE_COL the
// 16 columns of a column face.
struct ReduceChunk512 {
    __m512i e[2];         // group maxima (without the phase adjustment)
    __m512i f[2][16];     // [input field][k]: the input's mantissa field (0 for a zero input)
    __mmask16 neg[16];    // [k]: the product is negative
    __m512i half[16];     // [k]: 2^d, d the alignment shift (at most 20)
    __m512i d1[16];       // [k]: d + 1
};

// `in_srca`: the input is SrcA (5-bit fields, lo on odd phases; REDUCE_COL) or SrcB (7-bit fields,
// lo on phases 2 and 3; REDUCE_ROW)
AVX512_FN inline void reduce_chunk512(ReduceChunk512& ch, const __m512i (&x)[16], uint32_t scaler, bool in_srca) {
    const __m512i exp_mask = _mm512_set1_epi32(static_cast<int32_t>(kExpMask));
    const bool s_zero = (scaler & kExpMask) == 0;
    const int32_t es = s_zero ? kZeroExp : static_cast<int32_t>((scaler >> 23) & 255u);
    const __mmask16 s_neg = static_cast<__mmask16>((scaler >> 31) ? 0xFFFF : 0);
    __m512i e[16];
    for (int k = 0; k < 16; ++k) {
        const __mmask16 nz = _mm512_test_epi32_mask(x[k], exp_mask);
        const __m512i ex = _mm512_mask_mov_epi32(_mm512_set1_epi32(kZeroExp), nz,
                                                 _mm512_and_si512(_mm512_srli_epi32(x[k], 23), _mm512_set1_epi32(255)));
        e[k] = _mm512_add_epi32(ex, _mm512_set1_epi32(es));
        const __m512i m11 = _mm512_maskz_or_epi32(nz, _mm512_and_si512(_mm512_srli_epi32(x[k], 13), _mm512_set1_epi32(0x3FF)),
                                                  _mm512_set1_epi32(0x400));
        if (in_srca) {
            ch.f[0][k] = _mm512_srli_epi32(m11, 6);
            ch.f[1][k] = _mm512_and_si512(_mm512_srli_epi32(m11, 1), _mm512_set1_epi32(31));
        } else {
            ch.f[0][k] = _mm512_srli_epi32(m11, 4);
            ch.f[1][k] = _mm512_slli_epi32(_mm512_and_si512(m11, _mm512_set1_epi32(15)), 3);
        }
        ch.neg[k] = _mm512_movepi32_mask(x[k]) ^ s_neg;  // the input's sign, flipped by a negative scaler
    }
    for (int g = 0; g < 2; ++g) {
        __m512i em = e[8 * g];
        for (int k = 8 * g + 1; k < 8 * g + 8; ++k) em = _mm512_max_epi32(em, e[k]);
        ch.e[g] = em;
        for (int k = 8 * g; k < 8 * g + 8; ++k) {
            const __m512i d = _mm512_min_epi32(_mm512_sub_epi32(em, e[k]), _mm512_set1_epi32(20));
            ch.half[k] = _mm512_sllv_epi32(_mm512_set1_epi32(1), d);
            ch.d1[k] = _mm512_add_epi32(d, _mm512_set1_epi32(1));
        }
    }
}

// One accumulator step of a chunk in phase p (the DST exponent already moved to the phase's
// adjustment): the scaler field fs times the input field of the phase. A product is below 2^12,
// so 2 |p| is one 16-bit multiply (the lanes' high halves are 0).
template <bool kFp32>
AVX512_FN inline Dst32 reduce_step512(Dst32 st, const ReduceChunk512& ch, int field, int32_t fs, int p) {
    const int32_t adj = product_exp_adjust(p);
    const __m512i vfs = _mm512_set1_epi32(2 * fs);
    __m512i x[2], e[2];
    for (int g = 0; g < 2; ++g) {
        __m512i sum = _mm512_setzero_si512();
        for (int k = 8 * g; k < 8 * g + 8; ++k) {
            const __m512i m2 = _mm512_mullo_epi16(ch.f[field][k], vfs);
            const __m512i r = _mm512_srlv_epi32(_mm512_add_epi32(m2, ch.half[k]), ch.d1[k]);
            sum = _mm512_mask_sub_epi32(_mm512_add_epi32(sum, r), ch.neg[k], sum, r);
        }
        // a group whose exponent underflows (emax + adj <= 0) contributes nothing
        const __mmask16 valid = _mm512_cmpgt_epi32_mask(ch.e[g], _mm512_set1_epi32(-adj));
        x[g] = _mm512_maskz_mov_epi32(valid, _mm512_slli_epi32(sum, 16));
        e[g] = _mm512_mask_mov_epi32(_mm512_set1_epi32(-adj), valid, ch.e[g]);
    }
    return dst32_step<kFp32>(st, x[0], e[0], x[1], e[1], _mm512_max_epi32(e[0], e[1]), adj);
}

// A 16x16 block of words transposed in registers: the off-diagonal blocks of 8, 4, 2, 1 swapped.
// kSwap[s][0 / 1]: lane j of the new rows i and i + b (b = 8 >> s, i without bit b), as
// permutex2var indices into rows i (0..15) and i + b (16..31).
alignas(64) constexpr int32_t kSwap[4][2][16] = {
    {{0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23}, {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31}},
    {{0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27}, {4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31}},
    {{0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29}, {2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31}},
    {{0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30}, {1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31}}};
AVX512_FN inline void transpose16x16(__m512i (&x)[16]) {
#pragma GCC unroll 4
    for (int s = 0; s < 4; ++s) {
        const int b = 8 >> s;
        const __m512i ilo = _mm512_load_si512(kSwap[s][0]), ihi = _mm512_load_si512(kSwap[s][1]);
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i) {
            if (i & b) continue;
            const __m512i r0 = x[i], r1 = x[i + b];
            x[i] = _mm512_permutex2var_epi32(r0, ilo, r1);
            x[i + b] = _mm512_permutex2var_epi32(r0, ihi, r1);
        }
    }
}

// the DST exponent relative to phase p's adjustment (back: absolute again after `phases`)
AVX512_FN inline void move(Dst32& st, int p) {
    st.e = _mm512_add_epi32(st.e, _mm512_set1_epi32((p ? product_exp_adjust(p - 1) : 0) - product_exp_adjust(p)));
}
AVX512_FN inline void back(Dst32& st, int phases) {
    st.e = _mm512_add_epi32(st.e, _mm512_set1_epi32(product_exp_adjust(phases - 1)));
}

template <bool kFp32>
AVX512_FN void reduce_sum512(uint32_t* dst, const uint32_t* a, uint32_t scaler, int dim, int phases) {
    const uint32_t ms11 = ((scaler >> 13) & 0x3FFu) | 0x400u;
    const bool row = dim == 0;
    // the scaler's fields: SrcA (5 bits) for REDUCE_ROW, SrcB (7 bits) for REDUCE_COL
    const int32_t fs[2] = {static_cast<int32_t>(row ? ms11 >> 6 : ms11 >> 4),
                           static_cast<int32_t>(row ? (ms11 >> 1) & 31 : (ms11 & 15) << 3)};
    if (row) {
        const __m512i rows = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                                _mm512_set1_epi32(16));
        for (int fr = 0; fr < 2; ++fr) {
            ReduceChunk512 ch[2];
            for (int fc = 0; fc < 2; ++fc) {
                __m512i x[16];
                const uint32_t* face = a + (fr * 2 + fc) * 256;
                for (int k = 0; k < 16; ++k) x[k] = _mm512_loadu_si512(face + k * 16);
                transpose16x16(x);
                reduce_chunk512(ch[fc], x, scaler, false);
            }
            uint32_t* out = dst + fr * 512;  // column 0 of face (fr, 0): every 16th word
            Dst32 st = dst32_decode(_mm512_i32gather_epi32(rows, out, 4));
            for (int p = 0; p < phases; ++p) {
                move(st, p);
                // SrcB (the input) field: lo on phases 2, 3; SrcA (the scaler): lo on odd phases
                for (int fc = 0; fc < 2; ++fc) st = reduce_step512<kFp32>(st, ch[fc], (p & 2) ? 1 : 0, fs[p & 1], p);
            }
            back(st, phases);
            _mm512_i32scatter_epi32(out, rows, dst32_encode(st), 4);
        }
    } else {
        for (int fc = 0; fc < 2; ++fc) {
            Dst32 st = dst32_decode(_mm512_loadu_si512(dst + fc * 256));
            for (int fr = 0; fr < 2; ++fr) {
                __m512i x[16];
                const uint32_t* face = a + (fr * 2 + fc) * 256;
                for (int k = 0; k < 16; ++k) x[k] = _mm512_loadu_si512(face + k * 16);
                ReduceChunk512 ch;
                reduce_chunk512(ch, x, scaler, true);
                for (int p = 0; p < phases; ++p) {
                    move(st, p);
                    // SrcA (the input) field: lo on odd phases; SrcB (the scaler): lo on phases 2, 3
                    st = reduce_step512<kFp32>(st, ch, p & 1, fs[(p >> 1) & 1], p);
                }
                back(st, phases);
            }
            _mm512_storeu_si512(dst + fc * 256, dst32_encode(st));
        }
    }
}
}  // namespace
#endif

void eltwise_mul_reference(uint32_t* dst, const uint32_t* a, const uint32_t* b, int bcast, int phases,
                           bool fp32_dst) {
    uint32_t bb[kTileElems];
    broadcast(b, bcast, bb);
    for (int p = 0; p < phases; ++p) {
        if (fp32_dst) {
            eltwise_mul_impl<true>(dst, a, bb, p);
        } else {
            eltwise_mul_impl<false>(dst, a, bb, p);
        }
    }
}

void reduce_sum(uint32_t* dst, const uint32_t* a, const uint32_t* scaler, int dim, int phases,
                bool fp32_dst) {
#ifdef TTMOCK_MVMUL512
    if ((dim == 0 || dim == 1) && fpu_path() == FpuPath::kAvx512) {
        if (fp32_dst) {
            reduce_sum512<true>(dst, a, scaler[0], dim, phases);
        } else {
            reduce_sum512<false>(dst, a, scaler[0], dim, phases);
        }
        return;
    }
#endif
    reduce_sum_reference(dst, a, scaler, dim, phases, fp32_dst);
}

void reduce_sum_reference(uint32_t* dst, const uint32_t* a, const uint32_t* scaler, int dim, int phases,
                          bool fp32_dst) {
    if (fp32_dst) {
        reduce_sum_impl<true>(dst, a, scaler, dim, phases);
    } else {
        reduce_sum_impl<false>(dst, a, scaler, dim, phases);
    }
}

#ifdef TTMOCK_MVMUL512
namespace {
// GMPOOL's max on 16 lanes: denormals and zeros as +0, sign-magnitude values in total order
// (total_order is one-to-one, so the maximum does not depend on the order of the comparisons)
AVX512_FN inline __m512i max_key512(__m512i v) {
    v = _mm512_maskz_mov_epi32(_mm512_test_epi32_mask(v, _mm512_set1_epi32(static_cast<int32_t>(kExpMask))), v);
    return _mm512_mask_xor_epi32(v, _mm512_movepi32_mask(v), v, _mm512_set1_epi32(0x7FFFFFFF));
}
AVX512_FN inline uint32_t key_bits(int32_t k) {
    return static_cast<uint32_t>(k < 0 ? k ^ 0x7FFFFFFF : k);
}
AVX512_FN void reduce_max512(uint32_t* dst, const uint32_t* a, int dim, bool first) {
    if (dim == 0) {  // REDUCE_ROW: row r is 16 words of face (r/16)*2 and 16 of the next
        for (uint32_t r = 0; r < 32; ++r) {
            const uint32_t* p = a + (r >> 4) * 512 + (r & 15) * 16;
            const __m512i m = _mm512_max_epi32(max_key512(_mm512_loadu_si512(p)),
                                               max_key512(_mm512_loadu_si512(p + 256)));
            int32_t best = _mm512_reduce_max_epi32(m);
            uint32_t& out = dst[face_index(r, 0)];
            if (!first) best = std::max(best, total_order(out));
            out = key_bits(best);
        }
    } else {  // REDUCE_COL: column c of face c/16 and face 2 + c/16, over their 16 rows each
        for (uint32_t fc = 0; fc < 2; ++fc) {
            __m512i m = _mm512_set1_epi32(std::numeric_limits<int32_t>::min());  // below every key
            if (!first) {  // DST row 0 as is (its key, no flush)
                const __m512i d = _mm512_loadu_si512(dst + fc * 256);
                m = _mm512_mask_xor_epi32(d, _mm512_movepi32_mask(d), d, _mm512_set1_epi32(0x7FFFFFFF));
            }
            for (uint32_t f = fc; f < 4; f += 2) {
                for (uint32_t i = 0; i < 16; ++i) {
                    m = _mm512_max_epi32(m, max_key512(_mm512_loadu_si512(a + f * 256 + i * 16)));
                }
            }
            m = _mm512_mask_xor_epi32(m, _mm512_movepi32_mask(m), m, _mm512_set1_epi32(0x7FFFFFFF));
            _mm512_storeu_si512(dst + fc * 256, m);
        }
    }
}
}  // namespace
#endif

void reduce_max(uint32_t* dst, const uint32_t* a, int dim, bool first) {
#ifdef TTMOCK_MVMUL512
    if ((dim == 0 || dim == 1) && fpu_path() == FpuPath::kAvx512) {
        reduce_max512(dst, a, dim, first);
        return;
    }
#endif
    reduce_max_reference(dst, a, dim, first);
}

void reduce_max_reference(uint32_t* dst, const uint32_t* a, int dim, bool first) {
    auto fold = [&](uint32_t& out, auto value_at, uint32_t n) {
        uint32_t best = first ? 0xFFFFFFFFu : out;  // a DST row with nothing in it reads as -max
        for (uint32_t i = 0; i < n; ++i) {
            const uint32_t v = flush_denormal(value_at(i));
            const uint32_t z = (v & kExpMask) ? v : 0;
            if (total_order(z) > total_order(best)) best = z;
        }
        out = best;
    };
    if (dim == 0) {
        for (uint32_t r = 0; r < 32; ++r)
            fold(dst[face_index(r, 0)], [&](uint32_t c) { return a[face_index(r, c)]; }, 32);
    } else if (dim == 1) {
        for (uint32_t c = 0; c < 32; ++c)
            fold(dst[face_index(0, c)], [&](uint32_t r) { return a[face_index(r, c)]; }, 32);
    } else {
        fold(dst[0], [&](uint32_t i) { return a[i]; }, kTileElems);
    }
}

// ---- packer ---------------------------------------------------------------------------------------
void pack_bf16(const uint32_t* dst, uint16_t* l1, bool fp32_dst) {
    for (int i = 0; i < kTileElems; ++i) l1[i] = packed_bf16(dst[i], fp32_dst);
}
void pack_fp32(const uint32_t* dst, uint32_t* l1, bool fp32_dst) {
    for (int i = 0; i < kTileElems; ++i) {
        l1[i] = fp32_dst ? dst[i] : static_cast<uint32_t>(packed_bf16(dst[i], false)) << 16;
    }
}
void pack_fp16(const uint32_t* dst, uint16_t* l1) {
    for (int i = 0; i < kTileElems; ++i) l1[i] = packed_fp16(dst[i]);
}
void pack_bf16_l1_acc(const uint32_t* dst, uint16_t* l1, bool fp32_dst) {
    for (int i = 0; i < kTileElems; ++i) l1[i] = l1_acc_bf16(l1[i], packed_bf16(dst[i], fp32_dst));
}
namespace {
// pack_fp32_l1_acc from a 32-bit DST, 8 lanes at a time (the same IEEE float additions)
TTMOCK_HOT void pack_fp32_l1_acc_32(const uint32_t* dst, uint32_t* l1) {
    for (int i = 0; i < kTileElems; i += kLanes) {
        const vu a = load<vu>(l1 + i), b = load<vu>(dst + i);
        const vu fa = a & (((a & kExpMask) != 0) | 0x80000000u);  // denormals to signed zero
        const vu fb = b & (((b & kExpMask) != 0) | 0x80000000u);
        const vu sum = (vu)((vf)fa + (vf)fb);
        const vu nan = (sum & 0x7FFFFFFFu) > 0x7F800000u;
        store(l1 + i, nan ? vu{} + 0x7FC00000u : sum & (((sum & kExpMask) != 0) | 0x80000000u));
    }
}
}  // namespace

void pack_fp32_l1_acc(const uint32_t* dst, uint32_t* l1, bool fp32_dst) {
    if (fp32_dst) {
        pack_fp32_l1_acc_32(dst, l1);
        return;
    }
    for (int i = 0; i < kTileElems; ++i) {
        const uint32_t v = fp32_dst ? dst[i] : static_cast<uint32_t>(packed_bf16(dst[i], false)) << 16;
        uint32_t sum = as_bits(as_float(flush_denormal(l1[i])) + as_float(flush_denormal(v)));
        sum = (sum & 0x7FFFFFFF) > 0x7F800000 ? 0x7FC00000u : flush_denormal(sum);
        l1[i] = sum;
    }
}

uint32_t dst_store_sfpu(uint32_t value, bool fp32_dst) {
    const uint32_t v = flush_denormal(value);
    return fp32_dst ? v : (v & 0xFFFF0000u);
}

}  // namespace ttmock::fpu
