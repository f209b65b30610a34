// metalium_style writer: indexed compile-time args, the implicit dataflow API, the legacy
// InterleavedAddrGen with noc_async_write_tile, DPRINT_DATA0.
#include <cstdint>

#include "api/debug/dprint.h"

void kernel_main() {
    const uint32_t dst_addr = get_arg_val<uint32_t>(0);
    const uint32_t start = get_arg_val<uint32_t>(1);
    const uint32_t n_tiles = get_arg_val<uint32_t>(2);
    constexpr uint32_t cb_out = get_named_compile_time_arg_val("cb_out");
    constexpr uint32_t tile_bytes = get_compile_time_arg_val(0);
    const InterleavedAddrGen<true> dst = {.bank_base_address = dst_addr, .page_size = tile_bytes};
    for (uint32_t i = 0; i < n_tiles; ++i) {
        cb_wait_front(cb_out, 1);
        noc_async_write_tile(start + i, dst, get_read_ptr(cb_out));
        noc_async_write_barrier();
        cb_pop_front(cb_out, 1);
    }
    DPRINT_DATA0("writer: {:#x} done, {}\n", n_tiles, bf16_t(0x3fc0));
}
