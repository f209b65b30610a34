// tilelang-tt mock TT-Metalium: dividing work units over a grid of cores.
#pragma once
#include <cstdint>
#include <tuple>

#include <tt-metalium/core_coord.hpp>

namespace tt::tt_metal {

// (cores used, all cores, group 1, group 2, units per group-1 core, units per group-2 core)
std::tuple<uint32_t, CoreRangeSet, CoreRangeSet, CoreRangeSet, uint32_t, uint32_t> split_work_to_cores(
    const CoreCoord grid_size, uint32_t units_to_divide, bool row_wise = false);

CoreRangeSet num_cores_to_corerangeset(uint32_t target_num_cores, const CoreCoord grid_size, bool row_wise = false);
CoreRangeSet num_cores_to_corerangeset(
    const CoreCoord start_core, uint32_t target_num_cores, const CoreCoord grid_size, bool row_wise = false);

}  // namespace tt::tt_metal
