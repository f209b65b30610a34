// tilelang-tt mock TT-Metalium: mesh shapes and coordinate ranges. The emulator opens unit meshes
// (one device, shape 1x1) only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tt::tt_metal::distributed {

class MeshShape {
public:
    explicit MeshShape(uint32_t x);
    MeshShape(uint32_t x, uint32_t y);
    MeshShape(uint32_t x, uint32_t y, uint32_t z);

    size_t dims() const;
    size_t mesh_size() const;

private:
    std::vector<uint32_t> extents_;
};

class MeshCoordinateRange {
public:
    // The range that spans a whole mesh of this shape.
    explicit MeshCoordinateRange(const MeshShape& shape);

    MeshShape shape() const;

private:
    MeshShape shape_;
};

}  // namespace tt::tt_metal::distributed
