// tilelang-tt mock TT-Metalium: compile-time kernel arguments (api/compile_time_args.h).
// The kernel JIT compiles each kernel with -DKERNEL_COMPILE_TIME_ARGS=a,b,c as the SDK does, so an
// index beyond them fails to compile (static_assert), as on the SDK.
#pragma once
#include <array>
#include <cstdint>
#ifdef KERNEL_COMPILE_TIME_ARG_MAP
#include <string_view>
#include <utility>
#endif

#include "internal/risc_attribs.h"
#if defined(COMPILE_FOR_BRISC) || defined(COMPILE_FOR_NCRISC)
#include "hostdev/dev_msgs.h"  // as the SDK's data movement builds see it (its firmware headers)
#endif

template <class T, class... Ts>
FORCE_INLINE constexpr std::array<T, sizeof...(Ts)> make_array(Ts... values) {
    return {T(values)...};
}

#ifndef KERNEL_COMPILE_TIME_ARGS
#define KERNEL_COMPILE_TIME_ARGS
#endif

constexpr auto kernel_compile_time_args = make_array<std::uint32_t>(KERNEL_COMPILE_TIME_ARGS);

template <uint32_t Idx>
constexpr uint32_t get_ct_arg() {
    static_assert(Idx < kernel_compile_time_args.size(), "Index out of range");
    return kernel_compile_time_args[Idx];
}

#define get_compile_time_arg_val(arg_idx) get_ct_arg<arg_idx>()

// Named compile-time args: the JIT defines KERNEL_COMPILE_TIME_ARG_MAP as {"name", value} pairs
// (the config's named_compile_args); an unknown name fails to compile (not a constant expression)
#ifdef KERNEL_COMPILE_TIME_ARG_MAP
namespace {
constexpr std::pair<std::string_view, uint32_t> named_args_map[] = {KERNEL_COMPILE_TIME_ARG_MAP};
}
constexpr uint32_t get_named_ct_arg(std::string_view name) {
    for (const auto& [arg_name, arg_value] : named_args_map) {
        if (name == arg_name) return arg_value;
    }
    __builtin_unreachable();
}
constexpr uint32_t get_named_compile_time_arg_val(std::string_view name) { return get_named_ct_arg(name); }
#endif
