// tilelang-tt mock TT-Metalium: tt_stl/reflection.hpp, the part host programs meet: TT-Metalium's
// enums format with fmt as their enumerator's name (the SDK derives the name with magic_enum; the
// mock's enums name themselves through ttsl::enum_name overloads next to their declarations).
#pragma once
#include <string_view>
#include <type_traits>

#if __has_include(<fmt/format.h>) && !defined(TTMOCK_NO_FMT)
#include <fmt/format.h>

namespace ttsl::detail {
template <typename E>
concept named_enum = std::is_enum_v<E> && requires(E e) {
    { enum_name(e) } -> std::convertible_to<std::string_view>;
};
}  // namespace ttsl::detail

template <ttsl::detail::named_enum E>
struct fmt::formatter<E> : fmt::formatter<std::string_view> {
    template <typename FormatContext>
    auto format(E value, FormatContext& ctx) const {
        return fmt::formatter<std::string_view>::format(enum_name(value), ctx);
    }
};
#endif
