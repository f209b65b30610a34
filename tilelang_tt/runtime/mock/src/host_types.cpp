// tilelang-tt mock TT-Metalium: the host API's value types - core coordinates and ranges,
// circular buffer configs, bfloat16, tilize/untilize, mesh shapes, work splitting. These are
// the out-of-line members the SDK's library defines; errors are reported like the emulator's.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <cstring>
#include <sstream>

#include "host_internal.hpp"
#include "tt-metalium/bfloat16.hpp"
#include "tt-metalium/tilize_utils.hpp"
#include "tt-metalium/work_split.hpp"
#include "ttmock/numerics.hpp"

using ttmock::host_fail;

// ---- tt::xy_pair ---------------------------------------------------------------------------------

std::string tt::xy_pair::str() const { return "(x=" + std::to_string(x) + ",y=" + std::to_string(y) + ")"; }

namespace tt::tt_metal {

// ---- CoreRange -----------------------------------------------------------------------------------

CoreRange::CoreRange(const CoreCoord& point) : start_coord(point), end_coord(point) {}

CoreRange::CoreRange(const CoreCoord& start, const CoreCoord& end) : start_coord(start), end_coord(end) {
    if (end.x < start.x || end.y < start.y) {
        host_fail("CoreRange: end " + end.str() + " lies before start " + start.str());
    }
}

bool CoreRange::intersects(const CoreRange& o) const {
    return start_coord.x <= o.end_coord.x && o.start_coord.x <= end_coord.x && start_coord.y <= o.end_coord.y &&
           o.start_coord.y <= end_coord.y;
}

bool CoreRange::contains(const CoreCoord& c) const {
    return c.x >= start_coord.x && c.x <= end_coord.x && c.y >= start_coord.y && c.y <= end_coord.y;
}

bool CoreRange::contains(const CoreRange& o) const { return contains(o.start_coord) && contains(o.end_coord); }

std::string CoreRange::str() const { return "[" + start_coord.str() + " - " + end_coord.str() + "]"; }

size_t CoreRange::size() const { return (end_coord.x - start_coord.x + 1) * (end_coord.y - start_coord.y + 1); }

CoreCoord CoreRange::grid_size() const {
    return CoreCoord(end_coord.x - start_coord.x + 1, end_coord.y - start_coord.y + 1);
}

CoreRange::CoreIterator::CoreIterator(const CoreCoord& current, const CoreRange& range)
    : current_(current), range_(range) {}

CoreCoord& CoreRange::CoreIterator::operator*() { return current_; }

CoreRange::CoreIterator& CoreRange::CoreIterator::operator++() {
    if (++current_.x > range_.end_coord.x) {
        current_.x = range_.start_coord.x;
        ++current_.y;
    }
    return *this;
}

bool CoreRange::CoreIterator::operator==(const CoreIterator& o) const { return current_ == o.current_; }
bool CoreRange::CoreIterator::operator!=(const CoreIterator& o) const { return !(*this == o); }

CoreRange::CoreIterator CoreRange::begin() const { return CoreIterator(start_coord, *this); }
CoreRange::CoreIterator CoreRange::end() const {
    return CoreIterator(CoreCoord(start_coord.x, end_coord.y + 1), *this);
}

// ---- CoreRangeSet --------------------------------------------------------------------------------

CoreRangeSet::CoreRangeSet(ttsl::Span<const CoreRange> ranges) : ranges_(ranges.begin(), ranges.end()) {
    validate_no_overlap();
}
CoreRangeSet::CoreRangeSet(const std::set<CoreRange>& ranges) : ranges_(ranges.begin(), ranges.end()) {
    validate_no_overlap();
}
CoreRangeSet::CoreRangeSet(const CoreRange& range) : ranges_{range} {}
CoreRangeSet::CoreRangeSet(ttsl::Span<const CoreCoord> coords) {
    for (const CoreCoord& c : coords) ranges_.emplace_back(c);
    validate_no_overlap();
}
CoreRangeSet::CoreRangeSet(const CoreRangeSet& other) = default;
CoreRangeSet::CoreRangeSet(CoreRangeSet&& other) noexcept = default;
CoreRangeSet::CoreRangeSet(std::vector<CoreRange>&& ranges) : ranges_(std::move(ranges)) { validate_no_overlap(); }

void CoreRangeSet::validate_no_overlap() {
    for (size_t i = 0; i < ranges_.size(); ++i)
        for (size_t j = i + 1; j < ranges_.size(); ++j)
            if (ranges_[i].intersects(ranges_[j])) {
                host_fail("CoreRangeSet: core ranges " + ranges_[i].str() + " and " + ranges_[j].str() + " overlap");
            }
}

bool CoreRangeSet::empty() const { return ranges_.empty(); }
size_t CoreRangeSet::size() const { return ranges_.size(); }

bool CoreRangeSet::intersects(const CoreCoord& c) const { return contains(c); }
bool CoreRangeSet::intersects(const CoreRange& r) const {
    return std::any_of(ranges_.begin(), ranges_.end(), [&](const CoreRange& x) { return x.intersects(r); });
}
bool CoreRangeSet::contains(const CoreCoord& c) const {
    return std::any_of(ranges_.begin(), ranges_.end(), [&](const CoreRange& x) { return x.contains(c); });
}
bool CoreRangeSet::contains(const CoreRange& r) const {
    for (const CoreCoord& c : corerange_to_cores(CoreRangeSet(r), std::nullopt, true))
        if (!contains(c)) return false;
    return true;
}

const std::vector<CoreRange>& CoreRangeSet::ranges() const { return ranges_; }

std::string CoreRangeSet::str() const {
    std::string out = "{";
    for (size_t i = 0; i < ranges_.size(); ++i) out += (i ? ", " : "") + ranges_[i].str();
    return out + "}";
}

uint32_t CoreRangeSet::num_cores() const {
    size_t n = 0;
    for (const CoreRange& r : ranges_) n += r.size();
    return static_cast<uint32_t>(n);
}

CoreRange CoreRangeSet::bounding_box() const {
    if (ranges_.empty()) host_fail("CoreRangeSet::bounding_box of an empty set");
    CoreCoord lo = ranges_[0].start_coord, hi = ranges_[0].end_coord;
    for (const CoreRange& r : ranges_) {
        lo = CoreCoord(std::min(lo.x, r.start_coord.x), std::min(lo.y, r.start_coord.y));
        hi = CoreCoord(std::max(hi.x, r.end_coord.x), std::max(hi.y, r.end_coord.y));
    }
    return CoreRange(lo, hi);
}

bool operator==(const CoreRangeSet& a, const CoreRangeSet& b) { return a.ranges() == b.ranges(); }
bool operator!=(const CoreRangeSet& a, const CoreRangeSet& b) { return !(a == b); }

std::vector<CoreCoord> corerange_to_cores(const CoreRangeSet& crs, std::optional<uint32_t> max_cores, bool row_wise) {
    std::vector<CoreCoord> out;
    const size_t limit = max_cores.value_or(crs.num_cores());
    for (const CoreRange& r : crs.ranges()) {
        const CoreCoord& s = r.start_coord;
        const CoreCoord& e = r.end_coord;
        if (row_wise) {
            for (size_t y = s.y; y <= e.y; ++y)
                for (size_t x = s.x; x <= e.x; ++x)
                    if (out.size() < limit) out.emplace_back(x, y);
        } else {
            for (size_t x = s.x; x <= e.x; ++x)
                for (size_t y = s.y; y <= e.y; ++y)
                    if (out.size() < limit) out.emplace_back(x, y);
        }
    }
    return out;
}

// ---- CircularBufferConfig ------------------------------------------------------------------------

CircularBufferConfig::CircularBufferConfig(uint32_t total_size, const std::map<uint8_t, tt::DataFormat>& spec)
    : total_size_(total_size) {
    for (const auto& [index, format] : spec) {
        if (index >= NUM_CIRCULAR_BUFFERS) {
            host_fail("CircularBufferConfig: buffer index " + std::to_string(index) + " exceeds the " +
                      std::to_string(NUM_CIRCULAR_BUFFERS) + " circular buffers per core");
        }
        data_formats_[index] = format;
        buffer_indices_.insert(index);
    }
}

CircularBufferConfig& CircularBufferConfig::set_page_size(uint8_t index, uint32_t page_size) {
    if (index >= NUM_CIRCULAR_BUFFERS || !buffer_indices_.count(index)) {
        host_fail("CircularBufferConfig::set_page_size: CB index " + std::to_string(index) +
                  " has no data format in this config");
    }
    if (page_size == 0 || total_size_ % page_size != 0) {
        host_fail("CircularBufferConfig::set_page_size: total size " + std::to_string(total_size_) +
                  " is not a multiple of the page size " + std::to_string(page_size) + " (CB " +
                  std::to_string(index) + ")");
    }
    page_sizes_[index] = page_size;
    return *this;
}

CircularBufferConfig& CircularBufferConfig::set_total_size(uint32_t total_size) {
    if (total_size == 0) host_fail("CircularBufferConfig::set_total_size: total size must not be 0");
    total_size_ = total_size;
    return *this;
}

uint32_t CircularBufferConfig::total_size() const { return total_size_; }
const std::unordered_set<uint8_t>& CircularBufferConfig::buffer_indices() const { return buffer_indices_; }
const std::array<std::optional<tt::DataFormat>, NUM_CIRCULAR_BUFFERS>& CircularBufferConfig::data_formats() const {
    return data_formats_;
}
const std::array<std::optional<uint32_t>, NUM_CIRCULAR_BUFFERS>& CircularBufferConfig::page_sizes() const {
    return page_sizes_;
}

// ---- work splitting ------------------------------------------------------------------------------

std::tuple<uint32_t, CoreRangeSet, CoreRangeSet, CoreRangeSet, uint32_t, uint32_t> split_work_to_cores(
    const CoreCoord grid, uint32_t units, bool row_wise) {
    const uint32_t total = static_cast<uint32_t>(grid.x * grid.y);
    const uint32_t n = std::min(units, total);
    if (n == 0) return {0, CoreRangeSet(), CoreRangeSet(), CoreRangeSet(), 0, 0};
    const uint32_t per = units / n, extra = units % n;
    std::vector<CoreRange> all, g1, g2;
    for (uint32_t i = 0; i < n; ++i) {
        CoreCoord c = row_wise ? CoreCoord(i % grid.x, i / grid.x) : CoreCoord(i / grid.y, i % grid.y);
        all.emplace_back(c);
        (i < extra ? g1 : g2).emplace_back(c);
    }
    if (extra == 0) return {n, CoreRangeSet(std::move(all)), CoreRangeSet(std::move(g2)), CoreRangeSet(), per, 0};
    return {n, CoreRangeSet(std::move(all)), CoreRangeSet(std::move(g1)), CoreRangeSet(std::move(g2)), per + 1, per};
}

namespace {
// the first `n` cores of `grid` from `start` (row by row or column by column) as rectangles:
// whole lines, then the part of a line
CoreRangeSet first_cores(const CoreCoord start, uint32_t n, const CoreCoord grid, bool row_wise) {
    const uint32_t line = row_wise ? grid.x : grid.y;           // cores per row (column)
    const uint32_t first = row_wise ? start.y * grid.x + start.x : start.x * grid.y + start.y;
    if (first + n > grid.x * grid.y) {
        host_fail("num_cores_to_corerangeset: " + std::to_string(n) + " cores from " + start.str() +
                  " do not fit in the " + std::to_string(grid.x) + "x" + std::to_string(grid.y) + " grid");
    }
    auto at = [&](uint32_t i) {
        return row_wise ? CoreCoord(i % line, i / line) : CoreCoord(i / line, i % line);
    };
    std::vector<CoreRange> ranges;
    uint32_t i = first, end = first + n;
    while (i < end) {
        const uint32_t line_end = std::min(end, (i / line + 1) * line);
        if (i % line == 0 && line_end - i == line) {  // whole lines
            uint32_t j = i;
            while (j + line <= end) j += line;
            ranges.emplace_back(at(i), at(j - 1));
            i = j;
        } else {
            ranges.emplace_back(at(i), at(line_end - 1));
            i = line_end;
        }
    }
    return CoreRangeSet(std::move(ranges));
}
}  // namespace

CoreRangeSet num_cores_to_corerangeset(uint32_t target_num_cores, const CoreCoord grid_size, bool row_wise) {
    return first_cores(CoreCoord(0, 0), target_num_cores, grid_size, row_wise);
}

CoreRangeSet num_cores_to_corerangeset(const CoreCoord start_core, uint32_t target_num_cores,
                                       const CoreCoord grid_size, bool row_wise) {
    return first_cores(start_core, target_num_cores, grid_size, row_wise);
}

}  // namespace tt::tt_metal

