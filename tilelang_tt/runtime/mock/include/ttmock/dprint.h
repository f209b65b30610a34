// tilelang-tt mock TT-Metalium: the emulator's side of DPRINT (api/debug/dprint.h). Kernels pass
// the format string and their arguments, type-erased; the library formats them with fmt, as the
// SDK's host print server does, and prints them on the host (docs/MOCK.md "DPRINT").
#pragma once
#include <cstdint>
#include <type_traits>

namespace ttmock {

struct DPrintArg {
    enum Kind : uint8_t { Signed, Unsigned, Float, String, Char, Bool, Pointer, TileSlice } kind;
    union {
        long long i;
        unsigned long long u;
        double f;
        const char* s;
        const void* p;
    };
};

template <class T>
DPrintArg dprint_arg(const T& v) {
    DPrintArg a{};
    using U = std::remove_cv_t<std::remove_reference_t<T>>;
    if constexpr (requires { v.val; } && sizeof(U) == 2) {  // bf16_t: the bfloat16 as a float
        const uint32_t bits = static_cast<uint32_t>(v.val) << 16;
        float f;
        __builtin_memcpy(&f, &bits, 4);
        a.kind = DPrintArg::Float;
        a.f = f;
    } else if constexpr (std::is_same_v<U, bool>) {
        a.kind = DPrintArg::Bool;
        a.u = v;
    } else if constexpr (std::is_same_v<U, char>) {
        a.kind = DPrintArg::Char;
        a.i = v;
    } else if constexpr (std::is_enum_v<U>) {
        a.kind = DPrintArg::Signed;
        a.i = static_cast<long long>(v);
    } else if constexpr (std::is_integral_v<U> && std::is_signed_v<U>) {
        a.kind = DPrintArg::Signed;
        a.i = v;
    } else if constexpr (std::is_integral_v<U>) {
        a.kind = DPrintArg::Unsigned;
        a.u = v;
    } else if constexpr (std::is_floating_point_v<U>) {
        a.kind = DPrintArg::Float;
        a.f = v;
    } else if constexpr (requires { v.slice_range; v.return_code; }) {  // a TileSlice: formatted per thread
        a.kind = DPrintArg::TileSlice;
        a.p = &v;
    } else if constexpr (std::is_convertible_v<const T&, const char*>) {
        a.kind = DPrintArg::String;
        a.s = v;
    } else if constexpr (std::is_pointer_v<U>) {
        a.kind = DPrintArg::Pointer;
        a.p = v;
    } else {
        static_assert(sizeof(T) == 0, "DPRINT: the emulator prints integers, floats, strings and pointers");
    }
    return a;
}

// which: 0 DPRINT (every RISC-V thread the kernel runs on), 1..3 DPRINT_UNPACK / _MATH / _PACK,
// 4 / 5 DPRINT_DATA0 / _DATA1
void dprint(int which, const char* format, const DPrintArg* args, unsigned n);

template <class... A>
void dprint_call(int which, const char* format, const A&... a) {
    const DPrintArg args[sizeof...(A) + 1] = {dprint_arg(a)...};
    dprint(which, format, args, sizeof...(A));
}

}  // namespace ttmock
