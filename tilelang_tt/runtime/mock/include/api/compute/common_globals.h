// tilelang-tt mock TT-Metalium: the compute kernel API's shared definitions (api/compute/common_globals.h).
// Every compute API function is in namespace ckernel, as in the SDK; the kernel JIT puts
// `using namespace ckernel;` and DST_ACCUM_MODE in front of the kernel (ttmock/jit_compute.h).
#pragma once
#include <cstdint>

#include "hostdevcommon/kernel_structs.h"
#include "ttmock/compute_api.h"
#include "ttmock/jit_compute.h"
#include "ttmock/llk_defs.h"

#define ALWI inline __attribute__((always_inline))

// the code of each TRISC thread (the emulator runs all three: ttmock/jit_compute.h)
#define MATH(...) __VA_ARGS__
#define PACK(...) __VA_ARGS__
#define UNPACK(...) __VA_ARGS__
