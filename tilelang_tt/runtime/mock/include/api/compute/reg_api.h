// tilelang-tt mock TT-Metalium: the DST register handshake (api/compute/reg_api.h).
#pragma once
#include "api/compute/common_globals.h"

namespace ckernel {
// the deprecated single-section handshake: math, then pack, between acquire_dst and release_dst
[[deprecated("Use tile_regs_acquire() instead")]]
ALWI void acquire_dst() { ttmock::regs("acquire_dst"); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
[[deprecated("Use tile_regs_release() instead")]]
ALWI void release_dst() { ttmock::regs("release_dst"); }
ALWI void tile_regs_acquire() { ttmock::regs("tile_regs_acquire"); }
ALWI void tile_regs_wait() { ttmock::regs("tile_regs_wait"); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void tile_regs_commit() { ttmock::regs("tile_regs_commit"); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void tile_regs_release() { ttmock::regs("tile_regs_release"); }
}  // namespace ckernel
