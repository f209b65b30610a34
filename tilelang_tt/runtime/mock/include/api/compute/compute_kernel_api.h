// tilelang-tt mock TT-Metalium: SFPU functions the SDK declares in api/compute/compute_kernel_api.h.
#pragma once
#include <bit>
#include <cstdint>
#include "api/compute/common_globals.h"

// The MATH thread's SFPU interface, as the SDK's header brings it under TRISC_MATH: the LLK SFPU
// wrappers and call macros, and SFPI's names at global scope (the SDK's SFPU headers say
// `using namespace sfpi;`)
#ifdef TRISC_MATH
#include "llk_math_eltwise_binary_sfpu_macros.h"
#include "llk_math_eltwise_unary_sfpu_macros.h"
#include "sfpi.h"
using namespace sfpi;
#endif

namespace ckernel {
template <VectorMode vec_mode = VectorMode::RC, bool fast_and_approx = false, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void sigmoid_tile(uint32_t idst) {
    static_assert(vec_mode == VectorMode::RC, "the emulator models VectorMode::RC only");
    ttmock::sfpu_unary("sigmoid", idst, 0.0f, fast_and_approx);
}
template <bool fast_and_approx = false>
ALWI void sigmoid_tile_init() { ttmock::sfpu_init("sigmoid"); }
template <bool fast_and_approx = false, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void log_tile_init() { ttmock::sfpu_init("log"); }
template <bool fast_and_approx = false, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void log_tile(uint32_t idst) { ttmock::sfpu_unary("log", idst, 0.0f); }
template <bool fast_and_approx = false, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void tanh_tile_init() { ttmock::sfpu_init("tanh"); }
template <bool fast_and_approx = false, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void tanh_tile(uint32_t idst) { ttmock::sfpu_unary("tanh", idst, 0.0f, fast_and_approx); }
ALWI void abs_tile(uint32_t idst) { ttmock::sfpu_unary("abs", idst, 0.0f); }
ALWI void abs_tile_init() { ttmock::sfpu_init("abs"); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void square_tile(uint32_t idst) { ttmock::sfpu_unary("square", idst, 0.0f); }
ALWI void square_tile_init() { ttmock::sfpu_init("square"); }
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void silu_tile(uint32_t idst) { ttmock::sfpu_unary("silu", idst, 0.0f); }
ALWI void silu_tile_init() { ttmock::sfpu_init("silu"); }
// unary_max / unary_min: param0 holds the bits of a float32
ALWI void unary_max_tile(uint32_t idst, uint32_t param0) { ttmock::sfpu_unary("unary_max", idst, std::bit_cast<float>(param0)); }
ALWI void unary_max_tile_init() { ttmock::sfpu_init("unary_max"); }
ALWI void unary_min_tile(uint32_t idst, uint32_t param0) { ttmock::sfpu_unary("unary_min", idst, std::bit_cast<float>(param0)); }
ALWI void unary_min_tile_init() { ttmock::sfpu_init("unary_min"); }
// power: x ** (the float32 whose bits are param0)
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void power_tile(uint32_t idst, uint32_t param0) { ttmock::sfpu_unary("power", idst, std::bit_cast<float>(param0)); }
ALWI void power_tile_init() { ttmock::sfpu_init("power"); }
// sfpu_reduce (the SDK's SFPU reduction, ckernel_sfpu_reduce.h): the emulator models Float32 MAX /
// MIN, REDUCE_ROW over a ct_dim x rt_dim block of DST tiles from idst, and REDUCE_COL of one tile
template <PoolType pool_type, DataFormat format, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void sfpu_reduce_init() {
    ttmock::sfpu_reduce_init(static_cast<int>(pool_type), static_cast<int>(format));
}
template <PoolType pool_type, DataFormat format, ReduceDim reduce_dim = ReduceDim::REDUCE_COL,
          bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void sfpu_reduce(uint32_t idst, uint32_t ct_dim = 1, uint32_t rt_dim = 1) {
    static_assert(reduce_dim == ReduceDim::REDUCE_COL ||
                      pool_type == PoolType::SUM || pool_type == PoolType::MAX || pool_type == PoolType::MIN,
                  "Only column reduction (REDUCE_COL) is supported for all pool types; row reduction "
                  "(REDUCE_ROW) is only supported for SUM, MAX and MIN");
    ttmock::sfpu_reduce(static_cast<int>(pool_type), static_cast<int>(format),
                        static_cast<int>(reduce_dim), idst, ct_dim, rt_dim);
}
}  // namespace ckernel
