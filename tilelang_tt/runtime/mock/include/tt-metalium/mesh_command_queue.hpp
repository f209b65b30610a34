// tilelang-tt mock TT-Metalium: the command queue of a MeshDevice. As in the SDK it is an abstract
// interface (the library implements it); the Enqueue* functions of distributed.hpp call it.
#pragma once
#include <cstdint>
#include <memory>

#include <tt-metalium/mesh_buffer.hpp>
#include <tt-metalium/mesh_workload.hpp>
#include <tt-metalium/sub_device_types.hpp>
#include <tt_stl/span.hpp>

namespace tt::tt_metal::distributed {

class MeshDevice;

class MeshCommandQueue {
protected:
    MeshDevice* mesh_device_ = nullptr;
    uint32_t id_ = 0;

    MeshCommandQueue(MeshDevice* mesh_device, uint32_t id) : mesh_device_(mesh_device), id_(id) {}

public:
    MeshCommandQueue(const MeshCommandQueue& other) = delete;
    MeshCommandQueue& operator=(const MeshCommandQueue& other) = delete;
    virtual ~MeshCommandQueue() = default;

    MeshDevice* device() const { return mesh_device_; }
    uint32_t id() const { return id_; }

    virtual void enqueue_mesh_workload(MeshWorkload& mesh_workload, bool blocking) = 0;
    virtual void enqueue_write_mesh_buffer(
        const std::shared_ptr<MeshBuffer>& buffer, const void* host_data, bool blocking) = 0;
    virtual void enqueue_read_mesh_buffer(
        void* host_data, const std::shared_ptr<MeshBuffer>& buffer, bool blocking) = 0;
    virtual void finish(ttsl::Span<const SubDeviceId> sub_device_ids = {}) = 0;
};

}  // namespace tt::tt_metal::distributed
