// Reference-numerics program: streams the operand tiles of C = A op B (eltwise: tile t of A and
// of B; matmul: A(i, k) and B(k, j) for every output tile (i, j) and every k) into c_0 / c_1.
#include <cstdint>
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    const uint32_t a_addr = get_arg_val<uint32_t>(0);
    const uint32_t b_addr = get_arg_val<uint32_t>(1);
    const uint32_t mt = get_arg_val<uint32_t>(2), nt = get_arg_val<uint32_t>(3), kt = get_arg_val<uint32_t>(4);
    const uint32_t matmul = get_arg_val<uint32_t>(5);
    constexpr auto a_args = TensorAccessorArgs<0>();
    constexpr auto b_args = TensorAccessorArgs<a_args.next_compile_time_args_offset()>();
    const auto a = TensorAccessor(a_args, a_addr, get_tile_size(0));
    const auto b = TensorAccessor(b_args, b_addr, get_tile_size(1));
    auto push = [&](uint32_t ia, uint32_t ib) {
        cb_reserve_back(0, 1);
        cb_reserve_back(1, 1);
        noc_async_read_page(ia, a, get_write_ptr(0));
        noc_async_read_page(ib, b, get_write_ptr(1));
        noc_async_read_barrier();
        cb_push_back(0, 1);
        cb_push_back(1, 1);
    };
    if (matmul) {
        for (uint32_t i = 0; i < mt; ++i)
            for (uint32_t j = 0; j < nt; ++j)
                for (uint32_t k = 0; k < kt; ++k) push(i * kt + k, k * nt + j);
    } else {
        for (uint32_t t = 0; t < mt * nt; ++t) push(t, t);
    }
}
