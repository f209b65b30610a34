// tilelang-tt mock TT-Metalium: core coordinates and ranges.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

struct CoreCoord {
    std::size_t x = 0;
    std::size_t y = 0;
    constexpr CoreCoord() = default;
    constexpr CoreCoord(std::size_t x_, std::size_t y_) : x(x_), y(y_) {}
    bool operator==(const CoreCoord& o) const { return x == o.x && y == o.y; }
    bool operator!=(const CoreCoord& o) const { return !(*this == o); }
    bool operator<(const CoreCoord& o) const { return y < o.y || (y == o.y && x < o.x); }
    std::string str() const { return "(x=" + std::to_string(x) + ",y=" + std::to_string(y) + ")"; }
};

// An inclusive rectangle of cores.
class CoreRange {
public:
    CoreCoord start_coord, end_coord;
    CoreRange(const CoreCoord& point) : start_coord(point), end_coord(point) {}
    CoreRange(const CoreCoord& start, const CoreCoord& end) : start_coord(start), end_coord(end) {}
    bool contains(const CoreCoord& c) const {
        return c.x >= start_coord.x && c.x <= end_coord.x && c.y >= start_coord.y && c.y <= end_coord.y;
    }
    std::size_t size() const {
        return (end_coord.x - start_coord.x + 1) * (end_coord.y - start_coord.y + 1);
    }
    std::vector<CoreCoord> cores() const {
        std::vector<CoreCoord> out;
        for (std::size_t y = start_coord.y; y <= end_coord.y; ++y)
            for (std::size_t x = start_coord.x; x <= end_coord.x; ++x) out.emplace_back(x, y);
        return out;
    }
    class iterator {
    public:
        iterator(const CoreRange* r, CoreCoord c) : r_(r), c_(c) {}
        CoreCoord operator*() const { return c_; }
        iterator& operator++() {
            if (++c_.x > r_->end_coord.x) {
                c_.x = r_->start_coord.x;
                ++c_.y;
            }
            return *this;
        }
        bool operator!=(const iterator& o) const { return c_ != o.c_; }
    private:
        const CoreRange* r_;
        CoreCoord c_;
    };
    iterator begin() const { return iterator(this, start_coord); }
    iterator end() const { return iterator(this, CoreCoord(start_coord.x, end_coord.y + 1)); }
    std::string str() const { return "[" + start_coord.str() + " - " + end_coord.str() + "]"; }
};

class CoreRangeSet {
public:
    CoreRangeSet() = default;
    CoreRangeSet(const CoreRange& r) : ranges_{r} {}
    CoreRangeSet(const std::vector<CoreRange>& rs) : ranges_(rs) {}
    const std::vector<CoreRange>& ranges() const { return ranges_; }
    bool contains(const CoreCoord& c) const {
        for (const auto& r : ranges_) if (r.contains(c)) return true;
        return false;
    }
    std::size_t num_cores() const {
        std::size_t n = 0;
        for (const auto& r : ranges_) n += r.size();
        return n;
    }
    bool empty() const { return ranges_.empty(); }
    std::vector<CoreCoord> cores() const {
        std::vector<CoreCoord> out;
        for (const auto& r : ranges_) for (const auto& c : r.cores()) out.push_back(c);
        return out;
    }
private:
    std::vector<CoreRange> ranges_;
};

namespace tt::tt_metal {
using ::CoreCoord;
using ::CoreRange;
using ::CoreRangeSet;
}  // namespace tt::tt_metal
