// Multicast test: each core writes the tile it holds to its own page of the output.
#include <cstdint>
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t dst_addr = get_arg_val<uint32_t>(0);
    const uint32_t page = get_arg_val<uint32_t>(1);
    constexpr auto dst_args = TensorAccessorArgs<0>();
    const auto dst = TensorAccessor(dst_args, dst_addr, get_tile_size(0));
    cb_wait_front(0, 1);
    noc_async_write_page(page, dst, get_read_ptr(0));
    noc_async_write_barrier();
    cb_pop_front(0, 1);
}
