// tilelang-tt mock TT-Metalium: compile-time kernel arguments (api/compile_time_args.h).
// The kernel JIT compiles each kernel with -DKERNEL_COMPILE_TIME_ARGS=a,b,c as the SDK does, so an
// index beyond them fails to compile (static_assert), as on the SDK.
#pragma once
#include <array>
#include <cstdint>

#include "internal/risc_attribs.h"

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
