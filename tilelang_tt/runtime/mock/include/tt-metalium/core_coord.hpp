// tilelang-tt mock TT-Metalium: logical core coordinates, rectangles and sets of rectangles.
// As in TT-Metalium 0.81.1: CoreCoord is UMD's tt::xy_pair, CoreRange and CoreRangeSet live in
// tt::tt_metal, the global names are deprecated aliases; member functions are defined in the library.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <tt_stl/span.hpp>
#include <umd/device/types/xy_pair.hpp>

namespace tt::tt_metal {

using CoreCoord = tt_xy_pair;

class CoreRangeSet;

constexpr bool operator<=(const CoreCoord& a, const CoreCoord& b) { return (a < b) || (a == b); }

// An inclusive rectangle of cores; start_coord <= end_coord in both dimensions.
class CoreRange {
public:
    CoreCoord start_coord;
    CoreCoord end_coord;

    CoreRange(const CoreCoord& point);
    CoreRange(const CoreCoord& start_coord, const CoreCoord& end_coord);

    CoreRange(const CoreRange& other) = default;
    CoreRange& operator=(const CoreRange& other) = default;
    CoreRange(CoreRange&& other) noexcept = default;
    CoreRange& operator=(CoreRange&& other) noexcept = default;

    bool intersects(const CoreRange& other) const;
    bool contains(const CoreCoord& other) const;
    bool contains(const CoreRange& other) const;
    std::string str() const;
    size_t size() const;
    CoreCoord grid_size() const;

    // Row-major walk over the rectangle (x fastest).
    class CoreIterator {
    public:
        CoreIterator(const CoreCoord& current, const CoreRange& core_range);
        CoreCoord& operator*();
        CoreIterator& operator++();
        bool operator==(const CoreIterator& other) const;
        bool operator!=(const CoreIterator& other) const;

    private:
        CoreCoord current_;
        const CoreRange& range_;
    };

    CoreIterator begin() const;
    CoreIterator end() const;
};

constexpr bool operator==(const CoreRange& a, const CoreRange& b) {
    return a.start_coord == b.start_coord && a.end_coord == b.end_coord;
}
constexpr bool operator!=(const CoreRange& a, const CoreRange& b) { return !(a == b); }
constexpr bool operator<(const CoreRange& a, const CoreRange& b) {
    return a.start_coord < b.start_coord || (a.start_coord == b.start_coord && a.end_coord < b.end_coord);
}

// Non-overlapping rectangles (constructing one from overlapping rectangles is an error).
class CoreRangeSet {
public:
    CoreRangeSet(ttsl::Span<const CoreRange> core_ranges);
    CoreRangeSet(const std::set<CoreRange>& core_ranges);
    CoreRangeSet(const CoreRange& core_range);
    CoreRangeSet(ttsl::Span<const CoreCoord> core_coords);
    CoreRangeSet() = default;

    CoreRangeSet(const CoreRangeSet& other);
    CoreRangeSet& operator=(const CoreRangeSet& other) noexcept = default;
    CoreRangeSet(CoreRangeSet&& other) noexcept;
    CoreRangeSet& operator=(CoreRangeSet&& other) noexcept = default;
    CoreRangeSet(std::vector<CoreRange>&& core_ranges);

    bool empty() const;
    size_t size() const;
    bool intersects(const CoreCoord& other) const;
    bool intersects(const CoreRange& other) const;
    bool contains(const CoreCoord& other) const;
    bool contains(const CoreRange& other) const;
    const std::vector<CoreRange>& ranges() const;
    std::string str() const;
    uint32_t num_cores() const;
    CoreRange bounding_box() const;

private:
    void validate_no_overlap();
    std::vector<CoreRange> ranges_;
};

bool operator==(const CoreRangeSet& a, const CoreRangeSet& b);
bool operator!=(const CoreRangeSet& a, const CoreRangeSet& b);

// The cores of a set, row by row within each rectangle (column by column when !row_wise).
std::vector<CoreCoord> corerange_to_cores(
    const CoreRangeSet& crs, std::optional<uint32_t> max_cores = std::nullopt, bool row_wise = false);

}  // namespace tt::tt_metal

using CoreCoord [[deprecated("Use tt::tt_metal::CoreCoord")]] = tt::tt_metal::CoreCoord;
using CoreRange [[deprecated("Use tt::tt_metal::CoreRange")]] = tt::tt_metal::CoreRange;
using CoreRangeSet [[deprecated("Use tt::tt_metal::CoreRangeSet")]] = tt::tt_metal::CoreRangeSet;
