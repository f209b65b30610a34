// Reference-numerics host: main <op> <n> <fidelity> <fp32_acc> <kblock> A.bin B.bin C.bin
// op: add | sub | matmul; A, B, C: n x n row-major bf16; fidelity: LoFi | HiFi2 | HiFi3 | HiFi4;
// kblock: 0 = accumulate over all of K in DST, else K block size with packer L1 accumulation.
#include <cstdio>
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

int main(int argc, char** argv) {
    if (argc != 9) return 2;
    const std::string op = argv[1];
    const uint32_t n = std::stoul(argv[2]);
    const std::map<std::string, MathFidelity> fidelities = {
        {"LoFi", MathFidelity::LoFi}, {"HiFi2", MathFidelity::HiFi2},
        {"HiFi3", MathFidelity::HiFi3}, {"HiFi4", MathFidelity::HiFi4}};
    const MathFidelity fidelity = fidelities.at(argv[3]);
    const bool fp32_acc = std::string(argv[4]) == "1";
    const std::string kblock = argv[5];
    const uint32_t tiles = n * n / 1024, nt = n / 32;

    auto mesh = distributed::MeshDevice::create_unit_mesh(0);
    auto& cq = mesh->mesh_command_queue();
    distributed::DeviceLocalBufferConfig local{.page_size = 2048, .buffer_type = BufferType::DRAM};
    distributed::ReplicatedBufferConfig size{.size = tiles * 2048};
    auto load = [&](const char* path) {
        std::vector<bfloat16> v(n * n);
        std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(v.data()), n * n * 2);
        auto buf = distributed::MeshBuffer::create(size, local, mesh.get());
        distributed::EnqueueWriteMeshBuffer(cq, buf, tilize_nfaces(v, n, n), false);
        return buf;
    };
    auto a = load(argv[6]);
    auto b = load(argv[7]);
    auto c = distributed::MeshBuffer::create(size, local, mesh.get());

    Program program = CreateProgram();
    const CoreCoord core{0, 0};
    for (uint32_t cb : {0u, 1u, 16u}) {
        CreateCircularBuffer(program, core, CircularBufferConfig(2 * 2048, {{cb, tt::DataFormat::Float16_b}}).set_page_size(cb, 2048));
    }
    CreateCircularBuffer(program, core, CircularBufferConfig(2048, {{24, tt::DataFormat::Float16_b}}).set_page_size(24, 2048));
    std::vector<uint32_t> rd_args, wr_args;
    TensorAccessorArgs(*a).append_to(rd_args);
    TensorAccessorArgs(*b).append_to(rd_args);
    TensorAccessorArgs(*c).append_to(wr_args);
    auto rd = CreateKernel(program, TT_KERNEL_DIR "/reader.cpp", core,
                           DataMovementConfig{.processor = DataMovementProcessor::RISCV_1, .noc = NOC::RISCV_1_default, .compile_args = rd_args});
    auto wr = CreateKernel(program, TT_KERNEL_DIR "/writer.cpp", core,
                           DataMovementConfig{.processor = DataMovementProcessor::RISCV_0, .noc = NOC::RISCV_0_default, .compile_args = wr_args});
    std::map<std::string, std::string> defines;
    defines[op == "add" ? "OP_ADD" : op == "sub" ? "OP_SUB" : "OP_MATMUL"] = "1";
    defines["KBLOCK"] = kblock;
    auto cp = CreateKernel(program, TT_KERNEL_DIR "/compute.cpp", core,
                           ComputeConfig{.math_fidelity = fidelity, .fp32_dest_acc_en = fp32_acc, .defines = defines});
    const bool matmul = op == "matmul";
    SetRuntimeArgs(program, rd, core, {static_cast<uint32_t>(a->address()), static_cast<uint32_t>(b->address()), nt, nt, matmul ? nt : 1u, matmul ? 1u : 0u});
    SetRuntimeArgs(program, cp, core, {nt, nt, matmul ? nt : 1u});
    SetRuntimeArgs(program, wr, core, {static_cast<uint32_t>(c->address()), tiles});
    distributed::MeshWorkload workload;
    workload.add_program(distributed::MeshCoordinateRange(mesh->shape()), std::move(program));
    distributed::EnqueueMeshWorkload(cq, workload, false);
    distributed::Finish(cq);
    std::vector<bfloat16> r;
    distributed::EnqueueReadMeshBuffer(cq, r, c, true);
    r = untilize_nfaces(r, n, n);
    std::ofstream(argv[8], std::ios::binary).write(reinterpret_cast<const char*>(r.data()), r.size() * 2);
    mesh->close();
    return 0;
}
