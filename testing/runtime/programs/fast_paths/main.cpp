// The emulator's vector paths against the scalar forms they replace, bit for bit: SFPU exp (32-bit
// DST), fill, the scalar ops and the binary ops (sfpu::unary / binary against unary_reference /
// binary_reference), GMPOOL max (fpu::reduce_max against reduce_max_reference), the broadcast of
// ELWADD / ELWMUL (against the broadcast tile written out here) and matmul_tiles of BF16 tiles with
// transpose (fpu::matmul_bf16, against fpu::matmul of the unpacked tiles). Inputs: random values of
// several scales, random bit patterns, and special values (NaN of both signs and several payloads,
// infinities, denormals, +-0, BF16 rounding ties, exp's overflow / underflow edges, integers).
// Prints the first mismatches and "checked N tiles, M mismatches"; exits 1 on any mismatch.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fpu.hpp"
#include "sfpu.hpp"

using namespace ttmock;

static uint32_t bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
static long g_checked = 0, g_bad = 0;

static void compare(const std::string& what, const uint32_t* got, const uint32_t* want, int n = 1024) {
    ++g_checked;
    for (int i = 0; i < n; ++i) {
        if (got[i] != want[i]) {
            if (g_bad < 20) std::printf("MISMATCH %s [%d]: %08x, reference %08x\n", what.c_str(), i, got[i], want[i]);
            ++g_bad;
            return;
        }
    }
}

static const uint32_t kSpecial[] = {
    0x7FC00000u, 0xFFC00000u, 0x7F800001u, 0xFF812345u, 0x7FFFFFFFu, 0xFFFFFFFFu,  // NaNs
    0x7F800000u, 0xFF800000u, 0x00000000u, 0x80000000u,                            // inf, zeros
    0x00000001u, 0x807FFFFFu, 0x00400000u, 0x80000100u, 0x00800000u, 0x80800000u,  // denormals, min normal
    0x3F808000u, 0x3F818000u, 0xBF808000u, 0x40490000u, 0x3F7F8000u, 0x3F807FFFu,  // BF16 ties, near ties
    0x7F7FFFFFu, 0xFF7FFFFFu, 0x3F800000u, 0xBF800000u, 0x3F000000u, 0xBF000000u,
};

