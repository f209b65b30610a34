// tilelang-tt mock TT-Metalium: a circular buffer's configuration (total size, and per CB index
// its data format and page size). Member functions are defined in the library, as in the SDK.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <unordered_set>

#include <tt-metalium/circular_buffer_constants.h>
#include <tt-metalium/tt_backend_api_types.hpp>

namespace tt::tt_metal {

using CBHandle = uintptr_t;
class Buffer;

class CircularBufferConfig {
public:
    CircularBufferConfig(uint32_t total_size, const std::map<uint8_t, tt::DataFormat>& data_format_spec);

    CircularBufferConfig& set_page_size(uint8_t buffer_index, uint32_t page_size);
    CircularBufferConfig& set_total_size(uint32_t total_size);
    // the CB's ring is the L1 buffer's memory on each core (a sharded L1 buffer: the core's shard)
    CircularBufferConfig& set_globally_allocated_address(const Buffer& buffer);

    uint32_t total_size() const;
    const std::unordered_set<uint8_t>& buffer_indices() const;
    const std::array<std::optional<tt::DataFormat>, NUM_CIRCULAR_BUFFERS>& data_formats() const;
    const std::array<std::optional<uint32_t>, NUM_CIRCULAR_BUFFERS>& page_sizes() const;
    std::optional<uint32_t> globally_allocated_address() const;

private:
    uint32_t total_size_ = 0;
    std::array<std::optional<tt::DataFormat>, NUM_CIRCULAR_BUFFERS> data_formats_{};
    std::array<std::optional<uint32_t>, NUM_CIRCULAR_BUFFERS> page_sizes_{};
    std::unordered_set<uint8_t> buffer_indices_;
    std::optional<uint32_t> globally_allocated_address_;
};

}  // namespace tt::tt_metal
