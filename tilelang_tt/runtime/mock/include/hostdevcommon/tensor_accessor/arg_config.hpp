// tilelang-tt mock TT-Metalium: the TensorAccessor configuration word (host and device).
// Bit values are the SDK's: TensorAccessorArgs(buffer).append_to(args) appends this word and the
// aligned page size for an interleaved buffer; the device side decodes the same two words.
#pragma once
#include <cstdint>

#include <hostdevcommon/flags.hpp>

namespace tensor_accessor {

enum class ArgConfig : uint8_t {
    None = 0,
    Sharded = 1 << 0,
    IsDram = 1 << 1,
    RuntimeRank = 1 << 2,
    RuntimeNumBanks = 1 << 3,
    RuntimeTensorShape = 1 << 4,
    RuntimeShardShape = 1 << 5,
    RuntimeBankCoords = 1 << 6,
    RuntimePageSize = 1 << 7,
    Runtime = RuntimeRank | RuntimeNumBanks | RuntimeTensorShape | RuntimeShardShape | RuntimeBankCoords |
              RuntimePageSize,
};

using ArgsConfig = Flags<ArgConfig>;
constexpr ArgsConfig operator|(ArgConfig a, ArgConfig b) noexcept { return ArgsConfig(a) | b; }
constexpr ArgsConfig operator|(ArgConfig a, ArgsConfig b) noexcept { return ArgsConfig(a) | b; }

}  // namespace tensor_accessor
