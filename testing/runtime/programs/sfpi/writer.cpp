// sfpi writer: CB c_16's tiles to the output buffer; with PRINT_SLICE it prints a TileSlice of each
// tile first (DPRINT's TSLICE from the front of the output CB).
#include <cstdint>

#include "api/debug/dprint.h"

constexpr uint32_t cb_out = 16;

void kernel_main() {
    const uint32_t out_addr = get_arg_val<uint32_t>(0);
    const uint32_t n_tiles = get_arg_val<uint32_t>(1);
    constexpr auto out_args = TensorAccessorArgs<0>();
    const uint32_t tile_bytes = get_tile_size(cb_out);
    const auto out = TensorAccessor(out_args, out_addr, tile_bytes);
    for (uint32_t i = 0; i < n_tiles; ++i) {
        cb_wait_front(cb_out, 1);
#ifdef PRINT_SLICE
        DPRINT("tile {}:\n{}", i, TSLICE(cb_out, 0, SliceRange::hw0_32_16(), TSLICE_OUTPUT_CB, TSLICE_RD_PTR));
        DPRINT("row 1: {}\n", TileSlice<16>(cb_out, 0, SliceRange{.h0 = 1, .h1 = 2, .hs = 1, .w0 = 0, .w1 = 32, .ws = 1},
                                            TSLICE_OUTPUT_CB, TSLICE_RD_PTR, false));
#endif
        noc_async_write_tile(i, out, get_read_ptr(cb_out));
        noc_async_write_barrier();
        cb_pop_front(cb_out, 1);
    }
}
