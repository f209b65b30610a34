// tilelang-tt mock TT-Metalium: where a buffer lives.
#pragma once
#include <cstdint>

namespace tt::tt_metal {

enum class BufferType { DRAM, L1, SYSTEM_MEMORY, L1_SMALL, TRACE };

}  // namespace tt::tt_metal
