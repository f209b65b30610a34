// Calibration reader (see main.cpp). Runtime arg 0 selects what it does.
#include <cstdint>
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t mode = get_arg_val<uint32_t>(0);
    constexpr auto args = TensorAccessorArgs<0>();
    if (mode == 0) {  // matmul: one tile to each of c_0 and c_1
        const auto src = TensorAccessor(args, get_arg_val<uint32_t>(1), 2048);
        for (uint32_t cb = 0; cb < 2; ++cb) {
            cb_reserve_back(cb, 1);
            noc_async_read_page(cb, src, get_write_ptr(cb));
            noc_async_read_barrier();
            cb_push_back(cb, 1);
        }
    } else if (mode == 1) {  // DRAM pages first, first + stride, ...; a barrier every block
        const auto src = TensorAccessor(args, get_arg_val<uint32_t>(1), 2048);
        const uint32_t pages = get_arg_val<uint32_t>(2), block = get_arg_val<uint32_t>(3);
        const uint32_t first = get_arg_val<uint32_t>(4), stride = get_arg_val<uint32_t>(5);
        const uint32_t l1 = get_write_ptr(0);
        for (uint32_t p = 0; p < pages; ++p) {
            noc_async_read_page(first + p * stride, src, l1 + (p % block) * 2048);
            if (p % block == block - 1) noc_async_read_barrier();
        }
        noc_async_read_barrier();
    } else {  // L1 of another core: n transfers of size bytes, one barrier
        const uint32_t x = get_arg_val<uint32_t>(1), y = get_arg_val<uint32_t>(2);
        const uint32_t n = get_arg_val<uint32_t>(3), size = get_arg_val<uint32_t>(4);
        const uint32_t l1 = get_write_ptr(0);
        for (uint32_t i = 0; i < n; ++i) noc_async_read(get_noc_addr(x, y, l1), l1, size);
        noc_async_read_barrier();
    }
}
