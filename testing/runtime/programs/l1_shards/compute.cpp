// l1_shards compute: out = a * b over the tiles of this core's shards. The three CBs sit on L1
// buffers filled before the launch and used by this kernel alone, so it reads and writes them
// without cb_wait_front / cb_reserve_back: its pops and pushes step the CB pointers through them.
#include <cstdint>

#include "api/compute/compute_kernel_hw_startup.h"
#include "api/compute/eltwise_binary.h"

void kernel_main() {
    constexpr uint32_t cb_a = get_compile_time_arg_val(0);
    constexpr uint32_t cb_b = get_compile_time_arg_val(1);
    constexpr uint32_t cb_out = get_compile_time_arg_val(2);
    const uint32_t n_tiles = get_arg_val<uint32_t>(0);
    compute_kernel_hw_startup(cb_a, cb_b, cb_out);
    mul_init(cb_a, cb_b);
    for (uint32_t i = 0; i < n_tiles; ++i) {
        tile_regs_acquire();
        mul_tiles(cb_a, cb_b, 0, 0, 0);
        tile_regs_commit();
        tile_regs_wait();
        pack_tile(0, cb_out);
        tile_regs_release();
        cb_pop_front(cb_a, 1);
        cb_pop_front(cb_b, 1);
        cb_push_back(cb_out, 1);
    }
}
