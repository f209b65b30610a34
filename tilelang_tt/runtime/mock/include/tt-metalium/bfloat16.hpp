// tilelang-tt mock TT-Metalium: the host bfloat16 type (2 bytes). Construction from an arithmetic
// value rounds to nearest even; truncate() drops the low mantissa bits. Non-inline members are
// defined in the library, as in the SDK.
#pragma once
#include <bit>
#include <compare>
#include <cstdint>
#include <ostream>
#include <type_traits>
#include <utility>
#include <vector>

class bfloat16 {
private:
    uint16_t uint16_data;

public:
    constexpr bfloat16() = default;

    template <class T>
        requires std::is_arithmetic_v<T>
    constexpr bfloat16(T v) noexcept : uint16_data(from_float(static_cast<float>(v))) {}

    static bfloat16 truncate(float float_num);

    constexpr operator float() const { return std::bit_cast<float>(static_cast<uint32_t>(uint16_data) << 16); }

    constexpr bool operator==(bfloat16 rhs) const { return static_cast<float>(*this) == static_cast<float>(rhs); }
    constexpr std::partial_ordering operator<=>(bfloat16 rhs) const noexcept {
        return static_cast<float>(*this) <=> static_cast<float>(rhs);
    }

    bfloat16& operator+=(bfloat16 rhs) noexcept;
    bfloat16& operator-=(bfloat16 rhs) noexcept;
    bfloat16& operator*=(bfloat16 rhs) noexcept;
    bfloat16& operator/=(bfloat16 rhs) noexcept;

    bfloat16 operator+(bfloat16 rhs) const;
    bfloat16 operator-(bfloat16 rhs) const;
    bfloat16 operator*(bfloat16 rhs) const;
    bfloat16 operator/(bfloat16 rhs) const;

private:
    uint16_t from_float(float val);
};

static_assert(sizeof(bfloat16) == 2, "bfloat16 must be 2 bytes");

std::ostream& operator<<(std::ostream& os, const bfloat16& value);
bool operator==(const std::vector<bfloat16>& lhs, const std::vector<bfloat16>& rhs);
uint32_t pack_two_bfloat16_into_uint32(std::pair<bfloat16, bfloat16> two_bfloats);
