// tilelang-tt mock TT-Metalium: fmod by a constant on the SFPU (api/compute/eltwise_unary/fmod.h).
#pragma once
#include "api/compute/common_globals.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_unary_sfpu_macros.h"
#endif

namespace ckernel {
// param0: the divisor's float32 bits, param1: its reciprocal's
ALWI void fmod_tile_init(uint32_t param0, uint32_t param1) { ttmock::sfpu_init_params("fmod", param0, param1); }
ALWI void fmod_tile(uint32_t idst) { ttmock::sfpu_unary("fmod", idst, 0.0f); }
}  // namespace ckernel
