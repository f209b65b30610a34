// Overlapping NOC writes in one round: main OUT.bin
// Cores (1,0) and (2,0) each fill a tile with their own value and, in the same round, write it to
// the same L1 bytes of core (0,0) and to the same DRAM page 0; core (0,0), once both told it so
// through a semaphore, writes those L1 bytes to DRAM page 1. The emulator applies a round's
// overlapping writes in core order, so both pages hold core (2,0)'s tile.
#include <fstream>
#include <string>
#include <vector>

#include <tt-metalium/bfloat16.hpp>
#include <tt-metalium/distributed.hpp>
#include <tt-metalium/host_api.hpp>
#include <tt-metalium/tensor_accessor_args.hpp>

using namespace tt::tt_metal;

int main(int argc, char** argv) {
    auto mesh = distributed::MeshDevice::create_unit_mesh(0);
    auto& cq = mesh->mesh_command_queue();
    distributed::DeviceLocalBufferConfig local{.page_size = 2048, .buffer_type = BufferType::DRAM};
    auto dst = distributed::MeshBuffer::create(distributed::ReplicatedBufferConfig{.size = 2 * 2048}, local, mesh.get());

    Program program = CreateProgram();
    const tt::tt_metal::CoreRange cores(tt::tt_metal::CoreCoord{0, 0}, tt::tt_metal::CoreCoord{2, 0});
    CreateCircularBuffer(program, cores, CircularBufferConfig(2048, {{tt::CBIndex::c_0, tt::DataFormat::Float16_b}})
                                             .set_page_size(tt::CBIndex::c_0, 2048));
    CreateSemaphore(program, cores, 0);
    std::vector<uint32_t> args;
    TensorAccessorArgs(*dst).append_to(args);
    auto k = CreateKernel(program, TT_KERNEL_DIR "/writer.cpp", cores,
                          DataMovementConfig{.processor = DataMovementProcessor::RISCV_0, .noc = NOC::RISCV_0_default, .compile_args = args});
    const tt::tt_metal::CoreCoord target = mesh->worker_core_from_logical_core({0, 0});
    for (uint32_t x = 0; x < 3; ++x) {
        SetRuntimeArgs(program, k, tt::tt_metal::CoreCoord{x, 0},
                       {static_cast<uint32_t>(dst->address()), x, static_cast<uint32_t>(target.x),
                        static_cast<uint32_t>(target.y)});
    }
    distributed::MeshWorkload workload;
    workload.add_program(distributed::MeshCoordinateRange(mesh->shape()), std::move(program));
    distributed::EnqueueMeshWorkload(cq, workload, false);
    distributed::Finish(cq);
    std::vector<bfloat16> out;
    distributed::EnqueueReadMeshBuffer(cq, out, dst, true);
    std::ofstream(argv[1], std::ios::binary).write(reinterpret_cast<const char*>(out.data()), out.size() * 2);
    mesh->close();
    return 0;
}
