// tilelang-tt mock TT-Metalium: trigonometric and hyperbolic functions on the SFPU
// (api/compute/eltwise_unary/trigonometry.h): sin, cos, tan, atan, sinh, cosh, asin, acos, asinh,
// acosh, atanh.
#pragma once
#include "api/compute/common_globals.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_unary_sfpu_macros.h"
#endif

namespace ckernel {
ALWI void sin_tile_init() { ttmock::sfpu_init("sin"); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void sin_tile(uint32_t idst) { ttmock::sfpu_unary("sin", idst, 0.0f); }
ALWI void cos_tile_init() { ttmock::sfpu_init("cos"); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void cos_tile(uint32_t idst) { ttmock::sfpu_unary("cos", idst, 0.0f); }
ALWI void tan_tile_init() { ttmock::sfpu_init("tan"); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void tan_tile(uint32_t idst) { ttmock::sfpu_unary("tan", idst, 0.0f); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void atan_tile_init() { ttmock::sfpu_init("atan"); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void atan_tile(uint32_t idst) { ttmock::sfpu_unary("atan", idst, 0.0f); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void sinh_tile_init() { ttmock::sfpu_init("sinh"); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void sinh_tile(uint32_t idst) { ttmock::sfpu_unary("sinh", idst, 0.0f); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void cosh_tile_init() { ttmock::sfpu_init("cosh"); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void cosh_tile(uint32_t idst) { ttmock::sfpu_unary("cosh", idst, 0.0f); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void asin_tile_init() { ttmock::sfpu_init("asin"); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void asin_tile(uint32_t idst) { ttmock::sfpu_unary("asin", idst, 0.0f); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void acos_tile_init() { ttmock::sfpu_init("acos"); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void acos_tile(uint32_t idst) { ttmock::sfpu_unary("acos", idst, 0.0f); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void asinh_tile_init() { ttmock::sfpu_init("asinh"); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void asinh_tile(uint32_t idst) { ttmock::sfpu_unary("asinh", idst, 0.0f); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void acosh_tile_init() { ttmock::sfpu_init("acosh"); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void acosh_tile(uint32_t idst) { ttmock::sfpu_unary("acosh", idst, 0.0f); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void atanh_tile_init() { ttmock::sfpu_init("atanh"); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void atanh_tile(uint32_t idst) { ttmock::sfpu_unary("atanh", idst, 0.0f); }
}  // namespace ckernel
