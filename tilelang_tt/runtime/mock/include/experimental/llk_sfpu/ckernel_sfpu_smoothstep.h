// tilelang-tt mock TT-Metalium: the SDK's experimental smoothstep SFPU function
// (llk_api/experimental/llk_sfpu, ckernel_sfpu_smoothstep.h, the function custom_sfpi_smoothstep
// uses): one face of t = clamp((x - edge0) * inv_delta, 0, 1), x = t * t * (3 - 2 t), in place,
// written here with the emulator's SFPI.
#pragma once
#include <cstddef>

#include "sfpi.h"

namespace ckernel::sfpu {

inline void smoothstep_tile_face(float edge0, [[maybe_unused]] float edge1, float inv_delta) {
    for (int v = 0; v < 8; ++v) {
        const sfpi::vFloat t = sfpi::clamp((sfpi::vFloat(sfpi::dst_reg[v]) - edge0) * inv_delta, 0.0f, 1.0f);
        sfpi::dst_reg[v] = t * t * (3.0f - 2.0f * t);
    }
}

}  // namespace ckernel::sfpu
