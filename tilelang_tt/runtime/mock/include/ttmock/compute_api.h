// tilelang-tt mock TT-Metalium: the emulator's compute engine entry points (namespace ttmock).
// The public compute API (api/compute/*.h, namespace ckernel, the SDK's names and signatures)
// forwards to these; src/compute.cpp implements them.
#pragma once
#include <cstdint>

#include "ttmock/cb_api.h"

namespace ttmock {
// the engine's codes for ckernel::PoolType, ReduceDim and BroadcastType (the SDK's values)
enum : int { SUM = 0, AVG = 1, MAX = 2, MIN = 3 };
enum : int { REDUCE_ROW = 0, REDUCE_COL = 1, REDUCE_SCALAR = 2 };
enum : int { NONE = 0, COL = 1, ROW = 2, SCALAR = 3 };

void hw_startup(uint32_t icb0, uint32_t icb1, uint32_t ocb, bool reverse);
void fpu_init(const char* mode, uint32_t icb0, uint32_t icb1, uint32_t arg);
void matmul(uint32_t in0, uint32_t in1, uint32_t i0, uint32_t i1, uint32_t idst);
void eltwise_binary(const char* op, uint32_t icb0, uint32_t icb1, uint32_t i0, uint32_t i1,
                    uint32_t idst);
void eltwise_bcast(const char* op, int bcast, uint32_t icb0, uint32_t icb1, uint32_t i0,
                   uint32_t i1, uint32_t idst);
void copy(uint32_t icb, uint32_t itile, uint32_t idst);
// unary_bcast<bcast>(icb, itile, idst): tile itile of icb broadcast into DST[idst]
void unary_bcast(int bcast, uint32_t icb, uint32_t itile, uint32_t idst);
void transpose(uint32_t icb, uint32_t itile, uint32_t idst);
void reduce(int pool, int dim, uint32_t icb, uint32_t iscaler_cb, uint32_t itile,
            uint32_t iscaler, uint32_t idst);
void sfpu_init(const char* op);
// an init with two float32 scalars (bits), which its tile calls read (fmod_tile_init)
void sfpu_init_params(const char* op, uint32_t param0, uint32_t param1);
// approx: the function's approximate mode as the SDK selects it: 0 / 1 from a template argument
// of the tile call, kApproxFromConfig for the functions whose LLK reads APPROX (math_approx_mode)
constexpr int kApproxFromConfig = -1;
void sfpu_unary(const char* op, uint32_t idst, float param, int approx = 0);
void sfpu_binary(const char* op, uint32_t idst0, uint32_t idst1, uint32_t odst);
// where_tile<format>: format is the DataFormat value of the template argument
void sfpu_where(uint32_t icond, uint32_t idst1, uint32_t idst2, uint32_t odst, int format);
// cumsum_tile(idst, first): the column-wise running sum of DST[idst], carried from the previous
// call (first = false) in the engine's SFPU registers
void sfpu_cumsum(uint32_t idst, bool first);
// reshuffle_rows_tile(idst, idx_addr): DST[idst + 1] row idx[r] += DST[idst] row r (idx: 32 bytes
// at L1 address idx_addr + 16; 32 or more: the row is skipped)
void sfpu_reshuffle_rows(uint32_t idst, uint32_t idx_addr);
// sfpu_reduce_init<pool, format>() / sfpu_reduce<pool, format, dim>(idst, ct_dim, rt_dim): pool,
// format and dim the enumerators' values (PoolType, DataFormat, ReduceDim)
void sfpu_reduce_init(int pool, int format);
void sfpu_reduce(int pool, int format, int dim, uint32_t idst, uint32_t ct_dim, uint32_t rt_dim);
void pack(uint32_t idst, uint32_t ocb, uint32_t out_index, bool out_of_order);
void reconfig_srca(uint32_t cb);
void reconfig_srcb(uint32_t cb);
void reconfig_pack(uint32_t cb);
void pack_l1_acc(bool enable);  // pack_reconfig_l1_acc: the packer adds to the L1 tile
void regs(const char* step);
[[noreturn]] void unsupported(const char* what);  // an SDK feature the emulator does not model
}  // namespace ttmock
