// tilelang-tt mock TT-Metalium: Flags<E>, a set of bits of an enum (global namespace, as in the SDK).
#pragma once
#include <type_traits>

template <typename E>
class Flags {
    static_assert(std::is_enum_v<E>, "Flags<E> needs an enum E");

public:
    using Underlying = std::underlying_type_t<E>;

    constexpr Flags() noexcept : bits_(0) {}
    constexpr Flags(E value) noexcept : bits_(static_cast<Underlying>(value)) {}
    constexpr Flags(E a, E b) noexcept : bits_(static_cast<Underlying>(a) | static_cast<Underlying>(b)) {}
    constexpr explicit Flags(Underlying bits) noexcept : bits_(bits) {}

    constexpr Flags operator|(E other) const noexcept { return Flags(Underlying(bits_ | Underlying(other))); }
    constexpr Flags operator|(Flags other) const noexcept { return Flags(Underlying(bits_ | other.bits_)); }
    constexpr Flags operator&(E other) const noexcept { return Flags(Underlying(bits_ & Underlying(other))); }
    constexpr bool test(E single) const noexcept {
        return (bits_ & Underlying(single)) == Underlying(single);
    }
    void set(E single, bool value = true) noexcept {
        bits_ = value ? Underlying(bits_ | Underlying(single)) : Underlying(bits_ & ~Underlying(single));
    }
    constexpr Underlying raw() const noexcept { return bits_; }

private:
    Underlying bits_ = 0;
};
