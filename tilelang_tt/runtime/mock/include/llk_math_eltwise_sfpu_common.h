// tilelang-tt mock TT-Metalium: the LLK's SFPU wrapper steps (tt-llk llk_math_eltwise_sfpu_common.h,
// the SDK's names): set the Dst row counter to a tile, step it a face (16 rows) at a time, and call
// the SFPU function once per face the VectorMode selects.
#pragma once
#include <cstdint>
#include <utility>

#include "sfpi.h"
#include "ttmock/llk_defs.h"
#include "ttmock/sfpi_rt.h"

using namespace ckernel;

inline void _llk_math_eltwise_sfpu_start_(const std::uint32_t dst_index) {
    ::ttmock::sfpi_rt::sfpu_start("_llk_math_eltwise_sfpu_start_", dst_index, &dst_index, 1);
}

inline void _llk_math_eltwise_sfpu_done_() { ::ttmock::sfpi_rt::sfpu_done(); }

inline void _llk_math_eltwise_sfpu_inc_dst_face_addr_() { ::ttmock::sfpi_rt::face_step(1); }

template <typename Callable, typename... Args>
inline __attribute__((always_inline)) void _llk_math_eltwise_sfpu_apply_vector_mode_(Callable&& sfpu_func, VectorMode vector_mode, Args&&... args) {
    if (vector_mode == VectorMode::RC) {  // all four faces
        for (int face = 0; face < 4; face++) {
            sfpu_func(args...);
            _llk_math_eltwise_sfpu_inc_dst_face_addr_();
        }
    } else if (vector_mode == VectorMode::R) {  // faces 0 and 1
        for (int face = 0; face < 2; face++) {
            sfpu_func(args...);
            _llk_math_eltwise_sfpu_inc_dst_face_addr_();
        }
        ::ttmock::sfpi_rt::face_step(2);
    } else if (vector_mode == VectorMode::C) {  // faces 0 and 2
        for (int face = 0; face < 2; face++) {
            sfpu_func(args...);
            ::ttmock::sfpi_rt::face_step(2);
        }
    } else {  // the function steps through DST itself
        std::forward<Callable>(sfpu_func)(std::forward<Args>(args)...);
    }
}
