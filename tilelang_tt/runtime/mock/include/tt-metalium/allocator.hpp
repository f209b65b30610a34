// tilelang-tt mock TT-Metalium: tt-metalium/allocator.hpp, the device allocator's queries as a
// MeshDevice answers them (MeshDevice::allocator()): alignments, banks and their sizes. The
// emulated device's DRAM banks are its DRAM channels, its L1 banks its worker cores (logical
// row-major order), as its interleaved buffers place pages.
#pragma once
#include <cstdint>

#include <tt-metalium/buffer.hpp>
#include <tt-metalium/buffer_types.hpp>
#include <tt-metalium/core_coord.hpp>

namespace tt::tt_metal {

class Allocator {
public:
    // bytes a page of `buffer_type` is aligned to (DRAM 32, L1 16 on the emulated device)
    uint32_t get_alignment(BufferType buffer_type) const;
    uint32_t get_num_banks(const BufferType& buffer_type) const;
    DeviceAddr get_bank_size(const BufferType& buffer_type) const;
    CoreCoord get_logical_core_from_bank_id(uint32_t bank_id) const;
    // bytes of a worker core's L1 (firmware's share included)
    DeviceAddr get_worker_l1_size() const;
};

}  // namespace tt::tt_metal
