// tilelang-tt mock TT-Metalium: tile transpose into DST (api/compute/transpose.h).
#pragma once
#include "api/compute/common.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#endif

namespace ckernel {
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void transpose_init(uint32_t icb, uint32_t call_line = __builtin_LINE()) {
    (void)call_line;
    ttmock::fpu_init("transpose", icb, icb, 0);
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void transpose_tile(uint32_t icb, uint32_t itile, uint32_t idst) {
    ttmock::transpose(icb, itile, idst);
}
}  // namespace ckernel
