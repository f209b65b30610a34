// Overlapping writes (see main.cpp). runtime args: dst_addr, x, target_noc_x, target_noc_y
#include <cstdint>
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t dst_addr = get_arg_val<uint32_t>(0);
    const uint32_t x = get_arg_val<uint32_t>(1);
    const uint32_t tx = get_arg_val<uint32_t>(2), ty = get_arg_val<uint32_t>(3);
    constexpr auto dst_args = TensorAccessorArgs<0>();
    const auto dst = TensorAccessor(dst_args, dst_addr, get_tile_size(0));
    volatile uint32_t* done = reinterpret_cast<volatile uint32_t*>(get_semaphore(0));
    cb_reserve_back(0, 1);
    const uint32_t l1 = get_write_ptr(0);
    if (x == 0) {
        noc_semaphore_wait(done, 2);  // both tiles landed in this core's L1
        noc_async_write_page(1, dst, l1);
        noc_async_write_barrier();
        return;
    }
    volatile uint32_t* tile = reinterpret_cast<volatile uint32_t*>(l1);
    for (uint32_t i = 0; i < 512; ++i) tile[i] = x * 0x00010001u;  // two bf16 values per word
    noc_async_write(l1, get_noc_addr(tx, ty, l1), 2048);
    noc_async_write_page(0, dst, l1);
    noc_async_write_barrier();
    noc_semaphore_inc(get_noc_addr(tx, ty, get_semaphore(0)), 1);
}
