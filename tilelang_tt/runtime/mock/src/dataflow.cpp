// tilelang-tt mock TT-Metalium: circular buffers, NOC transfers, semaphores (kernel side).
#include <cstring>
#include <sstream>

#include "emulator.hpp"
#include "api/dataflow/dataflow_api.h"
#include "ttmock/compute_api.h"

using namespace ttmock;

namespace {

std::string call(const char* name, int32_t cb, int32_t n) {
    return std::string(name) + "(cb=" + std::to_string(cb) + ", " + std::to_string(n) + ")";
}

CBConfig& cfg_of(int32_t cb, const char* what) {
    Core& c = current_core();
    if (cb < 0 || cb >= kMaxCBs) fail(std::string(what) + ": CB index " + std::to_string(cb) + " out of range 0..31");
    if (!c.cb_cfg[cb].used) {
        fail(std::string(what) + ": CB " + std::to_string(cb) +
             " was not created on this core (CreateCircularBuffer)");
    }
    return c.cb_cfg[cb];
}

uint32_t l1_addr(const Core& c, uint32_t offset) {
    return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(c.l1) + offset);
}

// local L1 offset of an L1 address held by a kernel (a pointer into this core's L1)
uint32_t l1_offset(uint32_t addr, uint32_t size, const char* what) {
    const Core& c = current_core();
    const uintptr_t base = reinterpret_cast<uintptr_t>(c.l1);
    const uint32_t l1 = device().prof.l1_bytes;
    if (addr < base || addr + static_cast<uint64_t>(size) > base + l1) {
        fail(std::string(what) + ": address " + std::to_string(addr) + " (+" + std::to_string(size) +
             " bytes) is not in this core's L1 (use get_write_ptr / get_read_ptr / get_semaphore)");
    }
    return static_cast<uint32_t>(addr - base);
}

// pages [first, first + n) of a ring, as L1 byte ranges intersecting [lo, hi)?
bool ring_overlaps(const CBConfig& cfg, uint32_t first_page, uint32_t n, uint32_t lo, uint32_t hi) {
    const uint32_t pages = cfg.pages();
    for (uint32_t k = 0; k < n; ++k) {
        const uint32_t p = (first_page + k) % pages;
        const uint32_t a = cfg.offset + p * cfg.page_bytes;
        const uint32_t b = a + cfg.page_bytes;
        if (a < hi && lo < b) return true;
    }
    return false;
}

// On hardware a CB's read / write pointer wraps to the ring's start only when it lands exactly on
// the ring's end (cb_push_back / cb_pop_front); the pages of one reserved or waited block are
// addressed linearly from the pointer. A block that starts near the end runs past the ring.
void check_block_in_ring(const CBConfig& cfg, int32_t cb, uint32_t first_page, int32_t n,
                         const std::string& what, const char* side) {
    if (first_page + static_cast<uint32_t>(n) <= cfg.pages()) return;
    fail(what + ": the block of " + std::to_string(n) + " pages at " + side + " page " +
         std::to_string(first_page) + " straddles the end of CB " + std::to_string(cb) + "'s " +
         std::to_string(cfg.pages()) + "-page ring (its last " +
         std::to_string(first_page + n - cfg.pages()) +
         " page(s) would lie past the ring on hardware); make the CB's page count a multiple of "
         "every block size reserved or waited on it");
}

void complete(PendingTransfer& t) {
    std::memcpy(t.dst, t.src, t.size);
    for (uint8_t* d : t.extra_dsts) std::memcpy(d, t.src, t.size);
}

void barrier(bool reads) {
    Fiber& f = current();
    std::vector<PendingTransfer> keep;
    for (PendingTransfer& t : f.pending) {
        if (t.is_read == reads) {
            complete(t);
        } else {
            keep.push_back(std::move(t));
        }
    }
    f.pending.swap(keep);
    note_progress();
}

}  // namespace

// ---- runtime args -------------------------------------------------------------------------
uint32_t ttmock::runtime_arg(int index) {
    Fiber& f = current();
    if (index < 0 || static_cast<size_t>(index) >= f.args.size()) {
        fail("get_arg_val(" + std::to_string(index) + "): the kernel was given " +
             std::to_string(f.args.size()) + " runtime args on this core (SetRuntimeArgs)");
    }
    return f.args[index];
}

uint32_t ttmock::common_runtime_arg(int index) {
    fail("get_common_arg_val(" + std::to_string(index) +
         "): common runtime args (SetCommonRuntimeArgs) are not supported by the emulator");
}

