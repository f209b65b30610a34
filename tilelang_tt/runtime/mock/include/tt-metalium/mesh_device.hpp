// tilelang-tt mock TT-Metalium: MeshDevice, here always a unit mesh over the emulated device.
// Its state is the library's MeshDeviceImpl, as in the SDK.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include <hostdevcommon/common_values.hpp>
#include <tt-metalium/core_coord.hpp>
#include <tt-metalium/dispatch_core_common.hpp>
#include <tt-metalium/mesh_coord.hpp>
#include <tt_stl/span.hpp>

namespace tt::tt_metal {
class Allocator;
}  // namespace tt::tt_metal

namespace tt::tt_metal::distributed {

class MeshCommandQueue;
class MeshDeviceImpl;

class MeshDevice : public std::enable_shared_from_this<MeshDevice> {
    friend class MeshDeviceImpl;

private:
    MeshDevice() = default;
    std::unique_ptr<MeshDeviceImpl> pimpl_;

public:
    ~MeshDevice();

    MeshDevice(const MeshDevice&) = delete;
    MeshDevice& operator=(const MeshDevice&) = delete;
    MeshDevice(MeshDevice&&) = delete;
    MeshDevice& operator=(MeshDevice&&) = delete;

    int id() const;
    int num_dram_channels() const;
    uint32_t l1_size_per_core() const;
    CoreCoord logical_grid_size() const;
    CoreCoord worker_core_from_logical_core(const CoreCoord& logical_core) const;
    CoreCoord compute_with_storage_grid_size() const;
    // the device's allocator: alignments, banks (tt-metalium/allocator.hpp)
    const std::unique_ptr<Allocator>& allocator() const;
    bool close();

    size_t num_devices() const;
    const MeshShape& shape() const;

    MeshCommandQueue& mesh_command_queue(std::optional<uint8_t> cq_id = std::nullopt) const;

    static std::shared_ptr<MeshDevice> create_unit_mesh(
        int device_id,
        size_t l1_small_size = DEFAULT_L1_SMALL_SIZE,
        size_t trace_region_size = DEFAULT_TRACE_REGION_SIZE,
        size_t num_command_queues = 1,
        const DispatchCoreConfig& dispatch_core_config = DispatchCoreConfig{},
        ttsl::Span<const std::uint32_t> l1_bank_remap = {},
        size_t worker_l1_size = DEFAULT_WORKER_L1_SIZE);

    const MeshDeviceImpl& impl() const { return *pimpl_; }
    MeshDeviceImpl& impl() { return *pimpl_; }
};

}  // namespace tt::tt_metal::distributed
