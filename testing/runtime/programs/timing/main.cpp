// Calibration host for the modelled device time (testing/runtime/test_timing.py):
//   main matmul FIDELITY N          one core: N matmul_tiles into one DST tile, packed once
//   main dram CORES PAGES BLOCK bank|interleaved
//                                   CORES readers each read PAGES 2 KB pages from DRAM, a
//                                   barrier every BLOCK pages; "bank": reader i reads only pages
//                                   of bank i (CORES <= banks), "interleaved": pages round-robin
//   main noc N SIZE                 core (0,0) reads N transfers of SIZE bytes from core (1,0)'s
//                                   L1, then one barrier
#include <map>
#include <string>
#include <vector>

#include <tt-metalium/distributed.hpp>
#include <tt-metalium/host_api.hpp>
#include <tt-metalium/tensor_accessor_args.hpp>

using namespace tt::tt_metal;

int main(int argc, char** argv) {
    const std::string mode = argv[1];
    auto mesh = distributed::MeshDevice::create_unit_mesh(0);
    auto& cq = mesh->mesh_command_queue();
    const uint32_t grid_x = mesh->compute_with_storage_grid_size().x;
    Program program = CreateProgram();
    distributed::DeviceLocalBufferConfig local{.page_size = 2048, .buffer_type = BufferType::DRAM};
    std::shared_ptr<distributed::MeshBuffer> buf;
    if (mode == "matmul") {
        const tt::tt_metal::CoreCoord core{0, 0};
        buf = distributed::MeshBuffer::create(distributed::ReplicatedBufferConfig{.size = 2 * 2048}, local, mesh.get());
        for (uint32_t cb : {0u, 1u, 16u}) {
            CreateCircularBuffer(program, core, CircularBufferConfig(2048, {{cb, tt::DataFormat::Float16_b}})
                                                    .set_page_size(cb, 2048));
        }
        std::vector<uint32_t> rd_args;
        TensorAccessorArgs(*buf).append_to(rd_args);
        auto rd = CreateKernel(program, TT_KERNEL_DIR "/reader.cpp", core,
                               DataMovementConfig{.processor = DataMovementProcessor::RISCV_1,
                                                  .noc = NOC::RISCV_1_default, .compile_args = rd_args});
        CreateKernel(program, TT_KERNEL_DIR "/writer.cpp", core,
                     DataMovementConfig{.processor = DataMovementProcessor::RISCV_0, .noc = NOC::RISCV_0_default});
        const std::map<std::string, tt::tt_metal::MathFidelity> fid{{"LoFi", tt::tt_metal::MathFidelity::LoFi}, {"HiFi2", tt::tt_metal::MathFidelity::HiFi2},
                                                      {"HiFi3", tt::tt_metal::MathFidelity::HiFi3}, {"HiFi4", tt::tt_metal::MathFidelity::HiFi4}};
        auto cp = CreateKernel(program, TT_KERNEL_DIR "/compute.cpp", core,
                               ComputeConfig{.math_fidelity = fid.at(argv[2])});
        SetRuntimeArgs(program, rd, core, {0u, static_cast<uint32_t>(buf->address())});
        SetRuntimeArgs(program, cp, core, {static_cast<uint32_t>(std::stoul(argv[3]))});
    } else if (mode == "dram") {
        const uint32_t cores = std::stoul(argv[2]), pages = std::stoul(argv[3]), block = std::stoul(argv[4]);
        const bool by_bank = std::string(argv[5]) == "bank";
        const uint32_t banks = mesh->num_dram_channels();
        const uint32_t total = by_bank ? pages * banks : pages * cores;
        buf = distributed::MeshBuffer::create(distributed::ReplicatedBufferConfig{.size = uint64_t{total} * 2048}, local,
                                              mesh.get());
        std::vector<uint32_t> rd_args;
        TensorAccessorArgs(*buf).append_to(rd_args);
        for (uint32_t i = 0; i < cores; ++i) {
            const tt::tt_metal::CoreCoord core{i % grid_x, i / grid_x};
            CreateCircularBuffer(program, core, CircularBufferConfig(block * 2048, {{0, tt::DataFormat::Float16_b}})
                                                    .set_page_size(0, 2048));
            auto rd = CreateKernel(program, TT_KERNEL_DIR "/reader.cpp", core,
                                   DataMovementConfig{.processor = DataMovementProcessor::RISCV_1,
                                                      .noc = NOC::RISCV_1_default, .compile_args = rd_args});
            // pages first, first + stride, ...
            const uint32_t first = i, stride = by_bank ? banks : cores;
            SetRuntimeArgs(program, rd, core, {1u, static_cast<uint32_t>(buf->address()), pages, block, first, stride});
        }
    } else {
        const uint32_t n = std::stoul(argv[2]), size = std::stoul(argv[3]);
        const tt::tt_metal::CoreCoord core{0, 0}, peer{1, 0};
        CreateCircularBuffer(program, tt::tt_metal::CoreRange(core, peer),
                             CircularBufferConfig(65536, {{0, tt::DataFormat::Float16_b}}).set_page_size(0, 2048));
        auto rd = CreateKernel(program, TT_KERNEL_DIR "/reader.cpp", core,
                               DataMovementConfig{.processor = DataMovementProcessor::RISCV_1,
                                                  .noc = NOC::RISCV_1_default, .compile_args = {0u, 0u}});
        const tt::tt_metal::CoreCoord phys = mesh->worker_core_from_logical_core(peer);
        SetRuntimeArgs(program, rd, core, {2u, static_cast<uint32_t>(phys.x), static_cast<uint32_t>(phys.y), n, size});
    }
    distributed::MeshWorkload workload;
    workload.add_program(distributed::MeshCoordinateRange(mesh->shape()), std::move(program));
    distributed::EnqueueMeshWorkload(cq, workload, false);
    distributed::Finish(cq);
    mesh->close();
    return 0;
}
