// tilelang-tt mock TT-Metalium: TT_THROW / TT_FATAL / TT_ASSERT (tt_stl/assert.hpp), the SDK's
// host assertions. They format their message with fmt (a real dependency, as in the SDK) and throw
// std::runtime_error naming the file and line; TT_ASSERT checks only in DEBUG builds, as in the SDK.
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace tt::assert::detail {

template <typename... Args>
[[noreturn]] void tt_throw_impl(const char* file, int line, const char* assert_type, const char* condition_str,
                                fmt::format_string<Args...> fmt_str, Args&&... args) {
    std::ostringstream os;
    os << assert_type << " @ " << file << ":" << line << ": " << condition_str;
    const std::string info = fmt::format(fmt_str, std::forward<Args>(args)...);
    if (!info.empty()) os << "\ninfo:\n" << info;
    throw std::runtime_error(os.str());
}

[[noreturn]] inline void tt_throw_impl(const char* file, int line, const char* assert_type,
                                       const char* condition_str) {
    std::ostringstream os;
    os << assert_type << " @ " << file << ":" << line << ": " << condition_str;
    throw std::runtime_error(os.str());
}

}  // namespace tt::assert::detail

#define TT_THROW(...) ::tt::assert::detail::tt_throw_impl(__FILE__, __LINE__, "TT_THROW", "tt::exception", ##__VA_ARGS__)

#define TT_FATAL(condition, message, ...)                                                                   \
    do {                                                                                                    \
        if (!(condition)) [[unlikely]] {                                                                    \
            ::tt::assert::detail::tt_throw_impl(__FILE__, __LINE__, "TT_FATAL", #condition, message, ##__VA_ARGS__); \
        }                                                                                                   \
    } while (0)

#ifdef DEBUG
#define TT_ASSERT(condition, ...)                                                                           \
    do {                                                                                                    \
        if (!(condition)) [[unlikely]] {                                                                    \
            ::tt::assert::detail::tt_throw_impl(__FILE__, __LINE__, "TT_ASSERT", #condition, ##__VA_ARGS__); \
        }                                                                                                   \
    } while (0)
#else
#define TT_ASSERT(condition, ...)
#endif
