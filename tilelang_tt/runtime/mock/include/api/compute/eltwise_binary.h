// tilelang-tt mock TT-Metalium: elementwise binary ops on the matrix engine (api/compute/eltwise_binary.h).
#pragma once
#include <cstdint>
#include "api/compute/common.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#endif

namespace ckernel {
ALWI void add_init(
    std::uint32_t icb0, std::uint32_t icb1, bool acc_to_dest = false, std::uint32_t call_line = __builtin_LINE()) {
    (void)acc_to_dest;
    (void)call_line;
    ttmock::fpu_init("add", icb0, icb1, 0);
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void add_tiles(
    std::uint32_t icb0, std::uint32_t icb1, std::uint32_t itile0, std::uint32_t itile1, std::uint32_t idst) {
    ttmock::eltwise_binary("add", icb0, icb1, itile0, itile1, idst);
}
ALWI void sub_init(
    std::uint32_t icb0, std::uint32_t icb1, bool acc_to_dest = false, std::uint32_t call_line = __builtin_LINE()) {
    (void)acc_to_dest;
    (void)call_line;
    ttmock::fpu_init("sub", icb0, icb1, 0);
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void sub_tiles(
    std::uint32_t icb0, std::uint32_t icb1, std::uint32_t itile0, std::uint32_t itile1, std::uint32_t idst) {
    ttmock::eltwise_binary("sub", icb0, icb1, itile0, itile1, idst);
}
// (acc_to_dest defaults to true here, as in the SDK; the Wormhole LLK ignores it for ELWMUL)
ALWI void mul_init(
    std::uint32_t icb0, std::uint32_t icb1, bool acc_to_dest = true, std::uint32_t call_line = __builtin_LINE()) {
    (void)acc_to_dest;
    (void)call_line;
    ttmock::fpu_init("mul", icb0, icb1, 0);
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void mul_tiles(
    std::uint32_t icb0, std::uint32_t icb1, std::uint32_t itile0, std::uint32_t itile1, std::uint32_t idst) {
    ttmock::eltwise_binary("mul", icb0, icb1, itile0, itile1, idst);
}
}  // namespace ckernel
