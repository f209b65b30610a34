// tilelang-tt mock TT-Metalium: ttsl::StrongType, a value wrapper that keeps ids of different
// kinds (SubDeviceId, ...) from converting into each other.
#pragma once
#include <compare>
#include <concepts>
#include <functional>
#include <utility>

namespace ttsl {

template <typename T, typename Tag>
class StrongType {
public:
    using value_type = T;
    using tag_type = Tag;

    constexpr StrongType() noexcept
        requires std::default_initializable<T>
        : value_(T{}) {}
    constexpr explicit StrongType(T v) noexcept : value_(std::move(v)) {}

    constexpr const T& operator*() const { return value_; }
    constexpr const T& get() const { return value_; }

    constexpr auto operator<=>(const StrongType&) const = default;

private:
    T value_;
};

}  // namespace ttsl

namespace tt {
namespace stl = ::ttsl;
}  // namespace tt

template <typename T, typename Tag>
struct std::hash<ttsl::StrongType<T, Tag>> {
    std::size_t operator()(const ttsl::StrongType<T, Tag>& v) const noexcept { return std::hash<T>{}(*v); }
};
