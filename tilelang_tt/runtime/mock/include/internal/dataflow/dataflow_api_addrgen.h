// tilelang-tt mock TT-Metalium: the interleaved address generator of the dataflow API
// (internal/dataflow/dataflow_api_addrgen.h). Pages are placed round-robin over the banks, each
// bank's pages at the allocator-aligned page size, as the emulator's interleaved buffers are.
#pragma once
#include <cstdint>

#include "api/tensor/tensor_accessor.h"
#include "internal/dataflow/dataflow_api_common.h"
#include "internal/risc_attribs.h"

namespace ttmock {
constexpr uint32_t align_up(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }
}  // namespace ttmock

template <bool DRAM>
struct InterleavedAddrGen {
    static constexpr bool is_dram = DRAM;
    uint32_t bank_base_address;  // Base address for the whole tensor.
    const uint32_t page_size;    // Num bytes in page.
    const uint32_t aligned_page_size = ttmock::align_up(page_size, DRAM ? 32u : 16u);

    FORCE_INLINE
    uint32_t get_addr(
        const uint32_t id,
        const uint32_t bank_offset_index,
        const uint32_t bank_index,
        const uint32_t offset = 0) const {
        (void)id;
        (void)bank_index;
        return (bank_offset_index * this->aligned_page_size) + this->bank_base_address + offset;
    }

    FORCE_INLINE
    std::uint64_t get_noc_addr(const uint32_t id, const uintptr_t offset = 0, uint8_t noc = noc_index) const {
        (void)noc;
        return ttmock::interleaved_noc_addr(DRAM, bank_base_address, aligned_page_size, id,
                                            static_cast<uint32_t>(offset));
    }
};
