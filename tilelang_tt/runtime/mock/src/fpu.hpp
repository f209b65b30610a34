// tilelang-tt mock TT-Metalium: arithmetic of the Tensix matrix engine (FPU), unpacker and packer.
//
// Every function works on whole 32x32 tiles in the four-16x16-face layout. Source-register and
// DST values are fp32 bit patterns: a source-register datum has its low 13 mantissa bits zero
// (TF32; BF16 additionally has the low 3 of the remaining 10 zero); a 16-bit DST datum is a BF16
// in the high half with the low 16 bits zero. The rules (and their sources) are in docs/MOCK.md
// "Numerics"; they reproduce ttsim, Tenstorrent's bit-exact Wormhole simulator.
#pragma once
#include <cstdint>

namespace ttmock::fpu {

constexpr int kTileElems = 1024;
enum Broadcast : int { kBcastNone = 0, kBcastCol = 1, kBcastRow = 2, kBcastScalar = 3 };

// Number of fidelity phases the LLK runs for a MathFidelity value (LoFi 1, HiFi2 2, HiFi3 3, HiFi4 4).
inline int fidelity_phases(int math_fidelity) { return math_fidelity <= 1 ? 1 : math_fidelity; }

// ---- unpacker: L1 tile -> source registers or DST -------------------------------------------
void unpack_bf16(const uint16_t* l1, uint32_t* src);              // exact
void unpack_fp16(const uint16_t* l1, uint32_t* src);              // IEEE half -> fp32, exact
void unpack_fp32(const uint32_t* l1, uint32_t* src, bool to_tf32);  // truncates (TF32 or BF16)
void unpack_fp32_to_dst(const uint32_t* l1, uint32_t* dst);        // UnpackToDestFp32: exact

// ---- matrix engine: results into DST (fp32_dst: DST in 32-bit mode) ----------------------------
// DST = SrcA/SrcB datum (copy_tile, transpose_wh_tile)
void datacopy(uint32_t* dst, const uint32_t* src, bool transpose, bool fp32_dst);
// DST = a tile unpacked straight to DST, transposed there (transpose_tile of an
// UnpackToDestFp32 CB: llk_math_transpose_dest moves the 32-bit values, exactly)
void transpose_in_dst(uint32_t* dst, const uint32_t* unpacked);
// DST += in0 @ in1 (in1 transposed within the tile when transpose), `phases` fidelity phases
// (all paths give the same bits; matmul_path() names the one this CPU and TT_MOCK_FPU select:
// "avx512", "avx2" or "portable")
const char* matmul_path();
// The accumulator's Wormhole-only renormalisation of a result of exactly -1 (ttsim's
// TT_ARCH_VERSION == 0 fixup; Blackhole normalises it correctly). Set before a run; default on.
void set_wormhole_accumulator(bool wormhole);
void matmul(uint32_t* dst, const uint32_t* in0, const uint32_t* in1, bool transpose, int phases,
            bool fp32_dst);
// matmul of BF16 operand tiles as they lie in L1 (the unpacker's BF16 copy to the source registers
// is exact, so this is matmul of the unpacked tiles; the AVX-512 path decodes them straight from
// L1 and reuses the decoding of tiles it multiplied last on this host thread)
void matmul_bf16(uint32_t* dst, const uint16_t* in0, const uint16_t* in1, bool transpose, int phases,
                 bool fp32_dst);
// The SrcB tile b as a broadcast `bcast` reads it (kBcastNone: a copy)
void broadcast_tile(const uint32_t* b, int bcast, uint32_t* out);
// DST = a + b or a - b (ELWADD / ELWSUB), b broadcast per `bcast`
void eltwise_add(uint32_t* dst, const uint32_t* a, const uint32_t* b, bool subtract, int bcast,
                 bool fp32_dst);
// DST += a * b over `phases` fidelity phases (ELWMUL accumulates onto DST)
void eltwise_mul(uint32_t* dst, const uint32_t* a, const uint32_t* b, int bcast, int phases,
                 bool fp32_dst);
// The portable step-by-step form of eltwise_mul (the AVX-512 paths, and the exact product onto a
// +0 DST, must give its bits: testing/runtime/programs/fast_paths compares them)
void eltwise_mul_reference(uint32_t* dst, const uint32_t* a, const uint32_t* b, int bcast, int phases,
                           bool fp32_dst);
// reduce_tile SUM/AVG: DST += (a * scaler) summed along dim (0 ROW: into column 0, 1 COL: into
// row 0, 2 SCALAR: into [0][0])
void reduce_sum(uint32_t* dst, const uint32_t* a, const uint32_t* scaler, int dim, int phases,
                bool fp32_dst);
// The scalar form of reduce_sum (the portable path; the AVX-512 path of ROW / COL must give its
// bits: testing/runtime/programs/fast_paths compares them)
void reduce_sum_reference(uint32_t* dst, const uint32_t* a, const uint32_t* scaler, int dim, int phases,
                          bool fp32_dst);
// reduce_tile MAX: DST = max(DST, max of a along dim); `first`: DST holds nothing yet
void reduce_max(uint32_t* dst, const uint32_t* a, int dim, bool first);
// The scalar form of reduce_max (the portable path; the vector path must give its bits: the test
// program testing/runtime/programs/fast_paths compares them)
void reduce_max_reference(uint32_t* dst, const uint32_t* a, int dim, bool first);

// ---- packer: DST -> L1 tile ----------------------------------------------------------------------
void pack_bf16(const uint32_t* dst, uint16_t* l1, bool fp32_dst);
void pack_fp32(const uint32_t* dst, uint32_t* l1, bool fp32_dst);
// IEEE half from a 32-bit DST (the emulator models Float16 data with fp32_dest_acc_en only)
void pack_fp16(const uint32_t* dst, uint16_t* l1);
// Pack with L1 accumulation (pack_reconfig_l1_acc(1)): l1 = l1 + packed value
void pack_bf16_l1_acc(const uint32_t* dst, uint16_t* l1, bool fp32_dst);
void pack_fp32_l1_acc(const uint32_t* dst, uint32_t* l1, bool fp32_dst);

// ---- DST storage ---------------------------------------------------------------------------------
// What a DST write keeps of an fp32 value in 16-bit mode (SFPSTORE: denormals to zero, truncation)
uint32_t dst_store_sfpu(uint32_t value, bool fp32_dst);

}  // namespace ttmock::fpu
