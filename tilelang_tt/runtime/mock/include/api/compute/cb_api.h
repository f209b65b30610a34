// tilelang-tt mock TT-Metalium: circular buffers seen from a compute kernel (api/compute/cb_api.h).
#pragma once
#include "api/compute/common_globals.h"

namespace ckernel {
ALWI void cb_wait_front(uint32_t cbid, uint32_t ntiles) { ttmock::cb_wait_front(cbid, ntiles); }
ALWI void cb_pop_front(uint32_t cbid, uint32_t ntiles) { ttmock::cb_pop_front(cbid, ntiles); }
ALWI void cb_reserve_back(uint32_t cbid, uint32_t ntiles) { ttmock::cb_reserve_back(cbid, ntiles); }
ALWI void cb_push_back(uint32_t cbid, uint32_t ntiles) { ttmock::cb_push_back(cbid, ntiles); }
// the L1 byte address of tile `tile_index` from the front of the CB (the consumer's read position)
ALWI uint32_t get_tile_address(uint32_t cb_id, uint32_t tile_index) { return ttmock::cb_tile_address(cb_id, tile_index); }
// the uint32_t word `element_offset` of tile `tile_index` from the front of the CB
ALWI uint32_t read_tile_value(uint32_t cb_id, uint32_t tile_index, uint32_t element_offset) {
    return ttmock::cb_read_tile_value(cb_id, tile_index, element_offset);
}
}  // namespace ckernel
