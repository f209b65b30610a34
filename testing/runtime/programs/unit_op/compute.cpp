// Unit-op test program: one compute op on tile 0 of c_0 (and c_1), result packed to c_16.
// The op is chosen by the defines the host passes in ComputeConfig::defines.
#include <cstdint>
#include "api/compute/common.h"
#include "api/compute/compute_kernel_hw_startup.h"
#include "api/compute/matmul.h"
#include "api/compute/eltwise_binary.h"
#include "api/compute/eltwise_binary_sfpu.h"
#include "api/compute/bcast.h"
#include "api/compute/reduce.h"
#include "api/compute/transpose.h"
#include "api/compute/tile_move_copy.h"
#include "api/compute/eltwise_unary/eltwise_unary.h"
#include "api/compute/compute_kernel_api.h"
#include "api/compute/eltwise_unary/exp.h"
#include "api/compute/eltwise_unary/sqrt.h"
#include "api/compute/eltwise_unary/rsqrt.h"
#include "api/compute/eltwise_unary/recip.h"
#include "api/compute/eltwise_unary/relu.h"
#include "api/compute/eltwise_unary/gelu.h"
#include "api/compute/eltwise_unary/negative.h"
#include "api/compute/eltwise_unary/trigonometry.h"
#include "api/compute/eltwise_unary/erf_erfc.h"
#include "api/compute/eltwise_unary/fmod.h"
#include "api/compute/eltwise_unary/log1p.h"
#include "api/compute/eltwise_unary/rpow.h"
#include "api/compute/atan2.h"
#include "api/compute/binary_fmod.h"
#include "api/compute/pack.h"
#include "api/compute/reg_api.h"

void kernel_main() {
    constexpr uint32_t in0 = 0, in1 = 1, out = 16;
#if defined(OP_MATMUL)
    compute_kernel_hw_startup<SrcOrder::Reverse>(in0, in1, out);
    matmul_init(in0, in1, TRANSPOSE);
#else
    compute_kernel_hw_startup(in0, in1, out);
#endif
    cb_wait_front(in0, 1);
    cb_wait_front(in1, 1);
    tile_regs_acquire();
#if defined(OP_MATMUL)
    matmul_tiles(in0, in1, 0, 0, 0);
#elif defined(OP_BINARY)
    OP_INIT(in0, in1);
    OP_CALL(in0, in1, 0, 0, 0);
#elif defined(OP_BCAST)
    OP_INIT(in0, in1);
    OP_CALL<BCAST>(in0, in1, 0, 0, 0);
#elif defined(OP_COPY)
    copy_init(in0);
    copy_tile(in0, 0, 0);
#elif defined(OP_SFPU)
    copy_init(in0);
    copy_tile(in0, 0, 0);
    OP_INIT();
    OP_CALL(0);
#elif defined(OP_SFPU_ARG)  // a tile call with a scalar argument (power_tile's exponent bits)
    copy_init(in0);
    copy_tile(in0, 0, 0);
    OP_INIT();
    OP_CALL(0, OP_ARG);
#elif defined(OP_SFPU_INIT_ARGS)  // an init with two scalar arguments (fmod_tile_init's c, 1/c)
    copy_init(in0);
    copy_tile(in0, 0, 0);
    OP_INIT(OP_ARG, OP_ARG2);
    OP_CALL(0);
#elif defined(OP_SFPU_BINARY)
    copy_init(in0);
    copy_tile(in0, 0, 0);
    copy_init(in1);
    copy_tile(in1, 0, 1);
    OP_INIT();
    OP_CALL(0, 1, 0);
#elif defined(OP_REDUCE)
    reduce_init<POOL, DIM>(in0, in1, out);
    reduce_tile<POOL, DIM>(in0, in1, 0, 0, 0);
    reduce_uninit();
#elif defined(OP_TRANSPOSE)
    transpose_init(in0);
    transpose_tile(in0, 0, 0);
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
