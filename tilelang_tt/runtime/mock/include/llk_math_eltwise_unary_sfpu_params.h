// tilelang-tt mock TT-Metalium: _llk_math_eltwise_unary_sfpu_params_ (tt-llk, the SDK's signature):
// run an SFPU function over the faces of DST tile dst_index.
#pragma once
#include <cstdint>
#include <utility>

#include "llk_math_eltwise_sfpu_common.h"

template <typename Callable, typename... Args>
inline void _llk_math_eltwise_unary_sfpu_params_(Callable&& sfpu_func, std::uint32_t dst_index, VectorMode vector_mode = VectorMode::RC, Args&&... args) {
    ::ttmock::sfpi_rt::sfpu_start("_llk_math_eltwise_unary_sfpu_params_", dst_index, &dst_index, 1);
    _llk_math_eltwise_sfpu_apply_vector_mode_(std::forward<Callable>(sfpu_func), vector_mode, std::forward<Args>(args)...);
    _llk_math_eltwise_sfpu_done_();
}
