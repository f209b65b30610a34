// l1_interleaved copy: this core's tiles (i, i + cores, ...) from DRAM to the L1 buffer and on to
// DRAM, through CB c_0, with the fast interleaved generators and a TensorAccessor over L1; the
// CB's tile size and data format are constant expressions.
#include <cstdint>

void kernel_main() {
    const uint32_t src = get_arg_val<uint32_t>(0), mid = get_arg_val<uint32_t>(1), dst = get_arg_val<uint32_t>(2);
    const uint32_t first = get_arg_val<uint32_t>(3), step = get_arg_val<uint32_t>(4), n = get_arg_val<uint32_t>(5);
    constexpr uint32_t cb = get_compile_time_arg_val(0);
    // constant expressions, as the SDK's JIT makes them: the CB exists on every core when the kernel is created
    constexpr uint32_t tile = get_tile_size(cb);
#ifdef WRONG_FORMAT  // a strictness check: Float32 tiles are 4096 bytes apart, the buffer's pages 2048
    const DataFormat format = DataFormat::Float32;
#else
    constexpr DataFormat format = get_dataformat(cb);
    static_assert(format == DataFormat::Float16_b && tile == 2048);
#endif
#ifdef UNKNOWN_CB  // a CB no core of the kernel has when it is created: not a constant
    constexpr uint32_t other = get_tile_size(7);
#endif
    const InterleavedAddrGenFast<true> in{.bank_base_address = src, .page_size = tile, .data_format = format};
    const InterleavedAddrGenFast<false> stage{.bank_base_address = mid, .page_size = tile, .data_format = format};
    const InterleavedAddrGenFast<true> out{.bank_base_address = dst, .page_size = tile, .data_format = format};
    constexpr auto mid_args = TensorAccessorArgs<1>();
    const auto staged = TensorAccessor(mid_args, mid, tile);
    for (uint32_t t = first; t < n; t += step) {
        cb_reserve_back(cb, 1);
        const uint32_t l1 = get_write_ptr(cb);
        noc_async_read_tile(t, in, l1);
        noc_async_read_barrier();
        noc_async_write_tile(t, stage, l1);  // to the L1 bank (core) that holds page t
        noc_async_write_barrier();
        noc_async_read_page(t, staged, l1);  // and back, through the accessor
        noc_async_read_barrier();
        noc_async_write_tile(t, out, l1);
        noc_async_write_barrier();
        cb_push_back(cb, 1);
        cb_wait_front(cb, 1);
        cb_pop_front(cb, 1);
    }
}
