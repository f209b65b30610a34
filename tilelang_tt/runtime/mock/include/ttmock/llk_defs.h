// tilelang-tt mock TT-Metalium: the LLK enums the compute API takes (the SDK's llk_defs.h,
// namespace ckernel; same enumerators and values).
#pragma once
#include <cstdint>

namespace ckernel {

enum class VectorMode : std::uint8_t {
    None = 0,
    R = 1,
    C = 2,
    RC = 4,
    RC_custom = 6,
    Invalid = 0xFF,
};

enum class ReduceDim : std::uint8_t {
    REDUCE_ROW,
    REDUCE_COL,
    REDUCE_SCALAR,
};

enum class PoolType : std::uint8_t {
    SUM,
    AVG,
    MAX,
    MIN,
};

enum class BroadcastType : std::uint8_t {
    NONE = 0x0,
    COL = 0x1,
    ROW = 0x2,
    SCALAR = 0x3,
};

enum class DstRoundingMode : std::uint8_t {
    Default = 0,
    NearestEven = 1,
};

enum class DstSync : std::uint8_t {
    SyncHalf = 0,
    SyncFull = 1,
};

struct p_sfpu {
    constexpr static std::uint32_t kCONST_1_FP16B = 0x3F80;
};

}  // namespace ckernel

