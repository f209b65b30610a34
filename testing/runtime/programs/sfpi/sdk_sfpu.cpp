// sfpi sdk_sfpu: the SDK's own experimental SFPU functions (experimental/llk_sfpu) through the SFPU
// call macros, as TT-Metalium 0.81.1's custom SFPI examples call them: my_add_tile_face (two DST
// tiles by index) or, with SMOOTHSTEP, smoothstep_tile_face(edge0, edge1, inv_delta) on one tile.
#include <cstdint>

#include "api/compute/common.h"
#include "api/compute/compute_kernel_hw_startup.h"
#include "api/compute/compute_kernel_api.h"
#include "api/compute/eltwise_binary_sfpu.h"
#include "api/compute/eltwise_unary/eltwise_unary.h"
#include "api/compute/tile_move_copy.h"

#ifdef TRISC_MATH
#include "experimental/llk_sfpu/ckernel_sfpu_custom_add.h"
#include "experimental/llk_sfpu/ckernel_sfpu_smoothstep.h"
#endif

void kernel_main() {
    const uint32_t n_tiles = get_arg_val<uint32_t>(0);
    constexpr auto cb_a = tt::CBIndex::c_0;
    constexpr auto cb_b = tt::CBIndex::c_1;
    constexpr auto cb_out = tt::CBIndex::c_16;
    compute_kernel_hw_startup(cb_a, cb_out);
    copy_init(cb_a);
    for (uint32_t i = 0; i < n_tiles; ++i) {
        cb_wait_front(cb_a, 1);
        tile_regs_acquire();
        copy_tile(cb_a, 0, 0);
#ifdef SMOOTHSTEP
        const float edge0 = -1.0f, edge1 = 2.0f;
        MATH(SFPU_UNARY_CALL_NO_TEMPLATE_ARGS(
            DST_SYNC_MODE, DST_ACCUM_MODE, smoothstep_tile_face, 0, VectorMode::RC, edge0, edge1, 1.0f / (edge1 - edge0)));
#else
        cb_wait_front(cb_b, 1);
        copy_tile(cb_b, 0, 1);
        MATH(SFPU_BINARY_CALL_NO_TEMPLATE_ARGS(DST_SYNC_MODE, DST_ACCUM_MODE, my_add_tile_face, 0, 1, 0, VectorMode::RC));
        cb_pop_front(cb_b, 1);
#endif
        tile_regs_commit();
        tile_regs_wait();
        cb_reserve_back(cb_out, 1);
        pack_tile(0, cb_out);
        cb_push_back(cb_out, 1);
        cb_pop_front(cb_a, 1);
        tile_regs_release();
    }
}