// ---- circular buffers ---------------------------------------------------------------------
void ttmock::cb_reserve_back(int32_t cb, int32_t n) {
    const std::string what = call("cb_reserve_back", cb, n);
    Fiber& f = current();
    f.last_call = what;
    CBConfig& cfg = cfg_of(cb, what.c_str());
    Core& c = current_core();
    CBState& s = c.cb[cb];
    if (n <= 0 || static_cast<uint32_t>(n) > cfg.pages()) {
        fail(what + ": CB " + std::to_string(cb) + " holds " + std::to_string(cfg.pages()) +
             " pages; cannot reserve " + std::to_string(n));
    }
    check_block_in_ring(cfg, cb, s.wr_page, n, what, "write");
    auto free_pages = [&] { return cfg.pages() - s.filled; };
    if (free_pages() < static_cast<uint32_t>(n)) {
        ++s.stalls_reserve;
        block_until([&] { return free_pages() >= static_cast<uint32_t>(n); },
                    what + " on CB " + std::to_string(cb) + ": needs " + std::to_string(n) +
                        " free pages, " + std::to_string(free_pages()) + " of " +
                        std::to_string(cfg.pages()) + " free (waiting for the consumer to pop)");
    }
    if (static_cast<uint32_t>(n) > s.reserved) s.reserved = static_cast<uint32_t>(n);
}

bool ttmock::cb_pages_reservable_at_back(int32_t cb, int32_t n) {
    CBConfig& cfg = cfg_of(cb, "cb_pages_reservable_at_back");
    return cfg.pages() - current_core().cb[cb].filled >= static_cast<uint32_t>(n);
}

void ttmock::cb_push_back(int32_t cb, int32_t n) {
    const std::string what = call("cb_push_back", cb, n);
    Fiber& f = current();
    f.last_call = what;
    CBConfig& cfg = cfg_of(cb, what.c_str());
    CBState& s = current_core().cb[cb];
    if (n <= 0 || static_cast<uint32_t>(n) > s.reserved) {
        fail(what + ": pushes " + std::to_string(n) + " pages to CB " + std::to_string(cb) +
             " but only " + std::to_string(s.reserved) +
             " were reserved with cb_reserve_back (push without reserve, or wrong CB)");
    }
    for (const PendingTransfer& t : f.pending) {
        if (t.is_read && ring_overlaps(cfg, s.wr_page, n, t.l1_lo, t.l1_hi)) {
            fail(what + ": pushes pages of CB " + std::to_string(cb) + " that " + t.what +
                 " is still writing; call noc_async_read_barrier() before cb_push_back");
        }
    }
    s.reserved -= n;
    s.wr_page = (s.wr_page + n) % cfg.pages();
    s.filled += n;
    s.pushed_total += n;
    s.pack_pos = 0;
    s.pusher = f.file + " (" + kind_name(f.kind) + " kernel)";
    s.last_push = what;
    note_progress();
}

void ttmock::cb_wait_front(int32_t cb, int32_t n) {
    const std::string what = call("cb_wait_front", cb, n);
    Fiber& f = current();
    f.last_call = what;
    CBConfig& cfg = cfg_of(cb, what.c_str());
    CBState& s = current_core().cb[cb];
    if (n <= 0 || static_cast<uint32_t>(n) > cfg.pages()) {
        fail(what + ": CB " + std::to_string(cb) + " holds " + std::to_string(cfg.pages()) +
             " pages; waiting for " + std::to_string(n) + " can never succeed");
    }
    check_block_in_ring(cfg, cb, s.rd_page, n, what, "read");
    if (s.filled < static_cast<uint32_t>(n)) {
        ++s.stalls_wait;
        block_until([&] { return s.filled >= static_cast<uint32_t>(n); },
                    what + " on CB " + std::to_string(cb) + ": needs " + std::to_string(n) +
                        " pages, " + std::to_string(s.filled) + " available (pushed " +
                        std::to_string(s.pushed_total) + ", popped " +
                        std::to_string(s.popped_total) + " so far; waiting for the producer)");
    }
    if (static_cast<uint32_t>(n) > s.waited) s.waited = static_cast<uint32_t>(n);
}

bool ttmock::cb_pages_available_at_front(int32_t cb, int32_t n) {
    cfg_of(cb, "cb_pages_available_at_front");
    return current_core().cb[cb].filled >= static_cast<uint32_t>(n);
}

