// tilelang-tt mock TT-Metalium: the SDK's binary SFPU call macros (llk_api/llk_sfpu,
// llk_math_eltwise_binary_sfpu_macros.h): run the function in namespace ckernel::sfpu over DST's
// faces with the three tile indices (checked against the DST capacity).
#pragma once
#include <cstdint>

#include "llk_math_eltwise_binary_sfpu_params.h"

namespace ckernel {
template <DstSync DST_SYNC>
inline __attribute__((always_inline)) void _sfpu_binary_check_(
    std::uint32_t dst_index_in0, std::uint32_t dst_index_in1, std::uint32_t dst_index_out,
    [[maybe_unused]] VectorMode vector_mode) {
    (void)dst_index_in0, (void)dst_index_in1, (void)dst_index_out;  // sfpu_start checks them
}
}  // namespace ckernel

#define _SFPU_BIN_EXPAND(...) __VA_ARGS__

#define SFPU_BINARY_CALL(DST_SYNC, DST_ACCUM, FN, TEMPLATES, DST_IN0, DST_IN1, DST_OUT, VECTOR_MODE, ...) \
    (::ckernel::_sfpu_binary_check_<DST_SYNC>(DST_IN0, DST_IN1, DST_OUT, VECTOR_MODE),                    \
     _llk_math_eltwise_binary_sfpu_params_(                                                               \
         ::ckernel::sfpu::FN<_SFPU_BIN_EXPAND TEMPLATES>, DST_IN0, DST_IN1, DST_OUT, VECTOR_MODE, ##__VA_ARGS__))

#define SFPU_BINARY_CALL_NO_TEMPLATE_ARGS(DST_SYNC, DST_ACCUM, FN, DST_IN0, DST_IN1, DST_OUT, VECTOR_MODE, ...) \
    (::ckernel::_sfpu_binary_check_<DST_SYNC>(DST_IN0, DST_IN1, DST_OUT, VECTOR_MODE),                          \
     _llk_math_eltwise_binary_sfpu_params_(                                                                     \
         ::ckernel::sfpu::FN, DST_IN0, DST_IN1, DST_OUT, VECTOR_MODE, ##__VA_ARGS__))
