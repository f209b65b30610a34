// tilelang-tt mock TT-Metalium: the SFPU's column-wise cumulative sum (api/compute/cumsum.h).
// cumsum_tile sums each column of DST[idst] top to bottom in float32, starting from the running
// totals the previous cumsum_tile call left (first = false) or from zero (first = true); the
// totals live in SFPU registers, so no other SFPU operation may run between the calls of one
// column (the emulator refuses a first = false call after one). docs/MOCK.md.
#pragma once
#include "api/compute/common_globals.h"
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_unary_sfpu_macros.h"
#endif

namespace ckernel {
ALWI void cumsum_tile(uint32_t idst, bool first = true) { ttmock::sfpu_cumsum(idst, first); }
ALWI void cumsum_tile_init() { ttmock::sfpu_init("cumsum"); }
}  // namespace ckernel
