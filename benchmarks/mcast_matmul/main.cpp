// tt-metal's 2D reuse-multicast matmul dataflow, hand-written for the emulator: the modelled
// device time of the dataflow tt-metal's out-of-box matmul uses (benchmarks/gemm_flops.py).
//   main M K N KB FIDELITY A.bin B.bin C.bin      (bf16, row-major; sizes multiples of 256)
// Core (x, y) of the 8x8 grid computes output block (y, x) of (M/8) x (N/8). Per K block of KB
// tiles, the core of column 0 reads its row's A block from DRAM and multicasts it along the row,
// the core of row 0 reads its column's B block and multicasts it down the column (semaphores:
// receivers signal ready, the sender multicasts the data and then the valid flag). The compute
// kernel accumulates the output block in L1 with the packer (PACKER_L1_ACC), in sub-blocks of
// 2 x 4 tiles held in DST across the K block.
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <tt-metalium/bfloat16.hpp>
#include <tt-metalium/distributed.hpp>
#include <tt-metalium/host_api.hpp>
#include <tt-metalium/tensor_accessor_args.hpp>
#include <tt-metalium/tilize_utils.hpp>

using namespace tt::tt_metal;

static std::vector<bfloat16> load(const char* path, size_t n) {
    std::vector<bfloat16> v(n);
    std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(v.data()), n * 2);
    return v;
}

int main(int argc, char** argv) {
    const uint32_t M = std::stoul(argv[1]), K = std::stoul(argv[2]), N = std::stoul(argv[3]);
    const uint32_t kb = std::stoul(argv[4]);
    const std::map<std::string, tt::tt_metal::MathFidelity> fid{
        {"LoFi", tt::tt_metal::MathFidelity::LoFi}, {"HiFi2", tt::tt_metal::MathFidelity::HiFi2},
        {"HiFi3", tt::tt_metal::MathFidelity::HiFi3}, {"HiFi4", tt::tt_metal::MathFidelity::HiFi4}};
    const uint32_t Mt = M / 32, Kt = K / 32, Nt = N / 32, Mb = Mt / 8, Nb = Nt / 8;
    auto mesh = distributed::MeshDevice::create_unit_mesh(0);
    auto& cq = mesh->mesh_command_queue();
    distributed::DeviceLocalBufferConfig local{.page_size = 2048, .buffer_type = BufferType::DRAM};
    auto a = distributed::MeshBuffer::create(distributed::ReplicatedBufferConfig{.size = uint64_t{M} * K * 2}, local, mesh.get());
    auto b = distributed::MeshBuffer::create(distributed::ReplicatedBufferConfig{.size = uint64_t{K} * N * 2}, local, mesh.get());
    auto c = distributed::MeshBuffer::create(distributed::ReplicatedBufferConfig{.size = uint64_t{M} * N * 2}, local, mesh.get());
    distributed::EnqueueWriteMeshBuffer(cq, a, tilize_nfaces(load(argv[6], size_t{M} * K), M, K), true);
    distributed::EnqueueWriteMeshBuffer(cq, b, tilize_nfaces(load(argv[7], size_t{K} * N), K, N), true);

    Program program = CreateProgram();
    const tt::tt_metal::CoreRange grid(tt::tt_metal::CoreCoord{0, 0}, tt::tt_metal::CoreCoord{7, 7});
    auto cb = [&](uint32_t index, uint32_t tiles) {
        CreateCircularBuffer(program, grid, CircularBufferConfig(tiles * 2048, {{index, tt::DataFormat::Float16_b}})
                                                .set_page_size(index, 2048));
    };
    cb(0, 2 * Mb * kb);  // A blocks, double-buffered
    cb(1, 2 * kb * Nb);  // B blocks
    cb(16, Mb * Nb);     // the output block
    for (int s = 0; s < 4; ++s) CreateSemaphore(program, grid, 0);
    std::vector<uint32_t> in0_args{Mb, kb, Kt / kb, Kt}, in1_args{Nb, kb, Kt / kb, Nt, Mb};
    TensorAccessorArgs(*a).append_to(in0_args);
    TensorAccessorArgs(*b).append_to(in1_args);
    TensorAccessorArgs(*c).append_to(in1_args);
    auto in0 = CreateKernel(program, TT_KERNEL_DIR "/reader_in0.cpp", grid,
                            DataMovementConfig{.processor = DataMovementProcessor::RISCV_1,
                                               .noc = NOC::RISCV_1_default, .compile_args = in0_args});
    auto in1 = CreateKernel(program, TT_KERNEL_DIR "/reader_in1_writer.cpp", grid,
                            DataMovementConfig{.processor = DataMovementProcessor::RISCV_0,
                                               .noc = NOC::RISCV_0_default, .compile_args = in1_args});
    CreateKernel(program, TT_KERNEL_DIR "/compute.cpp", grid,
                 ComputeConfig{.math_fidelity = fid.at(argv[5]), .compile_args = {Mb, Nb, kb, Kt / kb}});
    for (uint32_t y = 0; y < 8; ++y) {
        for (uint32_t x = 0; x < 8; ++x) {
            const tt::tt_metal::CoreCoord row0 = mesh->worker_core_from_logical_core({0, y});
            const tt::tt_metal::CoreCoord row1 = mesh->worker_core_from_logical_core({1, y});
            const tt::tt_metal::CoreCoord row7 = mesh->worker_core_from_logical_core({7, y});
            const tt::tt_metal::CoreCoord col0 = mesh->worker_core_from_logical_core({x, 0});
            const tt::tt_metal::CoreCoord col1 = mesh->worker_core_from_logical_core({x, 1});
            const tt::tt_metal::CoreCoord col7 = mesh->worker_core_from_logical_core({x, 7});
            const tt::tt_metal::CoreCoord core{x, y};
            SetRuntimeArgs(program, in0, core,
                           {static_cast<uint32_t>(a->address()), y, x == 0 ? 1u : 0u,
                            static_cast<uint32_t>(row0.x), static_cast<uint32_t>(row0.y),
                            static_cast<uint32_t>(row1.x), static_cast<uint32_t>(row1.y),
                            static_cast<uint32_t>(row7.x), static_cast<uint32_t>(row7.y)});
            SetRuntimeArgs(program, in1, core,
                           {static_cast<uint32_t>(b->address()), static_cast<uint32_t>(c->address()), x, y,
                            y == 0 ? 1u : 0u, static_cast<uint32_t>(col0.x), static_cast<uint32_t>(col0.y),
                            static_cast<uint32_t>(col1.x), static_cast<uint32_t>(col1.y),
                            static_cast<uint32_t>(col7.x), static_cast<uint32_t>(col7.y)});
        }
    }
    distributed::MeshWorkload workload;
    workload.add_program(distributed::MeshCoordinateRange(mesh->shape()), std::move(program));
    distributed::EnqueueMeshWorkload(cq, workload, false);
    distributed::Finish(cq);
    std::vector<bfloat16> out;
    distributed::EnqueueReadMeshBuffer(cq, out, c, true);
    mesh->close();
    out = untilize_nfaces(out, M, N);
    std::ofstream(argv[8], std::ios::binary).write(reinterpret_cast<const char*>(out.data()), out.size() * 2);
    return 0;
}
