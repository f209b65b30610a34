// tilelang-tt mock TT-Metalium: negation on the SFPU (api/compute/eltwise_unary/negative.h).
#pragma once
#include "api/compute/common_globals.h"

namespace ckernel {
ALWI void negative_tile_init() { ttmock::sfpu_init("negative"); }
ALWI void negative_tile(uint32_t idst) { ttmock::sfpu_unary("negative", idst, 0.0f); }
}  // namespace ckernel