// ---- mesh shapes ---------------------------------------------------------------------------------

namespace tt::tt_metal::distributed {

MeshShape::MeshShape(uint32_t x) : extents_{x} {}
MeshShape::MeshShape(uint32_t x, uint32_t y) : extents_{x, y} {}
MeshShape::MeshShape(uint32_t x, uint32_t y, uint32_t z) : extents_{x, y, z} {}
size_t MeshShape::dims() const { return extents_.size(); }
size_t MeshShape::mesh_size() const {
    size_t n = 1;
    for (uint32_t e : extents_) n *= e;
    return n;
}

MeshCoordinateRange::MeshCoordinateRange(const MeshShape& shape) : shape_(shape) {}
MeshShape MeshCoordinateRange::shape() const { return shape_; }

}  // namespace tt::tt_metal::distributed

// ---- bfloat16 ------------------------------------------------------------------------------------

uint16_t bfloat16::from_float(float val) { return ttmock::float_to_bf16_bits(val); }

bfloat16 bfloat16::truncate(float val) {
    uint32_t bits;
    std::memcpy(&bits, &val, 4);
    bfloat16 out;
    out.uint16_data = static_cast<uint16_t>(bits >> 16);
    return out;
}

bfloat16& bfloat16::operator+=(bfloat16 rhs) noexcept { return *this = bfloat16(float(*this) + float(rhs)); }
bfloat16& bfloat16::operator-=(bfloat16 rhs) noexcept { return *this = bfloat16(float(*this) - float(rhs)); }
bfloat16& bfloat16::operator*=(bfloat16 rhs) noexcept { return *this = bfloat16(float(*this) * float(rhs)); }
bfloat16& bfloat16::operator/=(bfloat16 rhs) noexcept { return *this = bfloat16(float(*this) / float(rhs)); }
bfloat16 bfloat16::operator+(bfloat16 rhs) const { return bfloat16(float(*this) + float(rhs)); }
bfloat16 bfloat16::operator-(bfloat16 rhs) const { return bfloat16(float(*this) - float(rhs)); }
bfloat16 bfloat16::operator*(bfloat16 rhs) const { return bfloat16(float(*this) * float(rhs)); }
bfloat16 bfloat16::operator/(bfloat16 rhs) const { return bfloat16(float(*this) / float(rhs)); }

