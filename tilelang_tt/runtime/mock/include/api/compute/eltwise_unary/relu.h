// tilelang-tt mock TT-Metalium: relu on the SFPU (api/compute/eltwise_unary/relu.h).
#pragma once
#include "api/compute/common_globals.h"

namespace ckernel {
ALWI void relu_tile(uint32_t idst) { ttmock::sfpu_unary("relu", idst, 0.0f); }
ALWI void relu_tile_init() { ttmock::sfpu_init("relu"); }
}  // namespace ckernel
