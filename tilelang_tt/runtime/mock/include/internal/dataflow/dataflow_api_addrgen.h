// tilelang-tt mock TT-Metalium: the interleaved address generator of the dataflow API
// (internal/dataflow/dataflow_api_addrgen.h). Pages are placed round-robin over the banks, each
// bank's pages at the allocator-aligned page size, as the emulator's interleaved buffers are.
#pragma once
#include <cstdint>

#include "api/tensor/tensor_accessor.h"
#include "internal/dataflow/dataflow_api_common.h"
#include "internal/risc_attribs.h"
#include "internal/tensix_types.h"

namespace ttmock {
constexpr uint32_t align_up(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }
// the NOC address of page `page_id` of an interleaved buffer whose pages an InterleavedAddrGenFast
// steps `tile_bytes` apart in each bank (checked against the buffer's own page stride)
uint64_t interleaved_fast_noc_addr(bool is_dram, uint32_t bank_base, uint32_t page_size, uint32_t tile_bytes,
                                   uint32_t page_id, uint32_t offset);
// bytes of a tile of tile_hw data of `format` (the SDK's MUL_WITH_TILE_SIZE(format, 1)); 0 for a
// block-float format, whose layout the emulator does not model
constexpr uint32_t tile_bytes_of(uint8_t format, uint32_t tile_hw) {
    switch (format & 0x1F) {
        case static_cast<uint8_t>(DataFormat::UInt8): return tile_hw;
        case static_cast<uint8_t>(DataFormat::UInt16):
        case static_cast<uint8_t>(DataFormat::Float16):
        case static_cast<uint8_t>(DataFormat::Float16_b): return tile_hw * 2;
        case static_cast<uint8_t>(DataFormat::Int32):
        case static_cast<uint8_t>(DataFormat::UInt32):
        case static_cast<uint8_t>(DataFormat::Float32): return tile_hw * 4;
        default: return 0;
    }
}
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

// The fast interleaved generator: page `id` sits in bank id % banks at a multiple of the tile size
// of `data_format` (not of page_size, which only sizes the transfers), as the SDK's get_addr places it.
template <bool DRAM, uint32_t tile_hw = 1024>
struct InterleavedAddrGenFast {
    static constexpr bool is_dram = DRAM;
    uint32_t bank_base_address;  // Base address for the whole tensor.
    uint32_t page_size;          // Num bytes in bank unit.
    DataFormat data_format;      // Data format

    FORCE_INLINE
    std::uint64_t get_noc_addr(const uint32_t id, const uint32_t offset = 0, uint8_t noc = noc_index) const {
        (void)noc;
        return ttmock::interleaved_fast_noc_addr(DRAM, bank_base_address, page_size,
                                                 ttmock::tile_bytes_of(static_cast<uint8_t>(data_format), tile_hw),
                                                 id, offset);
    }
};
