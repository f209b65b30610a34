// tilelang-tt mock TT-Metalium: erf on the SFPU (api/compute/eltwise_unary/erf_erfc.h; erfc is
// not modelled).
#pragma once
#include "api/compute/common_globals.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_unary_sfpu_macros.h"
#endif

namespace ckernel {
// fast_and_approx (the SDK's default: true) selects the reciprocal of the rational's denominator
// without Newton steps; false, with two
template <bool fast_and_approx = true>
ALWI void erf_tile_init() { ttmock::sfpu_init("erf"); }
template <bool fast_and_approx = true>
ALWI void erf_tile(uint32_t idst) { ttmock::sfpu_unary("erf", idst, 0.0f, fast_and_approx); }
}  // namespace ckernel
