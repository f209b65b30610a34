// tilelang-tt mock TT-Metalium: types shared by host and device code.
#pragma once
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

// Plain enum, as in the SDK: converts to the integer CB ids the kernel APIs take.
enum CBIndex : uint8_t {
    c_0 = 0, c_1, c_2, c_3, c_4, c_5, c_6, c_7, c_8, c_9, c_10, c_11, c_12, c_13, c_14, c_15,
    c_16, c_17, c_18, c_19, c_20, c_21, c_22, c_23, c_24, c_25, c_26, c_27, c_28, c_29, c_30,
    c_31, SIZE
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
