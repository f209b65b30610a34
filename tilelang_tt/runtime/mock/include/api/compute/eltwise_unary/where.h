// tilelang-tt mock TT-Metalium: select between two DST tiles by a condition tile on the SFPU (api/compute/eltwise_unary/where.h).
#pragma once
#include "api/compute/common_globals.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#endif

namespace ckernel {
template <DataFormat data_format>
ALWI void where_tile(uint32_t idst0, uint32_t idst1, uint32_t idst2, uint32_t odst) {
    ttmock::sfpu_where(idst0, idst1, idst2, odst, static_cast<int>(data_format));
}
ALWI void where_tile_init() { ttmock::sfpu_init("where"); }
}  // namespace ckernel
