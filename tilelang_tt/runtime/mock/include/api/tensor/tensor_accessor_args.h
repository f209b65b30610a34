// tilelang-tt mock TT-Metalium: compile-time arguments of a TensorAccessor (api/tensor/tensor_accessor_args.h).
// The host's TensorAccessorArgs(buffer).append_to(args) appends the ArgsConfig word (bit 0
// Sharded, bit 1 IsDram, bit 7 RuntimePageSize) and the aligned page size; for a sharded buffer
// then the rank, the bank count, the tensor and shard shapes in pages and the banks' packed
// coordinates (two 16-bit (x << 8 | y) per word), all at compile time (the emulator does not
// model runtime accessor args).
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>

#include "api/compile_time_args.h"

namespace tensor_accessor {
constexpr std::size_t UNKNOWN = std::numeric_limits<std::size_t>::max();
}  // namespace tensor_accessor

template <std::size_t CTA_OFFSET, std::size_t CRTA_OFFSET = tensor_accessor::UNKNOWN>
struct TensorAccessorArgs {
    static constexpr bool is_sharded = (get_compile_time_arg_val(CTA_OFFSET) & (1u << 0)) != 0;
    static constexpr bool is_dram = (get_compile_time_arg_val(CTA_OFFSET) & (1u << 1)) != 0;
    static constexpr bool rank_is_crta = (get_compile_time_arg_val(CTA_OFFSET) & (1u << 2)) != 0;
    static constexpr bool num_banks_is_crta = (get_compile_time_arg_val(CTA_OFFSET) & (1u << 3)) != 0;
    static constexpr bool tensor_shape_is_crta = (get_compile_time_arg_val(CTA_OFFSET) & (1u << 4)) != 0;
    static constexpr bool shard_shape_is_crta = (get_compile_time_arg_val(CTA_OFFSET) & (1u << 5)) != 0;
    static constexpr bool bank_coords_is_crta = (get_compile_time_arg_val(CTA_OFFSET) & (1u << 6)) != 0;
    static constexpr bool page_size_is_crta = (get_compile_time_arg_val(CTA_OFFSET) & (1u << 7)) != 0;
    static_assert(!page_size_is_crta, "the emulator does not model a runtime (CRTA) page size");
    static_assert(!rank_is_crta && !num_banks_is_crta && !tensor_shape_is_crta && !shard_shape_is_crta &&
                      !bank_coords_is_crta,
                  "the emulator does not model sharded accessor args passed at runtime");

    static constexpr uint32_t AlignedPageSizeCTAOffset = CTA_OFFSET + 1;
    static constexpr uint32_t AlignedPageSize = [] {
        if constexpr (page_size_is_crta) {
            return 0;
        } else {
            return get_compile_time_arg_val(AlignedPageSizeCTAOffset);
        }
    }();
    static constexpr uint32_t RankCTAOffset = CTA_OFFSET + 2 - (page_size_is_crta ? 1 : 0);
    static constexpr uint32_t NumBanksCTAOffset = RankCTAOffset + (rank_is_crta ? 0 : 1);
    static constexpr uint32_t RankCT = [] {
        if constexpr (!is_sharded || rank_is_crta) {
            return 0;
        } else {
            return get_compile_time_arg_val(RankCTAOffset);
        }
    }();
    static constexpr uint32_t NumBanksRawCT = [] {
        if constexpr (!is_sharded || num_banks_is_crta) {
            return 0;
        } else {
            return get_compile_time_arg_val(NumBanksCTAOffset);
        }
    }();
    static constexpr uint32_t NumBanksCT = NumBanksRawCT & ~(1u << 31);
    static constexpr bool is_shard_contiguous = (NumBanksRawCT & (1u << 31)) != 0;
    static_assert(!is_shard_contiguous, "the emulator models the round-robin shard distribution only");
    static constexpr uint32_t PhysicalNumBanksCT = (NumBanksCT + 1) / 2;
    static constexpr uint32_t TensorShapeCTAOffset = NumBanksCTAOffset + (num_banks_is_crta ? 0 : 1);
    static constexpr uint32_t ShardShapeCTAOffset = TensorShapeCTAOffset + (tensor_shape_is_crta ? 0 : RankCT);
    static constexpr uint32_t BankCoordsCTAOffset = ShardShapeCTAOffset + (shard_shape_is_crta ? 0 : RankCT);
    static constexpr uint32_t NumArgsCT = [] {
        if constexpr (is_sharded) {
            return BankCoordsCTAOffset + (bank_coords_is_crta ? 0 : PhysicalNumBanksCT) - CTA_OFFSET;
        } else {
            return page_size_is_crta ? 1u : 2u;
        }
    }();

    constexpr TensorAccessorArgs() : crta_offset_rt_(0) {}
    constexpr uint32_t get_aligned_page_size() const { return AlignedPageSize; }
    static constexpr uint32_t num_compile_time_args() { return NumArgsCT; }
    static constexpr uint32_t next_compile_time_args_offset() { return CTA_OFFSET + num_compile_time_args(); }

private:
    uint32_t crta_offset_rt_;
};
