// tilelang-tt mock TT-Metalium: the SFPU unary ops' common header (api/compute/eltwise_unary/eltwise_unary.h).
#pragma once
#include "api/compute/common.h"
#include "api/compute/compute_kernel_hw_startup.h"
#include "api/compute/tile_move_copy.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#endif

namespace ckernel {
// the legacy SFPU init: hardware startup, then copy_init (as the SDK defines it)
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
[[deprecated(
    "Use compute_kernel_hw_startup(icb, ocb) once at kernel start, then copy_init(icb). This will be removed after "
    "20-09-2026.")]] ALWI void
init_sfpu(uint32_t icb, uint32_t ocb, uint32_t call_line = __builtin_LINE()) {
    compute_kernel_hw_startup(icb, ocb);
    copy_init<is_fp32_dest_acc_en>(icb, 0, 0, call_line);
}
}  // namespace ckernel
