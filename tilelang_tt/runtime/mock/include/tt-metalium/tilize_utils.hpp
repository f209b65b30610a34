// tilelang-tt mock TT-Metalium: row-major <-> 32x32 tiles of four 16x16 faces. A (m x n)
// matrix becomes (m/32) x (n/32) tiles in row-major tile order. Defined in the library for
// bfloat16, float, uint32_t and uint16_t, as in the SDK.
#pragma once
#include <cstdint>
#include <vector>

template <typename T>
std::vector<T> tilize_nfaces(const std::vector<T>& input, uint32_t m, uint32_t n);

template <typename T>
std::vector<T> untilize_nfaces(const std::vector<T>& input, uint32_t m, uint32_t n);
