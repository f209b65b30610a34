// tilelang-tt mock TT-Metalium: sqrt on the SFPU (api/compute/eltwise_unary/sqrt.h).
#pragma once
#include "api/compute/common_globals.h"

namespace ckernel {
template <bool FAST_APPROX = false, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void sqrt_tile(uint32_t idst) { ttmock::sfpu_unary("sqrt", idst, 0.0f, ttmock::kApproxFromConfig); }
ALWI void sqrt_tile_init() { ttmock::sfpu_init("sqrt"); }
}  // namespace ckernel
