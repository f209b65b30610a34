// tilelang-tt mock TT-Metalium: host API (programs, circular buffers, kernels, runtime args,
// MeshDevice, MeshBuffer, workloads). Signatures follow the SDK; the emulator runs programs on
// the CPU (see docs/MOCK.md).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <variant>
#include <vector>

#include "tt-metalium/bfloat16.hpp"
#include "tt-metalium/core_coord.hpp"
#include "ttmock/types.hpp"

namespace ttmock {
struct ProgramImpl;
struct BufferImpl;
}  // namespace ttmock

namespace tt::tt_metal {

using KernelHandle = uint32_t;
using CBHandle = uintptr_t;
using DeviceAddr = uint64_t;

enum class BufferType { DRAM, L1, SYSTEM_MEMORY, L1_SMALL, TRACE };
enum class DataMovementProcessor { RISCV_0 = 0, RISCV_1 = 1 };
enum NOC : uint8_t { RISCV_0_default = 0, RISCV_1_default = 1, NOC_0 = 0, NOC_1 = 1 };
enum NOC_MODE : uint8_t { DM_DEDICATED_NOC = 0, DM_DYNAMIC_NOC = 1 };
enum class KernelBuildOptLevel : uint8_t { O1, O2, O3, O0, Os, Ofast, Oz };

struct DataMovementConfig {
    DataMovementProcessor processor = DataMovementProcessor::RISCV_0;
    NOC noc = NOC::RISCV_0_default;
    NOC_MODE noc_mode = NOC_MODE::DM_DEDICATED_NOC;
    std::vector<uint32_t> compile_args;
    std::map<std::string, std::string> defines;
    std::unordered_map<std::string, uint32_t> named_compile_args;
    KernelBuildOptLevel opt_level = KernelBuildOptLevel::O2;
};
struct ReaderDataMovementConfig : DataMovementConfig {
    ReaderDataMovementConfig(std::vector<uint32_t> args = {}, std::map<std::string, std::string> d = {}) {
        processor = DataMovementProcessor::RISCV_1;
        noc = NOC::RISCV_1_default;
        compile_args = std::move(args);
        defines = std::move(d);
    }
};
struct WriterDataMovementConfig : DataMovementConfig {
    WriterDataMovementConfig(std::vector<uint32_t> args = {}, std::map<std::string, std::string> d = {}) {
        processor = DataMovementProcessor::RISCV_0;
        noc = NOC::RISCV_0_default;
        compile_args = std::move(args);
        defines = std::move(d);
    }
};

struct ComputeConfig {
    MathFidelity math_fidelity = MathFidelity::HiFi4;
    bool fp32_dest_acc_en = false;
    bool dst_full_sync_en = false;
    std::vector<UnpackToDestMode> unpack_to_dest_mode;
    bool bfp8_pack_precise = false;
    bool math_approx_mode = false;
    std::vector<uint32_t> compile_args;
    std::map<std::string, std::string> defines;
    std::unordered_map<std::string, uint32_t> named_compile_args;
    KernelBuildOptLevel opt_level = KernelBuildOptLevel::O3;
};
struct EthernetConfig {
    std::vector<uint32_t> compile_args;
};

class CircularBufferConfig {
public:
    CircularBufferConfig(uint32_t total_size, const std::map<uint8_t, tt::DataFormat>& data_format_spec);
    CircularBufferConfig& set_page_size(uint8_t buffer_index, uint32_t page_size);
    uint32_t total_size() const { return total_size_; }
    const std::map<uint8_t, tt::DataFormat>& data_formats() const { return formats_; }
    const std::map<uint8_t, uint32_t>& page_sizes() const { return page_sizes_; }
private:
    uint32_t total_size_;
    std::map<uint8_t, tt::DataFormat> formats_;
    std::map<uint8_t, uint32_t> page_sizes_;
};

class Program {
public:
    Program();
    std::shared_ptr<ttmock::ProgramImpl> impl;
};
Program CreateProgram();

using CoreSpec = std::variant<CoreCoord, CoreRange, CoreRangeSet>;

CBHandle CreateCircularBuffer(Program& program, const CoreSpec& core_spec, const CircularBufferConfig& config);
KernelHandle CreateKernel(Program& program, const std::string& file_name, const CoreSpec& core_spec,
                          const std::variant<DataMovementConfig, ComputeConfig, EthernetConfig>& config);
uint32_t CreateSemaphore(Program& program, const CoreSpec& core_spec, uint32_t initial_value);

void SetRuntimeArgs(const Program& program, KernelHandle kernel, const CoreSpec& core_spec,
                    const std::vector<uint32_t>& runtime_args);
void SetRuntimeArgs(const Program& program, KernelHandle kernel, const CoreSpec& core_spec,
                    std::initializer_list<uint32_t> runtime_args);
std::vector<uint32_t>& GetRuntimeArgs(const Program& program, KernelHandle kernel, const CoreCoord& core);

namespace distributed {

struct MeshShape {
    uint32_t rows = 1, cols = 1;
    std::size_t mesh_size() const { return static_cast<std::size_t>(rows) * cols; }
};
struct MeshCoordinateRange {
    MeshCoordinateRange() = default;
    explicit MeshCoordinateRange(const MeshShape& shape) : shape(shape) {}
    MeshShape shape;
};

class MeshDevice;
class MeshCommandQueue {
public:
    explicit MeshCommandQueue(MeshDevice* d) : device_(d) {}
    MeshDevice* device() const { return device_; }
private:
    MeshDevice* device_;
};

class MeshDevice {
public:
    static std::shared_ptr<MeshDevice> create_unit_mesh(int device_id, std::size_t l1_small_size = 0,
                                                        std::size_t trace_region_size = 0,
                                                        std::size_t num_command_queues = 1);
    MeshDevice();
    ~MeshDevice();
    MeshCommandQueue& mesh_command_queue(std::size_t cq_id = 0);
    MeshShape shape() const { return MeshShape{}; }
    CoreCoord compute_with_storage_grid_size() const;
    CoreCoord logical_grid_size() const { return compute_with_storage_grid_size(); }
    CoreCoord worker_core_from_logical_core(const CoreCoord& logical) const;
    CoreCoord virtual_core_from_logical_core(const CoreCoord& logical, int core_type = 0) const {
        (void)core_type;
        return worker_core_from_logical_core(logical);
    }
    std::size_t num_dram_channels() const;
    uint32_t l1_size_per_core() const;
    bool close();
    int id() const { return 0; }
private:
    MeshCommandQueue cq_;
    bool open_ = true;
};

struct DeviceLocalBufferConfig {
    DeviceAddr page_size = 0;
    BufferType buffer_type = BufferType::DRAM;
    bool bottom_up = true;
};
struct ReplicatedBufferConfig {
    DeviceAddr size = 0;
};

class MeshBuffer {
public:
    static std::shared_ptr<MeshBuffer> create(const ReplicatedBufferConfig& global_config,
                                              const DeviceLocalBufferConfig& local_config,
                                              MeshDevice* mesh_device,
                                              std::optional<DeviceAddr> address = std::nullopt);
    DeviceAddr address() const;
    DeviceAddr size() const;
    DeviceAddr page_size() const;
    BufferType buffer_type() const;
    std::shared_ptr<ttmock::BufferImpl> impl;
};

class MeshWorkload {
public:
    void add_program(const MeshCoordinateRange& range, Program&& program);
    std::vector<Program>& get_programs() { return programs_; }
private:
    std::vector<Program> programs_;
};

void EnqueueMeshWorkload(MeshCommandQueue& cq, MeshWorkload& workload, bool blocking);
void Finish(MeshCommandQueue& cq);

namespace detail {
void write_buffer(MeshBuffer& buffer, const void* data, std::size_t bytes);
void read_buffer(MeshBuffer& buffer, void* data, std::size_t bytes);
}  // namespace detail

template <typename T>
void EnqueueWriteMeshBuffer(MeshCommandQueue& cq, const std::shared_ptr<MeshBuffer>& buffer,
                            const std::vector<T>& src, bool blocking = false) {
    (void)cq;
    (void)blocking;
    detail::write_buffer(*buffer, src.data(), src.size() * sizeof(T));
}

template <typename T>
void EnqueueReadMeshBuffer(MeshCommandQueue& cq, std::vector<T>& dst,
                           const std::shared_ptr<MeshBuffer>& buffer, bool blocking = true) {
    (void)cq;
    (void)blocking;
    dst.resize(buffer->size() / sizeof(T));
    detail::read_buffer(*buffer, dst.data(), dst.size() * sizeof(T));
}

}  // namespace distributed

std::tuple<uint32_t, CoreRangeSet, CoreRangeSet, CoreRangeSet, uint32_t, uint32_t> split_work_to_cores(
    const CoreCoord grid_size, uint32_t units_to_divide, bool row_wise = false);

}  // namespace tt::tt_metal
