// Prints a hash of what every emulator tile op (src/fpu.hpp, src/sfpu.hpp) computes on fixed
// random tiles, per op: built with and without the CPU-specific clones, the output must match.
#include <cstdint>
#include <cstdio>
#include <string>
#include <algorithm>
#include <cstring>
#include <random>

#include "fpu.hpp"
#include "sfpu.hpp"

using namespace ttmock;

static uint64_t h = 1469598103934665603ull;
static void mix(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
}

int main(int argc, char** argv) {
    // "blackhole": the accumulator without Wormhole's renormalisation of -1
    if (argc > 1 && std::string(argv[1]) == "blackhole") fpu::set_wormhole_accumulator(false);
    std::mt19937 rng(7);
    std::normal_distribution<float> d(0.0f, 3.0f);
    static uint32_t a[1024], b[1024], t[1024];
    static uint16_t l1[1024];
    for (int round = 0; round < 4; ++round) {
        for (int i = 0; i < 1024; ++i) {
            float x = d(rng), y = d(rng);
            if (i % 97 == 0) x = 0.0f;
            std::memcpy(&a[i], &x, 4);
            std::memcpy(&b[i], &y, 4);
            if (round & 1) { a[i] &= 0xFFFF0000u; b[i] &= 0xFFFF0000u; } else { a[i] &= 0xFFFFE000u; b[i] &= 0xFFFFE000u; }
        }
        for (int fp32 = 0; fp32 < 2; ++fp32) {
            for (int p = 1; p <= 4; ++p) {
                std::memcpy(t, b, sizeof t);
                fpu::matmul(t, a, b, round & 2, p, fp32);
                mix(t, sizeof t);
                std::memset(t, 0, sizeof t);
                fpu::eltwise_mul(t, a, b, p & 3, p, fp32);
                mix(t, sizeof t);
                fpu::reduce_sum(t, a, b, p % 3, p, fp32);
                mix(t, sizeof t);
            }
            for (int bc = 0; bc < 4; ++bc) {
                fpu::eltwise_add(t, a, b, bc & 1, bc, fp32);
                mix(t, sizeof t);
            }
            fpu::datacopy(t, a, round & 1, fp32);
            mix(t, sizeof t);
            fpu::pack_bf16(a, l1, fp32);
            mix(l1, sizeof l1);
            std::memcpy(t, b, sizeof t);  // L1 accumulation of fp32 data (with zeros, denormals, inf)
            for (int i = 0; i < 1024; i += 37) t[i] = i % 3 ? 0x7F800000u ^ (i & 1u) << 31 : 0x00000005u;
            fpu::pack_fp32_l1_acc(a, t, fp32);
            mix(t, sizeof t);
            for (int op = 0; op < static_cast<int>(sfpu::Unary::Unknown); ++op) {
                for (int approx = 0; approx < 2; ++approx) {
                    std::memcpy(t, a, sizeof t);
                    sfpu::unary(static_cast<sfpu::Unary>(op), t, 0.75f, approx, fp32);
                    mix(t, sizeof t);
                }
            }
            for (int op = 0; op < static_cast<int>(sfpu::Binary::Unknown); ++op) {
                sfpu::binary(static_cast<sfpu::Binary>(op), t, a, b, fp32);
                mix(t, sizeof t);
            }
        }
    }
    // the matrix engine on operands of every magnitude: random exponents, zeros, denormals
    std::uniform_int_distribution<uint32_t> any;
    for (int round = 0; round < 64; ++round) {
        for (int i = 0; i < 1024; ++i) {
            for (uint32_t* x : {&a[i], &b[i]}) {
                uint32_t u = any(rng);
                if ((u & 0x7F800000u) == 0x7F800000u) u &= 0xBFFFFFFFu;  // no inf / NaN
                if (round % 4 == 1) u = (u & 0x807FFFFFu) | ((100u + (u >> 27)) << 23);  // close exponents
                if (any(rng) % 13 == 0) u &= 0x807FFFFFu;  // zero or denormal
                *x = u & (round & 1 ? 0xFFFF0000u : 0xFFFFE000u);
            }
        }
        for (int i = 0; i < 1024; ++i) t[i] = round & 2 ? (a[i] ^ b[i]) : 0;
        fpu::matmul(t, a, b, round & 8, 1 + round % 4, round & 4);
        mix(t, sizeof t);
        fpu::datacopy(t, b, round & 8, round & 4);  // denormals flushed
        mix(t, sizeof t);
    }
    // the accumulator on sums that (nearly) cancel the DST value: in0's second K half zero, so a
    // LoFi matmul onto 0 rounds one MVMUL step; the same step again onto minus that result, moved
    // by -1, 0 or +1 in its last bit, leaves sums of a few units in the last place (-1 included,
    // which Wormhole renormalises wrongly), exact zeros and results far below DST's exponent
    for (int round = 0; round < 16; ++round) {
        for (int i = 0; i < 1024; ++i) {
            a[i] = (((i >> 8) & 1) ? 0u : any(rng)) & 0x8FFFE000u;  // in0: faces 1 and 3 zero
            b[i] = any(rng) & 0x8FFFE000u;
            for (uint32_t* x : {&a[i], &b[i]}) {
                if (*x) *x = (*x & 0x807FFFFFu) | ((round & 1 ? 120u : 250u) - (any(rng) % 8) * (round & 1 ? 1u : 15u)) << 23;
            }
        }
        const bool fp32 = round & 2;
        std::memset(t, 0, sizeof t);
        fpu::matmul(t, a, b, false, 1, fp32);
        mix(t, sizeof t);
        for (int i = 0; i < 1024; ++i) {
            const uint32_t step = fp32 ? 1u : 0x10000u;
            const uint32_t r = t[i] ^ 0x80000000u;
            t[i] = (r & 0x7FFFFFFFu) ? r + (static_cast<uint32_t>(i % 3) - 1u) * step : r;
        }
        fpu::matmul(t, a, b, false, 1, fp32);
        mix(t, sizeof t);
    }
    // edge cases of the matrix engine: exponents in windows near underflow (operands, or products
    // just above and below the smallest exponent), mid-range and overflow, with gaps of exactly the alignment limits (13 / 14 binades below a group's
    // largest product, 24-25 below the DST value), mantissas with trailing zeros (exact ties),
    // zero rows and columns, and DST values that are zero, -0, denormal, infinite, NaN, or far
    // above or below the products; each tile product applied twice onto its own result, and
    // the element-wise product and sums once (the sums also with the special values as operands)
    const uint32_t dst_specials[5] = {0u, 0x80000000u, 0x00012345u, 0x7F800000u, 0xFFC00001u};
    const int32_t tops[4] = {4, 66, 127, 252}, gaps[4] = {1, 13, 14, 25};
    for (int round = 0; round < 192; ++round) {
        const int32_t top = tops[round % 4], gap = gaps[(round / 4) % 4];
        const uint32_t flags = any(rng);  // DST mode, operand format, transpose, fidelity
        const bool fp32 = flags & 1, bf16 = flags & 2;
        for (int i = 0; i < 1024; ++i) {
            for (uint32_t* x : {&a[i], &b[i]}) {
                const uint32_t u = any(rng);
                const int32_t pick = static_cast<int32_t>(u & 3);
                int32_t e = pick == 0 ? top : pick == 1 ? top - gap : pick == 2 ? top - gap + 1
                                        : top - static_cast<int32_t>((u >> 2) % static_cast<uint32_t>(gap + 2));
                e = e < 0 ? 0 : e;
                uint32_t m = (u >> 8) & 0x7FFFFFu;
                if ((u >> 31) & 1) m &= 0x7F0000u;  // few mantissa bits: products with exact halves
                *x = ((any(rng) & 1u) << 31) | (static_cast<uint32_t>(e) << 23) | m;
                *x &= bf16 ? 0xFFFF0000u : 0xFFFFE000u;
            }
            if (round % 5 == 0 && (i / 32) % 7 == 3) a[i] = 0;   // zero rows of in0
            if (round % 5 == 1 && (i % 32) % 5 == 2) b[i] = 0;   // zero columns of in1
            const uint32_t sel = static_cast<uint32_t>(i + round) % 8;
            uint32_t d = sel < 5 ? dst_specials[sel]
                       : ((any(rng) & 0x807FFFFFu) |
                          (static_cast<uint32_t>(sel == 5 ? std::min(254, 2 * top - 127 + 20 + round % 7)
                                                          : std::max(1, 2 * top - 127 - 30 - round % 7)) << 23));
            t[i] = fp32 ? d : (d & 0xFFFF0000u);
        }
        static uint32_t t0[1024];
        std::memcpy(t0, t, sizeof t);
        for (int twice = 0; twice < 2; ++twice) {
            fpu::matmul(t, a, b, flags & 4, 1 + static_cast<int>((flags >> 3) % 4), fp32);
            mix(t, sizeof t);
        }
        if (bf16) {  // the same BF16 tiles read as L1 data (fpu::matmul_bf16); then one datum of
            // in1, then one of in0, changed in place (the reuse of decoded tiles must notice)
            static uint16_t a16[1024], b16[1024];
            for (int i = 0; i < 1024; ++i) {
                a16[i] = static_cast<uint16_t>(a[i] >> 16);
                b16[i] = static_cast<uint16_t>(b[i] >> 16);
            }
            std::memcpy(t, t0, sizeof t);
            for (int step = 0; step < 3; ++step) {
                if (step == 1) b16[round * 5 % 1024] ^= 0x0040;
                if (step == 2) a16[round * 7 % 1024] ^= 0x0001;
                fpu::matmul_bf16(t, a16, b16, flags & 4, 1 + static_cast<int>((flags >> 3) % 4), fp32);
                mix(t, sizeof t);
            }
        }
        // the same operands and DST values through ELWMUL (every broadcast)
        std::memcpy(t, t0, sizeof t);
        fpu::eltwise_mul(t, a, b, static_cast<int>((flags >> 5) % 4), 1 + static_cast<int>((flags >> 3) % 4), fp32);
        mix(t, sizeof t);
        fpu::eltwise_add(t, a, b, flags & 128, static_cast<int>((flags >> 5) % 4), fp32);
        mix(t, sizeof t);
        fpu::eltwise_add(t, a, t0, flags & 256, fpu::kBcastNone, fp32);  // operands of any value
        mix(t, sizeof t);
    }
    // around the exponent bounds under which a batch of accumulator steps cannot underflow or
    // overflow (group maxima of true exponent 23; DST values and group maxima of 254 - 6 x the
    // steps): finite DST values of either sign near the products, sums that cancel
    for (int round = 0; round < 160; ++round) {
        const int phases = 1 + round % 4, steps = 2 * phases;
        const bool low = round & 4, fp32 = (round & 8) == 0;
        // true exponent of a group maximum: at or below the underflow bound, or near the overflow one
        const int32_t group = low ? 23 - 5 * ((round / 16) % 5) : 254 - 6 * steps;
        for (int i = 0; i < 1024; ++i) {
            for (uint32_t* x : {&a[i], &b[i]}) {
                const uint32_t u = any(rng);
                const int32_t e = (group + 127) / 2 + static_cast<int32_t>(u % 7) - 3 - (x == &b[i] ? (group + 127) % 2 : 0);
                *x = (u & 0x807F0000u) | (static_cast<uint32_t>(e) << 23);
                *x &= round & 16 ? 0xFFFF0000u : 0xFFFFE000u;
            }
            const uint32_t u = any(rng);
            const int32_t ed = std::clamp(group + static_cast<int32_t>(u % 17) - 8, 1, 254);
            t[i] = (u & 0x807FFFFFu & (fp32 ? 0xFFFFFFFFu : 0xFFFF0000u)) | (static_cast<uint32_t>(ed) << 23);
        }
        for (int twice = 0; twice < 2; ++twice) {
            fpu::matmul(t, a, b, round & 32, phases, fp32);
            mix(t, sizeof t);
        }
    }
    std::printf("%016llx\n", static_cast<unsigned long long>(h));
    std::fprintf(stderr, "matmul path: %s\n", fpu::matmul_path());
    return 0;
}
