#include <cstdint>

#include "api/debug/dprint.h"

// c_0 and c_1 share one four-page L1 region; every index's ring starts at the region's start.
void kernel_main() {
    constexpr uint32_t mode = get_compile_time_arg_val(0);
    constexpr uint32_t a = 0, b = 1;
    if (mode == 2) {  // c_3 follows a 32-byte c_2: its distance shows the CB alignment
        DPRINT("c_3 - c_2 = {}\n", get_write_ptr(3) - get_write_ptr(2));
        return;
    }
    cb_reserve_back(a, 2);  // a: region pages 0-1
    cb_push_back(a, 2);
    cb_reserve_back(a, 2);  // a: pages 2-3
    cb_push_back(a, 2);
    cb_wait_front(a, 2);
    cb_pop_front(a, 2);     // a now holds pages 2-3 only
    cb_reserve_back(b, 2);  // b: pages 0-1, which a freed
    cb_push_back(b, 2);
    cb_wait_front(b, 2);
    cb_pop_front(b, 2);
    if (mode == 1) {
        cb_reserve_back(b, 2);  // b: pages 2-3, which a still holds
        cb_push_back(b, 2);
        cb_wait_front(b, 2);
        cb_pop_front(b, 2);
    }
    cb_wait_front(a, 2);
    cb_pop_front(a, 2);
}
