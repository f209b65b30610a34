// sfpi add: a custom SFPU function written with SFPI adds two tiles in DST (the style of
// TT-Metalium's custom SFPU examples): copy both inputs into DST, run the face function over the
// faces with the LLK's binary SFPU wrapper, pack. Strictness checks behind defines.
#include <cstdint>

#include "api/compute/common.h"
#include "api/compute/compute_kernel_api.h"
#include "api/compute/eltwise_unary/eltwise_unary.h"
#include "api/compute/tile_move_copy.h"
#include "api/debug/dprint.h"

#ifdef TRISC_MATH
#include "sfpi.h"
namespace ckernel::sfpu {
// one face: 8 vectors of 32 lanes; tile t starts at dst_reg[32 * t]
inline void tile_face_add(uint32_t in0, uint32_t in1, uint32_t out) {
    constexpr uint32_t vectors_per_tile = 32;
    for (uint32_t v = 0; v < 8; ++v) {
        sfpi::vFloat a = sfpi::dst_reg[in0 * vectors_per_tile + v];
        sfpi::vFloat b = sfpi::dst_reg[in1 * vectors_per_tile + v];
        sfpi::dst_reg[out * vectors_per_tile + v] = a + b;
    }
}
}  // namespace ckernel::sfpu
#endif

void kernel_main() {
    const uint32_t n_tiles = get_arg_val<uint32_t>(0);
    constexpr auto cb_a = tt::CBIndex::c_0;
    constexpr auto cb_b = tt::CBIndex::c_1;
    constexpr auto cb_out = tt::CBIndex::c_16;
    init_sfpu(cb_a, cb_out);
    for (uint32_t i = 0; i < n_tiles; ++i) {
        cb_wait_front(cb_a, 1);
        cb_wait_front(cb_b, 1);
#ifdef PRINT_SLICE  // the UNPACK thread samples the front of an input CB; MATH has no CB pointers
        DPRINT_UNPACK("in {}: {}", i, TSLICE(cb_a, 0, SliceRange::hw0_32_16()));
        DPRINT_MATH("{}", TSLICE(cb_a, 0, SliceRange::hw0_32_16()));
#endif
        tile_regs_acquire();
        copy_tile(cb_a, 0, 0);
        copy_tile(cb_b, 0, 1);
#ifdef BEYOND_DST  // a strictness check: DST tile 9 of 8 (16-bit, half-sync)
        MATH(SFPU_BINARY_CALL_NO_TEMPLATE_ARGS(DST_SYNC_MODE, DST_ACCUM_MODE, tile_face_add, 0, 1, 9, VectorMode::RC));
#else
        MATH(SFPU_BINARY_CALL_NO_TEMPLATE_ARGS(DST_SYNC_MODE, DST_ACCUM_MODE, tile_face_add, 0, 1, 0, VectorMode::RC));
#endif
        tile_regs_commit();
#ifdef AFTER_COMMIT  // a strictness check: SFPU work after the MATH thread gave DST to the packer
        MATH(_llk_math_eltwise_binary_sfpu_params_(ckernel::sfpu::tile_face_add, 0, 1, 0));
#endif
        tile_regs_wait();
        cb_reserve_back(cb_out, 1);
        pack_tile(0, cb_out);
        cb_push_back(cb_out, 1);
        cb_pop_front(cb_a, 1);
        cb_pop_front(cb_b, 1);
        tile_regs_release();
    }
}
