// tilelang-tt mock TT-Metalium: number formats and the 32x32 tile layout.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace ttmock {

inline float bits_to_float(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
inline uint32_t float_to_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// fp32 -> bf16 with round-to-nearest-even (what the packer does); NaN stays NaN
inline uint16_t float_to_bf16_bits(float f) {
    uint32_t u = float_to_bits(f);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return static_cast<uint16_t>((u >> 16) | 0x40);
    const uint32_t lsb = (u >> 16) & 1u;
    u += 0x7fffu + lsb;
    return static_cast<uint16_t>(u >> 16);
}
inline float bf16_bits_to_float(uint16_t b) { return bits_to_float(static_cast<uint32_t>(b) << 16); }
inline float round_bf16(float f) { return bf16_bits_to_float(float_to_bf16_bits(f)); }

// fp32 -> TF32 (10 mantissa bits), round-to-nearest-even: what the FPU source registers hold
inline float round_tf32(float f) {
    uint32_t u = float_to_bits(f);
    if ((u & 0x7f800000u) == 0x7f800000u) return f;
    const uint32_t lsb = (u >> 13) & 1u;
    u += 0xfffu + lsb;
    u &= ~0x1fffu;
    return bits_to_float(u);
}

// position of element (r, c) of a 32x32 tile in the four-16x16-face layout
inline constexpr uint32_t face_index(uint32_t r, uint32_t c) {
    return ((r / 16) * 2 + (c / 16)) * 256 + (r % 16) * 16 + (c % 16);
}

}  // namespace ttmock
