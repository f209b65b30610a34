// Calibration compute: N matmul_tiles of c_0 x c_1 accumulated into DST 0, packed once to c_16.
#include <cstdint>
#include "api/compute/common.h"
#include "api/compute/compute_kernel_hw_startup.h"
#include "api/compute/matmul.h"
#include "api/compute/pack.h"
#include "api/compute/reg_api.h"

void kernel_main() {
    const uint32_t n = get_arg_val<uint32_t>(0);
    compute_kernel_hw_startup<SrcOrder::Reverse>(0, 1, 16);
    matmul_init(0, 1, false);
    cb_wait_front(0, 1);
    cb_wait_front(1, 1);
    tile_regs_acquire();
    for (uint32_t i = 0; i < n; ++i) matmul_tiles(0, 1, 0, 0, 0);
    tile_regs_commit();
    cb_pop_front(0, 1);
    cb_pop_front(1, 1);
    cb_reserve_back(16, 1);
    tile_regs_wait();
    pack_tile(0, 16);
    tile_regs_release();
    cb_push_back(16, 1);
}
