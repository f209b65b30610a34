// tilelang-tt mock TT-Metalium: the host bfloat16 type (2 bytes, round-to-nearest-even from float).
#pragma once
#include <cstdint>

#include "ttmock/numerics.hpp"

class bfloat16 {
public:
    bfloat16() = default;
    bfloat16(float v) : bits_(ttmock::float_to_bf16_bits(v)) {}
    bfloat16(double v) : bfloat16(static_cast<float>(v)) {}
    bfloat16(int v) : bfloat16(static_cast<float>(v)) {}
    static bfloat16 from_bits(uint16_t bits) {
        bfloat16 b;
        b.bits_ = bits;
        return b;
    }
    float to_float() const { return ttmock::bf16_bits_to_float(bits_); }
    uint16_t to_uint16() const { return bits_; }
    explicit operator float() const { return to_float(); }
    bool operator==(const bfloat16& o) const { return bits_ == o.bits_; }
    bool operator!=(const bfloat16& o) const { return bits_ != o.bits_; }
private:
    uint16_t bits_ = 0;
};
static_assert(sizeof(bfloat16) == 2, "bfloat16 must be 2 bytes");
