// tilelang-tt mock TT-Metalium: elementwise binary ops with a broadcast operand (api/compute/bcast.h).
#pragma once
#include "api/compute/common.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#endif

namespace ckernel {
template <BroadcastType tBcastDim, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void add_tiles_bcast(
    uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst, uint32_t bcast_row_idx = 0) {
    if (bcast_row_idx != 0) ttmock::unsupported("bcast_row_idx != 0 (broadcast of a row other than row 0)");
    ttmock::eltwise_bcast("add", static_cast<int>(tBcastDim), icb0, icb1, itile0, itile1, idst);
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void add_tiles_bcast_rows(
    uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst, uint32_t bcast_row_idx = 0) {
    add_tiles_bcast<BroadcastType::ROW, is_fp32_dest_acc_en>(icb0, icb1, itile0, itile1, idst, bcast_row_idx);
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void add_tiles_bcast_cols(uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst) {
    add_tiles_bcast<BroadcastType::COL, is_fp32_dest_acc_en>(icb0, icb1, itile0, itile1, idst);
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void add_tiles_bcast_scalar(uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst) {
    add_tiles_bcast<BroadcastType::SCALAR, is_fp32_dest_acc_en>(icb0, icb1, itile0, itile1, idst);
}
ALWI void add_bcast_rows_init(uint32_t icb0, uint32_t icb1, uint32_t call_line = __builtin_LINE()) {
    (void)call_line;
    ttmock::fpu_init("add_bcast", icb0, icb1, static_cast<uint32_t>(BroadcastType::ROW));
}
ALWI void add_bcast_cols_init(uint32_t icb0, uint32_t icb1, uint32_t call_line = __builtin_LINE()) {
    (void)call_line;
    ttmock::fpu_init("add_bcast", icb0, icb1, static_cast<uint32_t>(BroadcastType::COL));
}
ALWI void add_bcast_scalar_init(uint32_t icb0, uint32_t icb1, uint32_t call_line = __builtin_LINE()) {
    (void)call_line;
    ttmock::fpu_init("add_bcast", icb0, icb1, static_cast<uint32_t>(BroadcastType::SCALAR));
}
template <BroadcastType tBcastDim, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void sub_tiles_bcast(
    uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst, uint32_t bcast_row_idx = 0) {
    if (bcast_row_idx != 0) ttmock::unsupported("bcast_row_idx != 0 (broadcast of a row other than row 0)");
    ttmock::eltwise_bcast("sub", static_cast<int>(tBcastDim), icb0, icb1, itile0, itile1, idst);
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void sub_tiles_bcast_rows(
    uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst, uint32_t bcast_row_idx = 0) {
    sub_tiles_bcast<BroadcastType::ROW, is_fp32_dest_acc_en>(icb0, icb1, itile0, itile1, idst, bcast_row_idx);
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void sub_tiles_bcast_cols(uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst) {
    sub_tiles_bcast<BroadcastType::COL, is_fp32_dest_acc_en>(icb0, icb1, itile0, itile1, idst);
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void sub_tiles_bcast_scalar(uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst) {
    sub_tiles_bcast<BroadcastType::SCALAR, is_fp32_dest_acc_en>(icb0, icb1, itile0, itile1, idst);
}
ALWI void sub_bcast_rows_init(uint32_t icb0, uint32_t icb1, uint32_t call_line = __builtin_LINE()) {
    (void)call_line;
    ttmock::fpu_init("sub_bcast", icb0, icb1, static_cast<uint32_t>(BroadcastType::ROW));
}
ALWI void sub_bcast_cols_init(uint32_t icb0, uint32_t icb1, uint32_t call_line = __builtin_LINE()) {
    (void)call_line;
    ttmock::fpu_init("sub_bcast", icb0, icb1, static_cast<uint32_t>(BroadcastType::COL));
}
ALWI void sub_bcast_scalar_init(uint32_t icb0, uint32_t icb1, uint32_t call_line = __builtin_LINE()) {
    (void)call_line;
    ttmock::fpu_init("sub_bcast", icb0, icb1, static_cast<uint32_t>(BroadcastType::SCALAR));
}
template <BroadcastType tBcastDim, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void mul_tiles_bcast(
    uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst, uint32_t bcast_row_idx = 0) {
    if (bcast_row_idx != 0) ttmock::unsupported("bcast_row_idx != 0 (broadcast of a row other than row 0)");
    ttmock::eltwise_bcast("mul", static_cast<int>(tBcastDim), icb0, icb1, itile0, itile1, idst);
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void mul_tiles_bcast_rows(
    uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst, uint32_t bcast_row_idx = 0) {
    mul_tiles_bcast<BroadcastType::ROW, is_fp32_dest_acc_en>(icb0, icb1, itile0, itile1, idst, bcast_row_idx);
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void mul_tiles_bcast_cols(uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst) {
    mul_tiles_bcast<BroadcastType::COL, is_fp32_dest_acc_en>(icb0, icb1, itile0, itile1, idst);
}
template <bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void mul_tiles_bcast_scalar(uint32_t icb0, uint32_t icb1, uint32_t itile0, uint32_t itile1, uint32_t idst) {
    mul_tiles_bcast<BroadcastType::SCALAR, is_fp32_dest_acc_en>(icb0, icb1, itile0, itile1, idst);
}
ALWI void mul_bcast_rows_init(uint32_t icb0, uint32_t icb1, uint32_t call_line = __builtin_LINE()) {
    (void)call_line;
    ttmock::fpu_init("mul_bcast", icb0, icb1, static_cast<uint32_t>(BroadcastType::ROW));
}
ALWI void mul_bcast_cols_init(uint32_t icb0, uint32_t icb1, uint32_t call_line = __builtin_LINE()) {
    (void)call_line;
    ttmock::fpu_init("mul_bcast", icb0, icb1, static_cast<uint32_t>(BroadcastType::COL));
}
ALWI void mul_bcast_scalar_init(uint32_t icb0, uint32_t icb1, uint32_t call_line = __builtin_LINE()) {
    (void)call_line;
    ttmock::fpu_init("mul_bcast", icb0, icb1, static_cast<uint32_t>(BroadcastType::SCALAR));
}
// A tile of a CB broadcast into DST (column 0 across the columns, row 0 down the rows, [0][0]
// everywhere): through SrcB and MOVB2D, or for a CB unpacked straight to DST (UnpackToDestFp32)
// exactly, as the SDK's unary_bcast does
template <BroadcastType bcast_type, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void unary_bcast_init(uint32_t icb) {
    ttmock::fpu_init("unary_bcast", icb, icb, static_cast<uint32_t>(bcast_type));
}
template <BroadcastType bcast_type, bool is_fp32_dest_acc_en = DST_ACCUM_MODE>
ALWI void unary_bcast(uint32_t icb, uint32_t in_tile_index, uint32_t dst_tile_index) {
    ttmock::unary_bcast(static_cast<int>(bcast_type), icb, in_tile_index, dst_tile_index);
}
template <BroadcastType bcast_type>
ALWI void unary_bcast_uninit(uint32_t icb) {
    (void)icb;
}
}  // namespace ckernel
