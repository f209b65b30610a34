// tilelang-tt mock TT-Metalium: packing DST tiles into a CB (api/compute/pack.h).
#pragma once
#include "api/compute/common_globals.h"
#include "api/compute/reconfig_data_format.h"

namespace ckernel {
template <bool out_of_order_output = false, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void pack_tile(std::uint32_t ifrom_dst, std::uint32_t icb, std::uint32_t output_tile_index = 0) {
    ttmock::pack(ifrom_dst, icb, output_tile_index, out_of_order_output);
}
// packer L1 accumulation: pack_tile adds to the L1 tile instead of overwriting it
ALWI void pack_reconfig_l1_acc(const std::uint32_t l1_acc_en) { ttmock::pack_l1_acc(l1_acc_en != 0); }
}  // namespace ckernel
