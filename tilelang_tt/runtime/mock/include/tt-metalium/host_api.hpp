// tilelang-tt mock TT-Metalium: the host API - programs, kernels, circular buffers, semaphores,
// runtime arguments. Declarations have the SDK's names, namespaces and signatures (a host
// program compiled against these headers links against TT-Metalium 0.81.1's libtt_metal.so);
// the emulator library defines them and runs programs on the CPU (docs/MOCK.md).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <variant>
#include <vector>

#include <tt-metalium/base_types.hpp>
#include <tt-metalium/buffer.hpp>
#include <tt-metalium/circular_buffer_config.hpp>
#include <tt-metalium/core_coord.hpp>
#include <tt-metalium/data_types.hpp>
#include <tt-metalium/dispatch_core_common.hpp>
#include <tt-metalium/kernel_types.hpp>
#include <tt-metalium/program.hpp>
#include <tt-metalium/sub_device_types.hpp>
#include <tt_stl/assert.hpp>
#include <tt_stl/span.hpp>
#include <tt-metalium/constants.hpp>
#include <tt-metalium/tt_backend_api_types.hpp>

namespace tt::tt_metal {

Program CreateProgram();

KernelHandle CreateKernel(
    Program& program,
    const std::string& file_name,
    const std::variant<CoreCoord, CoreRange, CoreRangeSet>& core_spec,
    const std::variant<DataMovementConfig, ComputeConfig>& config);

CBHandle CreateCircularBuffer(
    Program& program,
    const std::variant<CoreCoord, CoreRange, CoreRangeSet>& core_spec,
    const CircularBufferConfig& config);

// Returns the semaphore's id; kernels get its L1 address with get_semaphore(id).
uint32_t CreateSemaphore(
    Program& program, const std::variant<CoreRange, CoreRangeSet>& core_spec, uint32_t initial_value);

void SetRuntimeArgs(
    const Program& program,
    KernelHandle kernel,
    const std::variant<CoreCoord, CoreRange, CoreRangeSet>& core_spec,
    ttsl::Span<const uint32_t> runtime_args);

void SetRuntimeArgs(
    const Program& program,
    KernelHandle kernel,
    const std::variant<CoreCoord, CoreRange, CoreRangeSet>& core_spec,
    std::initializer_list<uint32_t> runtime_args);

// One argument list per core.
void SetRuntimeArgs(
    const Program& program,
    KernelHandle kernel,
    const std::vector<CoreCoord>& core_spec,
    const std::vector<std::vector<uint32_t>>& runtime_args);

}  // namespace tt::tt_metal
