// tilelang-tt mock TT-Metalium: operand order of the source registers (api/compute/src_order.h).
#pragma once
#include <cstdint>
#include "hostdevcommon/kernel_structs.h"

namespace ckernel {
enum class SrcOrder : uint8_t {
    Regular = 0,  // icb0 -> SrcA, icb1 -> SrcB
    Reverse = 1,  // icb0 -> SrcB, icb1 -> SrcA (matmul)
};
}  // namespace ckernel
