// tilelang-tt mock TT-Metalium: types shared by host and device code.
#pragma once
#include "hostdevcommon/kernel_structs.h"
#include <cstddef>
#include <cstdint>

#include "tt-metalium/circular_buffer_constants.h"

namespace tt {
enum class DataFormat : uint8_t {
    Float32 = 0,
    Float16 = 1,
    Bfp8 = 2,
    Bfp4 = 3,
    Bfp2 = 11,
    Float16_b = 5,
    Bfp8_b = 6,
    Bfp4_b = 7,
    Bfp2_b = 15,
    Lf8 = 10,
    Int8 = 14,
    UInt8 = 30,
    UInt16 = 9,
    Int32 = 8,
    UInt32 = 24,
    RawUInt8 = 240,
    RawUInt16 = 241,
    RawUInt32 = 242,
    Invalid = 255,
};

}  // namespace tt

namespace ttmock {
// Bytes of one 32x32 tile in a data format (0 for formats the emulator does not model).
inline uint32_t tile_bytes(tt::DataFormat f) {
    switch (f) {
        case tt::DataFormat::Float32:
        case tt::DataFormat::Int32:
        case tt::DataFormat::UInt32: return 4096;
        case tt::DataFormat::Float16:
        case tt::DataFormat::Float16_b:
        case tt::DataFormat::UInt16: return 2048;
        default: return 0;
    }
}
const char* format_name(tt::DataFormat f);
}  // namespace ttmock
