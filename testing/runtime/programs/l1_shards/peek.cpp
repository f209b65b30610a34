// l1_shards peek: a second kernel on the compute kernel's input CB. It waits for a page no one
// pushes while the compute kernel steps through the CB unguarded: a race on hardware (strictness
// check, refused).
#include <cstdint>

void kernel_main() {
    constexpr uint32_t cb = get_compile_time_arg_val(0);
    cb_wait_front(cb, 1);
    cb_pop_front(cb, 1);
}
