// tilelang-tt mock TT-Metalium: the SDK's experimental custom SFPU add (llk_api/experimental/llk_sfpu,
// ckernel_sfpu_custom_add.h, the function custom_sfpi_add uses): one face of
// out = in0 + in1 on DST tiles given by index, written here with the emulator's SFPI.
#pragma once
#include <cstddef>
#include <cstdint>

#include "sfpi.h"

namespace ckernel::sfpu {

inline void my_add_tile_face(const uint32_t dst_index_in0, const uint32_t dst_index_in1, const uint32_t dst_index_out) {
    for (uint32_t v = 0; v < 8; ++v) {  // a face: 8 vectors; tile t from dst_reg[32 t]
        sfpi::dst_reg[dst_index_out * 32 + v] = sfpi::vFloat(sfpi::dst_reg[dst_index_in0 * 32 + v]) + sfpi::dst_reg[dst_index_in1 * 32 + v];
    }
}

}  // namespace ckernel::sfpu
