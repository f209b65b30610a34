// tilelang-tt mock TT-Metalium: TT_THROW / TT_FATAL / TT_ASSERT (tt_stl/assert.hpp), the SDK's
// host assertions. They format their message with fmt (a real dependency, as in the SDK) and throw
// std::runtime_error naming the file and line; TT_ASSERT checks only in DEBUG builds, as in the SDK.
// Without fmt installed, the message's "{}" fields are filled with the arguments' operator<< and
// the header brings no fmt (a program that calls fmt itself then needs libfmt-dev).
#pragma once
#if __has_include(<fmt/format.h>) && !defined(TTMOCK_NO_FMT)
#define TTMOCK_HAVE_FMT 1
#include <fmt/format.h>
#include <fmt/ranges.h>
#endif

#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace tt::assert::detail {

#ifdef TTMOCK_HAVE_FMT
template <typename... Args>
using message_string = fmt::format_string<Args...>;

template <typename... Args>
std::string format_message(fmt::format_string<Args...> fmt_str, Args&&... args) {
    return fmt::format(fmt_str, std::forward<Args>(args)...);
}
#else
template <typename... Args>
using message_string = const char*;

// "{}" fields in order, "{{" / "}}" as braces; a field's format spec is ignored
template <typename... Args>
std::string format_message(const char* fmt_str, Args&&... args) {
    std::ostringstream os;
    std::string fields[sizeof...(Args) + 1];
    std::size_t n = 0;
    ((os.str(""), os << args, fields[n++] = os.str()), ...);
    std::string out;
    std::size_t next = 0;
    for (const char* c = fmt_str; *c; ++c) {
        if ((c[0] == '{' && c[1] == '{') || (c[0] == '}' && c[1] == '}')) {
            out += *c++;
        } else if (c[0] == '{') {
            while (*c && *c != '}') ++c;
            if (next < n) out += fields[next++];
            if (!*c) break;
        } else {
            out += *c;
        }
    }
    return out;
}
#endif

template <typename... Args>
[[noreturn]] void tt_throw_impl(const char* file, int line, const char* assert_type, const char* condition_str,
                                message_string<Args...> fmt_str, Args&&... args) {
    std::ostringstream os;
    os << assert_type << " @ " << file << ":" << line << ": " << condition_str;
    const std::string info = format_message<Args...>(fmt_str, std::forward<Args>(args)...);
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
