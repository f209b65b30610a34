// tilelang-tt mock TT-Metalium: the matrix engine (api/compute/matmul.h).
#pragma once
#include <cstdint>
#include "api/compute/common.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#endif

namespace ckernel {
ALWI void matmul_init(
    std::uint32_t in0_cb_id,
    std::uint32_t in1_cb_id,
    const std::uint32_t transpose = 0,
    std::uint32_t call_line = __builtin_LINE()) {
    (void)call_line;
    ttmock::fpu_init("matmul", in0_cb_id, in1_cb_id, transpose);
}
ALWI void matmul_tiles(
    std::uint32_t in0_cb_id,
    std::uint32_t in1_cb_id,
    std::uint32_t in0_tile_index,
    std::uint32_t in1_tile_index,
    std::uint32_t idst) {
    ttmock::matmul(in0_cb_id, in1_cb_id, in0_tile_index, in1_tile_index, idst);
}
}  // namespace ckernel
