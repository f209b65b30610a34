// tilelang-tt mock TT-Metalium: runtime kernel arguments (bounds-checked by the emulator).
#pragma once
#include <cstdint>
#include <cstring>

namespace ttmock {
uint32_t runtime_arg(int index);         // the calling kernel's runtime arg
uint32_t common_runtime_arg(int index);  // SetCommonRuntimeArgs (not emulated: reports an error)

template <typename T>
T arg_as(uint32_t raw) {
    static_assert("Error: only 4B args are supported" && sizeof(T) == 4);
    T out;
    std::memcpy(&out, &raw, sizeof(T));
    return out;
}
}  // namespace ttmock
