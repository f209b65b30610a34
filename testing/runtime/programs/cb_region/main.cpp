// Shared CB region test host: main MODE
// One CircularBufferConfig of four bf16 pages holds CBs c_0 and c_1 (one L1 region). The kernel
// (region.cpp) uses c_1 on pages c_0 has freed (MODE 0: allowed), or on pages c_0 still holds
// (MODE 1: an error the emulator reports). MODE 2 adds a 32-byte CB c_2 and a tile CB c_3 after it;
// the kernel prints c_3's distance from c_2 (the SDK places each CB at the DRAM alignment: 32 / 64).
#include <string>
#include <vector>

#include <tt-metalium/distributed.hpp>
#include <tt-metalium/host_api.hpp>

using namespace tt::tt_metal;

int main(int argc, char** argv) {
    const uint32_t mode = argc > 1 ? std::stoul(argv[1]) : 0;
    auto mesh = distributed::MeshDevice::create_unit_mesh(0);
    auto& cq = mesh->mesh_command_queue();
    Program program = CreateProgram();
    const tt::tt_metal::CoreCoord core{0, 0};
    CreateCircularBuffer(program, core,
                         CircularBufferConfig(4 * 2048, {{tt::CBIndex::c_0, tt::DataFormat::Float16_b},
                                                         {tt::CBIndex::c_1, tt::DataFormat::Float16_b}})
                             .set_page_size(tt::CBIndex::c_0, 2048)
                             .set_page_size(tt::CBIndex::c_1, 2048));
    if (mode == 2) {
        CreateCircularBuffer(program, core,
                             CircularBufferConfig(32, {{tt::CBIndex::c_2, tt::DataFormat::Float16_b}})
                                 .set_page_size(tt::CBIndex::c_2, 32));
        CreateCircularBuffer(program, core,
                             CircularBufferConfig(2048, {{tt::CBIndex::c_3, tt::DataFormat::Float16_b}})
                                 .set_page_size(tt::CBIndex::c_3, 2048));
    }
    CreateKernel(program, TT_KERNEL_DIR "/region.cpp", core,
                 DataMovementConfig{.processor = DataMovementProcessor::RISCV_1, .noc = NOC::RISCV_1_default,
                                    .compile_args = {mode}});
    distributed::MeshWorkload workload;
    workload.add_program(distributed::MeshCoordinateRange(mesh->shape()), std::move(program));
    distributed::EnqueueMeshWorkload(cq, workload, false);
    distributed::Finish(cq);
    mesh->close();
    return 0;
}
