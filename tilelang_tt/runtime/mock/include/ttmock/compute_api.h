// tilelang-tt mock TT-Metalium: the compute kernel API (one header behind all api/compute/*.h).
#pragma once
#include <cstdint>
#include <cstring>

#include "ttmock/cb_api.h"
#include "ttmock/kernel_args.h"
#include "ttmock/types.hpp"

#define ALWI inline __attribute__((always_inline))
#ifndef MATH_FIDELITY
#define MATH_FIDELITY 4
#endif
#ifndef DST_ACCUM_MODE
#define DST_ACCUM_MODE false
#endif
#ifndef APPROX
#define APPROX false
#endif

enum class SrcOrder { Standard, Reverse };
enum BroadcastType : uint8_t { NONE = 0, COL = 1, ROW = 2, SCALAR = 3 };
enum PoolType : uint8_t { SUM = 0, AVG = 1, MAX = 2 };
enum ReduceDim : uint8_t { REDUCE_ROW = 0, REDUCE_COL = 1, REDUCE_SCALAR = 2 };

namespace ttmock {
void hw_startup(uint32_t icb0, uint32_t icb1, uint32_t ocb, bool reverse);
void fpu_init(const char* mode, uint32_t icb0, uint32_t icb1, uint32_t arg);
void matmul(uint32_t in0, uint32_t in1, uint32_t i0, uint32_t i1, uint32_t idst);
void eltwise_binary(const char* op, uint32_t icb0, uint32_t icb1, uint32_t i0, uint32_t i1,
                    uint32_t idst);
void eltwise_bcast(const char* op, int bcast, uint32_t icb0, uint32_t icb1, uint32_t i0,
                   uint32_t i1, uint32_t idst);
void copy(uint32_t icb, uint32_t itile, uint32_t idst);
void transpose(uint32_t icb, uint32_t itile, uint32_t idst);
void reduce(int pool, int dim, uint32_t icb, uint32_t iscaler_cb, uint32_t itile,
            uint32_t iscaler, uint32_t idst);
void sfpu_init(const char* op);
void sfpu_unary(const char* op, uint32_t idst, float param, bool approx = false);
void sfpu_binary(const char* op, uint32_t idst0, uint32_t idst1, uint32_t odst);
void pack(uint32_t idst, uint32_t ocb, uint32_t out_index, bool out_of_order);
void reconfig_srca(uint32_t cb);
void reconfig_srcb(uint32_t cb);
void reconfig_pack(uint32_t cb);
void pack_l1_acc(bool enable);
void regs(const char* step);
}  // namespace ttmock

