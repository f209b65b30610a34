// tilelang-tt mock TT-Metalium: device state, fibers, scheduler, errors, statistics.
//
// Scheduling (docs/MOCK.md, "Concurrency"): the run proceeds in rounds. In a round every core
// with a runnable kernel is run by one host thread (cores are handed out to a pool of threads)
// until none of its kernels can go on; a kernel runs until it blocks. A core touches only its own
// state during a round: effects on other cores' L1 and on DRAM are queued (Deferred) and applied
// between rounds, in core order and then issue order (or, when they commute, the copies by all
// threads together: independent_effects). What a core computes in a
// round is therefore a function of the state at the round's start, and the whole run - results,
// counters, the error or deadlock reported - does not depend on the number of host threads or
// their timing.
#include "emulator.hpp"
#include "fpu.hpp"

#include <sched.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>

namespace ttmock {

namespace {
std::unique_ptr<Device> g_device;
// initial-exec: the library is loaded with the host program (not dlopen-ed), so the kernel
// API's current() reads it without a call to __tls_get_addr
__attribute__((tls_model("initial-exec"))) thread_local Fiber* t_current = nullptr;

// Host-side statistics of all runs of this process (not part of the deterministic counters)
struct HostStats {
    int threads = 0;
    uint64_t runs = 0, rounds = 0;
    uint64_t wall_ns = 0, serial_ns = 0;  // serial: wall time between rounds
    uint64_t replay_ns = 0;               // the timing replay (during the rounds and at the end)
    uint64_t overlapping_rounds = 0;      // rounds whose queued copies overlapped (applied in order)
    std::vector<uint64_t> busy_ns;        // per host thread: running cores (wall time)
    std::vector<uint64_t> cpu_ns;         // per host thread: CPU time over the runs
    double ticks_per_ns = 0;              // host_ticks rate measured over the runs
    uint64_t ticks = 0, ticks_ns = 0;
};
HostStats g_host;
std::mutex g_replay_mutex;  // held by the replay while it runs alongside the kernels

uint64_t thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t now_ns() {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now().time_since_epoch())
                                     .count());
}
}  // namespace

const char* format_name(tt::DataFormat f) {
    switch (f) {
        case tt::DataFormat::Float32: return "Float32";
        case tt::DataFormat::Float16: return "Float16";
        case tt::DataFormat::Float16_b: return "Float16_b";
        case tt::DataFormat::Bfp8_b: return "Bfp8_b";
        case tt::DataFormat::Bfp4_b: return "Bfp4_b";
        case tt::DataFormat::Int32: return "Int32";
        case tt::DataFormat::UInt32: return "UInt32";
        case tt::DataFormat::UInt16: return "UInt16";
        case tt::DataFormat::Invalid: return "Invalid";
        default: return "unsupported";
    }
}

const char* kind_name(KernelKind k) {
    switch (k) {
        case KernelKind::Reader: return "reader";
        case KernelKind::Writer: return "writer";
        default: return "compute";
    }
}

const Profile& profile_from_env() {
    static Profile wormhole{"wormhole_b0", 8, 8, 1464 * 1024, 100 * 1024, 12, 1ull << 30, 32};
    static Profile blackhole{"blackhole", 13, 10, 1536 * 1024, 100 * 1024, 8, 4ull << 30, 64};
    const char* arch = std::getenv("TT_MOCK_ARCH");
    if (arch == nullptr || std::string(arch).empty() || std::string(arch) == "wormhole_b0" ||
        std::string(arch) == "wormhole") {
        fpu::set_wormhole_accumulator(true);
        return wormhole;
    }
    if (std::string(arch) == "blackhole") {
        fpu::set_wormhole_accumulator(false);
        return blackhole;
    }
    host_fail(std::string("unknown TT_MOCK_ARCH '") + arch + "' (use wormhole_b0 or blackhole)");
}

uint32_t worker_noc_x(uint32_t logical_x) { return logical_x + 1; }
uint32_t worker_noc_y(uint32_t logical_y) { return logical_y + 1; }

uint64_t make_noc_addr(uint32_t x, uint32_t y, uint64_t local) {
    return (static_cast<uint64_t>(y & 0x3f) << 42) | (static_cast<uint64_t>(x & 0x3f) << 36) |
           (local & ((1ull << 36) - 1));
}

static void* map_low(size_t bytes) {
    // L1 must be addressable with 32-bit addresses (kernels hold them in uint32_t)
    const uintptr_t hints[] = {0x20000000u, 0x40000000u, 0x60000000u, 0x10000000u};
    for (uintptr_t hint : hints) {
        void* p = mmap(reinterpret_cast<void*>(hint), bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) continue;
        if (reinterpret_cast<uintptr_t>(p) + bytes < (1ull << 32)) return p;
        munmap(p, bytes);
    }
#ifdef MAP_32BIT
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_32BIT, -1, 0);
    if (p != MAP_FAILED) return p;
#endif
    return nullptr;
}

