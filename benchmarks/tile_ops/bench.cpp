// Micro-benchmark of the emulator's tile arithmetic (src/fpu.hpp, src/sfpu.hpp): ns per tile op.
// Built and run by benchmarks/tile_ops.py against the emulator library.
#include <cstdio>
#include <ctime>
#include <cstring>
#include <random>
#include <string>

#include "fpu.hpp"
#include "sfpu.hpp"

using namespace ttmock;

static uint32_t bf16_bits(std::mt19937& rng) {
    std::normal_distribution<float> d(0.0f, 1.0f);
    float f = d(rng);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u & 0xFFFF0000u;
}

// this thread's CPU time: other processes on a shared machine do not inflate it
static double cpu_seconds() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

template <typename F>
static double ns_per_call(F&& f, double min_seconds = 0.2) {
    long n = 1;
    for (;;) {
        const double t0 = cpu_seconds();
        for (long i = 0; i < n; ++i) f();
        const double s = cpu_seconds() - t0;
        if (s >= min_seconds) return s * 1e9 / static_cast<double>(n);
        n *= 2;
    }
}

int main(int argc, char** argv) {
    const double min_s = argc > 1 ? std::stod(argv[1]) : 0.2;
    std::mt19937 rng(0);
    static uint32_t a[1024], b[1024], dst[1024];
    static uint16_t l1[1024];
    static uint32_t l1x[1024];
    for (int i = 0; i < 1024; ++i) {
        a[i] = bf16_bits(rng);
        b[i] = bf16_bits(rng);
    }
    static uint16_t in0[32][1024], in1[32][1024];
    for (int t = 0; t < 32; ++t) {
        for (int i = 0; i < 1024; ++i) {
            in0[t][i] = static_cast<uint16_t>(bf16_bits(rng) >> 16);
            in1[t][i] = static_cast<uint16_t>(bf16_bits(rng) >> 16);
        }
    }
    auto row = [](const char* name, double ns) { std::printf("%-34s %10.0f ns\n", name, ns); };
    std::printf("ns per 32x32 tile op (thread CPU time)\n");
    const char* fid[] = {"", "LoFi", "HiFi2", "HiFi3", "HiFi4"};
    for (int dst32 = 0; dst32 < 2; ++dst32) {
        std::printf("-- DST %s\n", dst32 ? "fp32 (fp32_dest_acc_en)" : "16-bit");
        for (int p = 1; p <= 4; ++p) {
            std::memset(dst, 0, sizeof(dst));
            row((std::string("matmul_tiles 32x32x32 ") + fid[p]).c_str(),
                ns_per_call([&] { fpu::matmul(dst, a, b, false, p, dst32); }, min_s));
        }
        // BF16 tiles from L1 in the order of benchmarks/matmul_relu.py's compute kernel (a 4x8-tile
        // in0 block times an 8x4-tile in1 block, into 4 DST tiles per in0 row): its operand reuse,
        // so the decoding the emulator keeps per host thread hits as it does there
        for (int p = 1; p <= 4; p += (p == 2 ? 2 : 1)) {
            static uint32_t acc[4][1024];
            std::memset(acc, 0, sizeof(acc));
            row((std::string("matmul bf16 4x8x4 block ") + fid[p]).c_str(),
                ns_per_call([&] {
                    for (int m = 0; m < 4; ++m)
                        for (int k = 0; k < 8; ++k)
                            for (int n = 0; n < 4; ++n) fpu::matmul_bf16(acc[n], in0[m * 8 + k], in1[k * 4 + n], false, p, dst32);
                }, min_s) / 128);
        }
        row("add_tiles", ns_per_call([&] { fpu::eltwise_add(dst, a, b, false, fpu::kBcastNone, dst32); }, min_s));
        row("add_tiles_bcast<ROW>", ns_per_call([&] { fpu::eltwise_add(dst, a, b, false, fpu::kBcastRow, dst32); }, min_s));
        row("mul_tiles HiFi4", ns_per_call([&] { std::memset(dst, 0, sizeof(dst)); fpu::eltwise_mul(dst, a, b, fpu::kBcastNone, 4, dst32); }, min_s));
        row("copy_tile", ns_per_call([&] { fpu::datacopy(dst, a, false, dst32); }, min_s));
        row("reduce_tile SUM ROW HiFi4", ns_per_call([&] { fpu::reduce_sum(dst, a, b, 0, 4, dst32); }, min_s));
        row("reduce_tile MAX ROW", ns_per_call([&] { fpu::reduce_max(dst, a, 0, true); }, min_s));
        row("pack_tile (bf16)", ns_per_call([&] { fpu::pack_bf16(dst, l1, dst32); }, min_s));
        const char* scalar_names[] = {"fill", "mul_unary", "add_unary"};
        for (const char* n : scalar_names) {
            const auto op = sfpu::unary_from_name(n);
            row((std::string(n) + "_tile").c_str(), ns_per_call([&] {
                    std::memcpy(dst, a, sizeof(dst));
                    sfpu::unary(op, dst, 0.7f, false, dst32);
                }, min_s));
        }
        const char* binary_names[] = {"add", "sub", "mul", "max"};
        for (const char* n : binary_names) {
            const auto op = sfpu::binary_from_name(n);
            row((std::string(n) + "_binary_tile").c_str(),
                ns_per_call([&] { sfpu::binary(op, dst, a, b, dst32); }, min_s));
        }
        row("add_tiles_bcast<COL>", ns_per_call([&] { fpu::eltwise_add(dst, a, b, false, fpu::kBcastCol, dst32); }, min_s));
        row("mul_tiles_bcast<COL> HiFi2", ns_per_call([&] { std::memset(dst, 0, sizeof(dst)); fpu::eltwise_mul(dst, a, b, fpu::kBcastCol, 2, dst32); }, min_s));
        row("pack_tile (fp32)", ns_per_call([&] { fpu::pack_fp32(dst, reinterpret_cast<uint32_t*>(l1x), dst32); }, min_s));
        row("unpack fp32 (tf32)", ns_per_call([&] { fpu::unpack_fp32(reinterpret_cast<const uint32_t*>(l1x), dst, true); }, min_s));
        const char* names[] = {"exp", "log", "sqrt", "recip", "sigmoid", "tanh", "gelu"};
        for (const char* n : names) {
            const auto op = sfpu::unary_from_name(n);
            row((std::string(n) + "_tile").c_str(), ns_per_call([&] {
                    std::memcpy(dst, a, sizeof(dst));
                    sfpu::unary(op, dst, 0.0f, false, dst32);
                }, min_s));
        }
    }
    return 0;
}
