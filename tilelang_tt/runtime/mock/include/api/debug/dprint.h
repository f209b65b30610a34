// tilelang-tt mock TT-Metalium: DPRINT (api/debug/dprint.h), the SDK's aliases of DEVICE_PRINT.
// The stream-style DPRINT << ... of older SDKs is gone in 0.81.1 (a static_assert there); here it
// does not compile either.
#pragma once
#include <cstdint>

#include "api/debug/device_print.h"

#define DPRINT(format, ...) DEVICE_PRINT(format, ##__VA_ARGS__)
#define DPRINT_UNPACK(format, ...) DEVICE_PRINT_UNPACK(format, ##__VA_ARGS__)
#define DPRINT_MATH(format, ...) DEVICE_PRINT_MATH(format, ##__VA_ARGS__)
#define DPRINT_PACK(format, ...) DEVICE_PRINT_PACK(format, ##__VA_ARGS__)
#define DPRINT_DATA0(format, ...) DEVICE_PRINT_DATA0(format, ##__VA_ARGS__)
#define DPRINT_DATA1(format, ...) DEVICE_PRINT_DATA1(format, ##__VA_ARGS__)
