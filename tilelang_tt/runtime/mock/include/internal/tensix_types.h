// tilelang-tt mock TT-Metalium: DataFormat of the SDK internal tensix_types.h, which the firmware
// wrapper of a compute kernel makes visible (ttmock/jit_compute.h includes it).
#pragma once
#include <cstdint>

// The Tensix data formats (the SDK's tensix_types.h, global namespace; same enumerators and values):
// the compute API takes them as template arguments (where_tile<DataFormat::Float32>).
enum class DataFormat : std::uint8_t {
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
    Tf32 = 4,
    testMan7 = 0x82,
    testMan2 = 0x8A,
    Invalid = 0xff
};
