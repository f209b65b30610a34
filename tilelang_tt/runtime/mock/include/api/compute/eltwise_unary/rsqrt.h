// tilelang-tt mock TT-Metalium: 1 / sqrt on the SFPU (api/compute/eltwise_unary/rsqrt.h).
#pragma once
#include "api/compute/common_globals.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_unary_sfpu_macros.h"
#endif

namespace ckernel {
enum class RsqrtMode { Default, Fast };
ALWI void rsqrt_tile_init() { ttmock::sfpu_init("rsqrt"); }
template <RsqrtMode mode = RsqrtMode::Default, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void rsqrt_tile(uint32_t idst) { ttmock::sfpu_unary("rsqrt", idst, 0.0f, ttmock::kApproxFromConfig); }
}  // namespace ckernel
