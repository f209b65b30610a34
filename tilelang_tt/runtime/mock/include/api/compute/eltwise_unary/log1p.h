// tilelang-tt mock TT-Metalium: log1p on the SFPU (api/compute/eltwise_unary/log1p.h).
#pragma once
#include "api/compute/common_globals.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_unary_sfpu_macros.h"
#endif

namespace ckernel {
template <bool fast_and_approx = false, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void log1p_tile_init() { ttmock::sfpu_init("log1p"); }
template <bool fast_and_approx = false, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void log1p_tile(uint32_t idst) { ttmock::sfpu_unary("log1p", idst, 0.0f); }
}  // namespace ckernel
