// tilelang-tt mock TT-Metalium: device addresses and shard specifications (the SDK's buffer.hpp;
// the emulator has MeshBuffers only, no Buffer). A sharded buffer cuts the tensor's 2-D grid of
// pages into shards of ShardSpec::shape elements, placed on the cores (L1) or DRAM banks
// ({bank, 0}) of ShardSpec::grid.
#pragma once
#include <array>
#include <cstdint>
#include <optional>

#include <tt-metalium/buffer_types.hpp>
#include <tt-metalium/core_coord.hpp>

namespace tt::tt_metal {

using DeviceAddr = uint64_t;
namespace distributed {
class MeshBuffer;
}  // namespace distributed

struct ShardSpec {
    CoreRangeSet grid;
    std::array<uint32_t, 2> shape;
    ShardOrientation orientation = ShardOrientation::ROW_MAJOR;

    ShardSpec(
        const CoreRangeSet& core_sets_,
        const std::array<uint32_t, 2>& shard_shape_,
        const ShardOrientation& shard_orientation_ = ShardOrientation::ROW_MAJOR) :
        grid(core_sets_), shape(shard_shape_), orientation(shard_orientation_) {}

    uint32_t num_cores() const { return this->grid.num_cores(); }
    uint32_t numel() const { return this->shape[0] * this->shape[1]; }
};

struct ShardSpecBuffer {
    ShardSpec tensor_shard_spec;
    std::array<uint32_t, 2> page_shape{};
    std::array<uint32_t, 2> tensor2d_shape_in_pages{};
    ShardSpecBuffer(
        const CoreRangeSet& core_sets_,
        const std::array<uint32_t, 2>& shard_shape_,
        const ShardOrientation& shard_orientation_,
        const std::array<uint32_t, 2>& page_shape,
        const std::array<uint32_t, 2>& tensor2d_shape_in_pages) :
        tensor_shard_spec(core_sets_, shard_shape_, shard_orientation_),
        page_shape(page_shape),
        tensor2d_shape_in_pages(tensor2d_shape_in_pages) {}
    ShardSpecBuffer(
        const ShardSpec& shard_spec,
        const std::array<uint32_t, 2>& page_shape,
        const std::array<uint32_t, 2>& tensor2d_shape_in_pages) :
        tensor_shard_spec(shard_spec), page_shape(page_shape), tensor2d_shape_in_pages(tensor2d_shape_in_pages) {}
    CoreRangeSet grid() const { return tensor_shard_spec.grid; }
    std::array<uint32_t, 2> shape() const { return tensor_shard_spec.shape; }
    ShardOrientation orientation() const { return tensor_shard_spec.orientation; }

    // shape in pages of one shard
    std::array<uint32_t, 2> shape_in_pages() const;
    DeviceAddr num_pages() const;
};

// How a buffer is split over the banks of one device (the emulator: interleaved, or a 2-D
// ShardSpecBuffer; no BufferDistributionSpec).
class BufferShardingArgs {
public:
    BufferShardingArgs();
    BufferShardingArgs(std::nullopt_t);
    BufferShardingArgs(ShardSpecBuffer shard_spec, TensorMemoryLayout buffer_layout);
    BufferShardingArgs(std::optional<ShardSpecBuffer> shard_spec, TensorMemoryLayout buffer_layout);
    BufferShardingArgs(const BufferShardingArgs& other);
    BufferShardingArgs(BufferShardingArgs&& other);
    BufferShardingArgs& operator=(const BufferShardingArgs& other);
    BufferShardingArgs& operator=(BufferShardingArgs&& other);
    ~BufferShardingArgs();

    const std::optional<ShardSpecBuffer>& shard_spec() const;
    TensorMemoryLayout buffer_layout() const;

private:
    std::optional<ShardSpecBuffer> shard_spec_;
    TensorMemoryLayout buffer_layout_ = TensorMemoryLayout::INTERLEAVED;
};

// A buffer on one device (the emulator: the device-level view of a MeshBuffer, reached through
// MeshBuffer::get_reference_buffer()).
class Buffer final {
public:
    Buffer(const Buffer& other) = delete;
    Buffer& operator=(const Buffer& other) = delete;
    Buffer(Buffer&& other) = delete;
    Buffer& operator=(Buffer&& other) = delete;
    ~Buffer();

    DeviceAddr size() const { return size_; }
    uint32_t address() const;
    BufferType buffer_type() const { return buffer_type_; }
    bool is_dram() const;
    bool is_l1() const;
    TensorMemoryLayout buffer_layout() const;
    bool has_shard_spec() const;
    DeviceAddr page_size() const;
    uint32_t num_pages() const;
    // a page's footprint in its bank: the page size rounded up to the memory's alignment
    uint32_t alignment() const;
    DeviceAddr aligned_page_size() const;
    DeviceAddr aligned_size() const;

private:
    friend class distributed::MeshBuffer;
    Buffer(DeviceAddr address, DeviceAddr size, BufferType type, DeviceAddr page_size, TensorMemoryLayout layout);
    DeviceAddr address_ = 0;
    DeviceAddr size_ = 0;
    BufferType buffer_type_ = BufferType::DRAM;
    DeviceAddr page_size_ = 0;
    TensorMemoryLayout layout_ = TensorMemoryLayout::INTERLEAVED;
    const distributed::MeshBuffer* mesh_buffer_ = nullptr;  // the MeshBuffer this is the device view of
    friend class TensorAccessorArgs;
};

}  // namespace tt::tt_metal
