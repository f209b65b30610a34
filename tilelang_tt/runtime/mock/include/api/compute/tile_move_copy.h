// tilelang-tt mock TT-Metalium: copying CB tiles into DST (api/compute/tile_move_copy.h).
#pragma once
#include <cstdint>
#include "api/compute/common_globals.h"
#include "api/compute/reconfig_data_format.h"

namespace ckernel {
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void copy_init(
    std::uint32_t cbid,
    std::uint32_t transpose = 0,
    std::uint32_t transpose_within_16x16_face = false,
    std::uint32_t call_line = __builtin_LINE()) {
    (void)transpose_within_16x16_face;
    (void)call_line;
    ttmock::fpu_init("copy", cbid, cbid, transpose);
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void copy_tile(std::uint32_t in_cb_id, std::uint32_t in_tile_index, std::uint32_t dst_tile_index) {
    ttmock::copy(in_cb_id, in_tile_index, dst_tile_index);
}
}  // namespace ckernel
