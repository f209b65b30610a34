// tilelang-tt mock TT-Metalium: compile-time and runtime kernel arguments.
// The emulator JIT-compiles each kernel with -DKERNEL_COMPILE_TIME_ARGS=a,b,c, (as the SDK does),
// so get_compile_time_arg_val is usable in constant expressions.
#pragma once
#include <cstdint>
#include <cstring>

#ifndef KERNEL_COMPILE_TIME_ARGS
#define KERNEL_COMPILE_TIME_ARGS
#endif

namespace ttmock {
uint32_t runtime_arg(int index);  // the calling kernel's runtime arg (bounds-checked)
void compile_time_arg_out_of_range(uint32_t index);  // reports the error
namespace kernel_detail {
constexpr uint32_t compile_time_args[] = {KERNEL_COMPILE_TIME_ARGS 0u};
constexpr uint32_t num_compile_time_args = sizeof(compile_time_args) / sizeof(uint32_t) - 1;
}  // namespace kernel_detail
}  // namespace ttmock

constexpr uint32_t get_compile_time_arg_val(uint32_t index) {
    return index < ttmock::kernel_detail::num_compile_time_args
               ? ttmock::kernel_detail::compile_time_args[index]
               : (ttmock::compile_time_arg_out_of_range(index), 0u);
}

template <typename T>
T get_arg_val(int arg_idx) {
    static_assert(sizeof(T) == 4, "runtime args are 4-byte values");
    const uint32_t raw = ttmock::runtime_arg(arg_idx);
    T out;
    std::memcpy(&out, &raw, sizeof(T));
    return out;
}

template <typename T>
T get_common_arg_val(int arg_idx) {
    return get_arg_val<T>(arg_idx);
}
