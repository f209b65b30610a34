// tilelang-tt mock TT-Metalium: _llk_math_eltwise_binary_sfpu_params_ (tt-llk, the SDK's
// signature): run an SFPU function over the faces of DST from tile 0; the function receives the
// three DST tile indices and addresses the tiles itself (dst_reg[index * 32 + i]).
#pragma once
#include <cstdint>
#include <utility>

#include "llk_math_eltwise_sfpu_common.h"

template <typename Callable, typename... Args>
inline void _llk_math_eltwise_binary_sfpu_params_(
    Callable&& sfpu_func,
    std::uint32_t dst_index_in0,
    std::uint32_t dst_index_in1,
    std::uint32_t dst_index_out,
    VectorMode vector_mode = VectorMode::RC,
    Args&&... args) {
    const std::uint32_t check[3] = {dst_index_in0, dst_index_in1, dst_index_out};
    ::ttmock::sfpi_rt::sfpu_start("_llk_math_eltwise_binary_sfpu_params_", 0, check, 3);
    _llk_math_eltwise_sfpu_apply_vector_mode_(
        std::forward<Callable>(sfpu_func), vector_mode, dst_index_in0, dst_index_in1, dst_index_out, std::forward<Args>(args)...);
    _llk_math_eltwise_sfpu_done_();
}
