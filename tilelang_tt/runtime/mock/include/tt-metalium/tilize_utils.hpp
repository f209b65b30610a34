// tilelang-tt mock TT-Metalium: row-major <-> 32x32 tiles of four 16x16 faces.
// A (rows x cols) matrix becomes (rows/32) x (cols/32) tiles in row-major tile order.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <vector>

#include "ttmock/numerics.hpp"

template <typename T>
std::vector<T> tilize_nfaces(const std::vector<T>& input, uint32_t m, uint32_t n) {
    if (m % 32 || n % 32 || input.size() != static_cast<size_t>(m) * n) {
        std::fprintf(stderr, "TT-MOCK ERROR: tilize_nfaces: a %u x %u matrix of %zu values cannot be tiled\n",
                     m, n, input.size());
        std::exit(3);
    }
    std::vector<T> out(input.size());
    const uint32_t tiles_per_row = n / 32;
    for (uint32_t r = 0; r < m; ++r) {
        for (uint32_t c = 0; c < n; ++c) {
            const size_t tile = static_cast<size_t>(r / 32) * tiles_per_row + c / 32;
            out[tile * 1024 + ttmock::face_index(r % 32, c % 32)] = input[static_cast<size_t>(r) * n + c];
        }
    }
    return out;
}

template <typename T>
std::vector<T> untilize_nfaces(const std::vector<T>& input, uint32_t m, uint32_t n) {
    if (m % 32 || n % 32 || input.size() != static_cast<size_t>(m) * n) {
        std::fprintf(stderr, "TT-MOCK ERROR: untilize_nfaces: %zu values are not a %u x %u tiled matrix\n",
                     input.size(), m, n);
        std::exit(3);
    }
    std::vector<T> out(input.size());
    const uint32_t tiles_per_row = n / 32;
    for (uint32_t r = 0; r < m; ++r) {
        for (uint32_t c = 0; c < n; ++c) {
            const size_t tile = static_cast<size_t>(r / 32) * tiles_per_row + c / 32;
            out[static_cast<size_t>(r) * n + c] = input[tile * 1024 + ttmock::face_index(r % 32, c % 32)];
        }
    }
    return out;
}
