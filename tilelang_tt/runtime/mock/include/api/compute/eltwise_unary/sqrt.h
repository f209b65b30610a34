// tilelang-tt mock TT-Metalium: sqrt on the SFPU (api/compute/eltwise_unary/sqrt.h).
#pragma once
#include "api/compute/common_globals.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_unary_sfpu_macros.h"
#endif

namespace ckernel {
template <bool FAST_APPROX = false, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void sqrt_tile(uint32_t idst) { ttmock::sfpu_unary("sqrt", idst, 0.0f, ttmock::kApproxFromConfig); }
ALWI void sqrt_tile_init() { ttmock::sfpu_init("sqrt"); }
}  // namespace ckernel
