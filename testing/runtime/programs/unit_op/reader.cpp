// Unit-op test program: reads tile 0 of A into c_0 and tile 0 of B into c_1.
#include <cstdint>
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t a_addr = get_arg_val<uint32_t>(0);
    const uint32_t b_addr = get_arg_val<uint32_t>(1);
    constexpr auto a_args = TensorAccessorArgs<0>();
    constexpr auto b_args = TensorAccessorArgs<a_args.next_compile_time_args_offset()>();
    const auto a = TensorAccessor(a_args, a_addr, get_tile_size(0));
    const auto b = TensorAccessor(b_args, b_addr, get_tile_size(1));
    cb_reserve_back(0, 1);
    cb_reserve_back(1, 1);
    noc_async_read_page(0, a, get_write_ptr(0));
    noc_async_read_page(0, b, get_write_ptr(1));
    noc_async_read_barrier();
    cb_push_back(0, 1);
    cb_push_back(1, 1);
}
