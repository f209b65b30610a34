// tilelang-tt mock TT-Metalium: fill a DST tile with a constant (api/compute/eltwise_unary/fill.h).
#pragma once
#include "api/compute/common_globals.h"

namespace ckernel {
ALWI void fill_tile(uint32_t idst, float param0) { ttmock::sfpu_unary("fill", idst, param0); }
ALWI void fill_tile_init() { ttmock::sfpu_init("fill"); }
}  // namespace ckernel
