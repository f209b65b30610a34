// Unit-op test host: main <defines> <in_fmt> <out_fmt> <fp32_acc> <unpack_to_dest> A.bin B.bin C.bin
// <defines> is NAME=VALUE[;NAME=VALUE...] (FIDELITY=LoFi|HiFi2|HiFi3|HiFi4 sets the math
// fidelity, default HiFi4); formats are bf16 or f32; files hold one row-major 32x32 matrix each.
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <tt-metalium/bfloat16.hpp>
#include <tt-metalium/distributed.hpp>
#include <tt-metalium/host_api.hpp>
#include <tt-metalium/tensor_accessor_args.hpp>
#include <tt-metalium/tilize_utils.hpp>

using namespace tt::tt_metal;

template <typename T>
std::vector<T> load(const char* path) {
    std::vector<T> v(1024);
    std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(v.data()), 1024 * sizeof(T));
    return v;
}

template <typename T>
std::shared_ptr<distributed::MeshBuffer> upload(distributed::MeshDevice* dev, distributed::MeshCommandQueue& cq,
                                                const char* path) {
    distributed::DeviceLocalBufferConfig local{.page_size = 1024 * sizeof(T), .buffer_type = BufferType::DRAM};
    distributed::ReplicatedBufferConfig size{.size = 1024 * sizeof(T)};
    auto buf = distributed::MeshBuffer::create(size, local, dev);
    if (path) distributed::EnqueueWriteMeshBuffer(cq, buf, tilize_nfaces(load<T>(path), 32, 32), false);
    return buf;
}

int main(int argc, char** argv) {
    if (argc != 9) return 2;
    std::map<std::string, std::string> defines;
    std::stringstream ds(argv[1]);
    for (std::string item; std::getline(ds, item, ';');) {
        auto eq = item.find('=');
        defines[item.substr(0, eq)] = item.substr(eq + 1);
    }
    const bool in_f32 = std::string(argv[2]) == "f32", out_f32 = std::string(argv[3]) == "f32";
    const bool fp32_acc = std::string(argv[4]) == "1", to_dest = std::string(argv[5]) == "1";
    auto mesh = distributed::MeshDevice::create_unit_mesh(0);
    auto& cq = mesh->mesh_command_queue();
    auto a = in_f32 ? upload<float>(mesh.get(), cq, argv[6]) : upload<bfloat16>(mesh.get(), cq, argv[6]);
    auto b = in_f32 ? upload<float>(mesh.get(), cq, argv[7]) : upload<bfloat16>(mesh.get(), cq, argv[7]);
    auto c = out_f32 ? upload<float>(mesh.get(), cq, nullptr) : upload<bfloat16>(mesh.get(), cq, nullptr);
    const auto in_fmt = in_f32 ? tt::DataFormat::Float32 : tt::DataFormat::Float16_b;
    const auto out_fmt = out_f32 ? tt::DataFormat::Float32 : tt::DataFormat::Float16_b;
    const uint32_t in_bytes = in_f32 ? 4096 : 2048, out_bytes = out_f32 ? 4096 : 2048;
    Program program = CreateProgram();
    const CoreCoord core{0, 0};
    CreateCircularBuffer(program, core, CircularBufferConfig(in_bytes, {{tt::CBIndex::c_0, in_fmt}}).set_page_size(tt::CBIndex::c_0, in_bytes));
    CreateCircularBuffer(program, core, CircularBufferConfig(in_bytes, {{tt::CBIndex::c_1, in_fmt}}).set_page_size(tt::CBIndex::c_1, in_bytes));
    CreateCircularBuffer(program, core, CircularBufferConfig(out_bytes, {{tt::CBIndex::c_16, out_fmt}}).set_page_size(tt::CBIndex::c_16, out_bytes));
    std::vector<uint32_t> rd_args, wr_args;
    TensorAccessorArgs(*a).append_to(rd_args);
    TensorAccessorArgs(*b).append_to(rd_args);
    TensorAccessorArgs(*c).append_to(wr_args);
    auto rd = CreateKernel(program, TT_KERNEL_DIR "/reader.cpp", core,
                           DataMovementConfig{.processor = DataMovementProcessor::RISCV_1, .noc = NOC::RISCV_1_default, .compile_args = rd_args});
    auto wr = CreateKernel(program, TT_KERNEL_DIR "/writer.cpp", core,
                           DataMovementConfig{.processor = DataMovementProcessor::RISCV_0, .noc = NOC::RISCV_0_default, .compile_args = wr_args});
    std::vector<UnpackToDestMode> modes(NUM_CIRCULAR_BUFFERS, UnpackToDestMode::Default);
    if (to_dest) modes[0] = modes[1] = UnpackToDestMode::UnpackToDestFp32;
    const std::map<std::string, MathFidelity> fidelities = {
        {"LoFi", MathFidelity::LoFi}, {"HiFi2", MathFidelity::HiFi2},
        {"HiFi3", MathFidelity::HiFi3}, {"HiFi4", MathFidelity::HiFi4}};
    const MathFidelity fidelity = defines.count("FIDELITY") ? fidelities.at(defines["FIDELITY"])
                                                            : MathFidelity::HiFi4;
    CreateKernel(program, TT_KERNEL_DIR "/compute.cpp", core,
                 ComputeConfig{.math_fidelity = fidelity, .fp32_dest_acc_en = fp32_acc,
                               .unpack_to_dest_mode = modes, .defines = defines});
    SetRuntimeArgs(program, rd, core, {static_cast<uint32_t>(a->address()), static_cast<uint32_t>(b->address())});
    SetRuntimeArgs(program, wr, core, {static_cast<uint32_t>(c->address())});
    distributed::MeshWorkload workload;
    workload.add_program(distributed::MeshCoordinateRange(mesh->shape()), std::move(program));
    distributed::EnqueueMeshWorkload(cq, workload, false);
    distributed::Finish(cq);
    std::ofstream out(argv[8], std::ios::binary);
    if (out_f32) {
        std::vector<float> r;
        distributed::EnqueueReadMeshBuffer(cq, r, c, true);
        r = untilize_nfaces(r, 32, 32);
        out.write(reinterpret_cast<const char*>(r.data()), r.size() * 4);
    } else {
        std::vector<bfloat16> r;
        distributed::EnqueueReadMeshBuffer(cq, r, c, true);
        r = untilize_nfaces(r, 32, 32);
        out.write(reinterpret_cast<const char*>(r.data()), r.size() * 2);
    }
    mesh->close();
    return 0;
}
