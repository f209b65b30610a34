// tilelang-tt mock TT-Metalium: launching workloads and moving MeshBuffer data.
#pragma once
#include <stdexcept>
#include <string>
#include <memory>
#include <vector>

#include <tt-metalium/mesh_buffer.hpp>
#include <tt-metalium/mesh_command_queue.hpp>
#include <tt-metalium/mesh_coord.hpp>
#include <tt-metalium/mesh_workload.hpp>
#include <tt-metalium/sub_device_types.hpp>
#include <tt_stl/span.hpp>

namespace tt::tt_metal::distributed {

void EnqueueMeshWorkload(MeshCommandQueue& mesh_cq, MeshWorkload& mesh_workload, bool blocking);

template <typename DType>
void EnqueueWriteMeshBuffer(
    MeshCommandQueue& mesh_cq,
    std::shared_ptr<MeshBuffer>& mesh_buffer,
    const std::vector<DType>& src,
    bool blocking = false) {
    // the queue reads the buffer's size from src.data(): a shorter vector would be read past its
    // end (undefined behaviour on the host), so the emulator refuses it
    if (src.size() * sizeof(DType) < mesh_buffer->size()) {
        throw std::runtime_error(
            "TT-MOCK ERROR: EnqueueWriteMeshBuffer: the source holds " + std::to_string(src.size() * sizeof(DType)) +
            " bytes but the MeshBuffer " + std::to_string(mesh_buffer->size()) +
            " (the SDK reads the buffer's size from src.data(), past the vector's end)");
    }
    mesh_cq.enqueue_write_mesh_buffer(mesh_buffer, src.data(), blocking);
}

template <typename DType>
void EnqueueReadMeshBuffer(
    MeshCommandQueue& mesh_cq,
    std::vector<DType>& dst,
    std::shared_ptr<MeshBuffer>& mesh_buffer,
    bool blocking = true) {
    if (mesh_buffer->global_layout() == MeshBufferLayout::SHARDED) {
        dst.resize(mesh_buffer->global_shard_spec().global_size / sizeof(DType));
    } else {
        dst.resize(mesh_buffer->size() / sizeof(DType));
    }
    mesh_cq.enqueue_read_mesh_buffer(dst.data(), mesh_buffer, blocking);
}

// Blocks until everything enqueued on the queue has completed.
void Finish(MeshCommandQueue& mesh_cq, ttsl::Span<const SubDeviceId> sub_device_ids = {});

}  // namespace tt::tt_metal::distributed
