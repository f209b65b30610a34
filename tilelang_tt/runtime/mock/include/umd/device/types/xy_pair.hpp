// tilelang-tt mock TT-Metalium: UMD's core coordinate pair (TT-Metalium's CoreCoord).
// Twin of umd/device/types/xy_pair.hpp as shipped with TT-Metalium 0.81.1: namespace tt, x-major
// order; str() is defined in the library, as in libtt-umd.
#pragma once
#include <cstddef>
#include <functional>
#include <string>

namespace tt {

struct xy_pair {
    constexpr xy_pair() : x{}, y{} {}
    constexpr xy_pair(std::size_t x_, std::size_t y_) : x(x_), y(y_) {}

    std::size_t x;
    std::size_t y;

    std::string str() const;
};

constexpr bool operator==(const xy_pair& a, const xy_pair& b) { return a.x == b.x && a.y == b.y; }
constexpr bool operator!=(const xy_pair& a, const xy_pair& b) { return !(a == b); }
constexpr bool operator<(const xy_pair& a, const xy_pair& b) {
    return a.x < b.x || (a.x == b.x && a.y < b.y);
}

}  // namespace tt

using tt_xy_pair = tt::xy_pair;

template <>
struct std::hash<tt::xy_pair> {
    std::size_t operator()(const tt::xy_pair& p) const noexcept {
        return std::hash<std::size_t>()(p.x) ^ (std::hash<std::size_t>()(p.y) << 1);
    }
};