void ttmock::cb_pop_front(int32_t cb, int32_t n) {
    const std::string what = call("cb_pop_front", cb, n);
    Fiber& f = current();
    f.last_call = what;
    CBConfig& cfg = cfg_of(cb, what.c_str());
    CBState& s = current_core().cb[cb];
    if (n <= 0 || static_cast<uint32_t>(n) > s.waited) {
        fail(what + ": pops " + std::to_string(n) + " pages of CB " + std::to_string(cb) +
             " but cb_wait_front guaranteed only " + std::to_string(s.waited) +
             " (pop more than waited for, or wrong CB)");
    }
    for (const PendingTransfer& t : f.pending) {
        if (!t.is_read && ring_overlaps(cfg, s.rd_page, n, t.l1_lo, t.l1_hi)) {
            fail(what + ": pops pages of CB " + std::to_string(cb) + " that " + t.what +
                 " is still reading; call noc_async_write_barrier() before cb_pop_front");
        }
    }
    s.waited -= n;
    s.rd_page = (s.rd_page + n) % cfg.pages();
    s.filled -= n;
    s.popped_total += n;
    s.popper = f.file + " (" + kind_name(f.kind) + " kernel)";
    note_progress();
}

uint32_t ttmock::cb_write_ptr(uint32_t cb) {
    CBConfig& cfg = cfg_of(static_cast<int32_t>(cb), "get_write_ptr");
    const Core& c = current_core();
    return l1_addr(c, cfg.offset + c.cb[cb].wr_page * cfg.page_bytes);
}

uint32_t ttmock::cb_read_ptr(uint32_t cb) {
    CBConfig& cfg = cfg_of(static_cast<int32_t>(cb), "get_read_ptr");
    const Core& c = current_core();
    return l1_addr(c, cfg.offset + c.cb[cb].rd_page * cfg.page_bytes);
}

uint32_t ttmock::cb_tile_size(uint32_t cb) {
    const CBConfig& cfg = cfg_of(static_cast<int32_t>(cb), "get_tile_size");
    const uint32_t bytes = tile_bytes(cfg.format);
    if (bytes == 0) {
        fail("get_tile_size(" + std::to_string(cb) + "): CB " + std::to_string(cb) + " has data format " +
             format_name(cfg.format) + ", whose tile size the emulator does not model");
    }
    return bytes;
}

// ---- coordinates and addresses -------------------------------------------------------------
static uint32_t my_noc_x() { return worker_noc_x(current_core().x); }
static uint32_t my_noc_y() { return worker_noc_y(current_core().y); }

uint64_t ttmock::noc_addr(uint32_t noc_x, uint32_t noc_y, uint32_t addr) {
    if (noc_x == 0xFFFFFFFFu && noc_y == 0xFFFFFFFFu) {  // get_noc_addr(addr): this core's L1
        noc_x = my_noc_x();
        noc_y = my_noc_y();
    }
    // L1 addresses travel as offsets so they name the same place on every core
    const uintptr_t base = reinterpret_cast<uintptr_t>(current_core().l1);
    uint64_t local = addr;
    if (addr >= base && addr < base + device().prof.l1_bytes) local = addr - base;
    return make_noc_addr(noc_x, noc_y, local);
}

uint64_t ttmock::noc_multicast_addr(uint32_t x0, uint32_t y0, uint32_t x1, uint32_t y1, uint32_t addr) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(current_core().l1);
    uint64_t local = addr;
    if (addr >= base && addr < base + device().prof.l1_bytes) local = addr - base;
    // encoding: bit 63 marks multicast; start/end coordinates packed above the local address
    return (1ull << 63) | (static_cast<uint64_t>(x0 & 0x3f) << 56) |
           (static_cast<uint64_t>(y0 & 0x3f) << 50) | (static_cast<uint64_t>(x1 & 0x3f) << 44) |
           (static_cast<uint64_t>(y1 & 0x3f) << 38) | (local & ((1ull << 38) - 1));
}

uint64_t ttmock::interleaved_noc_addr(bool is_dram, uint32_t bank_base, uint32_t page_size,
                                      uint32_t page_id, uint32_t offset) {
    if (!is_dram) fail("TensorAccessor over an L1 buffer is not supported by the emulator");
    const std::string what = "TensorAccessor::get_noc_addr(page " + std::to_string(page_id) +
                             ", offset " + std::to_string(offset) + ") of the buffer at DRAM address " +
                             std::to_string(bank_base);
    const DramBuffer* buf = nullptr;
    for (const DramBuffer& b : device().dram_buffers) {
        if (b.base == bank_base) buf = &b;
    }
    if (buf == nullptr) {
        fail(what + ": no DRAM buffer starts at that address (give the TensorAccessor the "
                    "buffer's address())");
    }
    if (page_id >= buf->pages || offset >= buf->page_size) {
        fail(what + ": the buffer has " + std::to_string(buf->pages) + " pages of " +
             std::to_string(buf->page_size) + " bytes; the access lies outside its pages");
    }
    const uint32_t banks = device().prof.dram_banks;
    const uint32_t aligned = (page_size + 31u) & ~31u;
    const uint64_t local = bank_base + static_cast<uint64_t>(page_id / banks) * aligned + offset;
    return make_noc_addr(page_id % banks, kDramNocY, local);
}

