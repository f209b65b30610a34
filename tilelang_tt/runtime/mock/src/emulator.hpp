// tilelang-tt mock TT-Metalium: the emulator's internal state (not seen by kernels or hosts).
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tt-metalium/base_types.hpp"
#include "ttmock/types.hpp"
#include "timing.hpp"

namespace ttmock {

using tt::tt_metal::MathFidelity;
using tt::tt_metal::UnpackToDestMode;

constexpr int kMaxCBs = 32;
constexpr uint32_t kTileElems = 1024;

struct Profile {
    std::string name;
    uint32_t grid_x, grid_y;
    uint32_t l1_bytes;
    uint32_t l1_base;  // first byte of L1 available to CBs / semaphores (below: firmware)
    uint32_t dram_banks;
    uint64_t dram_bank_bytes;
    uint32_t dram_align;  // DRAM alignment (Allocator::get_alignment): 32 on Wormhole, 64 on Blackhole
};
const Profile& profile_from_env();

enum class KernelKind { Reader, Writer, Compute };
const char* kind_name(KernelKind k);

struct Fiber;

// One API call, formatted only when a message needs it (no string work on the hot path).
struct ApiCall {
    std::string (*fmt)(const ApiCall&) = nullptr;
    uint64_t a[4] = {};
    std::string str() const { return fmt ? fmt(*this) : std::string("(no call)"); }
};

// Static configuration of one CB on one core (set by the host program).
struct CBConfig {
    bool used = false;
    uint32_t offset = 0;  // L1 offset of the ring
    uint32_t total_bytes = 0;
    uint32_t page_bytes = 0;
    tt::DataFormat format = tt::DataFormat::Invalid;
    // the CB indices of the CircularBufferConfig that created this CB (bit i: c_i): they share
    // its L1 region, so no two of them may hold pages at the same time
    uint32_t region = 0;
    bool global = false;  // placed on an L1 buffer (set_globally_allocated_address)
    uint32_t pages() const { return page_bytes ? total_bytes / page_bytes : 0; }
};

// Runtime state of one CB on one core.
struct CBState {
    uint32_t rd_page = 0, wr_page = 0;  // ring positions (pages)
    uint32_t filled = 0;                // pushed and not yet popped
    uint32_t reserved = 0;              // guaranteed free by the last cb_reserve_back, not yet pushed
    uint32_t waited = 0;                // guaranteed available by the last cb_wait_front, not yet popped
    uint32_t pack_pos = 0;              // next sequential pack position in the reserved region
    uint64_t stalls_reserve = 0, stalls_wait = 0;
    uint64_t pushed_total = 0, popped_total = 0;
    // the kernels that use the CB (see cb_unguarded in emulator.cpp): the first, whether a second
    // one did, and the first access beyond cb_wait_front / cb_reserve_back (on a globally
    // allocated CB one kernel alone may step through the buffer's data without them)
    const Fiber* user = nullptr;
    bool shared = false;
    std::string unguarded;
    // the kernels that pushed / popped last and the last push, recorded as pointers during the run
    const Fiber* push_fiber = nullptr;
    const Fiber* pop_fiber = nullptr;
    ApiCall last_push_call;
    const Fiber* reserve_fiber = nullptr;  // the kernel that reserved last, and its call
    ApiCall last_reserve_call;
    // ... and formatted for messages when the run ends
    std::string pusher, popper;  // "reader.cpp (reader kernel)"
    std::string last_push;       // the last cb_push_back call
};

// A NOC transaction issued by a kernel and not yet retired by its barrier (protocol checks).
struct PendingTransfer {
    bool is_read;           // NOC read into this core's L1
    uint32_t l1_lo, l1_hi;  // local L1 range involved (offsets), for conflict checks
    ApiCall what;           // the call, for messages
};

// An effect on state other cores may touch (another core's L1, DRAM): queued by the issuing core
// during a round and applied between rounds, in core order, then issue order (see emulator.cpp).
struct Deferred {
    enum Kind : uint8_t { Copy, Multicast, SemInc, SemSet, SemSetMulticast } kind;
    bool is_read = false;          // Copy: a NOC read (counts against the read barrier)
    bool loopback = false;         // Multicast: the sender's own L1 is a destination too
    uint32_t size = 0;             // bytes (Copy, Multicast)
    uint32_t value = 0;            // SemInc: increment; SemSet*: value
    uint8_t* dst = nullptr;        // Copy / SemInc / SemSet: destination bytes
    const uint8_t* src = nullptr;  // Copy / Multicast: source bytes (read when applied)
    uint64_t mcast = 0;            // Multicast / SemSetMulticast: the multicast NOC address
    Fiber* fiber = nullptr;        // the issuing kernel (its barrier waits for Copy / Multicast)
    uint32_t tlog_index = 0;       // semaphore updates: the issuing call in the kernel's timing log
};

struct Counters {
    uint64_t dram_bytes_read = 0, dram_bytes_written = 0;
    uint64_t noc_reads = 0, noc_writes = 0, noc_bytes_read = 0, noc_bytes_written = 0;
    uint64_t multicasts = 0, semaphore_ops = 0;
    std::map<std::string, uint64_t> tile_ops;
};

struct Core {
    uint32_t x = 0, y = 0;  // logical coordinates
    int index = 0;
    uint8_t* l1 = nullptr;  // l1_bytes of memory mapped below 4 GiB: L1 addresses are pointers
    CBConfig cb_cfg[kMaxCBs];
    CBState cb[kMaxCBs];
    uint32_t l1_used = 0;  // bytes allocated to CBs and semaphores
    Counters counters;
    bool active = false;
    // scheduling (emulator.cpp): this core's kernels, its queued cross-core effects, its error
    std::vector<Fiber*> fibers;
    std::vector<Deferred> deferred;
    bool failed = false;
    std::string error;        // the TT-MOCK ERROR line of the first failure on this core
    bool progressed = false;  // a kernel of this core ran in the current round
    uint64_t resumes = 0;     // kernel resumptions (context switches into a kernel)
    uint64_t tile_math_ticks = 0;  // host time in tile math (host_ticks units)
    // tile_math_ticks by tile op kind (the names of counters.tile_ops): each counted op takes the
    // ticks since the previous one (compute.cpp's count(), after the op's timed math)
    std::map<std::string, uint64_t> tile_op_ticks;
    uint64_t tile_math_mark = 0;
    // semaphore updates applied to this core's L1, by offset: (fiber id << 32 | timing log index)
    std::map<uint32_t, std::vector<uint64_t>> sem_log;
    // DPRINT (dprint.cpp): complete lines of this round, printed between rounds in core order,
    // and each RISC-V thread's unfinished line (BR, NC, TR0, TR1, TR2)
    std::string dprint_out;
    std::string dprint_partial[5];
};
// prints the DPRINT lines the cores wrote in a round (between rounds, in core order)
void dprint_flush(std::vector<Core*>& cores);

// Compute engine state of one compute fiber.
// Legacy: acquire_dst()..release_dst(), the deprecated single-section handshake in which math and
// then pack run between one acquire and one release
enum class DstState { Released, Acquired, Committed, Waited, Legacy };
// The SFPU state a compute kernel's own SFPI code sees (src/sfpi.cpp)
struct SfpiState {
    static constexpr int kMaxDepth = 8;  // nested v_if levels (the condition-code stack)
    uint32_t lanes = 0xFFFFFFFFu;        // LaneEnabled
    int depth = 0;
    uint32_t parent[kMaxDepth] = {}, taken[kMaxDepth] = {};
    int base_row = 0;  // the Dst row counter (rows of 16 datums) the LLK wrapper set
    int incr = 0;      // dst_reg++ since, in dst_reg units (2 rows)
    const char* wrapper = nullptr;  // the LLK SFPU wrapper running, if any
    uint32_t prgm[6] = {};  // vConstFloatPrgm0..2, vConstIntPrgm0..2
    uint64_t* counter = nullptr;  // this core's tile_ops["sfpi"]
};

struct ComputeState {
    bool fp32_dest_acc = false;
    bool full_sync = false;
    MathFidelity fidelity = MathFidelity::HiFi4;
    std::vector<UnpackToDestMode> unpack_to_dest;
    DstState dst_state = DstState::Released;
    mutable bool legacy_packed = false;  // (set by the pack check) a pack_tile ran in the current acquire_dst section
    bool approx = false;    // math_approx_mode (APPROX): SFPU functions in approximate mode
    bool pack_l1_acc = false;  // pack_reconfig_l1_acc(1): the packer adds to the L1 tile
    uint32_t dst[16][kTileElems] = {};  // fp32 bit patterns; 16-bit mode: BF16 in the high half
    bool dst_written[16] = {};  // written since tile_regs_acquire (a reduction's first write sets)
    bool started = false;  // compute_kernel_hw_startup called
    tt::DataFormat srca = tt::DataFormat::Invalid, srcb = tt::DataFormat::Invalid,
                   pack = tt::DataFormat::Invalid;
    std::string fpu_mode;   // "matmul", "add", "sub", "mul", "copy", "bcast_*", "reduce", ...
    int fpu_op = 0;         // fpu_mode as compute.cpp's FpuOp (checked per tile without strings)
    int sfpu_op = -1;       // the last <op>_tile_init, as compute.cpp's SFPU op id
    float sfpu_init_param[2] = {0.0f, 0.0f};  // the scalars of an init that takes them (fmod)
    float cumsum_carry[32] = {};  // cumsum_tile's running column totals (SFPU registers)
    bool cumsum_live = false;     // cumsum_carry holds the last cumsum_tile's totals (no other
                                  // SFPU operation ran since)
    uint64_t* op_counter[96] = {};  // this core's tile_ops counters, by compute.cpp's op id
    uint64_t* op_ticks[96] = {};    // this core's tile_op_ticks, by the same id
    std::pair<const char*, int> name_cache[4][8] = {};  // API name literal -> id (compute.cpp)
    bool matmul_transpose = false;
    int bcast_type = 0;
    int reduce_pool = 0, reduce_dim = 0;
    SfpiState sfpi;
    uint32_t capacity() const {
        uint32_t tiles = full_sync ? 16 : 8;
        return fp32_dest_acc ? tiles / 2 : tiles;
    }
};

struct KernelBinary {
    std::string path;  // source path
    void (*entry)() = nullptr;
};

struct Fiber {
    int core = 0;
    KernelKind kind = KernelKind::Reader;
    std::string file;  // kernel source file name (for messages)
    void (*entry)() = nullptr;
    std::vector<uint32_t> args;
    void* context = nullptr;  // ucontext_t
    void* stack = nullptr;
    size_t stack_bytes = 0;
    bool finished = false;
    std::vector<PendingTransfer> pending;
    ComputeState* compute = nullptr;
    std::string last_call;
    // scheduling (emulator.cpp)
    Core* core_ptr = nullptr;
    void* scheduler = nullptr;  // ucontext_t of the host thread that resumed this fiber
    // while blocked: the condition that lets it go on, and what it waits for (for a deadlock)
    bool (*wait_ready)(const void*) = nullptr;
    const void* wait_ready_ctx = nullptr;
    std::string (*wait_describe)(const void*) = nullptr;
    const void* wait_describe_ctx = nullptr;
    uint32_t deferred_reads = 0, deferred_writes = 0;  // queued Copy / Multicast not yet applied
    uint64_t last_buffer = 0;  // index + 1 of the DRAM buffer the last TensorAccessor access hit
    int id = 0;                       // index in the launch's fibers
    std::vector<timing::Op> tlog;     // what costs modelled time (timing.hpp), not yet replayed
    uint32_t tlog_base = 0;           // index of tlog[0] in the kernel's whole log
};

// An interleaved DRAM buffer: page p lives in bank p % banks at base + (p / banks) * aligned.
struct DramBuffer {
    uint64_t base = 0, pages = 0, page_size = 0, aligned = 0;
};

// A sharded buffer (a 2-D ShardSpecBuffer): the tensor's grid of tensor_pages[0] x
// tensor_pages[1] pages cut into shards of shard_pages[0] x shard_pages[1]; shard s (row-major)
// lives on holder s % holders.size() - a logical core (L1) or a DRAM bank (x = bank) - at
// base + (s / holders.size()) * shard_bytes(), its pages row-major, `aligned` bytes apart (the
// SDK's round-robin distribution, as its TensorAccessor maps pages).
// A sharded buffer, or an interleaved L1 buffer (`interleaved`: one-page shards of a P x 1 page
// grid, round-robin over every worker core, the L1 banks, in logical row-major order).
struct ShardedBuffer {
    bool is_dram = false;
    bool interleaved = false;
    uint64_t base = 0;
    uint32_t page_size = 0, aligned = 0;
    uint32_t tensor_pages[2] = {}, shard_pages[2] = {};
    std::vector<std::pair<uint32_t, uint32_t>> holders;  // logical core (x, y) or (bank, 0)
    uint64_t shard_bytes() const { return uint64_t(shard_pages[0]) * shard_pages[1] * aligned; }
    uint32_t num_shards() const {
        return (tensor_pages[0] / shard_pages[0]) * (tensor_pages[1] / shard_pages[1]);
    }
    uint32_t shards_per_holder() const {
        return (num_shards() + static_cast<uint32_t>(holders.size()) - 1) / static_cast<uint32_t>(holders.size());
    }
    // (holder index, byte offset from base) of page `page` (row-major over the tensor's pages)
    std::pair<uint32_t, uint64_t> locate(uint64_t page) const {
        const uint32_t r = static_cast<uint32_t>(page / tensor_pages[1]);
        const uint32_t c = static_cast<uint32_t>(page % tensor_pages[1]);
        const uint32_t shard = (r / shard_pages[0]) * (tensor_pages[1] / shard_pages[1]) + c / shard_pages[1];
        const uint32_t within = (r % shard_pages[0]) * shard_pages[1] + c % shard_pages[1];
        const uint32_t n = static_cast<uint32_t>(holders.size());
        return {shard % n, (shard / n) * shard_bytes() + uint64_t(within) * aligned};
    }
};

// One DRAM bank: address space reserved up front, pages committed when first touched (so
// memory holds what was written, not the bank's size). The vector-like interface is what the
// host side uses.
class DramBank {
public:
    DramBank() = default;
    DramBank(const DramBank&) = delete;
    DramBank& operator=(const DramBank&) = delete;
    DramBank(DramBank&& o) noexcept;
    DramBank& operator=(DramBank&& o) noexcept;
    ~DramBank();
    uint8_t* data() { return base_; }
    const uint8_t* data() const { return base_; }
    size_t size() const { return size_; }
    void resize(size_t n);  // grows the usable size (bytes read as zero until written)
    void release(size_t offset, size_t bytes);  // returns the whole host pages in the range

private:
    uint8_t* base_ = nullptr;
    size_t size_ = 0, capacity_ = 0;
};

struct Device {
    Profile prof;
    std::vector<Core> cores;
    uint8_t* l1_region = nullptr;
    std::vector<DramBank> dram;               // per bank
    std::vector<uint64_t> dram_top;           // per-bank bump allocator (bytes)
    std::vector<DramBuffer> dram_buffers;     // every buffer allocated, by increasing base
    std::vector<ShardedBuffer> sharded_buffers;  // every sharded buffer (DRAM and L1)
    uint32_t l1_buffers_bottom = 0;  // L1 buffers fill every core's L1 from the top down to here
    uint32_t sem_count = 0;
    std::string stats_path;
    Core& core_at(uint32_t x, uint32_t y) { return cores[y * prof.grid_x + x]; }
    int core_index(uint32_t x, uint32_t y) const { return static_cast<int>(y * prof.grid_x + x); }
};

Device& device();
bool device_exists();
void create_device();
void destroy_device();

// The fiber currently running (kernel API calls act on it).
Fiber& current();
inline Core& current_core() { return *current().core_ptr; }

// Scheduler: blocks the calling fiber until `ready()` holds; `describe()` says what it waits for
// (called only for a deadlock report). Both are checked and called while the fiber is suspended,
// so they may refer to the blocked call's locals.
template <typename R, typename D>
void block_until(R ready, D describe);
void yield_blocked(Fiber& f);
inline void note_progress() {}  // progress is a resumed kernel (kept for callers)

// Errors: print a TT-MOCK ERROR block naming core, kernel and call, then exit(3). In a kernel the
// error is recorded and reported when the round ends (the first core in core order), so the
// report does not depend on host threads.
[[noreturn]] void fail(const std::string& message);
[[noreturn]] void host_fail(const std::string& message);

// Runs all fibers to completion (or reports a deadlock / protocol error).
void run_fibers(std::vector<Fiber>& fibers);

void write_stats();

// Runs fn(lo, hi) over [0, n) cut into contiguous parts of at least min_part, one per host
// thread (TT_MOCK_THREADS, else the CPUs), the calling thread taking the first: the host side's
// copies of large tensors (tilize, buffer reads and writes). fn must touch only its own part.
void parallel_ranges(size_t n, size_t min_part, const std::function<void(size_t, size_t)>& fn);

// Host time stamps for the run statistics: the CPU's time stamp counter where there is one
// (a few ns to read), converted to ns with the rate measured over the run.
inline uint64_t host_ticks() {
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_ia32_rdtsc();
#else
    return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}
// Brackets one tile operation's arithmetic (compute.cpp): the run statistics report the host time
// spent outside it per tile op, the emulator's own overhead.
struct TileMathTimer {
    Core& core;
    uint64_t t0;
    explicit TileMathTimer(Core& c) : core(c), t0(host_ticks()) {}
    ~TileMathTimer() { core.tile_math_ticks += host_ticks() - t0; }
};

// NOC addresses: (core or DRAM bank coordinates, local address).
uint64_t make_noc_addr(uint32_t x, uint32_t y, uint64_t local);
uint8_t* resolve_noc_addr(uint64_t noc_addr, uint32_t size, const ApiCall& what, bool* is_dram,
                          int* core_index);
constexpr uint32_t kDramNocY = 0x3f;  // pseudo NOC row holding the DRAM banks
uint32_t worker_noc_x(uint32_t logical_x);
uint32_t worker_noc_y(uint32_t logical_y);
// the DRAM buffer whose pages start at `base` (nullptr when none)
const DramBuffer* dram_buffer_at(uint64_t base);
// the sharded buffer in DRAM or L1 starting at `base` (nullptr when none)
const ShardedBuffer* sharded_buffer_at(bool is_dram, uint64_t base);

// The cores a multicast NOC address covers (logical core indices), checked against the grid
std::vector<int> multicast_cores(uint64_t mcast, bool include_self, int self, const ApiCall& what);

std::string describe_fiber(const Fiber& f);

// CB protocol bookkeeping. cb_touch records that the current kernel uses CB `cb` (every CB call
// does). cb_unguarded is asked when a call goes beyond what cb_wait_front / cb_reserve_back
// guaranteed: it allows it (true) on a globally allocated CB that no other kernel of the core
// uses, where the data is the L1 buffer's, there before the launch and touched by no one else, so
// the pointers simply step through it, as on hardware; otherwise false (the caller refuses). A
// second kernel using a CB that was accessed that way is refused: on hardware the two would race.
void cb_second_user(Core& c, int cb, const Fiber& f, const std::string& what);
template <typename D>  // D() formats the call, only when needed
inline void cb_touch(Core& c, int cb, const Fiber& f, D describe) {
    CBState& s = c.cb[cb];
    if (s.user == nullptr) s.user = &f;
    else if (s.user != &f && !s.shared) cb_second_user(c, cb, f, describe());
}
bool cb_unguarded(Core& c, int cb, const Fiber& f, const std::string& what);

template <typename R, typename D>
void block_until(R ready, D describe) {
    if (ready()) return;
    Fiber& f = current();
    f.wait_ready = [](const void* p) { return (*static_cast<const R*>(p))(); };
    f.wait_ready_ctx = &ready;
    f.wait_describe = [](const void* p) { return std::string((*static_cast<const D*>(p))()); };
    f.wait_describe_ctx = &describe;
    yield_blocked(f);  // resumed only once ready() holds
}

}  // namespace ttmock