// ---- DRAM banks ------------------------------------------------------------------------------
DramBank::DramBank(DramBank&& o) noexcept
    : base_(o.base_), size_(o.size_), capacity_(o.capacity_) {
    o.base_ = nullptr;
    o.size_ = o.capacity_ = 0;
}
DramBank& DramBank::operator=(DramBank&& o) noexcept {
    std::swap(base_, o.base_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
    return *this;
}
DramBank::~DramBank() {
    if (base_) munmap(base_, capacity_);
}
void DramBank::resize(size_t n) {
    if (base_ == nullptr) {
        capacity_ = device().prof.dram_bank_bytes;
        void* p = mmap(nullptr, capacity_, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) host_fail("cannot reserve the address space of a DRAM bank");
        base_ = static_cast<uint8_t*>(p);
    }
    if (n > capacity_) host_fail("DRAM is full");
    size_ = n;
}

void DramBank::release(size_t offset, size_t bytes) {
    // only whole host pages inside the range: a neighbouring buffer may share the edge pages
    if (base_ == nullptr || offset >= size_) return;
    const size_t end = std::min(offset + bytes, size_);
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t lo = (offset + page - 1) / page * page, hi = end / page * page;
    if (hi > lo) madvise(base_ + lo, hi - lo, MADV_DONTNEED);  // reads as zero afterwards
}

void create_device() {
    if (g_device) host_fail("MeshDevice::create_unit_mesh called twice (one device per process)");
    timing::profile();  // an unknown TT_MOCK_DEVICE is reported before the device exists
    g_device = std::make_unique<Device>();
    Device& d = *g_device;
    d.prof = profile_from_env();
    const size_t n = static_cast<size_t>(d.prof.grid_x) * d.prof.grid_y;
    d.cores.resize(n);
    const size_t bytes = n * d.prof.l1_bytes;
    d.l1_region = static_cast<uint8_t*>(map_low(bytes));
    if (d.l1_region == nullptr) host_fail("cannot map emulated L1 below 4 GiB");
    for (size_t i = 0; i < n; ++i) {
        Core& c = d.cores[i];
        c.x = static_cast<uint32_t>(i % d.prof.grid_x);
        c.y = static_cast<uint32_t>(i / d.prof.grid_x);
        c.index = static_cast<int>(i);
        c.l1 = d.l1_region + i * d.prof.l1_bytes;
        c.l1_used = d.prof.l1_base;
    }
    d.dram.resize(d.prof.dram_banks);
    d.dram_top.assign(d.prof.dram_banks, 0);
    d.l1_buffers_bottom = d.prof.l1_bytes;
    if (const char* s = std::getenv("TT_MOCK_STATS")) d.stats_path = s;
}

void destroy_device() {
    if (!g_device) return;
    write_stats();
    munmap(g_device->l1_region, g_device->cores.size() * g_device->prof.l1_bytes);
    g_device.reset();
}

Device& device() {
    if (!g_device) host_fail("no device: call MeshDevice::create_unit_mesh first");
    return *g_device;
}
bool device_exists() { return static_cast<bool>(g_device); }

// Never inlined: a kernel may resume on another host thread than the one it blocked on, so the
// thread-local must be read afresh, not through an address computed before the switch.
__attribute__((noinline)) Fiber& current() {
    Fiber* f = t_current;
    if (f == nullptr) host_fail("a kernel API was called outside a running kernel");
    return *f;
}

std::string describe_fiber(const Fiber& f) {
    const Core& c = device().cores[f.core];
    std::ostringstream os;
    os << "core (" << c.x << "," << c.y << ") " << f.file << " (" << kind_name(f.kind)
       << " kernel)";
    return os.str();
}

void cb_second_user(Core& c, int cb, const Fiber& f, const std::string& what) {
    CBState& s = c.cb[cb];
    (void)f;
    s.shared = true;
    if (!s.unguarded.empty()) {
        fail(what + ": CB " + std::to_string(cb) + " is also used by " + describe_fiber(*s.user) +
             ", which accessed it beyond cb_wait_front / cb_reserve_back (" + s.unguarded +
             "); with two kernels on a CB that races on hardware");
    }
}

bool cb_unguarded(Core& c, int cb, const Fiber& f, const std::string& what) {
    CBState& s = c.cb[cb];
    cb_touch(c, cb, f, [&] { return what; });
    if (!c.cb_cfg[cb].global || s.shared) return false;
    if (s.unguarded.empty()) s.unguarded = what;
    return true;
}

const DramBuffer* dram_buffer_at(uint64_t base) {
    const auto& bufs = device().dram_buffers;
    auto it = std::lower_bound(bufs.begin(), bufs.end(), base,
                               [](const DramBuffer& b, uint64_t v) { return b.base < v; });
    return it != bufs.end() && it->base == base ? &*it : nullptr;
}

const ShardedBuffer* sharded_buffer_at(bool is_dram, uint64_t base) {
    for (const ShardedBuffer& b : device().sharded_buffers) {
        if (b.is_dram == is_dram && b.base == base) return &b;
    }
    return nullptr;
}

// An access to a sharded buffer's region of a bank or core must lie in one page of a shard that
// bank or core holds. Returns false when `local` is outside every sharded buffer of that memory.
static bool check_sharded_access(bool is_dram, uint32_t holder_x, uint32_t holder_y, uint64_t local,
                                 uint32_t size, const ApiCall& what) {
    for (const ShardedBuffer& b : device().sharded_buffers) {
        if (b.is_dram != is_dram) continue;
        const uint64_t extent = uint64_t(b.shards_per_holder()) * b.shard_bytes();
        if (local < b.base || local >= b.base + extent) continue;
        std::ostringstream os;
        os << what.str() << ": bytes [" << local << ", " << local + size << ") of "
           << (is_dram ? "DRAM bank " + std::to_string(holder_x)
                       : "the L1 of core (" + std::to_string(holder_x) + "," + std::to_string(holder_y) + ")")
           << " lie in the region of the sharded " << (is_dram ? "DRAM" : "L1") << " buffer at address "
           << b.base;
        int holder = -1;
        for (size_t i = 0; i < b.holders.size(); ++i) {
            if (b.holders[i] == std::make_pair(holder_x, holder_y)) holder = static_cast<int>(i);
        }
        const uint64_t slot = (local - b.base) / b.shard_bytes();
        if (holder < 0 || slot * b.holders.size() + holder >= b.num_shards()) {
            os << ", but " << (is_dram ? "that bank" : "that core") << " holds no shard there";
            fail(os.str());
        }
        const uint64_t in_page = (local - b.base) % b.aligned;
        if (in_page + size > b.page_size) {
            os << ", past the end of a " << b.page_size << "-byte page";
            fail(os.str());
        }
        return true;
    }
    return false;
}

// A DRAM access must lie inside the pages one buffer keeps in that bank: buffers are allocated
// back to back, so an access past a buffer's last page would silently read or clobber the next.
static void check_dram_access(const Device& d, uint32_t bank, uint64_t local, uint32_t size,
                              const ApiCall& what) {
    const uint32_t banks = d.prof.dram_banks;
    // buffers are allocated at increasing addresses: the candidate is the last starting <= local
    const auto& bufs = d.dram_buffers;
    auto it = std::upper_bound(bufs.begin(), bufs.end(), local,
                               [](uint64_t v, const DramBuffer& b) { return v < b.base; });
    if (it != bufs.begin()) {
        const DramBuffer& b = *(it - 1);
        const uint64_t in_bank = b.pages / banks + (bank < b.pages % banks ? 1 : 0);
        const uint64_t extent = (b.pages + banks - 1) / banks * b.aligned;  // allocated per bank
        if (local < b.base + std::max<uint64_t>(extent, 1)) {
            const uint64_t end = in_bank ? b.base + (in_bank - 1) * b.aligned + b.page_size : b.base;
            if (local + size <= end) return;
            std::ostringstream os;
            os << what.str() << ": bytes [" << local << ", " << local + size << ") of DRAM bank "
               << bank << " run past the pages of the buffer at address " << b.base << " ("
               << b.pages << " pages of " << b.page_size << " bytes; bank " << bank << " holds "
               << in_bank << " of them, ending at offset " << end << ")";
            fail(os.str());
        }
    }
    std::ostringstream os;
    os << what.str() << ": bytes [" << local << ", " << local + size << ") of DRAM bank " << bank
       << " are not in any allocated buffer";
    fail(os.str());
}

uint8_t* resolve_noc_addr(uint64_t noc_addr, uint32_t size, const ApiCall& what, bool* is_dram,
                          int* core_index) {
    Device& d = device();
    const uint32_t y = static_cast<uint32_t>((noc_addr >> 42) & 0x3f);
    const uint32_t x = static_cast<uint32_t>((noc_addr >> 36) & 0x3f);
    const uint64_t local = noc_addr & ((1ull << 36) - 1);
    *is_dram = false;
    *core_index = -1;
    if (y == kDramNocY) {
        if (x >= d.prof.dram_banks) {
            fail(what.str() + ": NOC address names DRAM bank " + std::to_string(x) +
                 " but the device has " + std::to_string(d.prof.dram_banks));
        }
        if (!check_sharded_access(true, x, 0, local, size, what)) check_dram_access(d, x, local, size, what);
        *is_dram = true;
        return d.dram[x].data() + local;
    }
    if (x < 1 || y < 1 || x - 1 >= d.prof.grid_x || y - 1 >= d.prof.grid_y) {
        fail(what.str() + ": NOC coordinates (" + std::to_string(x) + "," + std::to_string(y) +
             ") are not a worker core or DRAM bank (use worker_core_from_logical_core on the host "
             "to get NOC coordinates)");
    }
    const int idx = d.core_index(x - 1, y - 1);
    Core& c = d.cores[idx];
    // local addresses are pointers into the issuing core's L1 or offsets; accept both
    uint64_t off = local;
    const uint64_t mine = reinterpret_cast<uintptr_t>(current_core().l1);
    if (local >= mine && local < mine + d.prof.l1_bytes) off = local - mine;
    if (off + size > d.prof.l1_bytes) {
        fail(what.str() + ": L1 address " + std::to_string(local) + " (+" + std::to_string(size) +
             ") is outside the " + std::to_string(d.prof.l1_bytes) + "-byte L1 of core (" +
             std::to_string(c.x) + "," + std::to_string(c.y) + ")");
    }
    if (off >= d.l1_buffers_bottom) check_sharded_access(false, c.x, c.y, off, size, what);
    *core_index = idx;
    return c.l1 + off;
}

std::vector<int> multicast_cores(uint64_t mcast, bool include_self, int self, const ApiCall& what) {
    const uint32_t x0 = (mcast >> 56) & 0x3f, y0 = (mcast >> 50) & 0x3f;
    const uint32_t x1 = (mcast >> 44) & 0x3f, y1 = (mcast >> 38) & 0x3f;
    const Device& d = device();
    std::vector<int> targets;
    for (uint32_t y = std::min(y0, y1); y <= std::max(y0, y1); ++y) {
        for (uint32_t x = std::min(x0, x1); x <= std::max(x0, x1); ++x) {
            if (x < 1 || y < 1 || x - 1 >= d.prof.grid_x || y - 1 >= d.prof.grid_y) {
                fail(what.str() + ": multicast rectangle includes NOC (" + std::to_string(x) +
                     "," + std::to_string(y) + "), which is not a worker core");
            }
            const int idx = d.core_index(x - 1, y - 1);
            if (idx == self && !include_self) continue;
            targets.push_back(idx);
        }
    }
    return targets;
}

[[noreturn]] void host_fail(const std::string& message) {
    std::fflush(stdout);
    std::fprintf(stderr, "TT-MOCK ERROR: %s\n", message.c_str());
    std::fflush(stderr);
    if (g_device) write_stats();
    std::_Exit(3);
}

// In a kernel: record the error on its core and leave the kernel for good; the round's end
// reports the first failed core (core order), as one thread would have met it.
[[noreturn]] __attribute__((noinline)) void fail(const std::string& message) {
    Fiber* f = t_current;
    if (f == nullptr) host_fail(message);
    Core& c = *f->core_ptr;
    c.failed = true;
    c.error = describe_fiber(*f) + ": " + message;
    swapcontext(static_cast<ucontext_t*>(f->context), static_cast<ucontext_t*>(f->scheduler));
    std::abort();  // a failed kernel is never resumed
}

// ---- fibers ------------------------------------------------------------------------------
static void fiber_main() {
    Fiber& f = current();
    f.entry();
    if (!f.pending.empty()) {
        fail("kernel_main returned with " + std::to_string(f.pending.size()) +
             " NOC transaction(s) in flight (first: " + f.pending.front().what.str() +
             "); call noc_async_read_barrier / noc_async_write_barrier before returning");
    }
    if (f.compute && f.compute->dst_state != DstState::Released) {
        fail("kernel_main returned while DST is still held (missing tile_regs_release)");
    }
    f.finished = true;
    swapcontext(static_cast<ucontext_t*>(f.context), static_cast<ucontext_t*>(f.scheduler));
}

void yield_blocked(Fiber& f) {
    swapcontext(static_cast<ucontext_t*>(f.context), static_cast<ucontext_t*>(f.scheduler));
}

namespace {

// Runs the kernels of one core until none can go on (one host thread, deterministic order).
void run_core(Core& c, ucontext_t* scheduler) {
    bool progressed = false;
    for (;;) {
        bool ran = false;
        for (Fiber* f : c.fibers) {
            if (f->finished) continue;
            if (f->wait_ready != nullptr && !f->wait_ready(f->wait_ready_ctx)) continue;
            f->wait_ready = nullptr;
            f->scheduler = scheduler;
            t_current = f;
            swapcontext(scheduler, static_cast<ucontext_t*>(f->context));
            t_current = nullptr;
            ++c.resumes;
            ran = true;
            if (c.failed) break;
        }
        progressed |= ran;
        if (!ran || c.failed) break;
    }
    c.progressed = progressed;
}

// the semaphore key (core, L1 offset) of a pointer into some core's L1
uint64_t l1_key(const Device& d, const uint8_t* p) {
    const size_t off = static_cast<size_t>(p - d.l1_region);
    return timing::sem_key(static_cast<int>(off / d.prof.l1_bytes), static_cast<uint32_t>(off % d.prof.l1_bytes));
}

// A multicast lands in a receiver's circular buffer only on pages the receiver's kernel holds
// reserved (cb_reserve_back, not yet pushed): landing on pages already pushed means the receiver
// handed the block to its consumer before the data arrived (the consumer may have read stale
// pages), landing on free pages means it was not ready for them. Memory outside every CB ring
// (semaphores, L1 buffers) is not checked.
void check_mcast_landing(const Core& src, const Core& dst, uint32_t lo, uint32_t size) {
    const uint32_t hi = lo + size;
    int overlapped = -1;
    for (int i = 0; i < kMaxCBs; ++i) {
        const CBConfig& cfg = dst.cb_cfg[i];
        if (!cfg.used || cfg.global || cfg.offset >= hi || lo >= cfg.offset + cfg.total_bytes) continue;
        const CBState& s = dst.cb[i];
        const uint32_t r_lo = cfg.offset + s.wr_page * cfg.page_bytes;
        if (s.reserved && r_lo <= lo && hi <= r_lo + s.reserved * cfg.page_bytes) return;
        if (overlapped < 0) overlapped = i;
    }
    if (overlapped < 0) return;
    const CBConfig& cfg = dst.cb_cfg[overlapped];
    const CBState& s = dst.cb[overlapped];
    host_fail("multicast from core (" + std::to_string(src.x) + "," + std::to_string(src.y) +
              ") lands on L1 bytes [" + std::to_string(lo - cfg.offset) + ", " +
              std::to_string(hi - cfg.offset) + ") of CB " + std::to_string(overlapped) +
              "'s ring on core (" + std::to_string(dst.x) + "," + std::to_string(dst.y) +
              "), which its kernel does not hold reserved (" + std::to_string(s.reserved) +
              " page(s) reserved at page " + std::to_string(s.wr_page) + ", " +
              std::to_string(s.filled) +
              " pushed and not popped): a receiver must reserve the block before it signals the "
              "sender and push it only after the data arrived (noc_semaphore_wait)");
}

void apply(const Deferred& op, int self) {
    Device& d = device();
    switch (op.kind) {
        case Deferred::Copy:
            std::memcpy(op.dst, op.src, op.size);
            if (op.is_read) {
                --op.fiber->deferred_reads;
            } else {
                --op.fiber->deferred_writes;
            }
            break;
        case Deferred::Multicast: {
            const uint64_t local = op.mcast & ((1ull << 38) - 1);
            for (int idx : multicast_cores(op.mcast, op.loopback, self, ApiCall{})) {
                if (idx == self && d.cores[idx].l1 + local == op.src) continue;  // in place
                check_mcast_landing(d.cores[self], d.cores[idx], static_cast<uint32_t>(local), op.size);
                std::memcpy(d.cores[idx].l1 + local, op.src, op.size);
            }
            --op.fiber->deferred_writes;
            break;
        }
        case Deferred::SemInc: {
            timing::sem_applied(d, l1_key(d, op.dst), op.fiber->id, op.tlog_index);
            uint32_t v;
            std::memcpy(&v, op.dst, 4);
            v += op.value;
            std::memcpy(op.dst, &v, 4);
            break;
        }
        case Deferred::SemSet:
            timing::sem_applied(d, l1_key(d, op.dst), op.fiber->id, op.tlog_index);
            std::memcpy(op.dst, &op.value, 4);
            break;
        case Deferred::SemSetMulticast: {
            const uint64_t local = op.mcast & ((1ull << 38) - 1);
            for (int idx : multicast_cores(op.mcast, false, self, ApiCall{})) {
                timing::sem_applied(d, timing::sem_key(idx, static_cast<uint32_t>(local)), op.fiber->id,
                                    op.tlog_index);
                std::memcpy(d.cores[idx].l1 + local, &op.value, 4);
            }
            break;
        }
    }
}

// The host threads TT_MOCK_THREADS asks for (0: not set, -1: not a valid count), else the CPUs
// this process may run on.
int requested_threads() {
    if (const char* s = std::getenv("TT_MOCK_THREADS"); s && *s) {
        char* end = nullptr;
        const long v = std::strtol(s, &end, 10);
        return *end != '\0' || v < 1 || v > 1024 ? -1 : static_cast<int>(v);
    }
    return 0;
}
int cpu_count() {
    cpu_set_t set;
    int n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
    if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
    return std::max(n, 1);
}

int thread_count(size_t cores) {
    int n = requested_threads();
    if (n < 0) {
        host_fail(std::string("TT_MOCK_THREADS='") + std::getenv("TT_MOCK_THREADS") +
                  "': give a number of host threads >= 1");
    }
    if (n == 0) n = cpu_count();
    return std::max(1, std::min(n, static_cast<int>(cores)));
}

// One NOC copy applied between rounds: a Copy, or one destination of a Multicast.
struct CopyJob {
    uint8_t* dst;
    const uint8_t* src;
    uint32_t size;
};

struct Run {
    std::vector<Core*> cores;  // cores with kernels, by index
    std::atomic<size_t> next{0};
    bool done = false;
    bool progressed = false;
    std::vector<Fiber>* fibers = nullptr;
    uint64_t serial_ns = 0;  // wall time between rounds
    uint64_t between0 = 0;   // when the current between-rounds phase began
    // between rounds: the copies the threads apply together (no two of them, nor a semaphore
    // update, touch the same bytes), the next one to take
    std::vector<CopyJob> copies;
    std::atomic<size_t> next_copy{0};
    bool replay_pending = false;  // calls taken by the replay and not yet replayed
};

// The replay of the calls taken between rounds (timing.hpp): by thread 0 at the start of the next
// round, while the other threads run cores (a kernel that ends the process meanwhile writes the
// statistics once the replay has stopped: g_replay_mutex).
void replay_taken(Run& run) {
    if (!run.replay_pending) return;
    run.replay_pending = false;
    std::lock_guard<std::mutex> lock(g_replay_mutex);
    const uint64_t r0 = now_ns();
    timing::replay_advance();
    g_host.replay_ns += now_ns() - r0;
}

// A byte range touched between rounds (the overlap check of independent_effects).
struct Span {
    uintptr_t lo, hi;
    enum Kind : uint8_t { CopyWrite, SemWrite, CopyRead } kind;
};

// Do the round's queued effects commute? True when no copy writes bytes that another copy or a
// semaphore update writes, or that a copy reads. Semaphore updates are still applied in order
// among themselves (several may update one semaphore); a copy that reads or writes no byte of
// any other effect gives the same bytes whenever it is applied.
bool independent_effects(const Run& run, std::vector<Span>& spans) {
    spans.clear();
    Device& d = device();
    for (const CopyJob& j : run.copies) {
        const auto dst = reinterpret_cast<uintptr_t>(j.dst), src = reinterpret_cast<uintptr_t>(j.src);
        spans.push_back(Span{dst, dst + j.size, Span::CopyWrite});
        spans.push_back(Span{src, src + j.size, Span::CopyRead});
    }
    for (Core* c : run.cores) {
        for (const Deferred& op : c->deferred) {
            if (op.kind == Deferred::SemInc || op.kind == Deferred::SemSet) {
                const auto p = reinterpret_cast<uintptr_t>(op.dst);
                spans.push_back(Span{p, p + 4, Span::SemWrite});
            } else if (op.kind == Deferred::SemSetMulticast) {
                const uint64_t local = op.mcast & ((1ull << 38) - 1);
                for (int idx : multicast_cores(op.mcast, false, c->index, ApiCall{})) {
                    const auto p = reinterpret_cast<uintptr_t>(d.cores[idx].l1 + local);
                    spans.push_back(Span{p, p + 4, Span::SemWrite});
                }
            }
        }
    }
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.lo < b.lo; });
    // sorted by start: two ranges overlap iff the later one starts before the earlier one ends
    uintptr_t end_copy_write = 0, end_sem_write = 0, end_read = 0;
    for (const Span& s : spans) {
        if (s.hi == s.lo) continue;
        switch (s.kind) {
            case Span::CopyWrite:
                if (s.lo < std::max({end_copy_write, end_sem_write, end_read})) return false;
                end_copy_write = std::max(end_copy_write, s.hi);
                break;
            case Span::SemWrite:
                if (s.lo < std::max(end_copy_write, end_read)) return false;
                end_sem_write = std::max(end_sem_write, s.hi);
                break;
            case Span::CopyRead:
                if (s.lo < std::max(end_copy_write, end_sem_write)) return false;
                end_read = std::max(end_read, s.hi);
                break;
        }
    }
    return true;
}

