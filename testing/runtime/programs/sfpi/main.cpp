// sfpi: TT-Metalium programs whose compute kernels use the SFPI vector interface, in the style of
// TT-Metalium's custom SFPU programming examples. The host computes the expected bits itself from
// the SFPU's rules (SFPMAD rounds once to nearest even; a 16-bit DST keeps the top 16 bits of a
// store) and checks the device's output bit for bit.
// main MODE [n_tiles [fp32 [COMPUTE_DEFINE]]]
//   MODE add | smoothstep | slice (add with b = 0 on a known tile; the writer prints TileSlices)
//        | sdk_add | sdk_smoothstep (the SDK's experimental SFPU functions through the call macros)
//        | dm_sfpi (a reader kernel that uses SFPI: refused)
#include <bit>
#include <cmath>
#include <cstring>

#include <tt-metalium/bfloat16.hpp>
#include <tt-metalium/distributed.hpp>
#include <tt-metalium/host_api.hpp>
#include <tt-metalium/tensor_accessor_args.hpp>
#include <tt-metalium/tilize_utils.hpp>

using namespace tt::tt_metal;

namespace {
float fl(float x) { return std::fabs(x) < 0x1p-126f ? 0.0f : x; }  // SFPU: denormals to +0
float add(float a, float b) { return fl(fl(a) + fl(b)); }
float mul(float a, float b) { return fl(fl(a) * fl(b)); }
float mad(float a, float b, float c) { return fl(std::fmaf(fl(a), fl(b), fl(c))); }
uint32_t stored(float x, bool fp32) {  // SFPSTORE, then the packer (from a 16-bit DST: zeros +0)
    uint32_t u = std::bit_cast<uint32_t>(x);
    if (!(u & 0x7F800000u)) u = fp32 ? u & 0x80000000u : 0u;
    return fp32 ? u : (u & 0xFFFF0000u);
}
float smoothstep(float x) {
    const float e0 = -1.0f, inv = 1.0f / (2.0f - e0);
    float t = mul(add(x, -e0), inv);
    if (t < 0.0f) t = 0.0f;
    else if (add(t, -1.0f) > 0.0f) t = 1.0f;
    float y = mul(mul(t, t), mad(-2.0f, t, 3.0f));
    if (x < 0.0f) y = add(x, 2.5f) < 0.0f ? -1.0f : -std::fabs(y);
    return y;
}
float sdk_smoothstep(float x) {  // clamp((x - edge0) * inv_delta, 0, 1), then t * t * (3 - 2 t)
    const float e0 = -1.0f, inv = 1.0f / (2.0f - e0);
    float t = mul(add(x, -e0), inv);
    t = t < 0.0f ? 0.0f : t > 1.0f ? 1.0f : t;
    return mul(mul(t, t), mad(-2.0f, t, 3.0f));
}
}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "add";
    const uint32_t n_tiles = argc > 2 ? std::stoul(argv[2]) : 2;
    const bool fp32 = argc > 3 && std::string(argv[3]) == "1";
    const bool two_inputs = mode != "smoothstep" && mode != "sdk_smoothstep";
    const tt::DataFormat df = fp32 ? tt::DataFormat::Float32 : tt::DataFormat::Float16_b;
    const uint32_t tile_bytes = tt::tile_size(df);
    const uint32_t n = n_tiles * 1024;

    // inputs: pseudo-random values in [-3, 3) (slice: a[r][c] = r / 2 + c / 4 on each tile, b = 0)
    std::vector<float> a(n), b(n, 0.0f);
    uint32_t seed = 12345;
    auto rnd = [&] { seed = seed * 1664525u + 1013904223u; return static_cast<float>(seed >> 8) / 16777216.0f * 6.0f - 3.0f; };
    for (uint32_t i = 0; i < n; ++i) {
        a[i] = rnd();
        if (mode != "slice") b[i] = rnd();
    }
    if (mode == "slice") {
        std::vector<float> tile(1024);
        for (uint32_t r = 0; r < 32; ++r)
            for (uint32_t c = 0; c < 32; ++c) tile[r * 32 + c] = r * 0.5f + c * 0.25f;
        tile = tilize_nfaces(tile, 32, 32);
        for (uint32_t t = 0; t < n_tiles; ++t) std::copy(tile.begin(), tile.end(), a.begin() + t * 1024);
    }
    auto to_words = [&](std::vector<float>& v) {  // the CB format's bits (inputs rounded to it)
        std::vector<uint32_t> w;
        if (fp32) {
            for (float x : v) w.push_back(std::bit_cast<uint32_t>(x));
        } else {
            for (uint32_t i = 0; i < v.size(); i += 2) {
                const uint32_t lo = std::bit_cast<uint32_t>(v[i]) >> 16, hi = std::bit_cast<uint32_t>(v[i + 1]) >> 16;
                v[i] = std::bit_cast<float>(lo << 16);
                v[i + 1] = std::bit_cast<float>(hi << 16);
                w.push_back(lo | (hi << 16));
            }
        }
        return w;
    };
    const std::vector<uint32_t> wa = to_words(a), wb = to_words(b);

    auto mesh = distributed::MeshDevice::create_unit_mesh(0);
    auto& cq = mesh->mesh_command_queue();
    distributed::DeviceLocalBufferConfig local{.page_size = tile_bytes, .buffer_type = BufferType::DRAM};
    distributed::ReplicatedBufferConfig size{.size = n_tiles * tile_bytes};
    auto buf_a = distributed::MeshBuffer::create(size, local, mesh.get());
    auto buf_b = distributed::MeshBuffer::create(size, local, mesh.get());
    auto buf_o = distributed::MeshBuffer::create(size, local, mesh.get());
    distributed::EnqueueWriteMeshBuffer(cq, buf_a, wa, false);
    distributed::EnqueueWriteMeshBuffer(cq, buf_b, wb, false);

    const tt::tt_metal::CoreCoord core{0, 0};
    Program program = CreateProgram();
    for (auto cb : {tt::CBIndex::c_0, tt::CBIndex::c_1, tt::CBIndex::c_16}) {
        CreateCircularBuffer(program, core, CircularBufferConfig(2 * tile_bytes, {{cb, df}}).set_page_size(cb, tile_bytes));
    }
    std::vector<uint32_t> rd_args{two_inputs ? 2u : 1u}, wr_args;
    TensorAccessorArgs(*buf_a).append_to(rd_args);
    TensorAccessorArgs(*buf_b).append_to(rd_args);
    TensorAccessorArgs(*buf_o->get_backing_buffer()).append_to(wr_args);  // over the device buffer, as the examples do
    std::map<std::string, std::string> defines;
    if (argc > 4) defines[argv[4]] = "1";
    if (mode == "slice") defines["PRINT_SLICE"] = "1";
    if (mode == "sdk_smoothstep") defines["SMOOTHSTEP"] = "1";
    const std::string compute = mode == "smoothstep" ? "/smoothstep.cpp" : mode.rfind("sdk_", 0) == 0 ? "/sdk_sfpu.cpp" : "/add.cpp";
    const std::string dm_kernel = mode == "dm_sfpi" ? "/dm_sfpi.cpp" : "/reader.cpp";
    auto rd = CreateKernel(program, TT_KERNEL_DIR + dm_kernel, core,
                           DataMovementConfig{.processor = DataMovementProcessor::RISCV_1, .noc = NOC::RISCV_1_default, .compile_args = rd_args});
    auto wr = CreateKernel(program, TT_KERNEL_DIR "/writer.cpp", core,
                           DataMovementConfig{.processor = DataMovementProcessor::RISCV_0, .noc = NOC::RISCV_0_default,
                                              .compile_args = wr_args, .defines = mode == "slice" ? std::map<std::string, std::string>{{"PRINT_SLICE", "1"}}
                                                                                                  : std::map<std::string, std::string>{}});
    std::vector<tt::tt_metal::UnpackToDestMode> to_dest(32, tt::tt_metal::UnpackToDestMode::Default);
    if (fp32) to_dest[0] = to_dest[1] = tt::tt_metal::UnpackToDestMode::UnpackToDestFp32;  // fp32 inputs reach DST exactly
    auto cp = CreateKernel(program, TT_KERNEL_DIR + compute, core,
                           ComputeConfig{.fp32_dest_acc_en = fp32, .unpack_to_dest_mode = to_dest, .defines = defines});
    SetRuntimeArgs(program, rd, core, {static_cast<uint32_t>(buf_a->address()), static_cast<uint32_t>(buf_b->address()), n_tiles});
    SetRuntimeArgs(program, cp, core, {n_tiles});
    SetRuntimeArgs(program, wr, core, {static_cast<uint32_t>(buf_o->address()), n_tiles});
    distributed::MeshWorkload workload;
    workload.add_program(distributed::MeshCoordinateRange(mesh->shape()), std::move(program));
    distributed::EnqueueMeshWorkload(cq, workload, false);
    distributed::Finish(cq);
    std::vector<uint32_t> result;
    distributed::EnqueueReadMeshBuffer(cq, result, buf_o, true);
    mesh->close();

    uint32_t bad = 0;
    for (uint32_t i = 0; i < n; ++i) {
        const float want_f = mode == "smoothstep" ? smoothstep(a[i]) : mode == "sdk_smoothstep" ? sdk_smoothstep(a[i]) : add(a[i], b[i]);
        const uint32_t want = stored(want_f, fp32);
        const uint32_t got = fp32 ? result[i] : (((result[i / 2] >> (16 * (i % 2))) & 0xFFFFu) << 16);
        if (got != want && bad++ < 5) {
            std::printf("element %u: got %a, expected %a (input %a %a)\n", i, std::bit_cast<float>(got),
                        std::bit_cast<float>(want), a[i], b[i]);
        }
    }
    if (bad) {
        std::printf("Test Failed: %u of %u elements differ\n", bad, n);
        return 1;
    }
    std::printf("Test Passed\n");
    return 0;
}