[[noreturn]] void ttmock::unsupported(const char* what) {
    fail(std::string(what) + " is not supported by the emulator");
}

// ---- NOC transfers --------------------------------------------------------------------------
void ttmock::noc_read(uint64_t src, uint32_t dst_l1, uint32_t size) {
    Fiber& f = current();
    std::ostringstream what;
    what << "noc_async_read(src=0x" << std::hex << src << ", dst=0x" << dst_l1 << std::dec << ", "
         << size << " bytes)";
    f.last_call = what.str();
    const uint32_t off = l1_offset(dst_l1, size, f.last_call.c_str());
    bool is_dram = false;
    int core = -1;
    const uint8_t* s = resolve_noc_addr(src, size, f.last_call.c_str(), &is_dram, &core);
    Core& c = current_core();
    PendingTransfer t{true, c.l1 + off, s, size, off, off + size, what.str(), {}, -1};
    f.pending.push_back(std::move(t));
    c.counters.noc_reads += 1;
    c.counters.noc_bytes_read += size;
    if (is_dram) c.counters.dram_bytes_read += size;
}

void ttmock::noc_write(uint32_t src_l1, uint64_t dst, uint32_t size) {
    Fiber& f = current();
    std::ostringstream what;
    what << "noc_async_write(src=0x" << std::hex << src_l1 << ", dst=0x" << dst << std::dec
         << ", " << size << " bytes)";
    f.last_call = what.str();
    const uint32_t off = l1_offset(src_l1, size, f.last_call.c_str());
    bool is_dram = false;
    int core = -1;
    uint8_t* d = resolve_noc_addr(dst, size, f.last_call.c_str(), &is_dram, &core);
    Core& c = current_core();
    PendingTransfer t{false, d, c.l1 + off, size, off, off + size, what.str(), {}, core};
    f.pending.push_back(std::move(t));
    c.counters.noc_writes += 1;
    c.counters.noc_bytes_written += size;
    if (is_dram) c.counters.dram_bytes_written += size;
}

void ttmock::noc_read_barrier() {
    current().last_call = "noc_async_read_barrier()";
    barrier(true);
}

void ttmock::noc_write_barrier() {
    current().last_call = "noc_async_write_barrier()";
    barrier(false);
}

static std::vector<int> multicast_targets(uint64_t mcast, bool include_self, uint32_t num_dests,
                                          const char* what) {
    if (!(mcast >> 63)) fail(std::string(what) + ": destination is not a multicast address (get_noc_multicast_addr)");
    const uint32_t x0 = (mcast >> 56) & 0x3f, y0 = (mcast >> 50) & 0x3f;
    const uint32_t x1 = (mcast >> 44) & 0x3f, y1 = (mcast >> 38) & 0x3f;
    Device& d = device();
    std::vector<int> targets;
    const int self = current().core;
    for (uint32_t y = std::min(y0, y1); y <= std::max(y0, y1); ++y) {
        for (uint32_t x = std::min(x0, x1); x <= std::max(x0, x1); ++x) {
            if (x < 1 || y < 1 || x - 1 >= d.prof.grid_x || y - 1 >= d.prof.grid_y) {
                fail(std::string(what) + ": multicast rectangle includes NOC (" + std::to_string(x) +
                     "," + std::to_string(y) + "), which is not a worker core");
            }
            const int idx = d.core_index(x - 1, y - 1);
            if (idx == self && !include_self) continue;
            targets.push_back(idx);
        }
    }
    const uint32_t expected = static_cast<uint32_t>(targets.size()) - (include_self ? 1u : 0u);
    if (num_dests != expected && !(include_self && num_dests == targets.size())) {
        fail(std::string(what) + ": num_dests is " + std::to_string(num_dests) +
             " but the multicast rectangle holds " + std::to_string(expected) +
             " destination cores (excluding the sender)");
    }
    return targets;
}

