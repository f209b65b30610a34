// Reference-numerics program: C = A + B, A - B (OP_ADD / OP_SUB) or A @ B (OP_MATMUL), bf16.
// The matmul accumulates every output tile over K as ttnn's matmul does: in DST across the whole
// K loop (KBLOCK = 0), or per K block of KBLOCK tiles with packer L1 accumulation of the block
// partials into c_24, the last block reloading the sum into DST (PACKER_L1_ACC in ttnn's
// bmm_large_block_zm_fused_bias_activation).
#include <cstdint>
#include "api/compute/common.h"
#include "api/compute/compute_kernel_hw_startup.h"
#include "api/compute/eltwise_binary.h"
#include "api/compute/matmul.h"
#include "api/compute/pack.h"
#include "api/compute/reg_api.h"
#include "api/compute/tile_move_copy.h"

void kernel_main() {
    constexpr uint32_t in0 = 0, in1 = 1, out = 16, partial = 24;
    const uint32_t mt = get_arg_val<uint32_t>(0), nt = get_arg_val<uint32_t>(1), kt = get_arg_val<uint32_t>(2);
#if defined(OP_MATMUL)
    compute_kernel_hw_startup<SrcOrder::Reverse>(in0, in1, out);
    matmul_init(in0, in1, 0);
    const uint32_t kblock = KBLOCK == 0 ? kt : KBLOCK;
    const uint32_t blocks = kt / kblock;
    for (uint32_t t = 0; t < mt * nt; ++t) {
        for (uint32_t blk = 0; blk < blocks; ++blk) {
            const bool last = blk + 1 == blocks;
            tile_regs_acquire();
            if (last && blocks > 1) {  // reload the L1-accumulated partial sum into DST
                cb_wait_front(partial, 1);
                copy_init(partial);
                copy_tile(partial, 0, 0);
                cb_pop_front(partial, 1);
                matmul_init(in0, in1, 0);
            }
            for (uint32_t k = 0; k < kblock; ++k) {
                cb_wait_front(in0, 1);
                cb_wait_front(in1, 1);
                matmul_tiles(in0, in1, 0, 0, 0);
                cb_pop_front(in0, 1);
                cb_pop_front(in1, 1);
            }
            tile_regs_commit();
            tile_regs_wait();
            const uint32_t target = last ? out : partial;
            cb_reserve_back(target, 1);
            pack_reconfig_l1_acc(!last && blk > 0 ? 1 : 0);
            pack_tile(0, target);
            pack_reconfig_l1_acc(0);
            cb_push_back(target, 1);
            tile_regs_release();
            if (!last && blk + 2 < blocks) {  // keep accumulating in the same L1 page
                cb_wait_front(partial, 1);
                cb_pop_front(partial, 1);
            }
        }
    }
#else
    compute_kernel_hw_startup(in0, in1, out);
#if defined(OP_ADD)
    add_init(in0, in1);
#else
    sub_init(in0, in1);
#endif
    for (uint32_t t = 0; t < mt * nt; ++t) {
        cb_wait_front(in0, 1);
        cb_wait_front(in1, 1);
        tile_regs_acquire();
#if defined(OP_ADD)
        add_tiles(in0, in1, 0, 0, 0);
#else
        sub_tiles(in0, in1, 0, 0, 0);
#endif
        tile_regs_commit();
        tile_regs_wait();
        cb_reserve_back(out, 1);
        pack_tile(0, out);
        cb_push_back(out, 1);
        tile_regs_release();
        cb_pop_front(in0, 1);
        cb_pop_front(in1, 1);
    }
#endif
}
