// tilelang-tt mock TT-Metalium: one-time engine configuration (api/compute/compute_kernel_hw_startup.h).
#pragma once
#include "api/compute/common_globals.h"
#include "api/compute/src_order.h"
#include "api/compute/reconfig_data_format.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#endif

namespace ckernel {
template <SrcOrder src_order = SrcOrder::Regular>
ALWI void compute_kernel_hw_startup(uint32_t icb0, uint32_t icb1, uint32_t ocb) {
    ttmock::hw_startup(icb0, icb1, ocb, src_order == SrcOrder::Reverse);
}
ALWI void compute_kernel_hw_startup(uint32_t icb0, uint32_t ocb) { compute_kernel_hw_startup(icb0, icb0, ocb); }
}  // namespace ckernel
