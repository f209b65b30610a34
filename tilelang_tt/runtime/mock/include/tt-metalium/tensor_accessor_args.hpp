// tilelang-tt mock TT-Metalium: host side of TensorAccessorArgs. append_to() appends the
// accessor's compile-time args as the SDK does for an interleaved buffer: the ArgsConfig word
// (IsDram for DRAM) and the page size aligned to the memory's alignment.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <hostdevcommon/tensor_accessor/arg_config.hpp>
#include <tt-metalium/buffer.hpp>
#include <tt-metalium/mesh_buffer.hpp>

namespace tt::tt_metal {

class TensorAccessorArgs {
public:
    TensorAccessorArgs() = default;
    explicit TensorAccessorArgs(
        const distributed::MeshBuffer& buffer,
        tensor_accessor::ArgsConfig args_config = tensor_accessor::ArgConfig::None);
    explicit TensorAccessorArgs(
        const distributed::MeshBuffer* buffer,
        tensor_accessor::ArgsConfig args_config = tensor_accessor::ArgConfig::None);
    explicit TensorAccessorArgs(
        const std::shared_ptr<distributed::MeshBuffer>& buffer,
        tensor_accessor::ArgsConfig args_config = tensor_accessor::ArgConfig::None);
    // a device buffer: the emulator's are the device views of MeshBuffers (get_backing_buffer())
    explicit TensorAccessorArgs(
        const Buffer& buffer, tensor_accessor::ArgsConfig args_config = tensor_accessor::ArgConfig::None);
    explicit TensorAccessorArgs(
        const Buffer* buffer, tensor_accessor::ArgsConfig args_config = tensor_accessor::ArgConfig::None);
    explicit TensorAccessorArgs(
        const std::shared_ptr<Buffer>& buffer,
        tensor_accessor::ArgsConfig args_config = tensor_accessor::ArgConfig::None);

    void append_to(std::vector<uint32_t>& compile_time_args) const;
    std::vector<uint32_t> get_compile_time_args() const;

    static constexpr size_t MAX_NUM_DIMENSIONS = 8;

private:
    void update_args_config();

    const distributed::MeshBuffer* buffer_ = nullptr;
    tensor_accessor::ArgsConfig args_config_ = tensor_accessor::ArgConfig::None;
};

}  // namespace tt::tt_metal
