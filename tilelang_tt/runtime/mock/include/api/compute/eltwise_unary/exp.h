// tilelang-tt mock TT-Metalium: exp on the SFPU (api/compute/eltwise_unary/exp.h).
#pragma once
#include "api/compute/common_globals.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#include "llk_math_eltwise_unary_sfpu_macros.h"
#endif

namespace ckernel {
enum class InputClamping : uint8_t {
    ClampToNegative = 1,
    None = 0,
};
template <
    bool approx = false,
    uint32_t scale = 0x3F800000,
    InputClamping input_clamping = InputClamping::ClampToNegative, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void exp_tile_init() {
    static_assert(scale == 0x3F800000, "the emulator models exp without input scaling");
    ttmock::sfpu_init("exp");
}
template <
    bool approx = false,
    bool scale_en = false,
    InputClamping input_clamping = InputClamping::ClampToNegative,
    int iterations = 8, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void exp_tile(uint32_t idst, VectorMode vector_mode = VectorMode::RC, uint16_t scale = p_sfpu::kCONST_1_FP16B) {
    static_assert(!scale_en, "the emulator models exp without input scaling");
    if (vector_mode != VectorMode::RC) ttmock::unsupported("exp_tile with a VectorMode other than RC");
    (void)scale;
    ttmock::sfpu_unary("exp", idst, 0.0f, approx);
}
}  // namespace ckernel