static void write_multicast(uint32_t src_l1, uint64_t mcast, uint32_t size, uint32_t num_dests,
                            bool loopback, const char* name) {
    Fiber& f = current();
    f.last_call = std::string(name) + "(" + std::to_string(size) + " bytes to " +
                  std::to_string(num_dests) + " cores)";
    const uint32_t off = l1_offset(src_l1, size, f.last_call.c_str());
    const uint64_t local = mcast & ((1ull << 38) - 1);
    if (local + size > device().prof.l1_bytes) fail(f.last_call + ": destination beyond L1");
    std::vector<int> targets = multicast_targets(mcast, loopback, num_dests, f.last_call.c_str());
    Core& c = current_core();
    PendingTransfer t{false, nullptr, c.l1 + off, size, off, off + size, f.last_call, {}, -1};
    for (int idx : targets) t.extra_dsts.push_back(device().cores[idx].l1 + local);
    if (t.extra_dsts.empty()) return;
    t.dst = t.extra_dsts.back();
    t.extra_dsts.pop_back();
    f.pending.push_back(std::move(t));
    c.counters.multicasts += 1;
    c.counters.noc_writes += 1;
    c.counters.noc_bytes_written += static_cast<uint64_t>(size) * targets.size();
}

void ttmock::noc_write_multicast(uint32_t src, uint64_t dst, uint32_t size, uint32_t num_dests,
                                 bool loopback) {
    write_multicast(src, dst, size, num_dests, loopback,
                    loopback ? "noc_async_write_multicast_loopback_src" : "noc_async_write_multicast");
}

// ---- semaphores -----------------------------------------------------------------------------
uint32_t ttmock::semaphore_addr(uint32_t id) {
    if (id >= device().sem_count) {
        fail("get_semaphore(" + std::to_string(id) + "): the program created " +
             std::to_string(device().sem_count) + " semaphore(s) (CreateSemaphore)");
    }
    return l1_addr(current_core(), device().prof.l1_base - 16u * (id + 1));
}

void ttmock::semaphore_wait(volatile uint32_t* sem, uint32_t val, bool at_least) {
    const uint32_t addr = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(sem));
    const char* name = at_least ? "noc_semaphore_wait_min" : "noc_semaphore_wait";
    l1_offset(addr, 4, name);
    std::ostringstream os;
    os << name << "(sem=0x" << std::hex << addr << std::dec << ", " << val << ")";
    const std::string what = os.str();
    current().last_call = what;
    current_core().counters.semaphore_ops += 1;
    block_until([&] { return at_least ? *sem >= val : *sem == val; },
                what + ": semaphore holds " + std::to_string(*sem) + ", waiting for " +
                    (at_least ? "at least " : "") + std::to_string(val));
}

void ttmock::semaphore_set(volatile uint32_t* sem, uint32_t val) {
    const uint32_t addr = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(sem));
    l1_offset(addr, 4, "noc_semaphore_set");
    current().last_call = "noc_semaphore_set(" + std::to_string(val) + ")";
    current_core().counters.semaphore_ops += 1;
    *sem = val;
    note_progress();
}

void ttmock::semaphore_inc(uint64_t addr, uint32_t incr) {
    current().last_call = "noc_semaphore_inc(+" + std::to_string(incr) + ")";
    bool is_dram = false;
    int core = -1;
    uint8_t* p = resolve_noc_addr(addr, 4, current().last_call.c_str(), &is_dram, &core);
    uint32_t v;
    std::memcpy(&v, p, 4);
    v += incr;
    std::memcpy(p, &v, 4);
    current_core().counters.semaphore_ops += 1;
    note_progress();
}

void ttmock::semaphore_set_multicast(uint32_t src, uint64_t dst, uint32_t num_dests) {
    current().last_call = "noc_semaphore_set_multicast(" + std::to_string(num_dests) + " cores)";
    const uint32_t off = l1_offset(src, 4, current().last_call.c_str());
    const uint64_t local = dst & ((1ull << 38) - 1);
    uint32_t v;
    std::memcpy(&v, current_core().l1 + off, 4);
    for (int idx : multicast_targets(dst, false, num_dests, current().last_call.c_str())) {
        std::memcpy(device().cores[idx].l1 + local, &v, 4);
    }
    current_core().counters.semaphore_ops += 1;
    note_progress();
}

void ttmock::semaphore_set_remote(uint32_t src, uint64_t dst) {
    current().last_call = "noc_semaphore_set_remote";
    const uint32_t off = l1_offset(src, 4, current().last_call.c_str());
    bool is_dram = false;
    int core = -1;
    uint8_t* p = resolve_noc_addr(dst, 4, current().last_call.c_str(), &is_dram, &core);
    std::memcpy(p, current_core().l1 + off, 4);
    current_core().counters.semaphore_ops += 1;
    note_progress();
}
