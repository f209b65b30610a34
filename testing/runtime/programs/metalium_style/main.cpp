// metalium_style: a host program written as TT-Metalium's programming examples are. It relies on
// what the SDK's host headers bring along (fmt, TT_FATAL / TT_THROW, tt::constants, <iostream>),
// tt-metalium/tt_metal.hpp, the bfloat16 vector helpers, tt::tile_size and
// num_cores_to_corerangeset, and checks its result itself ("Test Passed" / TT_THROW).
// main [n_tiles [cores [COMPUTE_DEFINE]]]
#include <tt-metalium/bfloat16.hpp>
#include <tt-metalium/distributed.hpp>
#include <tt-metalium/host_api.hpp>
#include <tt-metalium/tensor_accessor_args.hpp>
#include <tt-metalium/tt_metal.hpp>
#include <tt-metalium/work_split.hpp>

using namespace tt::tt_metal;

int main(int argc, char** argv) {
    const uint32_t n_tiles = argc > 1 ? std::stoul(argv[1]) : 6;
    const uint32_t n_cores = argc > 2 ? std::stoul(argv[2]) : 3;
    TT_FATAL(n_tiles % n_cores == 0, "{} tiles do not split evenly over {} cores", n_tiles, n_cores);
    auto mesh = distributed::MeshDevice::create_unit_mesh(0);
    auto& cq = mesh->mesh_command_queue();
    constexpr uint32_t tile_bytes = tt::tile_size(tt::DataFormat::Float16_b);
    static_assert(tile_bytes == sizeof(bfloat16) * tt::constants::TILE_HW);
    distributed::DeviceLocalBufferConfig local{.page_size = tile_bytes, .buffer_type = BufferType::DRAM};
    distributed::ReplicatedBufferConfig size{.size = n_tiles * tile_bytes};
    auto src = distributed::MeshBuffer::create(size, local, mesh.get());
    auto dst = distributed::MeshBuffer::create(size, local, mesh.get());
    std::vector<uint32_t> input = create_random_vector_of_bfloat16(n_tiles * tile_bytes, 10, 42, -5.0f);
    distributed::EnqueueWriteMeshBuffer(cq, src, input, false);

    const tt::tt_metal::CoreRangeSet cores = num_cores_to_corerangeset(n_cores, mesh->compute_with_storage_grid_size(), true);
    TT_FATAL(cores.num_cores() == n_cores, "expected {} cores, got {}", n_cores, cores.num_cores());
    Program program = CreateProgram();
    CreateCircularBuffer(program, cores, CircularBufferConfig(2 * tile_bytes, {{tt::CBIndex::c_0, tt::DataFormat::Float16_b}})
                                             .set_page_size(tt::CBIndex::c_0, tile_bytes));
    CreateCircularBuffer(program, cores, CircularBufferConfig(2 * tile_bytes, {{tt::CBIndex::c_16, tt::DataFormat::Float16_b}})
                                             .set_page_size(tt::CBIndex::c_16, tile_bytes));
    std::unordered_map<std::string, uint32_t> named{{"cb_in", tt::CBIndex::c_0}, {"cb_out", tt::CBIndex::c_16}};
    std::vector<uint32_t> rd_args{tile_bytes}, wr_args{tile_bytes};
    TensorAccessorArgs(*src).append_to(rd_args);
    TensorAccessorArgs(*dst).append_to(wr_args);
    auto rd = CreateKernel(program, TT_KERNEL_DIR "/reader.cpp", cores,
                           DataMovementConfig{.processor = DataMovementProcessor::RISCV_1, .noc = NOC::RISCV_1_default,
                                              .compile_args = rd_args, .named_compile_args = named});
    auto wr = CreateKernel(program, TT_KERNEL_DIR "/writer.cpp", cores,
                           DataMovementConfig{.processor = DataMovementProcessor::RISCV_0, .noc = NOC::RISCV_0_default,
                                              .compile_args = wr_args, .named_compile_args = named});
    std::map<std::string, std::string> defines;
    if (argc > 3) defines[argv[3]] = "1";
    auto cp = CreateKernel(program, TT_KERNEL_DIR "/compute.cpp", cores,
                           ComputeConfig{.defines = defines, .named_compile_args = named});
    const uint32_t per_core = n_tiles / n_cores;
    uint32_t start = 0;
    for (const tt::tt_metal::CoreCoord& core : corerange_to_cores(cores, std::nullopt, true)) {
        SetRuntimeArgs(program, rd, core, {static_cast<uint32_t>(src->address()), start, per_core});
        SetRuntimeArgs(program, cp, core, {per_core});
        SetRuntimeArgs(program, wr, core, {static_cast<uint32_t>(dst->address()), start, per_core});
        start += per_core;
    }
    distributed::MeshWorkload workload;
    workload.add_program(distributed::MeshCoordinateRange(mesh->shape()), std::move(program));
    distributed::EnqueueMeshWorkload(cq, workload, false);
    distributed::Finish(cq);
    std::vector<uint32_t> result;
    distributed::EnqueueReadMeshBuffer(cq, result, dst, true);

    auto golden = pack_bfloat16_vec_into_uint32_vec(
        unpack_uint32_vec_into_bfloat16_vec(input, [](const bfloat16& a) { return bfloat16(-static_cast<float>(a)); }));
    int failed_at = -1;
    const bool pass = packed_uint32_t_vector_comparison(
        golden, result, [](float a, float b) { return is_close(a, b, 0.0f, 0.0f); }, &failed_at);
    mesh->close();
    if (!pass) TT_THROW("Test Failed at word {}", failed_at);
    fmt::print("Test Passed\n");
    std::cout << "checked " << n_tiles << " tiles on " << n_cores << " cores" << std::endl;
    return 0;
}
