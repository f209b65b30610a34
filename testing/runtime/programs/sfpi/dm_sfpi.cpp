// sfpi strictness: a data movement kernel that uses SFPI (the SFPU belongs to the compute kernel)
#include <cstdint>

#include "sfpi.h"

void kernel_main() {
    sfpi::vFloat x = sfpi::dst_reg[0];
    sfpi::dst_reg[0] = x;
}