// Between rounds, once the effects are applied or left to the threads (one thread): detect the end
// of the run or a deadlock.
void end_of_round(Run& run) {
    size_t unfinished = 0;
    for (const Fiber& f : *run.fibers) unfinished += f.finished ? 0 : 1;
    if (unfinished == 0) {
        run.done = true;
    } else if (!run.progressed) {
        // the report as when every effect of the round was applied and replayed
        for (const CopyJob& j : run.copies) std::memcpy(j.dst, j.src, j.size);
        replay_taken(run);
        std::ostringstream os;
        os << "deadlock: every unfinished kernel is blocked and none can make progress:";
        size_t shown = 0;
        for (const Fiber& f : *run.fibers) {
            if (f.finished) continue;
            if (++shown > 24) {
                os << "\n  ... and " << unfinished - 24 << " more blocked kernels";
                break;
            }
            os << "\n  " << describe_fiber(f) << ": blocked in "
               << (f.wait_describe ? f.wait_describe(f.wait_describe_ctx) : std::string("?"));
        }
        host_fail(os.str());
    }
    run.next.store(0, std::memory_order_relaxed);
}

// Between rounds (one thread, the others wait): report the first failure, and apply the queued
// cross-core effects - in core order and then issue order, or, when they commute
// (independent_effects), the semaphore updates in that order and the copies left to all threads
// (between_rounds_parallel); then end_of_round.
void begin_between_rounds(Run& run, std::vector<Span>& spans) {
    run.between0 = now_ns();
    ++g_host.rounds;
    dprint_flush(run.cores);
    for (Core* c : run.cores) {
        if (c->failed) {
            std::fflush(stdout);
            std::fprintf(stderr, "TT-MOCK ERROR: %s\n", c->error.c_str());
            std::fflush(stderr);
            write_stats();
            std::_Exit(3);
        }
    }
    Device& d = device();
    run.progressed = false;
    run.copies.clear();
    for (Core* c : run.cores) {
        run.progressed |= c->progressed;
        for (const Deferred& op : c->deferred) {
            if (op.kind == Deferred::Copy) {
                run.copies.push_back(CopyJob{op.dst, op.src, op.size});
            } else if (op.kind == Deferred::Multicast) {
                const uint64_t local = op.mcast & ((1ull << 38) - 1);
                for (int idx : multicast_cores(op.mcast, op.loopback, c->index, ApiCall{})) {
                    if (idx == c->index && d.cores[idx].l1 + local == op.src) continue;  // in place
                    run.copies.push_back(CopyJob{d.cores[idx].l1 + local, op.src, op.size});
                }
            }
        }
    }
    const bool overlap = !run.copies.empty() && !independent_effects(run, spans);
    if (run.copies.empty() || overlap) {
        // in order, as one thread would
        g_host.overlapping_rounds += overlap ? 1 : 0;
        run.copies.clear();
        for (Core* c : run.cores) {
            for (const Deferred& op : c->deferred) apply(op, c->index);
            c->deferred.clear();
        }
    } else {
        // the same checks and counts in the same order; the copies' bytes come in between_rounds_parallel
        for (Core* c : run.cores) {
            for (const Deferred& op : c->deferred) {
                if (op.kind == Deferred::Copy) {
                    if (op.is_read) --op.fiber->deferred_reads; else --op.fiber->deferred_writes;
                } else if (op.kind == Deferred::Multicast) {
                    const uint64_t local = op.mcast & ((1ull << 38) - 1);
                    for (int idx : multicast_cores(op.mcast, op.loopback, c->index, ApiCall{})) {
                        if (idx == c->index && d.cores[idx].l1 + local == op.src) continue;
                        check_mcast_landing(d.cores[c->index], d.cores[idx], static_cast<uint32_t>(local), op.size);
                    }
                    --op.fiber->deferred_writes;
                } else {
                    apply(op, c->index);
                }
            }
            c->deferred.clear();
        }
    }
    // the modelled time: the replay takes what the kernels recorded (their semaphore updates
    // applied) and replays it during the next round
    timing::replay_take();
    run.replay_pending = true;
    run.next_copy.store(0, std::memory_order_relaxed);
    end_of_round(run);
    if (run.copies.empty()) run.serial_ns += now_ns() - run.between0;
}

