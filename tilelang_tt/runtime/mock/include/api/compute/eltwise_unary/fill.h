// tilelang-tt mock TT-Metalium: fill a DST tile with a constant (api/compute/eltwise_unary/fill.h).
#pragma once
#include <bit>
#include "api/compute/common_globals.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_unary_sfpu_macros.h"
#endif

namespace ckernel {
ALWI void fill_tile(uint32_t idst, float param0) { ttmock::sfpu_unary("fill", idst, param0); }
// param0: the bits of a float32 (any value, infinities included)
ALWI void fill_tile_bitcast(uint32_t idst, uint32_t param0) { ttmock::sfpu_unary("fill", idst, std::bit_cast<float>(param0)); }
ALWI void fill_tile_init() { ttmock::sfpu_init("fill"); }
}  // namespace ckernel