std::ostream& operator<<(std::ostream& os, const bfloat16& value) { return os << static_cast<float>(value); }

bool operator==(const std::vector<bfloat16>& lhs, const std::vector<bfloat16>& rhs) {
    if (lhs.size() != rhs.size()) return false;
    return std::memcmp(lhs.data(), rhs.data(), lhs.size() * sizeof(bfloat16)) == 0;
}

uint32_t pack_two_bfloat16_into_uint32(std::pair<bfloat16, bfloat16> two) {
    uint16_t lo, hi;
    std::memcpy(&lo, &two.first, 2);
    std::memcpy(&hi, &two.second, 2);
    return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
}

std::pair<bfloat16, bfloat16> unpack_two_bfloat16_from_uint32(uint32_t word) {
    bfloat16 lo, hi;
    const uint16_t l = word & 0xffffu, h = word >> 16;
    std::memcpy(&lo, &l, 2);
    std::memcpy(&hi, &h, 2);
    return {lo, hi};
}

std::vector<bfloat16> create_random_vector_of_bfloat16_native(size_t num_bytes, float rand_max_float, int seed,
                                                              float offset) {
    std::mt19937 gen(static_cast<uint32_t>(seed));
    std::uniform_real_distribution<float> dist(0.0f, rand_max_float);
    std::vector<bfloat16> out(num_bytes / sizeof(bfloat16));
    for (bfloat16& v : out) v = bfloat16(dist(gen) + offset);
    return out;
}

