// tilelang-tt mock TT-Metalium: the SDK's unary SFPU call macros (llk_api/llk_sfpu,
// llk_math_eltwise_unary_sfpu_macros.h): check the DST index, then run the function in namespace
// ckernel::sfpu over the tile's faces. The emulator checks the index always (the SDK with LLK
// asserts on; on hardware a tile beyond DST is undefined).
#pragma once
#include <cstdint>

#include "llk_math_eltwise_unary_sfpu_params.h"

namespace ckernel {
template <DstSync DST_SYNC>
inline __attribute__((always_inline)) void _sfpu_check_(std::uint32_t dst_index, [[maybe_unused]] VectorMode vector_mode) {
    (void)dst_index;  // sfpu_start checks it against the DST capacity of the kernel's mode
}
}  // namespace ckernel

#define _SFPU_EXPAND(...) __VA_ARGS__

#define SFPU_UNARY_CALL(DST_SYNC, DST_ACCUM, FN, TEMPLATES, DST_IDX, VECTOR_MODE, ...) \
    (::ckernel::_sfpu_check_<DST_SYNC>(DST_IDX, VECTOR_MODE),                           \
     _llk_math_eltwise_unary_sfpu_params_(                                              \
         ::ckernel::sfpu::FN<_SFPU_EXPAND TEMPLATES>, DST_IDX, VECTOR_MODE, ##__VA_ARGS__))

#define SFPU_UNARY_CALL_NO_TEMPLATE_ARGS(DST_SYNC, DST_ACCUM, FN, DST_IDX, VECTOR_MODE, ...) \
    (::ckernel::_sfpu_check_<DST_SYNC>(DST_IDX, VECTOR_MODE),                                 \
     _llk_math_eltwise_unary_sfpu_params_(::ckernel::sfpu::FN, DST_IDX, VECTOR_MODE, ##__VA_ARGS__))
