// sfpi smoothstep: a smoothstep-like SFPU function with condition masks, in the LLK's style (the
// unary SFPU wrapper, dst_reg++ through a face, programmable constants set by an init):
//   t = clamp((x - edge0) / (edge1 - edge0), 0, 1), y = t * t * (3 - 2 t);
//   negative x: y = -1 below -2.5, else -|y| (a nested v_if).
#include <cstdint>

#include "api/compute/common.h"
#include "api/compute/compute_kernel_api.h"
#include "api/compute/eltwise_unary/eltwise_unary.h"
#include "api/compute/tile_move_copy.h"

#ifdef TRISC_MATH
namespace ckernel::sfpu {
inline void smoothstep_init(float edge0, float edge1) {
    sfpi::vConstFloatPrgm0 = edge0;
    sfpi::vConstFloatPrgm1 = 1.0f / (edge1 - edge0);
}

inline void smoothstep_face() {
    for (int d = 0; d < 8; d++) {
        sfpi::vFloat x = sfpi::dst_reg[0];
        sfpi::vFloat t = (x - sfpi::vConstFloatPrgm0) * sfpi::vConstFloatPrgm1;
        v_if (t < 0.0f) { t = 0.0f; }
        v_elseif (t > 1.0f) { t = sfpi::vConst1; }
        v_endif;
        sfpi::vFloat y = t * t * (3.0f - 2.0f * t);
        v_if (x < 0.0f) {
            v_if (x < -2.5f) { y = sfpi::vConstNeg1; }
            v_else { y = sfpi::setsgn(y, 1); }
            v_endif;
        }
        v_endif;
        sfpi::dst_reg[0] = y;
#ifdef BEYOND_DST  // a strictness check: runs off the end of DST
        sfpi::dst_reg[300] = y;
#endif
        sfpi::dst_reg++;
    }
}
}  // namespace ckernel::sfpu
#endif

void kernel_main() {
    const uint32_t n_tiles = get_arg_val<uint32_t>(0);
    constexpr auto cb_in = tt::CBIndex::c_0;
    constexpr auto cb_out = tt::CBIndex::c_16;
    init_sfpu(cb_in, cb_out);
    MATH(ckernel::sfpu::smoothstep_init(-1.0f, 2.0f));
    for (uint32_t i = 0; i < n_tiles; ++i) {
        cb_wait_front(cb_in, 1);
        tile_regs_acquire();
        copy_tile(cb_in, 0, 2);
        MATH(_llk_math_eltwise_unary_sfpu_params_(ckernel::sfpu::smoothstep_face, 2));
        tile_regs_commit();
        tile_regs_wait();
        cb_reserve_back(cb_out, 1);
        pack_tile(2, cb_out);
        cb_push_back(cb_out, 1);
        cb_pop_front(cb_in, 1);
        tile_regs_release();
    }
}