// Between rounds, when begin_between_rounds left copies (every thread).
void between_rounds_parallel(Run& run) {
    for (size_t i; (i = run.next_copy.fetch_add(1, std::memory_order_relaxed)) < run.copies.size();) {
        const CopyJob& j = run.copies[i];
        std::memcpy(j.dst, j.src, j.size);
    }
}

// The threads meet between rounds: the last to arrive runs the completion, then all go on. A
// waiting thread spins, then yields, for up to a millisecond before it sleeps: a round's end and
// what comes between rounds take a fraction of a millisecond, and waking a sleeping thread takes
// about as long.
class RoundBarrier {
public:
    explicit RoundBarrier(int threads) : threads_(threads) {}
    template <typename F>
    void arrive_and_wait(F completion) {
        const uint32_t gen = gen_.load(std::memory_order_acquire);
        if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == threads_) {
            completion();
            arrived_.store(0, std::memory_order_relaxed);
            gen_.store(gen + 1, std::memory_order_release);
            gen_.notify_all();
            return;
        }
        // spin, then yield the CPU (to any other runnable thread: on an idle host the wait ends
        // without a wake-up), then sleep
        const uint64_t t0 = now_ns();
        for (unsigned i = 1; gen_.load(std::memory_order_acquire) == gen; ++i) {
            if ((i & 63) != 0) {
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#endif
                continue;
            }
            const uint64_t waited = now_ns() - t0;
            if (waited > kYieldNs) {
                while (gen_.load(std::memory_order_acquire) == gen) gen_.wait(gen, std::memory_order_acquire);
                return;
            }
            if (waited > kSpinNs) sched_yield();
        }
    }