// ---- start-up and initialisation ------------------------------------------------------------
template <SrcOrder order = SrcOrder::Standard>
ALWI void compute_kernel_hw_startup(uint32_t icb0, uint32_t icb1, uint32_t ocb) {
    ttmock::hw_startup(icb0, icb1, ocb, order == SrcOrder::Reverse);
}
template <SrcOrder order = SrcOrder::Standard>
ALWI void compute_kernel_hw_startup(uint32_t icb0, uint32_t ocb) {
    ttmock::hw_startup(icb0, icb0, ocb, order == SrcOrder::Reverse);
}
ALWI void mm_init(uint32_t in0 = 0, uint32_t in1 = 1, uint32_t out = 16, uint32_t transpose = 0) {
    ttmock::hw_startup(in0, in1, out, true);
    ttmock::fpu_init("matmul", in0, in1, transpose);
}
ALWI void matmul_init(uint32_t in0, uint32_t in1, const uint32_t transpose = 0,
                      uint32_t /*call_line*/ = __builtin_LINE()) {
    ttmock::fpu_init("matmul", in0, in1, transpose);
}
ALWI void mm_init_short(uint32_t in0, uint32_t in1, const uint32_t transpose = 0) {
    ttmock::fpu_init("matmul", in0, in1, transpose);
}
ALWI void matmul_tiles(uint32_t in0, uint32_t in1, uint32_t i0, uint32_t i1, uint32_t idst) {
    ttmock::matmul(in0, in1, i0, i1, idst);
}
#define TTMOCK_BINARY(op)                                                                        \
    ALWI void op##_init(uint32_t icb0, uint32_t icb1, bool acc_to_dest = false,                 \
                        uint32_t /*call_line*/ = __builtin_LINE()) {                             \
        (void)acc_to_dest;                                                                       \
        ttmock::fpu_init(#op, icb0, icb1, 0);                                                    \
    }                                                                                            \
    ALWI void op##_tiles(uint32_t icb0, uint32_t icb1, uint32_t i0, uint32_t i1, uint32_t idst) { \
        ttmock::eltwise_binary(#op, icb0, icb1, i0, i1, idst);                                   \
    }                                                                                            \
    template <BroadcastType B>                                                                   \
    ALWI void op##_tiles_bcast(uint32_t icb0, uint32_t icb1, uint32_t i0, uint32_t i1,          \
                               uint32_t idst) {                                                  \
        ttmock::eltwise_bcast(#op, B, icb0, icb1, i0, i1, idst);                                 \
    }                                                                                            \
    ALWI void op##_tiles_bcast_cols(uint32_t icb0, uint32_t icb1, uint32_t i0, uint32_t i1,     \
                                    uint32_t idst) {                                             \
        ttmock::eltwise_bcast(#op, COL, icb0, icb1, i0, i1, idst);                               \
    }                                                                                            \
    ALWI void op##_tiles_bcast_rows(uint32_t icb0, uint32_t icb1, uint32_t i0, uint32_t i1,     \
                                    uint32_t idst) {                                             \
        ttmock::eltwise_bcast(#op, ROW, icb0, icb1, i0, i1, idst);                               \
    }                                                                                            \
    ALWI void op##_bcast_rows_init(uint32_t icb0, uint32_t icb1,                                \
                                   uint32_t /*call_line*/ = __builtin_LINE()) {                  \
        ttmock::fpu_init(#op "_bcast", icb0, icb1, ROW);                                         \
    }                                                                                            \
    ALWI void op##_bcast_cols_init(uint32_t icb0, uint32_t icb1,                                \
                                   uint32_t /*call_line*/ = __builtin_LINE()) {                  \
        ttmock::fpu_init(#op "_bcast", icb0, icb1, COL);                                         \
    }                                                                                            \
    ALWI void op##_bcast_scalar_init(uint32_t icb0, uint32_t icb1,                              \
                                     uint32_t /*call_line*/ = __builtin_LINE()) {                \
        ttmock::fpu_init(#op "_bcast", icb0, icb1, SCALAR);                                      \
    }
TTMOCK_BINARY(add)
TTMOCK_BINARY(sub)
TTMOCK_BINARY(mul)
#undef TTMOCK_BINARY

// ---- copy, transpose, reduce ----------------------------------------------------------------
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void copy_init(uint32_t cbid, uint32_t transpose = 0, uint32_t transpose_within_16x16_face = false,
                    uint32_t /*call_line*/ = __builtin_LINE()) {
    (void)transpose_within_16x16_face;
    ttmock::fpu_init("copy", cbid, cbid, transpose);
}
ALWI void copy_tile(uint32_t in_cb_id, uint32_t in_tile_index, uint32_t dst_tile_index) {
    ttmock::copy(in_cb_id, in_tile_index, dst_tile_index);
}
ALWI void transpose_wh_init(uint32_t icb, uint32_t ocb) {
    (void)ocb;
    ttmock::fpu_init("transpose", icb, icb, 0);
}
ALWI void transpose_wh_init_short(uint32_t icb) { ttmock::fpu_init("transpose", icb, icb, 0); }
ALWI void transpose_wh_tile(uint32_t icb, uint32_t itile, uint32_t idst) {
    ttmock::transpose(icb, itile, idst);
}
template <PoolType reduce_type = SUM, ReduceDim reduce_dim = REDUCE_ROW>
ALWI void reduce_init(uint32_t icb, uint32_t icb_scaler, uint32_t ocb) {
    (void)ocb;
    ttmock::fpu_init("reduce", icb, icb_scaler, reduce_type * 4 + reduce_dim);
}
template <PoolType reduce_type = SUM, ReduceDim reduce_dim = REDUCE_ROW>
ALWI void reduce_tile(uint32_t icb, uint32_t icb_scaler, uint32_t itile, uint32_t itile_scaler,
                      uint32_t idst) {
    ttmock::reduce(reduce_type, reduce_dim, icb, icb_scaler, itile, itile_scaler, idst);
}
ALWI void reduce_uninit() {}

// ---- SFPU ---------------------------------------------------------------------------------------
// `approx`: the function's approximate mode, as the SDK selects it (a template argument of the
// tile call, or APPROX = math_approx_mode for the functions whose init reads it)
#define TTMOCK_SFPU_UNARY(op, approx_default, approx_used)                    \
    template <bool approx = approx_default>                                  \
    ALWI void op##_tile_init() {                                             \
        ttmock::sfpu_init(#op);                                              \
    }                                                                        \
    template <bool approx = approx_default>                                  \
    ALWI void op##_tile(uint32_t idst) {                                     \
        ttmock::sfpu_unary(#op, idst, 0.0f, approx_used);                    \
    }
TTMOCK_SFPU_UNARY(exp, false, approx)
TTMOCK_SFPU_UNARY(log, false, APPROX)
TTMOCK_SFPU_UNARY(sqrt, false, APPROX)
TTMOCK_SFPU_UNARY(rsqrt, false, APPROX)
TTMOCK_SFPU_UNARY(recip, false, APPROX)
TTMOCK_SFPU_UNARY(relu, false, false)
TTMOCK_SFPU_UNARY(gelu, true, approx)
TTMOCK_SFPU_UNARY(sigmoid, false, approx)
TTMOCK_SFPU_UNARY(tanh, false, approx)
TTMOCK_SFPU_UNARY(abs, false, false)
TTMOCK_SFPU_UNARY(negative, false, false)
TTMOCK_SFPU_UNARY(square, false, false)
TTMOCK_SFPU_UNARY(silu, false, false)
#undef TTMOCK_SFPU_UNARY

ALWI void fill_tile_init() { ttmock::sfpu_init("fill"); }
ALWI void fill_tile(uint32_t idst, float value) { ttmock::sfpu_unary("fill", idst, value); }

// binop_with_scalar: the scalar arrives as the bits of a float32
ALWI void binop_with_scalar_tile_init() { ttmock::sfpu_init("binop_with_scalar"); }
#define TTMOCK_SFPU_SCALAR(op)                                                       \
    ALWI void op##_unary_tile(uint32_t idst, uint32_t param1) {                      \
        float value;                                                                 \
        std::memcpy(&value, &param1, sizeof value);                                  \
        ttmock::sfpu_unary(#op "_unary", idst, value);                               \
    }
TTMOCK_SFPU_SCALAR(add)
TTMOCK_SFPU_SCALAR(sub)
TTMOCK_SFPU_SCALAR(mul)
TTMOCK_SFPU_SCALAR(div)
TTMOCK_SFPU_SCALAR(rsub)
#undef TTMOCK_SFPU_SCALAR

#define TTMOCK_SFPU_BINARY(op)                                                         \
    ALWI void op##_binary_tile_init() { ttmock::sfpu_init(#op "_binary"); }            \
    ALWI void op##_binary_tile(uint32_t idst0, uint32_t idst1, uint32_t odst) {        \
        ttmock::sfpu_binary(#op, idst0, idst1, odst);                                  \
    }
TTMOCK_SFPU_BINARY(add)
TTMOCK_SFPU_BINARY(sub)
TTMOCK_SFPU_BINARY(mul)
TTMOCK_SFPU_BINARY(div)
#undef TTMOCK_SFPU_BINARY

// ---- DST register file and packing ------------------------------------------------------------
ALWI void tile_regs_acquire() { ttmock::regs("tile_regs_acquire"); }
ALWI void tile_regs_commit() { ttmock::regs("tile_regs_commit"); }
ALWI void tile_regs_wait() { ttmock::regs("tile_regs_wait"); }
ALWI void tile_regs_release() { ttmock::regs("tile_regs_release"); }

template <bool out_of_order_output = false>
ALWI void pack_tile(uint32_t ifrom_dst, uint32_t icb, std::uint32_t output_tile_index = 0) {
    ttmock::pack(ifrom_dst, icb, output_tile_index, out_of_order_output);
}
ALWI void pack_reconfig_data_format(uint32_t new_ocb) { ttmock::reconfig_pack(new_ocb); }
// packer L1 accumulation: pack_tile adds to the L1 tile instead of overwriting it
ALWI void pack_reconfig_l1_acc(const uint32_t l1_acc_en) { ttmock::pack_l1_acc(l1_acc_en != 0); }
ALWI void pack_reconfig_data_format(uint32_t old_ocb, uint32_t new_ocb) {
    (void)old_ocb;
    ttmock::reconfig_pack(new_ocb);
}
ALWI void reconfig_data_format(uint32_t srca_new, uint32_t srcb_new) {
    ttmock::reconfig_srca(srca_new);
    ttmock::reconfig_srcb(srcb_new);
}
ALWI void reconfig_data_format(uint32_t srca_old, uint32_t srca_new, uint32_t srcb_old,
                               uint32_t srcb_new) {
    (void)srca_old;
    (void)srcb_old;
    ttmock::reconfig_srca(srca_new);
    ttmock::reconfig_srcb(srcb_new);
}
ALWI void reconfig_data_format_srca(uint32_t srca_new) { ttmock::reconfig_srca(srca_new); }
ALWI void reconfig_data_format_srca(uint32_t srca_old, uint32_t srca_new) {
    (void)srca_old;
    ttmock::reconfig_srca(srca_new);
}
ALWI void reconfig_data_format_srcb(uint32_t srcb_new) { ttmock::reconfig_srcb(srcb_new); }
ALWI void reconfig_data_format_srcb(uint32_t srcb_old, uint32_t srcb_new) {
    (void)srcb_old;
    ttmock::reconfig_srcb(srcb_new);
}
