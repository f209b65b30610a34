// tilelang-tt mock TT-Metalium: a MeshWorkload maps device ranges of a mesh to programs.
#pragma once
#include <memory>

#include <tt-metalium/mesh_coord.hpp>
#include <tt-metalium/program.hpp>

namespace tt::tt_metal::distributed {

class MeshWorkloadImpl;

class MeshWorkload {
public:
    MeshWorkload();
    ~MeshWorkload();
    MeshWorkload(MeshWorkload&& other) noexcept;
    MeshWorkload& operator=(MeshWorkload&& other) noexcept;

    void add_program(const MeshCoordinateRange& device_range, Program&& program);

    MeshWorkloadImpl& impl() { return *pimpl_; }

private:
    std::unique_ptr<MeshWorkloadImpl> pimpl_;
};

}  // namespace tt::tt_metal::distributed
