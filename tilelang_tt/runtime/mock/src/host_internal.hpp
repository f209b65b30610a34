// tilelang-tt mock TT-Metalium: the library's side of the host API objects - the pimpl classes
// the public headers only name (detail::ProgramImpl, MeshDeviceImpl, MeshWorkloadImpl) and the
// emulated command queue. Host programs never see this header.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "emulator.hpp"
#include "tt-metalium/allocator.hpp"
#include "tt-metalium/distributed.hpp"
#include "tt-metalium/host_api.hpp"

namespace ttmock {

using tt::tt_metal::CoreCoord;
using tt::tt_metal::CoreRange;
using tt::tt_metal::CoreRangeSet;

struct CBAlloc {
    std::vector<CoreCoord> cores;
    std::map<uint8_t, tt::DataFormat> formats;
    std::map<uint8_t, uint32_t> page_sizes;
    uint32_t total_size = 0;
    std::optional<uint32_t> global_address;  // set_globally_allocated_address: the ring is that L1
};

struct KernelDesc {
    std::string path;
    std::vector<CoreCoord> cores;
    KernelKind kind;
    std::vector<uint32_t> compile_args;
    std::map<std::string, std::string> defines;
    std::unordered_map<std::string, uint32_t> named_compile_args;
    tt::tt_metal::ComputeConfig compute;
    std::map<std::pair<std::size_t, std::size_t>, std::vector<uint32_t>> runtime_args;
    // CB index -> data format on every core of the kernel, for the CBs created before it: what the
    // SDK's JIT generates into a kernel, so get_tile_size / get_dataformat are constant expressions
    std::map<uint8_t, tt::DataFormat> cb_formats;
};

struct SemaphoreDesc {
    std::vector<CoreCoord> cores;
    uint32_t initial;
};

// Page p of an interleaved DRAM buffer lives in bank p % banks at address + (p / banks) * this.
inline uint64_t dram_page_stride(uint64_t page_size) {
    const uint64_t a = device().prof.dram_align;
    return (page_size + a - 1) / a * a;
}

// Allocates a sharded buffer of `size` bytes as `local.sharding_args` describes; returns its
// address (the same in every bank or core holding shards).
uint64_t create_sharded_buffer(uint64_t size, const tt::tt_metal::distributed::DeviceLocalBufferConfig& local);
// an interleaved L1 buffer: pages round-robin over the worker cores' L1 (see ShardedBuffer)
uint64_t create_l1_interleaved_buffer(uint64_t size, uint32_t page_size);
void place_sharded(ShardedBuffer& b, const char* what);

// Runs a program on the emulated device (host.cpp).
void launch(tt::tt_metal::detail::ProgramImpl& program);

}  // namespace ttmock

namespace tt::tt_metal::detail {

class ProgramImpl {
public:
    std::vector<ttmock::CBAlloc> cbs;
    std::vector<ttmock::KernelDesc> kernels;
    std::vector<ttmock::SemaphoreDesc> semaphores;
};

}  // namespace tt::tt_metal::detail

namespace tt::tt_metal::distributed {

class MeshWorkloadImpl {
public:
    std::vector<Program> programs;
};

class MeshDeviceImpl {
public:
    MeshShape shape{1, 1};
    std::unique_ptr<MeshCommandQueue> command_queue;
    std::unique_ptr<Allocator> allocator = std::make_unique<Allocator>();
    bool open = true;
};

}  // namespace tt::tt_metal::distributed
