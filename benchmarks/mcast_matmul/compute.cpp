// Output block Mb x Nb accumulated in L1 by the packer across K blocks; per K block, sub-blocks
// of SH x SW tiles stay in DST over the block's kb inner tiles.
#include <cstdint>
#include "api/compute/common.h"
#include "api/compute/compute_kernel_hw_startup.h"
#include "api/compute/matmul.h"
#include "api/compute/pack.h"
#include "api/compute/reg_api.h"

void kernel_main() {
    constexpr uint32_t Mb = get_compile_time_arg_val(0), Nb = get_compile_time_arg_val(1);
    constexpr uint32_t kb = get_compile_time_arg_val(2), nkb = get_compile_time_arg_val(3);
    constexpr uint32_t SH = Mb < 2 ? Mb : 2, SW = Nb < 4 ? Nb : 4;
    compute_kernel_hw_startup<SrcOrder::Reverse>(0, 1, 16);
    matmul_init(0, 1, false);
    cb_reserve_back(16, Mb * Nb);
    for (uint32_t k = 0; k < nkb; ++k) {
        cb_wait_front(0, Mb * kb);
        cb_wait_front(1, kb * Nb);
        pack_reconfig_l1_acc(k > 0 ? 1 : 0);
        for (uint32_t h0 = 0; h0 < Mb; h0 += SH) {
            for (uint32_t w0 = 0; w0 < Nb; w0 += SW) {
                tile_regs_acquire();
                for (uint32_t i = 0; i < kb; ++i) {
                    for (uint32_t h = 0; h < SH; ++h) {
                        for (uint32_t w = 0; w < SW; ++w) {
                            matmul_tiles(0, 1, (h0 + h) * kb + i, i * Nb + w0 + w, h * SW + w);
                        }
                    }
                }
                tile_regs_commit();
                tile_regs_wait();
                for (uint32_t h = 0; h < SH; ++h) {
                    for (uint32_t w = 0; w < SW; ++w) pack_tile<true>(h * SW + w, 16, (h0 + h) * Nb + w0 + w);
                }
                tile_regs_release();
            }
        }
        cb_pop_front(0, Mb * kb);
        cb_pop_front(1, kb * Nb);
    }
    pack_reconfig_l1_acc(0);
    cb_push_back(16, Mb * Nb);
}
