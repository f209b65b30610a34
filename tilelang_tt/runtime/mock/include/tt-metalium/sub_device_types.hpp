// tilelang-tt mock TT-Metalium: sub-device ids (the emulator has one sub-device, 0).
#pragma once
#include <cstdint>

#include <tt_stl/strong_type.hpp>

namespace tt::tt_metal {

using SubDeviceId = ttsl::StrongType<uint8_t, struct SubDeviceIdTag>;

}  // namespace tt::tt_metal
