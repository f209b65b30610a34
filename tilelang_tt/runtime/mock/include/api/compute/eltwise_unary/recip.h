// tilelang-tt mock TT-Metalium: reciprocal on the SFPU (api/compute/eltwise_unary/recip.h).
#pragma once
#include "api/compute/common_globals.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_unary_sfpu_macros.h"
#endif

namespace ckernel {
enum class ReciprocalDestAcc { BF16, FP32 };
enum class ReciprocalApproxMode { Default, Precise, Approximate };
template <
    ReciprocalDestAcc dest_acc = DST_ACCUM_MODE ? ReciprocalDestAcc::FP32 : ReciprocalDestAcc::BF16,
    ReciprocalApproxMode approx_mode = ReciprocalApproxMode::Default>
ALWI void recip_tile_init() { ttmock::sfpu_init("recip"); }
template <
    ReciprocalDestAcc dest_acc = DST_ACCUM_MODE ? ReciprocalDestAcc::FP32 : ReciprocalDestAcc::BF16,
    ReciprocalApproxMode approx_mode = ReciprocalApproxMode::Default>
ALWI void recip_tile(uint32_t idst, VectorMode vector_mode = VectorMode::RC) {
    if (vector_mode != VectorMode::RC) ttmock::unsupported("recip_tile with a VectorMode other than RC");
    ttmock::sfpu_unary("recip", idst, 0.0f,
                       approx_mode == ReciprocalApproxMode::Default ? ttmock::kApproxFromConfig
                                                                    : approx_mode == ReciprocalApproxMode::Approximate);
}
}  // namespace ckernel
