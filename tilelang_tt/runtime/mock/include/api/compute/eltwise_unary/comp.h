// tilelang-tt mock TT-Metalium: comparisons of a DST tile with zero on the SFPU (api/compute/eltwise_unary/comp.h).
// Each writes 1.0 where the comparison holds and 0.0 elsewhere.
#pragma once
#include "api/compute/common_globals.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_unary_sfpu_macros.h"
#endif

namespace ckernel {
ALWI void gtz_tile(uint32_t idst) { ttmock::sfpu_unary("gtz", idst, 0.0f); }
ALWI void gtz_tile_init() { ttmock::sfpu_init("gtz"); }
ALWI void nez_tile(uint32_t idst) { ttmock::sfpu_unary("nez", idst, 0.0f); }
ALWI void nez_tile_init() { ttmock::sfpu_init("nez"); }
ALWI void gez_tile(uint32_t idst) { ttmock::sfpu_unary("gez", idst, 0.0f); }
ALWI void gez_tile_init() { ttmock::sfpu_init("gez"); }
ALWI void ltz_tile(uint32_t idst) { ttmock::sfpu_unary("ltz", idst, 0.0f); }
ALWI void ltz_tile_init() { ttmock::sfpu_init("ltz"); }
ALWI void eqz_tile(uint32_t idst) { ttmock::sfpu_unary("eqz", idst, 0.0f); }
ALWI void eqz_tile_init() { ttmock::sfpu_init("eqz"); }
ALWI void lez_tile(uint32_t idst) { ttmock::sfpu_unary("lez", idst, 0.0f); }
ALWI void lez_tile_init() { ttmock::sfpu_init("lez"); }
}  // namespace ckernel
