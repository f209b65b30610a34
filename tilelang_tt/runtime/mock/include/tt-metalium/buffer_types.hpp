// tilelang-tt mock TT-Metalium: where a buffer lives and how it is split (the SDK's buffer_types.hpp).
#pragma once
#include <cstdint>
#include <string_view>

#include <tt_stl/reflection.hpp>

namespace tt::tt_metal {

enum class TensorMemoryLayout {
    INTERLEAVED = 0,
    HEIGHT_SHARDED = 2,
    WIDTH_SHARDED = 3,
    BLOCK_SHARDED = 4,
    ND_SHARDED = 5,
};

enum class ShardOrientation {
    ROW_MAJOR = 0,
    COL_MAJOR,
};

enum class ShardDistributionStrategy {
    ROUND_ROBIN_1D = 0,
    GRID_2D = 1,
    CONTIGUOUS_1D = 2,
};

enum class BufferType { DRAM, L1, SYSTEM_MEMORY, L1_SMALL, TRACE };

// enumerator names, as fmt prints these enums (tt_stl/reflection.hpp)
constexpr std::string_view enum_name(TensorMemoryLayout v) {
    switch (v) {
        case TensorMemoryLayout::INTERLEAVED: return "INTERLEAVED";
        case TensorMemoryLayout::HEIGHT_SHARDED: return "HEIGHT_SHARDED";
        case TensorMemoryLayout::WIDTH_SHARDED: return "WIDTH_SHARDED";
        case TensorMemoryLayout::BLOCK_SHARDED: return "BLOCK_SHARDED";
        case TensorMemoryLayout::ND_SHARDED: return "ND_SHARDED";
    }
    return "";
}
constexpr std::string_view enum_name(ShardOrientation v) {
    return v == ShardOrientation::ROW_MAJOR ? "ROW_MAJOR" : "COL_MAJOR";
}
constexpr std::string_view enum_name(BufferType v) {
    switch (v) {
        case BufferType::DRAM: return "DRAM";
        case BufferType::L1: return "L1";
        case BufferType::SYSTEM_MEMORY: return "SYSTEM_MEMORY";
        case BufferType::L1_SMALL: return "L1_SMALL";
        case BufferType::TRACE: return "TRACE";
    }
    return "";
}

}  // namespace tt::tt_metal
