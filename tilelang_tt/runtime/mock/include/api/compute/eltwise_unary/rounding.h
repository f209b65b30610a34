// tilelang-tt mock TT-Metalium: floor, ceil, trunc and round on the SFPU
// (api/compute/eltwise_unary/rounding.h; one init for the three).
#pragma once
#include "api/compute/common_globals.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_unary_sfpu_macros.h"
#endif

namespace ckernel {
ALWI void rounding_op_tile_init() { ttmock::sfpu_init("rounding_op"); }
ALWI void ceil_tile(uint32_t idst) { ttmock::sfpu_unary("ceil", idst, 0.0f); }
ALWI void floor_tile(uint32_t idst) { ttmock::sfpu_unary("floor", idst, 0.0f); }
ALWI void trunc_tile(uint32_t idst) { ttmock::sfpu_unary("trunc", idst, 0.0f); }
ALWI void round_tile(uint32_t idst, int32_t decimals) {
    ttmock::sfpu_unary("round", idst, static_cast<float>(decimals));
}
}  // namespace ckernel