int main() {
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
    std::vector<std::vector<uint32_t>> tiles;
    for (int kind = 0; kind < 12; ++kind) {
        std::vector<uint32_t> t(1024);
        for (int i = 0; i < 1024; ++i) {
            float x = 0.0f;
            switch (kind % 6) {
                case 0: x = normal(rng); break;
                case 1: x = normal(rng) * 40.0f; break;                  // exp's whole range
                case 2: x = uni(rng) * 200.0f; break;                    // past overflow / underflow
                case 3: x = 87.0f + uni(rng) * 2.0f * (i & 1 ? 1 : -1) - (i & 2 ? 176.0f : 0.0f); break;
                case 4: x = std::ldexp(uni(rng), static_cast<int>(rng() % 300) - 150); break;
                case 5: x = std::nearbyint(uni(rng) * 50.0f) * 0.5f; break;  // integers and halves
            }
            t[i] = bits(x);
            if (kind >= 6 && i % 3 == 0) t[i] = rng();  // random bit patterns
            if (i % 7 == 0) t[i] = kSpecial[(i / 7 + kind) % (sizeof kSpecial / 4)];
        }
        tiles.push_back(t);
    }
    const float params[] = {0.7f, -1.5f, 0.0f, -0.0f, 1.0e-40f, 3.0e38f, 0.18033688f, 1.4426950f,
                            std::numeric_limits<float>::infinity()};
    const sfpu::Unary unaries[] = {sfpu::Unary::Exp, sfpu::Unary::Fill, sfpu::Unary::AddScalar,
                                   sfpu::Unary::SubScalar, sfpu::Unary::MulScalar, sfpu::Unary::DivScalar};
    const sfpu::Binary binaries[] = {sfpu::Binary::Add, sfpu::Binary::Sub, sfpu::Binary::Mul,
                                     sfpu::Binary::Max, sfpu::Binary::Min};
    static uint32_t got[1024], want[1024];
    for (int fp32 = 0; fp32 < 2; ++fp32) {
        const uint32_t keep = fp32 ? 0xFFFFFFFFu : 0xFFFF0000u;  // what a 16-bit DST holds
        for (size_t k = 0; k < tiles.size(); ++k) {
            std::vector<uint32_t> x = tiles[k], y = tiles[(k + 5) % tiles.size()];
            for (int i = 0; i < 1024; i += 7) y[i] = i % 2 ? x[i] : x[i] ^ 0x80000000u;  // ties, +-0 pairs
            for (auto& v : x) v &= keep;
            for (auto& v : y) v &= keep;
            for (auto op : unaries) {
                for (float p : params) {
                    for (int approx = 0; approx < 2; ++approx) {
                        std::memcpy(got, x.data(), 4096);
                        std::memcpy(want, x.data(), 4096);
                        sfpu::unary(op, got, p, approx, fp32);
                        sfpu::unary_reference(op, want, p, approx, fp32);
                        compare("unary " + std::to_string(static_cast<int>(op)) + " p=" + std::to_string(p) +
                                " fp32=" + std::to_string(fp32) + " tile " + std::to_string(k), got, want);
                    }
                }
            }
            for (auto op : binaries) {
                sfpu::binary(op, got, x.data(), y.data(), fp32);
                sfpu::binary_reference(op, want, x.data(), y.data(), fp32);
                compare("binary " + std::to_string(static_cast<int>(op)) + " fp32=" + std::to_string(fp32) +
                        " tile " + std::to_string(k), got, want);
            }
            for (int dim = 0; dim < 3; ++dim) {
                for (int first = 0; first < 2; ++first) {
                    std::memcpy(got, y.data(), 4096);
                    std::memcpy(want, y.data(), 4096);
                    fpu::reduce_max(got, x.data(), dim, first);
                    fpu::reduce_max_reference(want, x.data(), dim, first);
                    compare("reduce_max dim " + std::to_string(dim) + " first " + std::to_string(first) +
                            " tile " + std::to_string(k), got, want);
                }
            }
            // reduce_tile SUM: source-register data (TF32, and BF16) onto the DST values of y,
            // several scalers (1, 1/32 as reduce AVG uses, negative, specials)
            for (uint32_t mask : {0xFFFFE000u, 0xFFFF0000u}) {
                std::vector<uint32_t> in = x;
                for (auto& v : in) v &= mask;
                for (uint32_t sc : {0x3F800000u, 0x3D000000u, 0xBFC00000u, 0x3F7FE000u, 0x00000000u, 0x7F000000u,
                                    0x01000000u, static_cast<uint32_t>(tiles[k][5] & mask)}) {
                    const uint32_t scaler[1024] = {sc};
                    for (int dim = 0; dim < 3; ++dim) {
                        for (int phases = 1; phases <= 4; ++phases) {
                            std::memcpy(got, y.data(), 4096);
                            std::memcpy(want, y.data(), 4096);
                            fpu::reduce_sum(got, in.data(), scaler, dim, phases, fp32);
                            fpu::reduce_sum_reference(want, in.data(), scaler, dim, phases, fp32);
                            char what[160];
                            std::snprintf(what, sizeof what, "reduce_sum dim %d phases %d fp32 %d scaler %08x tile %zu",
                                          dim, phases, fp32, sc, k);
                            compare(what, got, want);
                        }
                    }
                }
            }
            // broadcasts: the operand tile written out as the FPU reads it, then no broadcast
            std::vector<uint32_t> a = x, b = y;
            for (auto& v : a) v &= 0xFFFFE000u;  // source-register data (TF32)
            for (auto& v : b) v &= 0xFFFFE000u;
            auto face = [](int r, int c) { return ((r >> 4) * 2 + (c >> 4)) * 256 + (r & 15) * 16 + (c & 15); };
            for (int bc = 1; bc < 4; ++bc) {
                std::vector<uint32_t> full(1024);
                for (int r = 0; r < 32; ++r)
                    for (int c = 0; c < 32; ++c)
                        full[face(r, c)] = b[bc == fpu::kBcastRow ? face(0, c) : bc == fpu::kBcastCol ? face(r, 0) : 0];
                fpu::eltwise_add(got, a.data(), b.data(), bc & 1, bc, fp32);
                fpu::eltwise_add(want, a.data(), full.data(), bc & 1, fpu::kBcastNone, fp32);
                compare("add bcast " + std::to_string(bc) + " tile " + std::to_string(k), got, want);
                std::memcpy(got, y.data(), 4096);
                std::memcpy(want, y.data(), 4096);
                fpu::eltwise_mul(got, a.data(), b.data(), bc, 2, fp32);
                fpu::eltwise_mul(want, a.data(), full.data(), fpu::kBcastNone, 2, fp32);
                compare("mul bcast " + std::to_string(bc) + " tile " + std::to_string(k), got, want);
            }
            // ELWMUL against its step-by-step form: onto +0 (the exact product) and onto y
            for (int bc = 0; bc < 4; ++bc) {
                for (int phases = 1; phases <= 4; ++phases) {
                    for (int onto = 0; onto < 2; ++onto) {
                        for (int i = 0; i < 1024; ++i) got[i] = want[i] = onto ? y[i] : 0u;
                        fpu::eltwise_mul(got, a.data(), b.data(), bc, phases, fp32);
                        fpu::eltwise_mul_reference(want, a.data(), b.data(), bc, phases, fp32);
                        compare("mul vs reference bcast " + std::to_string(bc) + " phases " + std::to_string(phases) +
                                " onto " + std::to_string(onto) + " tile " + std::to_string(k), got, want);
                    }
                }
            }
        }
        // matmul_tiles with transpose from BF16 L1 tiles; one in1 buffer rewritten between calls
        // (its cached transpose must follow the data), finite values as matmul operands are
        static uint16_t in0[4][1024], in1[1024];
        static uint32_t u0[1024], u1[1024];
        for (int round = 0; round < 24; ++round) {
            const int m = round % 4;
            for (int i = 0; i < 1024; ++i) {
                if (round < 4) in0[m][i] = static_cast<uint16_t>(bits(normal(rng) * (i % 13 == 0 ? 1e-3f : 1.0f)) >> 16);
                if (round % 3 == 0) in1[i] = static_cast<uint16_t>(bits(normal(rng) * 4.0f) >> 16);
            }
            if (round % 6 == 3) in1[round] ^= 1;  // one datum changes
            fpu::unpack_bf16(in0[m], u0);
            fpu::unpack_bf16(in1, u1);
            for (int phases = 1; phases <= 4; phases += 1) {
                for (int i = 0; i < 1024; ++i) got[i] = want[i] = bits(normal(rng)) & keep;
                fpu::matmul_bf16(got, in0[m], in1, true, phases, fp32);
                fpu::matmul(want, u0, u1, true, phases, fp32);
                compare("matmul_bf16 transpose round " + std::to_string(round) + " phases " + std::to_string(phases),
                        got, want);
            }
        }
    }
    // every BF16 bit pattern through the unary functions with a 16-bit DST (exhaustive: a
    // 16-bit DST holds nothing else), and as fp32 values with a 32-bit one
    for (int fp32 = 0; fp32 < 2; ++fp32) {
        for (uint32_t t0 = 0; t0 < 65536; t0 += 1024) {
            for (auto op : unaries) {
                for (float p : params) {
                    for (int approx = 0; approx < 2; ++approx) {
                        for (uint32_t i = 0; i < 1024; ++i) got[i] = want[i] = (t0 + i) << 16;
                        sfpu::unary(op, got, p, approx, fp32);
                        sfpu::unary_reference(op, want, p, approx, fp32);
                        compare("all bf16: unary " + std::to_string(static_cast<int>(op)) + " p=" +
                                std::to_string(p) + " fp32=" + std::to_string(fp32) + " from " + std::to_string(t0),
                                got, want);
                    }
                }
            }
        }
    }
    // every BF16 bit pattern as reduce_tile SUM input (ROW and COL, every fidelity, both DSTs),
    // onto a DST of small random values
    for (int fp32 = 0; fp32 < 2; ++fp32) {
        const uint32_t keep = fp32 ? 0xFFFFFFFFu : 0xFFFF0000u;
        static uint32_t in[1024], d0[1024];
        for (uint32_t t0 = 0; t0 < 65536; t0 += 1024) {
            for (uint32_t i = 0; i < 1024; ++i) in[i] = ((t0 + i * 37) & 0xFFFF) << 16;  // each pattern once
            for (uint32_t i = 0; i < 1024; ++i) d0[i] = bits(normal(rng) * (i % 5 == 0 ? 1e-6f : 1.0f)) & keep;
            for (uint32_t sc : {0x3F800000u, 0x3D000000u, 0xBE99999Au & 0xFFFFE000u}) {
                const uint32_t scaler[1024] = {sc};
                for (int dim = 0; dim < 2; ++dim) {
                    for (int phases = 1; phases <= 4; ++phases) {
                        std::memcpy(got, d0, 4096);
                        std::memcpy(want, d0, 4096);
                        fpu::reduce_sum(got, in, scaler, dim, phases, fp32);
                        fpu::reduce_sum_reference(want, in, scaler, dim, phases, fp32);
                        compare("all bf16: reduce_sum dim " + std::to_string(dim) + " phases " + std::to_string(phases) +
                                " fp32 " + std::to_string(fp32) + " from " + std::to_string(t0), got, want);
                    }
                }
            }
        }
    }
    // every BF16 bit pattern as either ELWMUL operand (the other random values of several
    // scales), onto +0, every fidelity, both DSTs
    for (int fp32 = 0; fp32 < 2; ++fp32) {
        static uint32_t pat[1024], other[1024];
        for (uint32_t t0 = 0; t0 < 65536; t0 += 1024) {
            for (uint32_t i = 0; i < 1024; ++i) pat[i] = ((t0 + i * 37) & 0xFFFF) << 16;
            // the other operand's exponent puts the exponent sum of each 16 lanes in one band
            // of 8 (bands from 86 to 402: the exact product's range [150, 370] and past both ends)
            for (uint32_t i = 0; i < 1024; ++i) {
                const int ep = static_cast<int>((pat[i] >> 23) & 255u);
                const int band = 86 + static_cast<int>(((i / 16) * 5 + t0 / 1024) % 64) * 5;
                const int eo = std::clamp(band + static_cast<int>(rng() % 8) - ep, 1, 254);
                other[i] = (rng() & 0x807FE000u) | (static_cast<uint32_t>(eo) << 23);
            }
            for (int phases = 1; phases <= 4; ++phases) {
                for (int swap = 0; swap < 2; ++swap) {
                    std::memset(got, 0, 4096);
                    std::memset(want, 0, 4096);
                    fpu::eltwise_mul(got, swap ? other : pat, swap ? pat : other, fpu::kBcastNone, phases, fp32);
                    fpu::eltwise_mul_reference(want, swap ? other : pat, swap ? pat : other, fpu::kBcastNone, phases, fp32);
                    compare("all bf16: mul phases " + std::to_string(phases) + " swap " + std::to_string(swap) +
                            " fp32 " + std::to_string(fp32) + " from " + std::to_string(t0), got, want);
                }
            }
        }
    }
    std::printf("checked %ld tiles, %ld mismatches\n", g_checked, g_bad);
    std::fprintf(stderr, "matmul path: %s\n", fpu::matmul_path());
    return g_bad ? 1 : 0;
}
