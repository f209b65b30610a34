// tilelang-tt mock TT-Metalium: the DST register handshake (api/compute/reg_api.h).
#pragma once
#include "api/compute/common_globals.h"

namespace ckernel {
ALWI void tile_regs_acquire() { ttmock::regs("tile_regs_acquire"); }
ALWI void tile_regs_wait() { ttmock::regs("tile_regs_wait"); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void tile_regs_commit() { ttmock::regs("tile_regs_commit"); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void tile_regs_release() { ttmock::regs("tile_regs_release"); }
}  // namespace ckernel
