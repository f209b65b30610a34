// Unit-op test program: writes the tile in c_16 to page 0 of C.
#include <cstdint>
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t c_addr = get_arg_val<uint32_t>(0);
    constexpr auto c_args = TensorAccessorArgs<0>();
    const auto c = TensorAccessor(c_args, c_addr, get_tile_size(16));
    cb_wait_front(16, 1);
    noc_async_write_page(0, c, get_read_ptr(16));
    noc_async_write_barrier();
    cb_pop_front(16, 1);
}
