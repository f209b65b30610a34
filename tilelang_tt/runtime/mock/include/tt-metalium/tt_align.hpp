// tilelang-tt mock TT-Metalium: tt-metalium/tt_align.hpp, rounding an address or size up to an
// alignment (a power of two, as the allocator's are).
#pragma once

namespace tt {

template <typename A, typename B>
constexpr auto align(A addr, B alignment) {
    return ((addr - 1) | (alignment - 1)) + 1;
}

}  // namespace tt
