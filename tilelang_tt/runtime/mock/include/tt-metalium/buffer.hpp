// tilelang-tt mock TT-Metalium: device addresses (the emulator has MeshBuffers only, no Buffer).
#pragma once
#include <cstdint>

#include <tt-metalium/buffer_types.hpp>

namespace tt::tt_metal {

using DeviceAddr = uint64_t;

}  // namespace tt::tt_metal
