// tilelang-tt mock TT-Metalium: what the device print shares between host and device
// (hostdevcommon/dprint_common.h): SliceRange, the TileSlice record and its return codes.
#pragma once
#include <cstdint>

#define ATTR_PACK __attribute__((packed))

struct SliceRange {
    // numpy's [h0:h1:hs, w0:w1:ws] over a tile's rows and columns
    uint8_t h0, h1, hs, w0, w1, ws;
    static SliceRange hw0_32_16() { return SliceRange{.h0 = 0, .h1 = 32, .hs = 16, .w0 = 0, .w1 = 32, .ws = 16}; }
    static SliceRange hw0_32_8() { return SliceRange{.h0 = 0, .h1 = 32, .hs = 8, .w0 = 0, .w1 = 32, .ws = 8}; }
    static SliceRange hw0_32_4() { return SliceRange{.h0 = 0, .h1 = 32, .hs = 4, .w0 = 0, .w1 = 32, .ws = 4}; }
    static SliceRange h0_w0_32() { return SliceRange{.h0 = 0, .h1 = 1, .hs = 1, .w0 = 0, .w1 = 32, .ws = 1}; }
    static SliceRange h0_32_w0() { return SliceRange{.h0 = 0, .h1 = 32, .hs = 1, .w0 = 0, .w1 = 1, .ws = 1}; }
    static SliceRange h0_32_w1() { return SliceRange{.h0 = 0, .h1 = 32, .hs = 1, .w0 = 1, .w1 = 2, .ws = 1}; }
    static SliceRange hw041() { return SliceRange{.h0 = 0, .h1 = 4, .hs = 1, .w0 = 0, .w1 = 4, .ws = 1}; }
} ATTR_PACK;

template <int MAX_BYTES = 0>
struct TileSliceHostDev {
    uint32_t cb_ptr;
    struct SliceRange slice_range;
    uint8_t cb_id;
    uint8_t data_format;
    uint8_t data_count;
    uint8_t endl_rows;
    uint8_t return_code;
    uint8_t pad;
    uint8_t data[MAX_BYTES];
} ATTR_PACK;

enum dprint_tileslice_return_code_enum {
    DPrintOK = 2,
    DPrintErrorBadTileIdx = 3,
    DPrintErrorBadPointer = 4,
    DPrintErrorUnsupportedFormat = 5,
    DPrintErrorMath = 6,
    DPrintErrorEthernet = 7,
};
