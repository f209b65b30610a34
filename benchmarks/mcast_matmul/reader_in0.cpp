// A blocks: the core of column 0 reads its row's block from DRAM and multicasts it along the row.
// compile args: Mb, kb, num K blocks, Kt, A accessor; runtime: a_addr, row, is_sender,
// sender NOC x/y, multicast rectangle (first, last) NOC x/y
#include <cstdint>
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    constexpr uint32_t Mb = get_compile_time_arg_val(0), kb = get_compile_time_arg_val(1);
    constexpr uint32_t nkb = get_compile_time_arg_val(2), Kt = get_compile_time_arg_val(3);
    constexpr auto a_args = TensorAccessorArgs<4>();
    const auto A = TensorAccessor(a_args, get_arg_val<uint32_t>(0), 2048);
    const uint32_t row = get_arg_val<uint32_t>(1), is_sender = get_arg_val<uint32_t>(2);
    const uint32_t sx = get_arg_val<uint32_t>(3), sy = get_arg_val<uint32_t>(4);
    const uint32_t x0 = get_arg_val<uint32_t>(5), y0 = get_arg_val<uint32_t>(6);
    const uint32_t x1 = get_arg_val<uint32_t>(7), y1 = get_arg_val<uint32_t>(8);
    constexpr uint32_t tiles = Mb * kb, receivers = 7;
    volatile uint32_t* ready = reinterpret_cast<volatile uint32_t*>(get_semaphore(0));
    volatile uint32_t* valid = reinterpret_cast<volatile uint32_t*>(get_semaphore(1));
    for (uint32_t k = 0; k < nkb; ++k) {
        cb_reserve_back(0, tiles);
        const uint32_t l1 = get_write_ptr(0);
        if (is_sender) {
            for (uint32_t i = 0; i < Mb; ++i) {
                for (uint32_t j = 0; j < kb; ++j) {
                    noc_async_read_page((row * Mb + i) * Kt + k * kb + j, A, l1 + (i * kb + j) * 2048);
                }
            }
            noc_async_read_barrier();
            noc_semaphore_wait(ready, receivers);
            noc_semaphore_set(ready, 0);
            noc_async_write_multicast(l1, get_noc_multicast_addr(x0, y0, x1, y1, l1), tiles * 2048, receivers);
            noc_semaphore_set(valid, 1);
            noc_semaphore_set_multicast(get_semaphore(1), get_noc_multicast_addr(x0, y0, x1, y1, get_semaphore(1)),
                                        receivers);
            noc_async_write_barrier();
        } else {
            noc_semaphore_set(valid, 0);
            noc_semaphore_inc(get_noc_addr(sx, sy, get_semaphore(0)), 1);
            noc_semaphore_wait(valid, 1);
        }
        cb_push_back(0, tiles);
    }
}
