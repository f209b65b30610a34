// metalium_style reader: named and indexed compile-time args, the implicit dataflow API (no
// #include: the JIT puts it in front of data movement kernels), DPRINT.
#include <cstdint>

#include "api/debug/dprint.h"

void kernel_main() {
    const uint32_t src_addr = get_arg_val<uint32_t>(0);
    const uint32_t start = get_arg_val<uint32_t>(1);
    const uint32_t n_tiles = get_arg_val<uint32_t>(2);
    constexpr uint32_t cb_in = get_named_compile_time_arg_val("cb_in");
    constexpr uint32_t tile_bytes = kernel_compile_time_args[0];
    constexpr auto src_args = TensorAccessorArgs<1>();
    const auto src = TensorAccessor(src_args, src_addr, tile_bytes);
    DPRINT("reader: {} tiles from {} (cb {})\n", n_tiles, start, cb_in);
    for (uint32_t i = 0; i < n_tiles; ++i) {
        cb_reserve_back(cb_in, 1);
        noc_async_read_tile(start + i, src, get_write_ptr(cb_in));
        noc_async_read_barrier();
        cb_push_back(cb_in, 1);
    }
}