std::vector<uint32_t> create_random_vector_of_bfloat16(size_t num_bytes, int rand_max_float, int seed, float offset) {
    return pack_bfloat16_vec_into_uint32_vec(
        create_random_vector_of_bfloat16_native(num_bytes, static_cast<float>(rand_max_float), seed, offset));
}

std::vector<uint32_t> create_arange_vector_of_bfloat16(size_t num_bytes, bool print) {
    std::vector<bfloat16> v(num_bytes / sizeof(bfloat16));
    for (size_t i = 0; i < v.size(); ++i) {
        v[i] = bfloat16(static_cast<float>(i));
        if (print) std::printf("%zu = %f\n", i, static_cast<float>(v[i]));
    }
    return pack_bfloat16_vec_into_uint32_vec(v);
}

std::vector<uint32_t> create_constant_vector_of_bfloat16(size_t num_bytes, float value) {
    return pack_bfloat16_vec_into_uint32_vec(std::vector<bfloat16>(num_bytes / sizeof(bfloat16), bfloat16(value)));
}

std::vector<bfloat16> create_identity_matrix(int rows, int cols, int num_ones) {
    std::vector<bfloat16> out(static_cast<size_t>(rows) * cols, bfloat16(0.0f));
    for (int i = 0; i < num_ones && i < rows && i < cols; ++i) out[static_cast<size_t>(i) * cols + i] = bfloat16(1.0f);
    return out;
}

