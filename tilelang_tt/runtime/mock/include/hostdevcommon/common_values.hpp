// tilelang-tt mock TT-Metalium: values shared by host and device code (the defaults that
// MeshDevice::create_unit_mesh takes).
#pragma once
#include <cstddef>
#include <cstdint>

constexpr static std::size_t DEFAULT_L1_SMALL_SIZE = 0;
constexpr static std::size_t DEFAULT_TRACE_REGION_SIZE = 0;
constexpr static std::size_t DEFAULT_WORKER_L1_SIZE = 0;  // 0: the device's own size
