// tilelang-tt mock TT-Metalium: TensorAccessor over an interleaved buffer.
// Host side, TensorAccessorArgs(buffer).append_to(args) appends two words, as the SDK does for an
// interleaved buffer: the ArgsConfig word (tensor_accessor::ArgConfig bits: IsDram, Sharded) and
// the aligned page size. Device side, TensorAccessorArgs<offset>() reads them at compile time.
#pragma once
#include <cstdint>

#include "hostdevcommon/tensor_accessor/arg_config.hpp"
#include "ttmock/kernel_args.h"

namespace ttmock {
uint64_t interleaved_noc_addr(bool is_dram, uint32_t bank_base, uint32_t page_size,
                              uint32_t page_id, uint32_t offset);
void sharded_accessor_unsupported();
}  // namespace ttmock

template <uint32_t CTA_OFFSET>
struct TensorAccessorArgs {
    static constexpr uint32_t config = get_compile_time_arg_val(CTA_OFFSET);
    static constexpr bool is_dram = (config & static_cast<uint32_t>(tensor_accessor::ArgConfig::IsDram)) != 0;
    static constexpr bool is_sharded = (config & static_cast<uint32_t>(tensor_accessor::ArgConfig::Sharded)) != 0;
    constexpr TensorAccessorArgs() = default;
    static constexpr uint32_t next_compile_time_args_offset() { return CTA_OFFSET + 2; }
    static constexpr uint32_t compile_time_args_skip() { return 2; }
};

template <typename Args>
struct TensorAccessor {
    uint32_t bank_base_address;
    uint32_t page_size;
    constexpr TensorAccessor(const Args&, uint32_t bank_base, uint32_t page_bytes)
        : bank_base_address(bank_base), page_size(page_bytes) {
        if (Args::is_sharded) ttmock::sharded_accessor_unsupported();
    }
    uint64_t get_noc_addr(uint32_t page_id, uint32_t offset = 0, uint8_t = 0) const {
        return ttmock::interleaved_noc_addr(Args::is_dram, bank_base_address, page_size, page_id,
                                            offset);
    }
};
