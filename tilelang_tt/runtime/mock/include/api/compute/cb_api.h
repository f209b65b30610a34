// tilelang-tt mock TT-Metalium: circular buffers seen from a compute kernel (api/compute/cb_api.h).
#pragma once
#include "api/compute/common_globals.h"

namespace ckernel {
ALWI void cb_wait_front(uint32_t cbid, uint32_t ntiles) { ttmock::cb_wait_front(cbid, ntiles); }
ALWI void cb_pop_front(uint32_t cbid, uint32_t ntiles) { ttmock::cb_pop_front(cbid, ntiles); }
ALWI void cb_reserve_back(uint32_t cbid, uint32_t ntiles) { ttmock::cb_reserve_back(cbid, ntiles); }
ALWI void cb_push_back(uint32_t cbid, uint32_t ntiles) { ttmock::cb_push_back(cbid, ntiles); }
}  // namespace ckernel
