// l1_interleaved: interleaved L1 buffers, the allocator's queries and the fast interleaved address
// generator, in a TT-Metalium program. Tiles go DRAM -> CB -> an interleaved L1 buffer (pages
// round-robin over the cores' L1) -> CB -> DRAM, addressed with InterleavedAddrGenFast (DRAM and
// L1) and a TensorAccessor over the L1 buffer; the host reads both the L1 buffer and the output
// and checks them against the input. Alignments come from MeshDevice::allocator() and tt::align;
// the kernel is configured with WriterDataMovementConfig (RISCV_0, NOC 0); the backing Buffer
// answers its layout and page queries.
// main N_TILES N_CORES [KERNEL_DEFINE]
#include <tt-metalium/allocator.hpp>
#include <tt-metalium/bfloat16.hpp>
#include <tt-metalium/distributed.hpp>
#include <tt-metalium/host_api.hpp>
#include <tt-metalium/tensor_accessor_args.hpp>
#include <tt-metalium/tt_align.hpp>
#include <fmt/base.h>

using namespace tt;
using namespace tt::tt_metal;

int main(int argc, char** argv) {
    const uint32_t n_tiles = argc > 1 ? std::stoul(argv[1]) : 10;
    const uint32_t n_cores = argc > 2 ? std::stoul(argv[2]) : 2;
    auto mesh = distributed::MeshDevice::create_unit_mesh(0);
    auto& cq = mesh->mesh_command_queue();
    const auto& alloc = mesh->allocator();
    const uint32_t dram_align = alloc->get_alignment(BufferType::DRAM), l1_align = alloc->get_alignment(BufferType::L1);
    fmt::print("alignment: DRAM {} L1 {}; banks: DRAM {} L1 {}; a 6-byte page takes {} bytes in DRAM\n", dram_align,
               l1_align, alloc->get_num_banks(BufferType::DRAM), alloc->get_num_banks(BufferType::L1),
               align(6u, dram_align));
    const tt::tt_metal::CoreCoord bank1 = alloc->get_logical_core_from_bank_id(1);
    TT_FATAL(bank1 == tt::tt_metal::CoreCoord(1, 0), "L1 bank 1 is on core {}", bank1.str());

    constexpr uint32_t tile_bytes = constants::TILE_HW * sizeof(bfloat16);
    const distributed::ReplicatedBufferConfig size{.size = n_tiles * tile_bytes};
    const distributed::DeviceLocalBufferConfig dram{.page_size = tile_bytes, .buffer_type = BufferType::DRAM};
    const distributed::DeviceLocalBufferConfig l1{.page_size = tile_bytes, .buffer_type = BufferType::L1};
    auto src = distributed::MeshBuffer::create(size, dram, mesh.get());
    auto mid = distributed::MeshBuffer::create(size, l1, mesh.get());
    auto dst = distributed::MeshBuffer::create(size, dram, mesh.get());
    // the device-level view of the L1 buffer (its backing buffer)
    const Buffer& staged_buf = *mid->get_backing_buffer();
    TT_FATAL(staged_buf.is_l1() && !staged_buf.is_dram() && !staged_buf.has_shard_spec() &&
                 staged_buf.buffer_layout() == TensorMemoryLayout::INTERLEAVED,
             "the L1 buffer is an interleaved L1 buffer");
    TT_FATAL(staged_buf.num_pages() == n_tiles && staged_buf.page_size() == tile_bytes &&
                 staged_buf.aligned_page_size() == align(tile_bytes, l1_align) &&
                 staged_buf.aligned_size() == n_tiles * tile_bytes,
             "{} pages of {} bytes ({} aligned)", staged_buf.num_pages(), staged_buf.page_size(),
             staged_buf.aligned_page_size());
    std::vector<uint32_t> input = create_random_vector_of_bfloat16(n_tiles * tile_bytes, 100, 7, -50.0f);
    distributed::EnqueueWriteMeshBuffer(cq, src, input, false);

    const tt::tt_metal::CoreRange cores({0, 0}, {n_cores - 1, 0});
    Program program = CreateProgram();
    CreateCircularBuffer(program, cores, CircularBufferConfig(2 * tile_bytes, {{CBIndex::c_0, DataFormat::Float16_b}})
                                             .set_page_size(CBIndex::c_0, tile_bytes));
    std::vector<uint32_t> ct_args{CBIndex::c_0};
    TensorAccessorArgs(*mid).append_to(ct_args);
    std::map<std::string, std::string> defines;
    if (argc > 3) defines[argv[3]] = "1";
    auto k = CreateKernel(program, TT_KERNEL_DIR "/copy.cpp", cores, WriterDataMovementConfig(ct_args, defines));
    for (uint32_t i = 0; i < n_cores; ++i) {
        SetRuntimeArgs(program, k, tt::tt_metal::CoreCoord(i, 0),
                       {src->address(), mid->address(), dst->address(), i, n_cores, n_tiles});
    }
    distributed::MeshWorkload workload;
    workload.add_program(distributed::MeshCoordinateRange(mesh->shape()), std::move(program));
    distributed::EnqueueMeshWorkload(cq, workload, false);
    std::vector<uint32_t> staged, output;
    distributed::EnqueueReadMeshBuffer(cq, staged, mid, true);
    distributed::EnqueueReadMeshBuffer(cq, output, dst, true);
    mesh->close();
    if (staged != input) TT_THROW("Test Failed: the L1 buffer does not hold the input");
    if (output != input) TT_THROW("Test Failed: the output differs from the input");
    fmt::print("Test Passed\n");
    return 0;
}
