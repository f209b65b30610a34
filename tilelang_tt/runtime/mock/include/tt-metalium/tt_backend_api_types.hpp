// tilelang-tt mock TT-Metalium: tt::DataFormat and tt::CBIndex (declared once for host and
// device code in ttmock/types.hpp).
#pragma once
#include "ttmock/types.hpp"

#include <cstdint>

namespace tt {
// bytes of one 32x32 tile in `format` (0 for a format the emulator does not support)
constexpr uint32_t tile_size(const DataFormat& format) {
    switch (format) {
        case DataFormat::Float32:
        case DataFormat::Int32:
        case DataFormat::UInt32: return 4096;
        case DataFormat::Float16:
        case DataFormat::Float16_b:
        case DataFormat::UInt16: return 2048;
        case DataFormat::UInt8: return 1024;
        default: return 0;
    }
}
}  // namespace tt
