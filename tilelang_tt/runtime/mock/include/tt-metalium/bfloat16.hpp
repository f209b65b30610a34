// tilelang-tt mock TT-Metalium: the host bfloat16 type (2 bytes). Construction from an arithmetic
// value rounds to nearest even; truncate() drops the low mantissa bits. Non-inline members are
// defined in the library, as in the SDK.
#pragma once
#include <bit>
#include <compare>
#include <cstdint>
#include <functional>
#include <iostream>
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

// vector helpers of the SDK's bfloat16.hpp (defined in the library, as in the SDK)
std::pair<bfloat16, bfloat16> unpack_two_bfloat16_from_uint32(uint32_t uint32_data);
std::vector<uint32_t> create_random_vector_of_bfloat16(size_t num_bytes, int rand_max_float, int seed, float offset = 0.0f);
std::vector<bfloat16> create_random_vector_of_bfloat16_native(size_t num_bytes, float rand_max_float, int seed,
                                                              float offset = 0.0f);
std::vector<uint32_t> create_arange_vector_of_bfloat16(size_t num_bytes, bool print = true);
std::vector<uint32_t> create_constant_vector_of_bfloat16(size_t num_bytes, float value);
std::vector<bfloat16> create_identity_matrix(int rows, int cols, int num_ones);
bfloat16 bfloat16_identity_transform(const bfloat16& input);
std::vector<bfloat16> unpack_uint32_vec_into_bfloat16_vec(
    const std::vector<uint32_t>& data,
    const std::function<bfloat16(const bfloat16&)>& transform = bfloat16_identity_transform);
std::vector<uint32_t> pack_bfloat16_vec_into_uint32_vec(const std::vector<bfloat16>& data);
bool is_close(float a, float b, float rtol = 0.01f, float atol = 0.001f);
bool packed_uint32_t_vector_comparison(
    const std::vector<uint32_t>& vec_a,
    const std::vector<uint32_t>& vec_b,
    const std::function<bool(float, float)>& comparison_function,
    int* argfail = nullptr);
