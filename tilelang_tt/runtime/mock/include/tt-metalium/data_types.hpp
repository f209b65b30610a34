// tilelang-tt mock TT-Metalium: data movement processors and NOC selection.
#pragma once
#include <cstdint>

namespace tt::tt_metal {

enum class DataMovementProcessor { RISCV_0 = 0, RISCV_1 = 1 };

enum NOC : uint8_t { RISCV_0_default = 0, RISCV_1_default = 1, NOC_0 = 0, NOC_1 = 1 };

enum NOC_MODE : uint8_t { DM_DEDICATED_NOC = 0, DM_DYNAMIC_NOC = 1 };

}  // namespace tt::tt_metal
