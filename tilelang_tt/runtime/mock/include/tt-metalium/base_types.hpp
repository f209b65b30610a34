// tilelang-tt mock TT-Metalium: math fidelity and unpack-to-DST mode (namespace tt::tt_metal;
// the global names are deprecated aliases, as in TT-Metalium 0.81.1).
#pragma once
#include <cstdint>
#include <ostream>

namespace tt::tt_metal {

enum class MathFidelity : uint8_t {
    LoFi = 0,
    HiFi2 = 2,
    HiFi3 = 3,
    HiFi4 = 4,
    Invalid = 0xff,
};

inline std::ostream& operator<<(std::ostream& os, const MathFidelity& fidelity) {
    switch (fidelity) {
        case MathFidelity::LoFi: return os << "LoFi";
        case MathFidelity::HiFi2: return os << "HiFi2";
        case MathFidelity::HiFi3: return os << "HiFi3";
        case MathFidelity::HiFi4: return os << "HiFi4";
        case MathFidelity::Invalid: return os << "Invalid";
    }
    return os << "MathFidelity(" << static_cast<int>(fidelity) << ")";
}

// Default: the CB can be unpacked to SrcA/SrcB or DST. UnpackToDestFp32: Float32 data goes to
// DST at full precision and the CB can no longer feed SrcA/SrcB.
enum class UnpackToDestMode : uint8_t { UnpackToDestFp32, Default };

}  // namespace tt::tt_metal

template <>
struct std::hash<tt::tt_metal::MathFidelity> {
    std::size_t operator()(const tt::tt_metal::MathFidelity& f) const noexcept { return static_cast<std::size_t>(f); }
};

using MathFidelity [[deprecated("Use tt::tt_metal::MathFidelity")]] = tt::tt_metal::MathFidelity;
using UnpackToDestMode [[deprecated("Use tt::tt_metal::UnpackToDestMode")]] = tt::tt_metal::UnpackToDestMode;
