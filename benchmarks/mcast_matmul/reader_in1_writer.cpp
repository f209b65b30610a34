// B blocks: the core of row 0 reads its column's block from DRAM and multicasts it down the
// column; then this kernel writes the core's output block.
// compile args: Nb, kb, num K blocks, Nt, Mb, B accessor, C accessor; runtime: b_addr, c_addr,
// column, row, is_sender, sender NOC x/y, multicast rectangle (first, last) NOC x/y
#include <cstdint>
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    constexpr uint32_t Nb = get_compile_time_arg_val(0), kb = get_compile_time_arg_val(1);
    constexpr uint32_t nkb = get_compile_time_arg_val(2), Nt = get_compile_time_arg_val(3);
    constexpr uint32_t Mb = get_compile_time_arg_val(4);
    constexpr auto b_args = TensorAccessorArgs<5>();
    constexpr auto c_args = TensorAccessorArgs<b_args.next_compile_time_args_offset()>();
    const auto B = TensorAccessor(b_args, get_arg_val<uint32_t>(0), 2048);
    const auto C = TensorAccessor(c_args, get_arg_val<uint32_t>(1), 2048);
    const uint32_t col = get_arg_val<uint32_t>(2), row = get_arg_val<uint32_t>(3);
    const uint32_t is_sender = get_arg_val<uint32_t>(4);
    const uint32_t sx = get_arg_val<uint32_t>(5), sy = get_arg_val<uint32_t>(6);
    const uint32_t x0 = get_arg_val<uint32_t>(7), y0 = get_arg_val<uint32_t>(8);
    const uint32_t x1 = get_arg_val<uint32_t>(9), y1 = get_arg_val<uint32_t>(10);
    constexpr uint32_t tiles = kb * Nb, receivers = 7;
    volatile uint32_t* ready = reinterpret_cast<volatile uint32_t*>(get_semaphore(2));
    volatile uint32_t* valid = reinterpret_cast<volatile uint32_t*>(get_semaphore(3));
    for (uint32_t k = 0; k < nkb; ++k) {
        cb_reserve_back(1, tiles);
        const uint32_t l1 = get_write_ptr(1);
        if (is_sender) {
            for (uint32_t i = 0; i < kb; ++i) {
                for (uint32_t j = 0; j < Nb; ++j) {
                    noc_async_read_page((k * kb + i) * Nt + col * Nb + j, B, l1 + (i * Nb + j) * 2048);
                }
            }
            noc_async_read_barrier();
            noc_semaphore_wait(ready, receivers);
            noc_semaphore_set(ready, 0);
            noc_async_write_multicast(l1, get_noc_multicast_addr(x0, y0, x1, y1, l1), tiles * 2048, receivers);
            noc_semaphore_set(valid, 1);
            noc_semaphore_set_multicast(get_semaphore(3), get_noc_multicast_addr(x0, y0, x1, y1, get_semaphore(3)),
                                        receivers);
            noc_async_write_barrier();
        } else {
            noc_semaphore_set(valid, 0);
            noc_semaphore_inc(get_noc_addr(sx, sy, get_semaphore(2)), 1);
            noc_semaphore_wait(valid, 1);
        }
        cb_push_back(1, tiles);
    }
    cb_wait_front(16, Mb * Nb);
    const uint32_t out = get_read_ptr(16);
    for (uint32_t i = 0; i < Mb; ++i) {
        for (uint32_t j = 0; j < Nb; ++j) {
            noc_async_write_page((row * Mb + i) * Nt + col * Nb + j, C, out + (i * Nb + j) * 2048);
        }
    }
    noc_async_write_barrier();
    cb_pop_front(16, Mb * Nb);
}
