// tilelang-tt mock TT-Metalium: gelu on the SFPU (api/compute/eltwise_unary/gelu.h).
#pragma once
#include "api/compute/common_globals.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_unary_sfpu_macros.h"
#endif

namespace ckernel {
template <bool fast_and_approx = true, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void gelu_tile_init() { ttmock::sfpu_init("gelu"); }
template <bool fast_and_approx = true, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void gelu_tile(uint32_t idst) { ttmock::sfpu_unary("gelu", idst, 0.0f, fast_and_approx); }
}  // namespace ckernel
