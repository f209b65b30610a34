// tilelang-tt mock TT-Metalium: the printf-style device print (api/debug/device_print.h). The
// format string is fmt's (checked when the kernel runs: a bad one is an error naming the kernel);
// the text goes to the host's stdout with the SDK print server's "device:(x=X,y=Y):RISC: " prefix,
// for the cores TT_METAL_DPRINT_CORES names.
#pragma once
#include <cstdint>

#include "api/debug/dprint_tile.h"
#include "ttmock/dprint.h"

// a bfloat16 bit pattern to print as a number
struct bf16_t {
    uint16_t val;
    bf16_t(uint16_t val) : val(val) {}
};

#define DEVICE_PRINT(format, ...) ::ttmock::dprint_call(0, format, ##__VA_ARGS__)
#define DEVICE_PRINT_UNPACK(format, ...) ::ttmock::dprint_call(1, format, ##__VA_ARGS__)
#define DEVICE_PRINT_MATH(format, ...) ::ttmock::dprint_call(2, format, ##__VA_ARGS__)
#define DEVICE_PRINT_PACK(format, ...) ::ttmock::dprint_call(3, format, ##__VA_ARGS__)
#define DEVICE_PRINT_DATA0(format, ...) ::ttmock::dprint_call(4, format, ##__VA_ARGS__)
#define DEVICE_PRINT_DATA1(format, ...) ::ttmock::dprint_call(5, format, ##__VA_ARGS__)
