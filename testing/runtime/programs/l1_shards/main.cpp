// l1_shards: a TT-Metalium program whose data lives in sharded L1 buffers and never crosses the
// NOC. Two inputs and one output are L1 MeshBuffers sharded over a grid of cores (height, width
// or block layout; shards of any 2-D shape in pages); each core's CBs are placed on its shards
// (set_globally_allocated_address on the buffer get_backing_buffer() returns), and the compute
// kernel steps through them without cb_wait_front / cb_reserve_back, since no other kernel uses
// those CBs. It computes out = a * b and checks the result itself.
// main LAYOUT [TWO_KERNELS]   LAYOUT: height | width | block
//   TWO_KERNELS adds a data movement kernel that also waits on the input CB: refused.
#include <tt-metalium/bfloat16.hpp>
#include <tt-metalium/device.hpp>
#include <tt-metalium/distributed.hpp>
#include <tt-metalium/host_api.hpp>
#include <hostdevcommon/kernel_structs.h>
#include <fmt/base.h>

#include <cmath>
#include <string>

using namespace tt::tt_metal;

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "height";
    const bool two_kernels = argc > 2 && std::string(argv[2]) == "TWO_KERNELS";
    // a 6x4-tile tensor: height = 4 cores with shards of 6x1 tiles (narrower than the tensor, as
    // TT-Metalium's Buffer allows), width = 4 cores with 3x2-tile shards, block = 6 cores with 2x2
    constexpr uint32_t rows = 6, cols = 4;
    TensorMemoryLayout layout = TensorMemoryLayout::HEIGHT_SHARDED;
    std::array<uint32_t, 2> shard_tiles{6, 1};
    tt::tt_metal::CoreRange grid({0, 0}, {3, 0});
    if (mode == "width") {
        layout = TensorMemoryLayout::WIDTH_SHARDED;
        shard_tiles = {3, 2};
        grid = tt::tt_metal::CoreRange({0, 0}, {1, 1});
    } else if (mode == "block") {
        layout = TensorMemoryLayout::BLOCK_SHARDED;
        shard_tiles = {2, 2};
        grid = tt::tt_metal::CoreRange({0, 0}, {1, 2});
    }
    const uint32_t n_cores = tt::tt_metal::CoreRangeSet(grid).num_cores();
    const uint32_t tiles_per_core = rows * cols / n_cores;
    fmt::print("{} tiles of a {}x{}-tile tensor on each of {} cores ({})\n", tiles_per_core, rows, cols, n_cores, layout);

    auto mesh = distributed::MeshDevice::create_unit_mesh(0);
    auto& cq = mesh->mesh_command_queue();
    constexpr uint32_t tile_bytes = tt::constants::TILE_HW * sizeof(bfloat16);
    ShardSpecBuffer spec(grid, {shard_tiles[0] * tt::constants::TILE_HEIGHT, shard_tiles[1] * tt::constants::TILE_WIDTH},
                         ShardOrientation::ROW_MAJOR, {tt::constants::TILE_HEIGHT, tt::constants::TILE_WIDTH}, {rows, cols});
    distributed::DeviceLocalBufferConfig local{
        .page_size = tile_bytes, .buffer_type = BufferType::L1, .sharding_args = BufferShardingArgs(spec, layout)};
    distributed::ReplicatedBufferConfig size{.size = rows * cols * tile_bytes};
    auto a = distributed::MeshBuffer::create(size, local, mesh.get());
    auto b = distributed::MeshBuffer::create(size, local, mesh.get());
    auto out = distributed::MeshBuffer::create(size, local, mesh.get());
    TT_FATAL(a->get_backing_buffer()->address() == a->address(), "the backing buffer is the MeshBuffer's allocation");

    std::vector<bfloat16> va(rows * cols * tt::constants::TILE_HW), vb(va.size());
    for (size_t i = 0; i < va.size(); ++i) {
        va[i] = bfloat16(static_cast<float>(i % 97) / 8.0f - 3.0f);
        vb[i] = bfloat16(static_cast<float>((i * 7) % 13) / 4.0f);
    }
    distributed::EnqueueWriteMeshBuffer(cq, a, va, false);
    distributed::EnqueueWriteMeshBuffer(cq, b, vb, false);

    Program program = CreateProgram();
    auto shard_cb = [&](tt::CBIndex cb, const std::shared_ptr<distributed::MeshBuffer>& buf) {
        CreateCircularBuffer(program, grid,
                             CircularBufferConfig(tiles_per_core * tile_bytes, {{cb, tt::DataFormat::Float16_b}})
                                 .set_page_size(cb, tile_bytes)
                                 .set_globally_allocated_address(*buf->get_backing_buffer()));
    };
    shard_cb(tt::CBIndex::c_0, a);
    shard_cb(tt::CBIndex::c_1, b);
    shard_cb(tt::CBIndex::c_16, out);
    auto compute = CreateKernel(program, TT_KERNEL_DIR "/compute.cpp", grid,
                                ComputeConfig{.compile_args = {tt::CBIndex::c_0, tt::CBIndex::c_1, tt::CBIndex::c_16}});
    SetRuntimeArgs(program, compute, grid, {tiles_per_core});
    if (two_kernels) {
        CreateKernel(program, TT_KERNEL_DIR "/peek.cpp", grid,
                     DataMovementConfig{.processor = DataMovementProcessor::RISCV_1, .noc = NOC::RISCV_1_default,
                                        .compile_args = {tt::CBIndex::c_0}});
    }
    distributed::MeshWorkload workload;
    workload.add_program(distributed::MeshCoordinateRange(mesh->shape()), std::move(program));
    distributed::EnqueueMeshWorkload(cq, workload, false);
    std::vector<bfloat16> result;
    distributed::EnqueueReadMeshBuffer(cq, result, out, true);

    uint32_t bad = 0;
    for (size_t i = 0; i < va.size(); ++i) {
        const float x = static_cast<float>(va[i]), y = static_cast<float>(vb[i]);
        const float want = x * y;
        if (std::fabs(static_cast<float>(result[i]) - want) > 0.02f * std::fabs(want) + 0.05f) ++bad;
    }
    mesh->close();
    if (bad) TT_THROW("Test Failed: {} of {} values differ", bad, va.size());
    fmt::print("Test Passed\n");
    return 0;
}
