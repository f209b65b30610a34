// tilelang-tt mock TT-Metalium: elementwise binary ops of two DST tiles on the SFPU (api/compute/eltwise_binary_sfpu.h).
#pragma once
#include "api/compute/common_globals.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_binary_sfpu_macros.h"
#endif

namespace ckernel {
template <ckernel::DstRoundingMode dst_rounding_mode = ckernel::DstRoundingMode::Default, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void add_binary_tile(uint32_t idst0, uint32_t idst1, uint32_t odst) { ttmock::sfpu_binary("add", idst0, idst1, odst); }
template <ckernel::DstRoundingMode dst_rounding_mode = ckernel::DstRoundingMode::Default, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void sub_binary_tile(uint32_t idst0, uint32_t idst1, uint32_t odst) { ttmock::sfpu_binary("sub", idst0, idst1, odst); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void mul_binary_tile(uint32_t idst0, uint32_t idst1, uint32_t odst) { ttmock::sfpu_binary("mul", idst0, idst1, odst); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void div_binary_tile(uint32_t idst0, uint32_t idst1, uint32_t odst) { ttmock::sfpu_binary("div", idst0, idst1, odst); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void power_binary_tile(uint32_t idst0, uint32_t idst1, uint32_t odst) { ttmock::sfpu_binary("power", idst0, idst1, odst); }
ALWI void power_binary_tile_init() { ttmock::sfpu_init("power_binary"); }
ALWI void add_binary_tile_init() { ttmock::sfpu_init("add_binary"); }
ALWI void sub_binary_tile_init() { ttmock::sfpu_init("sub_binary"); }
ALWI void mul_binary_tile_init() { ttmock::sfpu_init("mul_binary"); }
ALWI void div_binary_tile_init() { ttmock::sfpu_init("div_binary"); }
}  // namespace ckernel
