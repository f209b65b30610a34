// tilelang-tt mock TT-Metalium: fmod of two DST tiles on the SFPU (api/compute/binary_fmod.h;
// the int32 variant is not modelled).
#pragma once
#include "api/compute/common_globals.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_binary_sfpu_macros.h"
#endif

namespace ckernel {
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void fmod_binary_tile(uint32_t idst0, uint32_t idst1, uint32_t odst) { ttmock::sfpu_binary("fmod", idst0, idst1, odst); }
ALWI void fmod_binary_tile_init() { ttmock::sfpu_init("fmod_binary"); }
}  // namespace ckernel
