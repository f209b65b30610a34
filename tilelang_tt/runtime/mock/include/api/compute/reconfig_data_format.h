// tilelang-tt mock TT-Metalium: unpacker / packer data format changes (api/compute/reconfig_data_format.h).
#pragma once
#include "api/compute/common_globals.h"
#include "api/compute/src_order.h"

namespace ckernel {
template <SrcOrder src_order = SrcOrder::Regular>
ALWI void reconfig_data_format(const uint32_t icb0_new_operand, const uint32_t icb1_new_operand) {
    constexpr bool reverse = src_order == SrcOrder::Reverse;
    ttmock::reconfig_srca(reverse ? icb1_new_operand : icb0_new_operand);
    ttmock::reconfig_srcb(reverse ? icb0_new_operand : icb1_new_operand);
}
template <SrcOrder src_order = SrcOrder::Regular>
ALWI void reconfig_data_format(
    const uint32_t icb0_old_operand,
    const uint32_t icb0_new_operand,
    const uint32_t icb1_old_operand,
    const uint32_t icb1_new_operand) {
    (void)icb0_old_operand;
    (void)icb1_old_operand;
    reconfig_data_format<src_order>(icb0_new_operand, icb1_new_operand);
}
ALWI void reconfig_data_format_srca(const uint32_t srca_new_operand) { ttmock::reconfig_srca(srca_new_operand); }
ALWI void reconfig_data_format_srca(const uint32_t srca_old_operand, const uint32_t srca_new_operand) {
    (void)srca_old_operand;
    ttmock::reconfig_srca(srca_new_operand);
}
ALWI void reconfig_data_format_srcb(const uint32_t srcb_new_operand) { ttmock::reconfig_srcb(srcb_new_operand); }
ALWI void reconfig_data_format_srcb(const uint32_t srcb_old_operand, const uint32_t srcb_new_operand) {
    (void)srcb_old_operand;
    ttmock::reconfig_srcb(srcb_new_operand);
}
template <bool is_tile_dim_reconfig_en = false>
ALWI void pack_reconfig_data_format(const uint32_t new_cb_id) {
    ttmock::reconfig_pack(new_cb_id);
}
template <bool is_tile_dim_reconfig_en = false>
ALWI void pack_reconfig_data_format(const uint32_t old_cb_id, const uint32_t new_cb_id) {
    (void)old_cb_id;
    ttmock::reconfig_pack(new_cb_id);
}
}  // namespace ckernel
