// tilelang-tt mock TT-Metalium: device state, fibers, scheduler, errors, statistics.
#include "emulator.hpp"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ttmock {

namespace {
std::unique_ptr<Device> g_device;
Fiber* g_current = nullptr;
ucontext_t g_scheduler_ctx;
uint64_t g_progress = 0;
std::vector<Fiber>* g_fibers = nullptr;
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
    static Profile wormhole{"wormhole_b0", 8, 8, 1464 * 1024, 100 * 1024, 12, 1ull << 30};
    static Profile blackhole{"blackhole", 13, 10, 1536 * 1024, 100 * 1024, 8, 4ull << 30};
    const char* arch = std::getenv("TT_MOCK_ARCH");
    if (arch == nullptr || std::string(arch).empty() || std::string(arch) == "wormhole_b0" ||
        std::string(arch) == "wormhole") {
        return wormhole;
    }
    if (std::string(arch) == "blackhole") return blackhole;
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

void create_device() {
    if (g_device) host_fail("MeshDevice::create_unit_mesh called twice (one device per process)");
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
        c.l1 = d.l1_region + i * d.prof.l1_bytes;
        c.l1_used = d.prof.l1_base;
    }
    d.dram.resize(d.prof.dram_banks);
    d.dram_top.assign(d.prof.dram_banks, 0);
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

Fiber& current() {
    if (g_current == nullptr) host_fail("a kernel API was called outside a running kernel");
    return *g_current;
}
Core& current_core() { return device().cores[current().core]; }

void note_progress() { ++g_progress; }

std::string describe_fiber(const Fiber& f) {
    const Core& c = device().cores[f.core];
    std::ostringstream os;
    os << "core (" << c.x << "," << c.y << ") " << f.file << " (" << kind_name(f.kind)
       << " kernel)";
    return os.str();
}

// A DRAM access must lie inside the pages one buffer keeps in that bank: buffers are allocated
// back to back, so an access past a buffer's last page would silently read or clobber the next.
static void check_dram_access(const Device& d, uint32_t bank, uint64_t local, uint32_t size,
                              const char* what) {
    const uint32_t banks = d.prof.dram_banks;
    for (const DramBuffer& b : d.dram_buffers) {
        const uint64_t in_bank = b.pages / banks + (bank < b.pages % banks ? 1 : 0);
        const uint64_t extent = (b.pages + banks - 1) / banks * b.aligned;  // allocated per bank
        if (local < b.base || local >= b.base + std::max<uint64_t>(extent, 1)) continue;
        const uint64_t end = in_bank ? b.base + (in_bank - 1) * b.aligned + b.page_size : b.base;
        if (local + size <= end) return;
        std::ostringstream os;
        os << what << ": bytes [" << local << ", " << local + size << ") of DRAM bank " << bank
           << " run past the pages of the buffer at address " << b.base << " (" << b.pages
           << " pages of " << b.page_size << " bytes; bank " << bank << " holds " << in_bank
           << " of them, ending at offset " << end << ")";
        fail(os.str());
    }
    std::ostringstream os;
    os << what << ": bytes [" << local << ", " << local + size << ") of DRAM bank " << bank
       << " are not in any allocated buffer";
    fail(os.str());
}

uint8_t* resolve_noc_addr(uint64_t noc_addr, uint32_t size, const char* what, bool* is_dram,
                          int* core_index) {
    Device& d = device();
    const uint32_t y = static_cast<uint32_t>((noc_addr >> 42) & 0x3f);
    const uint32_t x = static_cast<uint32_t>((noc_addr >> 36) & 0x3f);
    const uint64_t local = noc_addr & ((1ull << 36) - 1);
    *is_dram = false;
    *core_index = -1;
    if (y == kDramNocY) {
        if (x >= d.prof.dram_banks) {
            fail(std::string(what) + ": NOC address names DRAM bank " + std::to_string(x) +
                 " but the device has " + std::to_string(d.prof.dram_banks));
        }
        check_dram_access(d, x, local, size, what);
        *is_dram = true;
        return d.dram[x].data() + local;
    }
    if (x < 1 || y < 1 || x - 1 >= d.prof.grid_x || y - 1 >= d.prof.grid_y) {
        fail(std::string(what) + ": NOC coordinates (" + std::to_string(x) + "," +
             std::to_string(y) + ") are not a worker core or DRAM bank (use "
             "worker_core_from_logical_core on the host to get NOC coordinates)");
    }
    const int idx = d.core_index(x - 1, y - 1);
    Core& c = d.cores[idx];
    // local addresses are pointers into the issuing core's L1 or offsets; accept both
    uint64_t off = local;
    const uint64_t mine = reinterpret_cast<uintptr_t>(current_core().l1);
    if (local >= mine && local < mine + d.prof.l1_bytes) off = local - mine;
    if (off + size > d.prof.l1_bytes) {
        fail(std::string(what) + ": L1 address " + std::to_string(local) + " (+" +
             std::to_string(size) + ") is outside the " + std::to_string(d.prof.l1_bytes) +
             "-byte L1 of core (" + std::to_string(c.x) + "," + std::to_string(c.y) + ")");
    }
    *core_index = idx;
    return c.l1 + off;
}

[[noreturn]] void host_fail(const std::string& message) {
    std::fflush(stdout);
    std::fprintf(stderr, "TT-MOCK ERROR: %s\n", message.c_str());
    std::fflush(stderr);
    if (g_device) write_stats();
    std::_Exit(3);
}

[[noreturn]] void fail(const std::string& message) {
    if (g_current == nullptr) host_fail(message);
    std::fflush(stdout);
    std::fprintf(stderr, "TT-MOCK ERROR: %s: %s\n", describe_fiber(*g_current).c_str(),
                 message.c_str());
    std::fflush(stderr);
    write_stats();
    std::_Exit(3);
}

// ---- fibers ------------------------------------------------------------------------------
static void fiber_main() {
    Fiber& f = *g_current;
    f.entry();
    if (!f.pending.empty()) {
        fail("kernel_main returned with " + std::to_string(f.pending.size()) +
             " NOC transaction(s) in flight (first: " + f.pending.front().what +
             "); call noc_async_read_barrier / noc_async_write_barrier before returning");
    }
    if (f.compute && f.compute->dst_state != DstState::Released) {
        fail("kernel_main returned while DST is still held (missing tile_regs_release)");
    }
    f.finished = true;
    note_progress();
    swapcontext(static_cast<ucontext_t*>(f.context), &g_scheduler_ctx);
}

void yield_blocked(const std::string& what) {
    Fiber& f = current();
    f.blocked = what;
    swapcontext(static_cast<ucontext_t*>(f.context), &g_scheduler_ctx);
    f.blocked.clear();
}

void run_fibers(std::vector<Fiber>& fibers) {
    constexpr size_t kStack = 512 * 1024;
    g_fibers = &fibers;
    for (Fiber& f : fibers) {
        auto* ctx = new ucontext_t();
        getcontext(ctx);
        f.stack = mmap(nullptr, kStack, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (f.stack == MAP_FAILED) host_fail("cannot allocate a kernel stack");
        f.stack_bytes = kStack;
        ctx->uc_stack.ss_sp = f.stack;
        ctx->uc_stack.ss_size = kStack;
        ctx->uc_link = &g_scheduler_ctx;
        makecontext(ctx, fiber_main, 0);
        f.context = ctx;
    }
    size_t unfinished = fibers.size();
    while (unfinished > 0) {
        const uint64_t before = g_progress;
        for (Fiber& f : fibers) {
            if (f.finished) continue;
            g_current = &f;
            swapcontext(&g_scheduler_ctx, static_cast<ucontext_t*>(f.context));
            g_current = nullptr;
        }
        unfinished = 0;
        for (const Fiber& f : fibers) unfinished += f.finished ? 0 : 1;
        if (unfinished > 0 && g_progress == before) {
            std::ostringstream os;
            os << "deadlock: every unfinished kernel is blocked and none can make progress:";
            size_t shown = 0;
            for (const Fiber& f : fibers) {
                if (f.finished) continue;
                if (++shown > 24) {
                    os << "\n  ... and " << unfinished - 24 << " more blocked kernels";
                    break;
                }
                os << "\n  " << describe_fiber(f) << ": blocked in " << f.blocked;
            }
            host_fail(os.str());
        }
    }
    for (Fiber& f : fibers) {
        munmap(f.stack, f.stack_bytes);
        delete static_cast<ucontext_t*>(f.context);
        f.context = nullptr;
        delete f.compute;
        f.compute = nullptr;
    }
    g_fibers = nullptr;
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
    Device& d = *g_device;
    std::ofstream os(d.stats_path);
    Counters total;
    uint64_t total_stall_reserve = 0, total_stall_wait = 0;
    os << "{\"arch\": \"" << d.prof.name << "\", \"cores\": [";
    bool first = true;
    for (const Core& c : d.cores) {
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
    os << "}\n";
}

}  // namespace ttmock
