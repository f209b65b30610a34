// tilelang-tt mock TT-Metalium: packing DST tiles into a CB (api/compute/pack.h).
#pragma once
#include "api/compute/common_globals.h"
#include "api/compute/reconfig_data_format.h"

namespace ckernel {
template <bool out_of_order_output = false, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void pack_tile(std::uint32_t ifrom_dst, std::uint32_t icb, std::uint32_t output_tile_index = 0) {
    ttmock::pack(ifrom_dst, icb, output_tile_index, out_of_order_output);
}
}  // namespace ckernel
