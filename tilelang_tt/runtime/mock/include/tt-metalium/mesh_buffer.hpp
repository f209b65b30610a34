// tilelang-tt mock TT-Metalium: buffers allocated on a mesh (the emulator: interleaved DRAM
// buffers and sharded DRAM / L1 buffers, replicated over its unit mesh).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <variant>

#include <tt-metalium/buffer.hpp>
#include <tt-metalium/buffer_types.hpp>
#include <tt-metalium/mesh_device.hpp>
#include <tt-metalium/sub_device_types.hpp>

namespace tt::tt_metal::distributed {

// How a buffer is laid out in the memory banks of one device.
struct DeviceLocalBufferConfig {
    DeviceAddr page_size = 0;
    BufferType buffer_type = BufferType::DRAM;
    BufferShardingArgs sharding_args;
    std::optional<bool> bottom_up;
    std::optional<SubDeviceId> sub_device_id = std::nullopt;
};

// Every device of the mesh gets a buffer of this size.
struct ReplicatedBufferConfig {
    DeviceAddr size = 0;
};

// A buffer split over the devices of the mesh (not emulated).
struct ShardedBufferConfig {
    DeviceAddr global_size = 0;
};

enum class MeshBufferLayout : uint8_t { REPLICATED, SHARDED };
using MeshBufferConfig = std::variant<ReplicatedBufferConfig, ShardedBufferConfig>;

class MeshBuffer {
public:
    static std::shared_ptr<MeshBuffer> create(
        const MeshBufferConfig& mesh_buffer_config,
        const DeviceLocalBufferConfig& device_local_config,
        MeshDevice* mesh_device,
        std::optional<DeviceAddr> address = std::nullopt);
    ~MeshBuffer();

    MeshBuffer(const MeshBuffer&) = delete;
    MeshBuffer& operator=(const MeshBuffer&) = delete;
    MeshBuffer(MeshBuffer&& other) noexcept;
    MeshBuffer& operator=(MeshBuffer&& other) noexcept;

    bool is_allocated() const;
    void deallocate();

    MeshDevice* device() const;
    DeviceAddr size() const;
    DeviceAddr device_local_size() const { return device_local_size_; }
    DeviceAddr address() const { return address_; }

    MeshBufferLayout global_layout() const;
    const MeshBufferConfig& global_config() const { return config_; }
    const ShardedBufferConfig& global_shard_spec() const;
    const DeviceLocalBufferConfig& device_local_config() const { return device_local_config_; }

    // the buffer on the (one) device of the mesh
    Buffer* get_reference_buffer() const;
    // the device-level buffer whose allocation backs the mesh buffer (on the unit mesh: the same one)
    Buffer* get_backing_buffer() const;

    uint32_t page_size() const { return device_local_config_.page_size; }
    uint32_t num_pages() const { return page_size() == 0 ? 0 : device_local_size_ / page_size(); }

private:
    MeshBuffer(
        const MeshBufferConfig& config,
        const DeviceLocalBufferConfig& device_local_config,
        DeviceAddr address,
        DeviceAddr device_local_size,
        MeshDevice* mesh_device);

    MeshBufferConfig config_;
    DeviceLocalBufferConfig device_local_config_;
    MeshDevice* mesh_device_ = nullptr;
    DeviceAddr address_ = 0;
    DeviceAddr device_local_size_ = 0;
    bool allocated_ = false;
    std::shared_ptr<Buffer> reference_;
};

}  // namespace tt::tt_metal::distributed