private:
    static constexpr uint64_t kSpinNs = 20000, kYieldNs = 1000000;
    const int threads_;
    std::atomic<int> arrived_{0};
    std::atomic<uint32_t> gen_{0};
};

}  // namespace

void run_fibers(std::vector<Fiber>& fibers) {
    constexpr size_t kStack = 512 * 1024;
    Device& d = device();
    Run run;
    run.fibers = &fibers;
    for (Core& c : d.cores) {
        c.fibers.clear();
        c.deferred.clear();
        c.failed = false;
        c.sem_log.clear();
    }
    for (Fiber& f : fibers) {
        f.id = static_cast<int>(&f - fibers.data());
        auto* ctx = new ucontext_t();
        getcontext(ctx);
        f.stack = mmap(nullptr, kStack, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (f.stack == MAP_FAILED) host_fail("cannot allocate a kernel stack");
        f.stack_bytes = kStack;
        ctx->uc_stack.ss_sp = f.stack;
        ctx->uc_stack.ss_size = kStack;
        ctx->uc_link = nullptr;
        makecontext(ctx, fiber_main, 0);
        f.context = ctx;
        f.core_ptr = &d.cores[f.core];
        f.core_ptr->fibers.push_back(&f);
    }
    for (Core& c : d.cores) {
        if (!c.fibers.empty()) run.cores.push_back(&c);
    }
    const int threads = run.cores.empty() ? 1 : thread_count(run.cores.size());
    g_host.threads = std::max(g_host.threads, threads);
    if (g_host.busy_ns.size() < static_cast<size_t>(threads)) {
        g_host.busy_ns.resize(threads, 0);
        g_host.cpu_ns.resize(threads, 0);
    }
    const uint64_t wall0 = now_ns(), ticks0 = host_ticks();
    timing::replay_begin(d, fibers);

    RoundBarrier bar(threads);
    std::vector<Span> spans;
    auto work = [&](int tid) {
        ucontext_t scheduler;
        uint64_t busy = 0;
        const uint64_t cpu0 = thread_cpu_ns();
        while (!run.done) {
            const uint64_t t0 = now_ns();
            if (tid == 0) replay_taken(run);
            for (size_t i; (i = run.next.fetch_add(1, std::memory_order_relaxed)) < run.cores.size();) {
                run_core(*run.cores[i], &scheduler);
            }
            busy += now_ns() - t0;
            bar.arrive_and_wait([&] { begin_between_rounds(run, spans); });
            if (!run.copies.empty()) {
                between_rounds_parallel(run);
                bar.arrive_and_wait([&] { run.serial_ns += now_ns() - run.between0; });
            }
        }
        g_host.busy_ns[tid] += busy;
        g_host.cpu_ns[tid] += thread_cpu_ns() - cpu0;
    };
    if (!run.cores.empty()) {
        std::vector<std::thread> pool;
        for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
        work(0);
        for (std::thread& t : pool) t.join();
    }
    g_host.wall_ns += now_ns() - wall0;
    g_host.ticks += host_ticks() - ticks0;
    g_host.ticks_ns += now_ns() - wall0;
    g_host.serial_ns += run.serial_ns;
    ++g_host.runs;

    // modelled device time of the launch: the rest of the replay of the kernels' timing logs
    const uint64_t r0 = now_ns();
    timing::replay_finish(d, fibers);
    g_host.replay_ns += now_ns() - r0;

    // messages about CBs name kernels: format them while the fibers exist
    for (Core& c : d.cores) {
        for (CBState& s : c.cb) {
            if (s.push_fiber) s.pusher = s.push_fiber->file + " (" + kind_name(s.push_fiber->kind) + " kernel)";
            if (s.pop_fiber) s.popper = s.pop_fiber->file + " (" + kind_name(s.pop_fiber->kind) + " kernel)";
            if (s.last_push_call.fmt) s.last_push = s.last_push_call.str();
            s.push_fiber = s.pop_fiber = nullptr;
        }
        c.fibers.clear();
    }
    for (Fiber& f : fibers) {
        munmap(f.stack, f.stack_bytes);
        delete static_cast<ucontext_t*>(f.context);
        f.context = nullptr;
        delete f.compute;
        f.compute = nullptr;
        f.core_ptr = nullptr;
    }
}

void parallel_ranges(size_t n, size_t min_part, const std::function<void(size_t, size_t)>& fn) {
    // an invalid TT_MOCK_THREADS is reported by the launch; a copy before it runs on one thread
    const int asked = requested_threads();
    const size_t most = asked > 0 ? static_cast<size_t>(asked) : asked < 0 ? 1 : static_cast<size_t>(cpu_count());
    const size_t parts = std::max<size_t>(1, std::min(most, n / std::max<size_t>(min_part, 1)));
    if (parts == 1) {
        fn(0, n);
        return;
    }
    std::vector<std::thread> pool;
    for (size_t k = 1; k < parts; ++k) pool.emplace_back(fn, n * k / parts, n * (k + 1) / parts);
    fn(0, n / parts);
    for (std::thread& t : pool) t.join();
}

// ---- statistics ---------------------------------------------------------------------------
static void counters_json(std::ostream& os, const Counters& c,
                          const std::map<std::string, uint64_t>& extra) {
    os << "{\"dram_bytes_read\": " << c.dram_bytes_read
       << ", \"dram_bytes_written\": " << c.dram_bytes_written << ", \"noc_reads\": " << c.noc_reads
       << ", \"noc_writes\": " << c.noc_writes << ", \"noc_bytes_read\": " << c.noc_bytes_read
       << ", \"noc_bytes_written\": " << c.noc_bytes_written << ", \"multicasts\": " << c.multicasts
       << ", \"semaphore_ops\": " << c.semaphore_ops << ", \"tile_ops\": {";
    bool first = true;
    for (const auto& [k, v] : c.tile_ops) {
        os << (first ? "" : ", ") << "\"" << k << "\": " << v;
        first = false;
    }
    os << "}";
    for (const auto& [k, v] : extra) os << ", \"" << k << "\": " << v;
    os << "}";
}

void write_stats() {
    if (!g_device || g_device->stats_path.empty()) return;
    std::lock_guard<std::mutex> lock(g_replay_mutex);
    Device& d = *g_device;
    std::ofstream os(d.stats_path);
    Counters total;
    uint64_t total_stall_reserve = 0, total_stall_wait = 0, resumes = 0, math_ticks = 0;
    std::map<std::string, uint64_t> op_ticks;
    os << "{\"arch\": \"" << d.prof.name << "\", \"cores\": [";
    bool first = true;
    for (const Core& c : d.cores) {
        resumes += c.resumes;
        math_ticks += c.tile_math_ticks;
        for (const auto& [k, v] : c.tile_op_ticks) op_ticks[k] += v;
        if (!c.active) continue;
        os << (first ? "" : ", ") << "{\"core\": [" << c.x << ", " << c.y << "], \"counters\": ";
        first = false;
        std::map<std::string, uint64_t> extra;
        uint64_t sr = 0, sw = 0;
        for (const CBState& s : c.cb) {
            sr += s.stalls_reserve;
            sw += s.stalls_wait;
        }
        extra["cb_stalls_reserve"] = sr;
        extra["cb_stalls_wait"] = sw;
        counters_json(os, c.counters, extra);
        os << ", \"cb_stalls\": {";
        bool f2 = true;
        for (int i = 0; i < kMaxCBs; ++i) {
            if (!c.cb_cfg[i].used) continue;
            os << (f2 ? "" : ", ") << "\"" << i << "\": {\"reserve\": " << c.cb[i].stalls_reserve
               << ", \"wait\": " << c.cb[i].stalls_wait << ", \"pages\": " << c.cb[i].pushed_total
               << "}";
            f2 = false;
        }
        os << "}}";
        total.dram_bytes_read += c.counters.dram_bytes_read;
        total.dram_bytes_written += c.counters.dram_bytes_written;
        total.noc_reads += c.counters.noc_reads;
        total.noc_writes += c.counters.noc_writes;
        total.noc_bytes_read += c.counters.noc_bytes_read;
        total.noc_bytes_written += c.counters.noc_bytes_written;
        total.multicasts += c.counters.multicasts;
        total.semaphore_ops += c.counters.semaphore_ops;
        for (const auto& [k, v] : c.counters.tile_ops) total.tile_ops[k] += v;
        total_stall_reserve += sr;
        total_stall_wait += sw;
    }
    os << "], \"total\": ";
    counters_json(os, total, {{"cb_stalls_reserve", total_stall_reserve},
                              {"cb_stalls_wait", total_stall_wait}});
    // the schedule is deterministic (independent of host threads); host figures are not
    os << ", \"schedule\": {\"rounds\": " << g_host.rounds << ", \"kernel_resumes\": " << resumes
       << "}";
    os << ", \"device\": " << timing::results_json(d);
    uint64_t tile_ops = 0, cpu = 0, busy = 0;
    for (const auto& [k, v] : total.tile_ops) tile_ops += v;
    for (uint64_t b : g_host.cpu_ns) cpu += b;
    for (uint64_t b : g_host.busy_ns) busy += b;
    const double ticks_per_ns =
        g_host.ticks_ns ? static_cast<double>(g_host.ticks) / static_cast<double>(g_host.ticks_ns) : 1.0;
    const double math_ns = static_cast<double>(math_ticks) / (ticks_per_ns > 0 ? ticks_per_ns : 1.0);
    os << ", \"host\": {\"threads\": " << g_host.threads << ", \"runs\": " << g_host.runs
       << ", \"wall_ns\": " << g_host.wall_ns << ", \"thread_busy_ns\": [";
    for (size_t i = 0; i < g_host.busy_ns.size(); ++i) os << (i ? ", " : "") << g_host.busy_ns[i];
    os << "], \"thread_cpu_ns\": [";
    for (size_t i = 0; i < g_host.cpu_ns.size(); ++i) os << (i ? ", " : "") << g_host.cpu_ns[i];
    // overhead: the threads' CPU time outside tile math (scheduling, API calls and their checks,
    // NOC copies, the kernels' own code), per tile op. Tile math is timed in wall time (a CPU
    // time stamp per op is too dear), so its share of the busy wall time scales the CPU time: on a
    // host shared with other work, preemption inflates both alike.
    const double math_share = busy ? std::min(1.0, math_ns / static_cast<double>(busy)) : 0.0;
    os << "], \"between_rounds_ns\": " << g_host.serial_ns << ", \"replay_ns\": " << g_host.replay_ns
       << ", \"overlapping_rounds\": " << g_host.overlapping_rounds
       << ", \"timing_log_calls\": " << timing::log_total_ops()
       << ", \"timing_log_peak_calls\": " << timing::log_peak_ops()
       << ", \"tile_ops\": " << tile_ops << ", \"tile_math_ns\": " << static_cast<uint64_t>(math_ns)
       << ", \"tile_math_ns_by_op\": {";
    first = true;
    for (const auto& [k, v] : op_ticks) {
        os << (first ? "" : ", ") << "\"" << k << "\": "
           << static_cast<uint64_t>(static_cast<double>(v) / (ticks_per_ns > 0 ? ticks_per_ns : 1.0));
        first = false;
    }
    os << "}"
       << ", \"overhead_ns_per_tile_op\": "
       << (tile_ops ? static_cast<double>(cpu) * (1.0 - math_share) / static_cast<double>(tile_ops) : 0.0)
       << "}";
    os << "}\n";
}

}  // namespace ttmock
