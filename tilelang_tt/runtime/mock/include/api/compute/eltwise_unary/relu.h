// tilelang-tt mock TT-Metalium: relu on the SFPU (api/compute/eltwise_unary/relu.h).
#pragma once
#include "api/compute/common_globals.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_unary_sfpu_macros.h"
#endif

namespace ckernel {
ALWI void relu_tile(uint32_t idst) { ttmock::sfpu_unary("relu", idst, 0.0f); }
ALWI void relu_tile_init() { ttmock::sfpu_init("relu"); }
}  // namespace ckernel
