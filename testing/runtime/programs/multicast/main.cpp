// Multicast test host: main IN.bin OUT.bin [num_dests_override]
// IN holds one 32x32 bf16 tile (row-major); OUT receives 4 tiles, one per core.
#include <fstream>
#include <string>
#include <vector>

#include <tt-metalium/bfloat16.hpp>
#include <tt-metalium/distributed.hpp>
#include <tt-metalium/host_api.hpp>
#include <tt-metalium/tensor_accessor_args.hpp>
#include <tt-metalium/tilize_utils.hpp>

using namespace tt::tt_metal;

int main(int argc, char** argv) {
    const uint32_t receivers = argc > 3 ? std::stoul(argv[3]) : 3;
    auto mesh = distributed::MeshDevice::create_unit_mesh(0);
    auto& cq = mesh->mesh_command_queue();
    std::vector<bfloat16> in(1024);
    std::ifstream(argv[1], std::ios::binary).read(reinterpret_cast<char*>(in.data()), 2048);
    distributed::DeviceLocalBufferConfig local{.page_size = 2048, .buffer_type = BufferType::DRAM};
    auto src = distributed::MeshBuffer::create(distributed::ReplicatedBufferConfig{.size = 2048}, local, mesh.get());
    auto dst = distributed::MeshBuffer::create(distributed::ReplicatedBufferConfig{.size = 4 * 2048}, local, mesh.get());
    distributed::EnqueueWriteMeshBuffer(cq, src, tilize_nfaces(in, 32, 32), false);

    Program program = CreateProgram();
    const tt::tt_metal::CoreRange cores(tt::tt_metal::CoreCoord{0, 0}, tt::tt_metal::CoreCoord{3, 0});
    CreateCircularBuffer(program, cores, CircularBufferConfig(2048, {{tt::CBIndex::c_0, tt::DataFormat::Float16_b}})
                                             .set_page_size(tt::CBIndex::c_0, 2048));
    CreateSemaphore(program, cores, 0);
    CreateSemaphore(program, cores, 0);
    std::vector<uint32_t> rd_args{receivers}, wr_args;
    TensorAccessorArgs(*src).append_to(rd_args);
    TensorAccessorArgs(*dst).append_to(wr_args);
    auto rd = CreateKernel(program, TT_KERNEL_DIR "/reader.cpp", cores,
                           DataMovementConfig{.processor = DataMovementProcessor::RISCV_1, .noc = NOC::RISCV_1_default, .compile_args = rd_args});
    auto wr = CreateKernel(program, TT_KERNEL_DIR "/writer.cpp", cores,
                           DataMovementConfig{.processor = DataMovementProcessor::RISCV_0, .noc = NOC::RISCV_0_default, .compile_args = wr_args});
    const tt::tt_metal::CoreCoord sender = mesh->worker_core_from_logical_core({0, 0});
    const tt::tt_metal::CoreCoord first = mesh->worker_core_from_logical_core({1, 0});
    const tt::tt_metal::CoreCoord last = mesh->worker_core_from_logical_core({3, 0});
    for (uint32_t x = 0; x < 4; ++x) {
        SetRuntimeArgs(program, rd, tt::tt_metal::CoreCoord{x, 0},
                       {static_cast<uint32_t>(src->address()), static_cast<uint32_t>(sender.x),
                        static_cast<uint32_t>(sender.y), static_cast<uint32_t>(first.x), static_cast<uint32_t>(first.y),
                        static_cast<uint32_t>(last.x), static_cast<uint32_t>(last.y), x == 0 ? 1u : 0u});
        SetRuntimeArgs(program, wr, tt::tt_metal::CoreCoord{x, 0}, {static_cast<uint32_t>(dst->address()), x});
    }
    distributed::MeshWorkload workload;
    workload.add_program(distributed::MeshCoordinateRange(mesh->shape()), std::move(program));
    distributed::EnqueueMeshWorkload(cq, workload, false);
    distributed::Finish(cq);
    std::vector<bfloat16> out;
    distributed::EnqueueReadMeshBuffer(cq, out, dst, true);
    out = untilize_nfaces(out, 4 * 32, 32);
    std::ofstream(argv[2], std::ios::binary).write(reinterpret_cast<const char*>(out.data()), out.size() * 2);
    mesh->close();
    return 0;
}
