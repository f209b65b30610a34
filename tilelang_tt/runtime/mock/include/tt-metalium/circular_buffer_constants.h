// tilelang-tt mock TT-Metalium: circular buffer count, shared by host and device code. As in the
// SDK, host code sizes its per-CB arrays for the largest architecture (64); a Wormhole device
// build (ARCH_WORMHOLE) has 32. The emulator refuses CB indices its device does not have.
#pragma once
#include <cstdint>

#if defined(ARCH_WORMHOLE)
inline constexpr std::uint32_t NUM_CIRCULAR_BUFFERS = 32;
#else
inline constexpr std::uint32_t NUM_CIRCULAR_BUFFERS = 64;
#endif
