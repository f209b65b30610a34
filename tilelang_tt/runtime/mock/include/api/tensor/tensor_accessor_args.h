// tilelang-tt mock TT-Metalium: compile-time arguments of a TensorAccessor (api/tensor/tensor_accessor_args.h).
// The host's TensorAccessorArgs(buffer).append_to(args) appends, for an interleaved buffer, the
// ArgsConfig word (bit 1 IsDram, bit 0 Sharded, bit 7 RuntimePageSize) and the aligned page size.
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
    static constexpr bool page_size_is_crta = (get_compile_time_arg_val(CTA_OFFSET) & (1u << 7)) != 0;
    static_assert(!is_sharded, "the emulator models interleaved TensorAccessorArgs only");
    static_assert(!page_size_is_crta, "the emulator does not model a runtime (CRTA) page size");

    static constexpr uint32_t AlignedPageSizeCTAOffset = CTA_OFFSET + 1;
    static constexpr uint32_t AlignedPageSize = [] {
        if constexpr (page_size_is_crta) {
            return 0;
        } else {
            return get_compile_time_arg_val(AlignedPageSizeCTAOffset);
        }
    }();
    static constexpr uint32_t NumArgsCT = [] {
        if constexpr (is_sharded) {
            return 0u;
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
