// Multicast test: core (0,0) reads one tile from DRAM and multicasts it to cores (1..3, 0),
// which tell it they are ready with noc_semaphore_inc and learn the data landed through a
// semaphore the sender sets by multicast. Every core then pushes the tile to its writer.
// runtime args: src_addr, sender_noc_x, sender_noc_y, mcast_x0, mcast_y0, mcast_x1, mcast_y1
#include <cstdint>
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t src_addr = get_arg_val<uint32_t>(0);
    const uint32_t sender_x = get_arg_val<uint32_t>(1), sender_y = get_arg_val<uint32_t>(2);
    const uint32_t x0 = get_arg_val<uint32_t>(3), y0 = get_arg_val<uint32_t>(4);
    const uint32_t x1 = get_arg_val<uint32_t>(5), y1 = get_arg_val<uint32_t>(6);
    const uint32_t is_sender = get_arg_val<uint32_t>(7);
    constexpr uint32_t num_receivers = get_compile_time_arg_val(0);
    constexpr auto src_args = TensorAccessorArgs<1>();
    const auto src = TensorAccessor(src_args, src_addr, get_tile_size(0));

    volatile uint32_t* ready = reinterpret_cast<volatile uint32_t*>(get_semaphore(0));
    volatile uint32_t* valid = reinterpret_cast<volatile uint32_t*>(get_semaphore(1));
    cb_reserve_back(0, 1);
    const uint32_t l1 = get_write_ptr(0);
    if (is_sender) {
        noc_async_read_page(0, src, l1);
        noc_async_read_barrier();
        noc_semaphore_wait(ready, num_receivers);  // every receiver has room for the tile
        noc_semaphore_set(ready, 0);
        noc_async_write_multicast(l1, get_noc_multicast_addr(x0, y0, x1, y1, l1), get_tile_size(0),
                                  num_receivers);
        noc_async_write_barrier();
        noc_semaphore_set(valid, 1);
        noc_semaphore_set_multicast(get_semaphore(1), get_noc_multicast_addr(x0, y0, x1, y1, get_semaphore(1)),
                                    num_receivers);
    } else {
        noc_semaphore_set(valid, 0);
        noc_semaphore_inc(get_noc_addr(sender_x, sender_y, get_semaphore(0)), 1);
        noc_semaphore_wait(valid, 1);
    }
    cb_push_back(0, 1);
}
