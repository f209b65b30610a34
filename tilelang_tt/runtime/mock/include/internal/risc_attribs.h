// tilelang-tt mock TT-Metalium: function and pointer attributes of kernel code
// (internal/risc_attribs.h). The L1 pointer attribute has no meaning on the CPU.
#pragma once

#define tt_l1_ptr
#define FORCE_INLINE inline __attribute__((always_inline))
