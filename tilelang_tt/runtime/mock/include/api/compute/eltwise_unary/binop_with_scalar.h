// tilelang-tt mock TT-Metalium: a DST tile combined with a scalar on the SFPU (api/compute/eltwise_unary/binop_with_scalar.h).
// The scalar arrives as the bits of a float32.
#pragma once
#include <cstring>
#include "api/compute/common_globals.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_unary_sfpu_macros.h"
#endif

namespace ckernel {
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void add_unary_tile(uint32_t idst, uint32_t param1) {
    float value;
    std::memcpy(&value, &param1, sizeof value);
    ttmock::sfpu_unary("add_unary", idst, value);
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void sub_unary_tile(uint32_t idst, uint32_t param1) {
    float value;
    std::memcpy(&value, &param1, sizeof value);
    ttmock::sfpu_unary("sub_unary", idst, value);
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void mul_unary_tile(uint32_t idst, uint32_t param1) {
    float value;
    std::memcpy(&value, &param1, sizeof value);
    ttmock::sfpu_unary("mul_unary", idst, value);
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void div_unary_tile(uint32_t idst, uint32_t param1) {
    float value;
    std::memcpy(&value, &param1, sizeof value);
    ttmock::sfpu_unary("div_unary", idst, value);
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void rsub_unary_tile(uint32_t idst, uint32_t param1) {
    float value;
    std::memcpy(&value, &param1, sizeof value);
    ttmock::sfpu_unary("rsub_unary", idst, value);
}
ALWI void binop_with_scalar_tile_init() { ttmock::sfpu_init("binop_with_scalar"); }
}  // namespace ckernel