bfloat16 bfloat16_identity_transform(const bfloat16& input) { return input; }

std::vector<bfloat16> unpack_uint32_vec_into_bfloat16_vec(const std::vector<uint32_t>& data,
                                                          const std::function<bfloat16(const bfloat16&)>& transform) {
    std::vector<bfloat16> out;
    out.reserve(data.size() * 2);
    for (uint32_t w : data) {
        auto [lo, hi] = unpack_two_bfloat16_from_uint32(w);
        out.push_back(transform(lo));
        out.push_back(transform(hi));
    }
    return out;
}

std::vector<uint32_t> pack_bfloat16_vec_into_uint32_vec(const std::vector<bfloat16>& data) {
    if (data.size() % 2) host_fail("pack_bfloat16_vec_into_uint32_vec: an odd number of bfloat16 values");
    std::vector<uint32_t> out(data.size() / 2);
    for (size_t i = 0; i < out.size(); ++i) out[i] = pack_two_bfloat16_into_uint32({data[2 * i], data[2 * i + 1]});
    return out;
}

bool is_close(float a, float b, float rtol, float atol) {
    // the SDK's relative test: |a - b| <= atol + rtol * |b|
    return std::fabs(a - b) <= atol + rtol * std::fabs(b);
}

bool packed_uint32_t_vector_comparison(const std::vector<uint32_t>& vec_a, const std::vector<uint32_t>& vec_b,
                                       const std::function<bool(float, float)>& comparison_function, int* argfail) {
    if (vec_a.size() != vec_b.size()) {
        std::fprintf(stderr, "packed_uint32_t_vector_comparison: sizes differ (%zu vs %zu)\n", vec_a.size(),
                     vec_b.size());
        return false;
    }
    for (size_t i = 0; i < vec_a.size(); ++i) {
        auto [a0, a1] = unpack_two_bfloat16_from_uint32(vec_a[i]);
        auto [b0, b1] = unpack_two_bfloat16_from_uint32(vec_b[i]);
        if (!comparison_function(float(a0), float(b0)) || !comparison_function(float(a1), float(b1))) {
            if (argfail) *argfail = static_cast<int>(i);
            return false;
        }
    }
    return true;
}

// ---- tilize / untilize ---------------------------------------------------------------------------

// Between a row-major m x n matrix and its 32x32 tiles (row-major tile order, four 16x16 faces
// each; kTilize: src is the matrix, dst the tiles, else the reverse): a tile's face row is 16
// contiguous values of a matrix row. Tile by tile, so that a tile is written (or read)
// contiguously while the 32 matrix rows it spans stay in cache.
template <bool kTilize, typename T>
void copy_tiles(const T* src, T* dst, uint32_t m, uint32_t n) {
    const uint32_t tiles_per_row = n / 32;
    // rows of tiles in parallel parts (at least 1 MB each): each writes its own tiles or rows
    const size_t row_bytes = static_cast<size_t>(n) * 32 * sizeof(T);
    ttmock::parallel_ranges(m / 32, (size_t(1) << 20) / row_bytes + 1, [&](size_t tr0, size_t tr1) {
        for (size_t tr = tr0; tr < tr1; ++tr) {
            for (uint32_t tc = 0; tc < tiles_per_row; ++tc) {
                const size_t tile = (tr * tiles_per_row + tc) * 1024;
                for (uint32_t r = 0; r < 32; ++r) {
                    const size_t row = (tr * 32 + r) * n + tc * 32;
                    for (uint32_t half = 0; half < 2; ++half) {
                        const size_t face_row = tile + ttmock::face_index(r, half * 16);
                        if (kTilize) {
                            std::memcpy(dst + face_row, src + row + half * 16, 16 * sizeof(T));
                        } else {
                            std::memcpy(dst + row + half * 16, src + face_row, 16 * sizeof(T));
                        }
                    }
                }
            }
        }
    });
}

