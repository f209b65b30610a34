// metalium_style compute: the legacy SFPU init and DST handshake (init_sfpu, acquire_dst /
// release_dst), an SFPU op, DPRINT from the three compute threads and from MATH alone.
#include <cstdint>

#include "api/compute/eltwise_unary/eltwise_unary.h"
#include "api/compute/eltwise_unary/negative.h"
#include "api/compute/tile_move_copy.h"
#include "api/debug/dprint.h"

void kernel_main() {
    const uint32_t n_tiles = get_arg_val<uint32_t>(0);
    constexpr uint32_t cb_in = get_named_compile_time_arg_val("cb_in");
    constexpr uint32_t cb_out = get_named_compile_time_arg_val("cb_out");
    init_sfpu(cb_in, cb_out);
    negative_tile_init();
    DPRINT("compute: {} tiles\n", n_tiles);
    for (uint32_t i = 0; i < n_tiles; ++i) {
        acquire_dst();
        cb_wait_front(cb_in, 1);
        copy_tile(cb_in, 0, 0);
        negative_tile(0);
        cb_reserve_back(cb_out, 1);
        pack_tile(0, cb_out);
#ifdef MATH_AFTER_PACK  // a strictness check: the packer has already started on this section
        negative_tile(0);
#endif
        cb_push_back(cb_out, 1);
        cb_pop_front(cb_in, 1);
        release_dst();
    }
#ifdef BAD_DPRINT  // a strictness check: a format string fmt rejects
    DPRINT("{:q}\n", n_tiles);
#endif
    DPRINT_MATH("math done: {:.2f}\n", 1.5f);
}
