// tilelang-tt mock TT-Metalium: row reshuffle on the SFPU (api/compute/reshuffle.h).
// reshuffle_rows_tile(idst, idx_addr) adds row r of DST[idst] into row idx[r] of DST[idst + 1]
// (idx: 32 bytes at L1 address idx_addr + 16, as the LLK reads them; 32 or more skips the row).
// docs/MOCK.md.
#pragma once
#include "api/compute/common_globals.h"
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_unary_sfpu_macros.h"
#endif

namespace ckernel {
ALWI void reshuffle_rows_tile(uint32_t idst, uint32_t idx_addr) { ttmock::sfpu_reshuffle_rows(idst, idx_addr); }
ALWI void reshuffle_rows_tile_init() { ttmock::sfpu_init("reshuffle_rows"); }
}  // namespace ckernel