template <typename T>
std::vector<T> tilize_nfaces(const std::vector<T>& input, uint32_t m, uint32_t n) {
    if (m % 32 || n % 32 || input.size() != static_cast<size_t>(m) * n) {
        host_fail("tilize_nfaces: a " + std::to_string(m) + " x " + std::to_string(n) + " matrix of " +
                  std::to_string(input.size()) + " values cannot be tiled");
    }
    std::vector<T> out(input.size());
    copy_tiles<true>(input.data(), out.data(), m, n);
    return out;
}

template <typename T>
std::vector<T> untilize_nfaces(const std::vector<T>& input, uint32_t m, uint32_t n) {
    if (m % 32 || n % 32 || input.size() != static_cast<size_t>(m) * n) {
        host_fail("untilize_nfaces: " + std::to_string(input.size()) + " values are not a " + std::to_string(m) +
                  " x " + std::to_string(n) + " tiled matrix");
    }
    std::vector<T> out(input.size());
    copy_tiles<false>(input.data(), out.data(), m, n);
    return out;
}

// The element types the SDK's library instantiates.
template std::vector<bfloat16> tilize_nfaces<bfloat16>(const std::vector<bfloat16>&, uint32_t, uint32_t);
template std::vector<float> tilize_nfaces<float>(const std::vector<float>&, uint32_t, uint32_t);
template std::vector<uint32_t> tilize_nfaces<uint32_t>(const std::vector<uint32_t>&, uint32_t, uint32_t);
template std::vector<uint16_t> tilize_nfaces<uint16_t>(const std::vector<uint16_t>&, uint32_t, uint32_t);
template std::vector<bfloat16> untilize_nfaces<bfloat16>(const std::vector<bfloat16>&, uint32_t, uint32_t);
template std::vector<float> untilize_nfaces<float>(const std::vector<float>&, uint32_t, uint32_t);
template std::vector<uint32_t> untilize_nfaces<uint32_t>(const std::vector<uint32_t>&, uint32_t, uint32_t);
template std::vector<uint16_t> untilize_nfaces<uint16_t>(const std::vector<uint16_t>&, uint32_t, uint32_t);

// ---- shard specifications ----------------------------------------------------------------------

