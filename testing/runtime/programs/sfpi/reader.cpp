// sfpi reader: n_in input buffers' tiles into CBs c_0 (and c_1), one tile at a time.
#include <cstdint>

constexpr uint32_t cb_a = 0, cb_b = 1;

void kernel_main() {
    const uint32_t a_addr = get_arg_val<uint32_t>(0);
    const uint32_t b_addr = get_arg_val<uint32_t>(1);
    const uint32_t n_tiles = get_arg_val<uint32_t>(2);
    constexpr uint32_t n_in = get_compile_time_arg_val(0);
    constexpr auto a_args = TensorAccessorArgs<1>();
    constexpr auto b_args = TensorAccessorArgs<a_args.next_compile_time_args_offset()>();
    const uint32_t tile_bytes = get_tile_size(cb_a);
    const auto a = TensorAccessor(a_args, a_addr, tile_bytes);
    const auto b = TensorAccessor(b_args, b_addr, tile_bytes);
    for (uint32_t i = 0; i < n_tiles; ++i) {
        cb_reserve_back(cb_a, 1);
        noc_async_read_tile(i, a, get_write_ptr(cb_a));
        if constexpr (n_in > 1) {
            cb_reserve_back(cb_b, 1);
            noc_async_read_tile(i, b, get_write_ptr(cb_b));
        }
        noc_async_read_barrier();
        cb_push_back(cb_a, 1);
        if constexpr (n_in > 1) cb_push_back(cb_b, 1);
    }
}
