// tilelang-tt mock TT-Metalium: row / column reductions (api/compute/reduce.h).
#pragma once
#include <cstdint>
#include "api/compute/common.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#endif

namespace ckernel {
template <PoolType reduce_type, ReduceDim reduce_dim, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void reduce_init(
    std::uint32_t icb, std::uint32_t icb_scaler, std::uint32_t ocb, std::uint32_t call_line = __builtin_LINE()) {
    (void)ocb;
    (void)call_line;
    ttmock::fpu_init("reduce", icb, icb_scaler,
                     static_cast<uint32_t>(reduce_type) * 4 + static_cast<uint32_t>(reduce_dim));
}
ALWI void reduce_uninit(std::uint32_t icb = 0) { (void)icb; }
template <PoolType reduce_type, ReduceDim reduce_dim, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void reduce_tile(
    std::uint32_t icb, std::uint32_t icb_scaler, std::uint32_t itile, std::uint32_t itile_scaler, std::uint32_t idst) {
    ttmock::reduce(static_cast<int>(reduce_type), static_cast<int>(reduce_dim), icb, icb_scaler, itile,
                   itile_scaler, idst);
}
}  // namespace ckernel