namespace tt::tt_metal {

std::array<uint32_t, 2> ShardSpecBuffer::shape_in_pages() const {
    const auto s = shape();
    if (page_shape[0] == 0 || page_shape[1] == 0) host_fail("ShardSpecBuffer: the page shape has a zero extent");
    return {s[0] / page_shape[0], s[1] / page_shape[1]};
}

DeviceAddr ShardSpecBuffer::num_pages() const {
    const auto p = shape_in_pages();
    return static_cast<DeviceAddr>(p[0]) * p[1];
}

Buffer::Buffer(DeviceAddr address, DeviceAddr size, BufferType type, DeviceAddr page_size, TensorMemoryLayout layout) :
    address_(address), size_(size), buffer_type_(type), page_size_(page_size), layout_(layout) {}
bool Buffer::is_dram() const { return buffer_type_ == BufferType::DRAM; }
bool Buffer::is_l1() const { return buffer_type_ == BufferType::L1; }
TensorMemoryLayout Buffer::buffer_layout() const { return layout_; }
bool Buffer::has_shard_spec() const { return layout_ != TensorMemoryLayout::INTERLEAVED; }
DeviceAddr Buffer::page_size() const { return page_size_; }
uint32_t Buffer::num_pages() const { return page_size_ == 0 ? 0 : static_cast<uint32_t>(size_ / page_size_); }
uint32_t Buffer::alignment() const { return is_dram() ? ttmock::device().prof.dram_align : 16u; }
DeviceAddr Buffer::aligned_page_size() const { return (page_size_ + alignment() - 1) / alignment() * alignment(); }
DeviceAddr Buffer::aligned_size() const { return DeviceAddr(num_pages()) * aligned_page_size(); }
Buffer::~Buffer() = default;
uint32_t Buffer::address() const { return static_cast<uint32_t>(address_); }

CircularBufferConfig& CircularBufferConfig::set_globally_allocated_address(const Buffer& buffer) {
    if (buffer.buffer_type() != BufferType::L1) {
        host_fail("CircularBufferConfig::set_globally_allocated_address: the buffer is not in L1");
    }
    globally_allocated_address_ = buffer.address();
    return *this;
}
std::optional<uint32_t> CircularBufferConfig::globally_allocated_address() const { return globally_allocated_address_; }

BufferShardingArgs::BufferShardingArgs() = default;
BufferShardingArgs::BufferShardingArgs(std::nullopt_t) {}
BufferShardingArgs::BufferShardingArgs(ShardSpecBuffer shard_spec, TensorMemoryLayout buffer_layout)
    : shard_spec_(std::move(shard_spec)), buffer_layout_(buffer_layout) {}
BufferShardingArgs::BufferShardingArgs(std::optional<ShardSpecBuffer> shard_spec, TensorMemoryLayout buffer_layout)
    : shard_spec_(std::move(shard_spec)), buffer_layout_(buffer_layout) {}
BufferShardingArgs::BufferShardingArgs(const BufferShardingArgs& other) = default;
BufferShardingArgs::BufferShardingArgs(BufferShardingArgs&& other) = default;
BufferShardingArgs& BufferShardingArgs::operator=(const BufferShardingArgs& other) = default;
BufferShardingArgs& BufferShardingArgs::operator=(BufferShardingArgs&& other) = default;
BufferShardingArgs::~BufferShardingArgs() = default;
const std::optional<ShardSpecBuffer>& BufferShardingArgs::shard_spec() const { return shard_spec_; }
TensorMemoryLayout BufferShardingArgs::buffer_layout() const { return buffer_layout_; }

}  // namespace tt::tt_metal

namespace tt::tt_metal {

namespace {
DataMovementConfig dm_config(DataMovementProcessor proc, NOC noc, std::vector<uint32_t> compile_args,
                             std::map<std::string, std::string> defines,
                             std::unordered_map<std::string, uint32_t> named, KernelBuildOptLevel opt,
                             const std::vector<std::filesystem::path>& include_paths, const char* what) {
    if (!include_paths.empty()) ttmock::host_fail(std::string(what) + ": extra kernel include paths are not emulated");
    return DataMovementConfig{.processor = proc, .noc = noc, .compile_args = std::move(compile_args),
                              .defines = std::move(defines), .named_compile_args = std::move(named), .opt_level = opt};
}
}  // namespace

ReaderDataMovementConfig::ReaderDataMovementConfig(std::vector<uint32_t> compile_args,
                                                   std::map<std::string, std::string> defines,
                                                   std::unordered_map<std::string, uint32_t> named_compile_args,
                                                   KernelBuildOptLevel opt_level,
                                                   std::vector<std::filesystem::path> include_paths) :
    DataMovementConfig(dm_config(DataMovementProcessor::RISCV_1, NOC::RISCV_1_default, std::move(compile_args),
                                 std::move(defines), std::move(named_compile_args), opt_level, include_paths,
                                 "ReaderDataMovementConfig")) {}

WriterDataMovementConfig::WriterDataMovementConfig(std::vector<uint32_t> compile_args,
                                                   std::map<std::string, std::string> defines,
                                                   std::unordered_map<std::string, uint32_t> named_compile_args,
                                                   KernelBuildOptLevel opt_level,
                                                   std::vector<std::filesystem::path> include_paths) :
    DataMovementConfig(dm_config(DataMovementProcessor::RISCV_0, NOC::RISCV_0_default, std::move(compile_args),
                                 std::move(defines), std::move(named_compile_args), opt_level, include_paths,
                                 "WriterDataMovementConfig")) {}

}  // namespace tt::tt_metal
