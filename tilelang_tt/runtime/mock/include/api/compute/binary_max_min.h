// tilelang-tt mock TT-Metalium: elementwise max / min of two DST tiles on the SFPU (api/compute/binary_max_min.h).
#pragma once
#include "api/compute/common_globals.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_binary_sfpu_macros.h"
#endif

namespace ckernel {
ALWI void binary_max_tile(uint32_t idst0, uint32_t idst1, uint32_t odst, VectorMode vector_mode = VectorMode::RC) {
    if (vector_mode != VectorMode::RC) ttmock::unsupported("binary_max_tile with a VectorMode other than RC");
    ttmock::sfpu_binary("max", idst0, idst1, odst);
}
ALWI void binary_max_tile_init() { ttmock::sfpu_init("max_binary"); }
ALWI void binary_min_tile(uint32_t idst0, uint32_t idst1, uint32_t odst, VectorMode vector_mode = VectorMode::RC) {
    if (vector_mode != VectorMode::RC) ttmock::unsupported("binary_min_tile with a VectorMode other than RC");
    ttmock::sfpu_binary("min", idst0, idst1, odst);
}
ALWI void binary_min_tile_init() { ttmock::sfpu_init("min_binary"); }
}  // namespace ckernel
