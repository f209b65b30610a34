// tilelang-tt mock TT-Metalium: a constant raised to DST on the SFPU (api/compute/eltwise_unary/rpow.h).
#pragma once
#include <bit>
#include "api/compute/common_globals.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_unary_sfpu_macros.h"
#endif

namespace ckernel {
ALWI void rpow_tile_init() { ttmock::sfpu_init("rpow"); }
// base_val: the base's float32 bits; DST[idst] holds the exponents
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void rpow_tile(uint32_t idst, uint32_t base_val, VectorMode vector_mode = VectorMode::RC) {
    if (vector_mode != VectorMode::RC) ttmock::unsupported("rpow_tile with a VectorMode other than RC");
    ttmock::sfpu_unary("rpow", idst, std::bit_cast<float>(base_val));
}
}  // namespace ckernel
