// tilelang-tt mock TT-Metalium: atan2 of two DST tiles on the SFPU (api/compute/atan2.h).
#pragma once
#include "api/compute/common_globals.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_binary_sfpu_macros.h"
#endif

namespace ckernel {
// DST[odst] = atan2(DST[idst0] (y), DST[idst1] (x))
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void atan2_binary_tile(uint32_t idst0, uint32_t idst1, uint32_t odst) { ttmock::sfpu_binary("atan2", idst0, idst1, odst); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void atan2_binary_tile_init() { ttmock::sfpu_init("atan2_binary"); }
}  // namespace ckernel
