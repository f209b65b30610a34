// tilelang-tt mock TT-Metalium: host side of TensorAccessorArgs (appends the accessor's
// compile-time args as the SDK does for an interleaved buffer: the ArgsConfig word, bit 1 IsDram,
// then the aligned page size).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "tt-metalium/host_api.hpp"

namespace tt::tt_metal {
class TensorAccessorArgs {
public:
    explicit TensorAccessorArgs(const distributed::MeshBuffer& buffer);
    explicit TensorAccessorArgs(const std::shared_ptr<distributed::MeshBuffer>& buffer)
        : TensorAccessorArgs(*buffer) {}
    void append_to(std::vector<uint32_t>& compile_time_args) const;
    std::vector<uint32_t> get_compile_time_args() const;
private:
    uint32_t config_ = 0;
    uint32_t page_ = 0;
};
}  // namespace tt::tt_metal
