// tilelang-tt mock TT-Metalium: circular buffers, NOC transfers, semaphores (kernel side).
//
// Every call is O(1) in the common case and builds no strings: a call is recorded as an ApiCall
// (a formatter and its arguments) and formatted only for an error or a deadlock report.
// NOC traffic that only this core can observe happens at once (DRAM reads: DRAM changes only
// between rounds); traffic that another core may observe (DRAM writes, another core's L1,
// multicast, remote semaphores) is queued and applied between rounds (emulator.cpp), and a barrier
// waits for it.
#include <algorithm>
#include <cstring>
#include <sstream>

#include "emulator.hpp"
#include "api/dataflow/dataflow_api.h"
#include "ttmock/compute_api.h"

using namespace ttmock;

namespace {

std::string i64(uint64_t v) { return std::to_string(static_cast<int64_t>(v)); }

std::string cb_call(const char* name, const ApiCall& c) {
    return std::string(name) + "(cb=" + i64(c.a[0]) + ", " + i64(c.a[1]) + ")";
}
ApiCall cb_api(std::string (*fmt)(const ApiCall&), int32_t cb, int32_t n) {
    return ApiCall{fmt, {static_cast<uint64_t>(static_cast<int64_t>(cb)),
                         static_cast<uint64_t>(static_cast<int64_t>(n))}};
}
std::string fmt_reserve(const ApiCall& c) { return cb_call("cb_reserve_back", c); }
std::string fmt_push(const ApiCall& c) { return cb_call("cb_push_back", c); }
std::string fmt_wait(const ApiCall& c) { return cb_call("cb_wait_front", c); }
std::string fmt_pop(const ApiCall& c) { return cb_call("cb_pop_front", c); }

std::string hex(uint64_t v) {
    std::ostringstream os;
    os << std::hex << v;
    return os.str();
}
std::string fmt_noc_read(const ApiCall& c) {
    return "noc_async_read(src=0x" + hex(c.a[0]) + ", dst=0x" + hex(c.a[1]) + ", " +
           std::to_string(c.a[2]) + " bytes)";
}
std::string fmt_noc_write(const ApiCall& c) {
    return "noc_async_write(src=0x" + hex(c.a[0]) + ", dst=0x" + hex(c.a[1]) + ", " +
           std::to_string(c.a[2]) + " bytes)";
}
std::string fmt_mcast(const ApiCall& c) {
    return std::string(c.a[3] ? "noc_async_write_multicast_loopback_src" : "noc_async_write_multicast") +
           "(" + std::to_string(c.a[1]) + " bytes to " + std::to_string(c.a[2]) + " cores)";
}
std::string fmt_read_barrier(const ApiCall&) { return "noc_async_read_barrier()"; }
std::string fmt_write_barrier(const ApiCall&) { return "noc_async_write_barrier()"; }
std::string fmt_sem_wait(const ApiCall& c) {
    return std::string(c.a[2] ? "noc_semaphore_wait_min" : "noc_semaphore_wait") + "(sem=0x" +
           hex(c.a[0]) + ", " + std::to_string(c.a[1]) + ")";
}
std::string fmt_sem_set(const ApiCall& c) { return "noc_semaphore_set(" + std::to_string(c.a[0]) + ")"; }
std::string fmt_sem_inc(const ApiCall& c) { return "noc_semaphore_inc(+" + std::to_string(c.a[0]) + ")"; }
std::string fmt_sem_set_mcast(const ApiCall& c) {
    return "noc_semaphore_set_multicast(" + std::to_string(c.a[0]) + " cores)";
}
std::string fmt_sem_set_remote(const ApiCall&) { return "noc_semaphore_set_remote"; }
std::string fmt_accessor(const ApiCall& c) {
    return "TensorAccessor::get_noc_addr(page " + std::to_string(c.a[0]) + ", offset " +
           std::to_string(c.a[1]) + ") of the buffer at DRAM address " + std::to_string(c.a[2]);
}

CBConfig& cfg_of(Core& c, int32_t cb, const ApiCall& what) {
    if (cb < 0 || cb >= kMaxCBs) fail(what.str() + ": CB index " + std::to_string(cb) + " out of range 0..31");
    if (!c.cb_cfg[cb].used) {
        fail(what.str() + ": CB " + std::to_string(cb) +
             " was not created on this core (CreateCircularBuffer)");
    }
    return c.cb_cfg[cb];
}
CBConfig& cfg_of(int32_t cb, const char* name) {
    return cfg_of(current_core(), cb, ApiCall{+[](const ApiCall& c) {
                                          return std::string(reinterpret_cast<const char*>(c.a[0]));
                                      }, {reinterpret_cast<uintptr_t>(name)}});
}

uint32_t l1_addr(const Core& c, uint32_t offset) {
    return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(c.l1) + offset);
}

// local L1 offset of an L1 address held by a kernel (a pointer into this core's L1)
uint32_t l1_offset(const Core& c, uint32_t addr, uint32_t size, const ApiCall& what) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(c.l1);
    const uint32_t l1 = device().prof.l1_bytes;
    if (addr < base || addr + static_cast<uint64_t>(size) > base + l1) {
        fail(what.str() + ": address " + std::to_string(addr) + " (+" + std::to_string(size) +
             " bytes) is not in this core's L1 (use get_write_ptr / get_read_ptr / get_semaphore)");
    }
    return static_cast<uint32_t>(addr - base);
}

// On hardware a CB's read / write pointer wraps to the ring's start only when it lands exactly on
// the ring's end (cb_push_back / cb_pop_front); the pages of one reserved or waited block are
// addressed linearly from the pointer. A block that starts near the end runs past the ring.
void check_block_in_ring(const CBConfig& cfg, int32_t cb, uint32_t first_page, int32_t n,
                         const ApiCall& what, const char* side) {
    if (first_page + static_cast<uint32_t>(n) <= cfg.pages()) return;
    fail(what.str() + ": the block of " + std::to_string(n) + " pages at " + side + " page " +
         std::to_string(first_page) + " straddles the end of CB " + std::to_string(cb) + "'s " +
         std::to_string(cfg.pages()) + "-page ring (its last " +
         std::to_string(first_page + n - cfg.pages()) +
         " page(s) would lie past the ring on hardware); make the CB's page count a multiple of "
         "every block size reserved or waited on it");
}

// The pages of one block lie contiguously in L1 (check_block_in_ring): do they intersect the L1
// range of a transfer still in flight?
const PendingTransfer* in_flight_over(const Fiber& f, bool reads, const CBConfig& cfg,
                                      uint32_t first_page, uint32_t n) {
    const uint32_t lo = cfg.offset + first_page * cfg.page_bytes, hi = lo + n * cfg.page_bytes;
    for (const PendingTransfer& t : f.pending) {
        if (t.is_read == reads && t.l1_lo < hi && lo < t.l1_hi) return &t;
    }
    return nullptr;
}

void barrier(bool reads) {
    Fiber& f = current();
    timing::record(f, timing::Op{reads ? timing::Kind::ReadBarrier : timing::Kind::WriteBarrier});
    if (f.pending.empty()) return;
    const uint32_t& queued = reads ? f.deferred_reads : f.deferred_writes;
    if (queued) {
        // the transfers land between rounds
        block_until([&] { return queued == 0; },
                    [&] {
                        return std::string(reads ? fmt_read_barrier({}) : fmt_write_barrier({})) +
                               ": waiting for " + std::to_string(queued) +
                               " NOC transfer(s) to land";
                    });
    }
    size_t keep = 0;
    for (size_t i = 0; i < f.pending.size(); ++i) {
        if (f.pending[i].is_read != reads) f.pending[keep++] = f.pending[i];
    }
    f.pending.resize(keep);
}

// CBs created by one CircularBufferConfig share its L1 region: every index's ring starts at the
// region's address and spans it. A block a CB reserves may not lie on pages another CB of the
// region still holds (reserved, or pushed and not yet popped): the pack or NOC write into it would
// overwrite them. (Blocks that only reuse pages the other CB already freed are fine: tt-metal's
// matmul examples put the output CB on the partials' pages that way.)
void check_region_free(const Core& c, const CBConfig& cfg, int32_t cb, uint32_t first_page, int32_t n,
                       const ApiCall& what) {
    const uint64_t lo = uint64_t(first_page) * cfg.page_bytes, hi = lo + uint64_t(n) * cfg.page_bytes;
    const uint64_t ring = cfg.total_bytes;
    for (int j = 0; j < kMaxCBs; ++j) {
        if (j == cb || !(cfg.region & (1u << j))) continue;
        const CBState& o = c.cb[j];
        const CBConfig& oc = c.cb_cfg[j];
        const uint64_t held = uint64_t(o.filled + o.reserved) * oc.page_bytes;
        if (held == 0) continue;
        // the other CB's live bytes: from its read pointer, wrapping at the region's end
        const uint64_t olo = uint64_t(o.rd_page) * oc.page_bytes, ohi = olo + held;
        const bool overlap = (lo < std::min(ohi, ring) && olo < hi) || (ohi > ring && lo < ohi - ring);
        if (!overlap) continue;
        std::string holder;
        if (o.filled) {
            holder = std::to_string(o.filled) + " page(s) pushed by " +
                     (o.push_fiber ? o.push_fiber->file + " (" + kind_name(o.push_fiber->kind) + " kernel)"
                                   : std::string("?")) +
                     " (last " + o.last_push_call.str() + ") and not yet popped";
        } else {
            holder = std::to_string(o.reserved) + " page(s) reserved by " +
                     (o.reserve_fiber ? o.reserve_fiber->file + " (" + kind_name(o.reserve_fiber->kind) +
                                            " kernel)"
                                      : std::string("?")) +
                     " (" + o.last_reserve_call.str() + ") and not yet pushed";
        }
        fail(what.str() + ": CB " + std::to_string(cb) + " shares its L1 region with CB " + std::to_string(j) +
             " (one CircularBufferConfig), and the block it reserves (region bytes " + std::to_string(lo) + ".." +
             std::to_string(hi) + ") lies on pages CB " + std::to_string(j) + " still holds: " + holder +
             " (region bytes " + std::to_string(olo) + ".." + std::to_string(ohi > ring ? ohi - ring : ohi) +
             (ohi > ring ? ", wrapping" : "") + "); the CBs of one region must not hold the same L1 at the same time");
    }
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
    Fiber& f = current();
    Core& c = *f.core_ptr;
    const ApiCall what = cb_api(fmt_reserve, cb, n);
    const CBConfig& cfg = cfg_of(c, cb, what);
    CBState& s = c.cb[cb];
    cb_touch(c, cb, f, [&] { return what.str(); });
    const uint32_t pages = cfg.pages();
    if (n <= 0 || static_cast<uint32_t>(n) > pages) {
        fail(what.str() + ": CB " + std::to_string(cb) + " holds " + std::to_string(pages) +
             " pages; cannot reserve " + std::to_string(n));
    }
    check_block_in_ring(cfg, cb, s.wr_page, n, what, "write");
    const uint32_t need = static_cast<uint32_t>(n);
    // released by the pop that leaves `need` pages free
    timing::record(f, timing::Op{timing::Kind::CbReserve, static_cast<uint16_t>(cb), need,
                                 static_cast<int64_t>(s.pushed_total) + need - pages});
    if (pages - s.filled < need) {
        ++s.stalls_reserve;
        block_until([&] { return pages - s.filled >= need; },
                    [&] {
                        return what.str() + " on CB " + std::to_string(cb) + ": needs " +
                               std::to_string(n) + " free pages, " +
                               std::to_string(pages - s.filled) + " of " + std::to_string(pages) +
                               " free (waiting for the consumer to pop)";
                    });
    }
    if (need > s.reserved) s.reserved = need;
    s.reserve_fiber = &f;
    s.last_reserve_call = what;
    if (cfg.region != (1u << cb)) check_region_free(c, cfg, cb, s.wr_page, n, what);
}

bool ttmock::cb_pages_reservable_at_back(int32_t cb, int32_t n) {
    CBConfig& cfg = cfg_of(cb, "cb_pages_reservable_at_back");
    return cfg.pages() - current_core().cb[cb].filled >= static_cast<uint32_t>(n);
}

void ttmock::cb_push_back(int32_t cb, int32_t n) {
    Fiber& f = current();
    Core& c = *f.core_ptr;
    const ApiCall what = cb_api(fmt_push, cb, n);
    const CBConfig& cfg = cfg_of(c, cb, what);
    CBState& s = c.cb[cb];
    cb_touch(c, cb, f, [&] { return what.str(); });
    const bool beyond = n > 0 && static_cast<uint32_t>(n) > s.reserved && static_cast<uint32_t>(n) <= cfg.pages() &&
                        cb_unguarded(c, cb, f, what.str());
    if (!beyond && (n <= 0 || static_cast<uint32_t>(n) > s.reserved)) {
        fail(what.str() + ": pushes " + std::to_string(n) + " pages to CB " + std::to_string(cb) +
             " but only " + std::to_string(s.reserved) +
             " were reserved with cb_reserve_back (push without reserve, or wrong CB)");
    }
    if (beyond) s.reserved = static_cast<uint32_t>(n);  // the pointer steps over pages no one else uses
    if (!f.pending.empty()) {
        if (const PendingTransfer* t = in_flight_over(f, true, cfg, s.wr_page, n)) {
            fail(what.str() + ": pushes pages of CB " + std::to_string(cb) + " that " + t->what.str() +
                 " is still writing; call noc_async_read_barrier() before cb_push_back");
        }
    }
    s.reserved -= n;
    s.wr_page += n;
    if (s.wr_page >= cfg.pages()) s.wr_page -= cfg.pages();
    s.filled = std::min(cfg.pages(), s.filled + static_cast<uint32_t>(n));
    s.pushed_total += n;
    s.pack_pos = 0;
    timing::record(f, timing::Op{timing::Kind::CbPush, static_cast<uint16_t>(cb), static_cast<uint32_t>(n),
                                 static_cast<int64_t>(s.pushed_total)});
    s.push_fiber = &f;
    s.last_push_call = what;
}

void ttmock::cb_wait_front(int32_t cb, int32_t n) {
    Fiber& f = current();
    Core& c = *f.core_ptr;
    const ApiCall what = cb_api(fmt_wait, cb, n);
    const CBConfig& cfg = cfg_of(c, cb, what);
    CBState& s = c.cb[cb];
    cb_touch(c, cb, f, [&] { return what.str(); });
    if (n <= 0 || static_cast<uint32_t>(n) > cfg.pages()) {
        fail(what.str() + ": CB " + std::to_string(cb) + " holds " + std::to_string(cfg.pages()) +
             " pages; waiting for " + std::to_string(n) + " can never succeed");
    }
    check_block_in_ring(cfg, cb, s.rd_page, n, what, "read");
    const uint32_t need = static_cast<uint32_t>(n);
    // released by the push that makes `need` pages available
    timing::record(f, timing::Op{timing::Kind::CbWait, static_cast<uint16_t>(cb), need,
                                 static_cast<int64_t>(s.popped_total + need)});
    if (s.filled < need) {
        ++s.stalls_wait;
        block_until([&] { return s.filled >= need; },
                    [&] {
                        return what.str() + " on CB " + std::to_string(cb) + ": needs " +
                               std::to_string(n) + " pages, " + std::to_string(s.filled) +
                               " available (pushed " + std::to_string(s.pushed_total) +
                               ", popped " + std::to_string(s.popped_total) +
                               " so far; waiting for the producer)";
                    });
    }
    if (need > s.waited) s.waited = need;
}

bool ttmock::cb_pages_available_at_front(int32_t cb, int32_t n) {
    cfg_of(cb, "cb_pages_available_at_front");
    return current_core().cb[cb].filled >= static_cast<uint32_t>(n);
}

void ttmock::cb_pop_front(int32_t cb, int32_t n) {
    Fiber& f = current();
    Core& c = *f.core_ptr;
    const ApiCall what = cb_api(fmt_pop, cb, n);
    const CBConfig& cfg = cfg_of(c, cb, what);
    CBState& s = c.cb[cb];
    cb_touch(c, cb, f, [&] { return what.str(); });
    const bool beyond = n > 0 && static_cast<uint32_t>(n) > s.waited && static_cast<uint32_t>(n) <= cfg.pages() &&
                        cb_unguarded(c, cb, f, what.str());
    if (!beyond && (n <= 0 || static_cast<uint32_t>(n) > s.waited)) {
        fail(what.str() + ": pops " + std::to_string(n) + " pages of CB " + std::to_string(cb) +
             " but cb_wait_front guaranteed only " + std::to_string(s.waited) +
             " (pop more than waited for, or wrong CB)");
    }
    if (beyond) {  // the pointer steps over pages no one else uses
        s.waited = static_cast<uint32_t>(n);
        s.filled = std::max(s.filled, static_cast<uint32_t>(n));
    }
    if (!f.pending.empty()) {
        if (const PendingTransfer* t = in_flight_over(f, false, cfg, s.rd_page, n)) {
            fail(what.str() + ": pops pages of CB " + std::to_string(cb) + " that " + t->what.str() +
                 " is still reading; call noc_async_write_barrier() before cb_pop_front");
        }
    }
    s.waited -= n;
    s.rd_page += n;
    if (s.rd_page >= cfg.pages()) s.rd_page -= cfg.pages();
    s.filled -= n;
    s.popped_total += n;
    s.pop_fiber = &f;
    timing::record(f, timing::Op{timing::Kind::CbPop, static_cast<uint16_t>(cb), static_cast<uint32_t>(n),
                                 static_cast<int64_t>(s.popped_total)});
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

// reached only in constant expressions, which then do not compile (defined for the linker)
uint8_t ttmock::cb_format_unknown_when_the_kernel_was_created(std::int32_t cb) {
    fail("get_tile_size / get_dataformat(" + std::to_string(cb) + "): the CB's format was not known when the kernel was created");
}
uint32_t ttmock::cb_format_has_no_tile_size_in_the_emulator(std::int32_t cb) {
    fail("get_tile_size(" + std::to_string(cb) + "): the CB's data format has no tile size the emulator models");
}

uint8_t ttmock::cb_data_format(uint32_t cb) {
    return static_cast<uint8_t>(cfg_of(static_cast<int32_t>(cb), "get_dataformat").format);
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

// page `page_id` of the interleaved L1 buffer at `bank_base`: on the core that is its bank
static uint64_t l1_interleaved_noc_addr(uint32_t bank_base, uint32_t page_id, uint32_t offset) {
    const ApiCall what{nullptr, {page_id, offset, bank_base}};
    const ShardedBuffer* buf = sharded_buffer_at(false, bank_base);
    if (buf == nullptr || !buf->interleaved) {
        fail(fmt_accessor(what) + ": no interleaved L1 buffer starts at that address (give the accessor the "
             "buffer's address() and the TensorAccessorArgs of that buffer)");
    }
    if (page_id >= buf->tensor_pages[0] || offset >= buf->page_size) {
        fail(fmt_accessor(what) + ": the buffer has " + std::to_string(buf->tensor_pages[0]) + " pages of " +
             std::to_string(buf->page_size) + " bytes; the access lies outside its pages");
    }
    const auto [holder, off] = buf->locate(page_id);
    const auto [hx, hy] = buf->holders[holder];
    return make_noc_addr(worker_noc_x(hx), worker_noc_y(hy), bank_base + off + offset);
}

uint64_t ttmock::interleaved_noc_addr(bool is_dram, uint32_t bank_base, uint32_t page_size,
                                      uint32_t page_id, uint32_t offset) {
    if (!is_dram) return l1_interleaved_noc_addr(bank_base, page_id, offset);
    Fiber& f = current();
    const auto& bufs = device().dram_buffers;
    const DramBuffer* buf = nullptr;
    if (f.last_buffer && f.last_buffer <= bufs.size() && bufs[f.last_buffer - 1].base == bank_base) {
        buf = &bufs[f.last_buffer - 1];
    } else {
        buf = dram_buffer_at(bank_base);
        if (buf == nullptr) {
            fail(fmt_accessor(ApiCall{nullptr, {page_id, offset, bank_base}}) +
                 ": no DRAM buffer starts at that address (give the TensorAccessor the buffer's "
                 "address())");
        }
        f.last_buffer = static_cast<uint64_t>(buf - bufs.data()) + 1;
    }
    if (page_id >= buf->pages || offset >= buf->page_size) {
        fail(fmt_accessor(ApiCall{nullptr, {page_id, offset, bank_base}}) + ": the buffer has " +
             std::to_string(buf->pages) + " pages of " + std::to_string(buf->page_size) +
             " bytes; the access lies outside its pages");
    }
    const uint32_t banks = device().prof.dram_banks;
    const uint32_t aligned = (page_size + 31u) & ~31u;
    const uint64_t local = bank_base + static_cast<uint64_t>(page_id / banks) * aligned + offset;
    return make_noc_addr(page_id % banks, kDramNocY, local);
}

uint64_t ttmock::interleaved_fast_noc_addr(bool is_dram, uint32_t bank_base, uint32_t page_size,
                                           uint32_t tile_bytes, uint32_t page_id, uint32_t offset) {
    const std::string call = "InterleavedAddrGenFast<" + std::string(is_dram ? "true" : "false") + ">::get_noc_addr(" +
                             std::to_string(page_id) + ", " + std::to_string(offset) + ")";
    if (tile_bytes == 0) {
        fail(call + ": its data format is a block-float format, whose tile layout the emulator does not model");
    }
    // the generator steps each bank by the tile size; the buffer's pages are its aligned page size apart
    uint64_t stride = 0;
    if (is_dram) {
        const DramBuffer* buf = dram_buffer_at(bank_base);
        if (buf == nullptr) fail(call + ": no interleaved DRAM buffer starts at address " + std::to_string(bank_base));
        stride = buf->aligned;
    } else {
        const ShardedBuffer* buf = sharded_buffer_at(false, bank_base);
        if (buf == nullptr || !buf->interleaved) {
            fail(call + ": no interleaved L1 buffer starts at address " + std::to_string(bank_base));
        }
        stride = buf->aligned;
    }
    if (stride != tile_bytes) {
        fail(call + ": the generator places page " + std::to_string(page_id) + " at a multiple of its data format's " +
             std::to_string(tile_bytes) + "-byte tile in the bank, but the buffer's pages are " + std::to_string(stride) +
             " bytes apart there: it would address another page's bytes");
    }
    if (page_size > stride) {
        fail(call + ": page_size " + std::to_string(page_size) + " exceeds the buffer's " + std::to_string(stride) +
             "-byte pages");
    }
    return interleaved_noc_addr(is_dram, bank_base, static_cast<uint32_t>(stride), page_id, offset);
}

uint64_t ttmock::sharded_noc_addr(bool is_dram, uint32_t bank_base, uint32_t page_size, uint32_t page_id,
                                  uint32_t offset, uint32_t rank, const uint32_t* tensor_shape,
                                  const uint32_t* shard_shape, uint32_t num_banks, const uint32_t* bank_coords) {
    const ApiCall what{nullptr, {page_id, offset, bank_base}};
    const ShardedBuffer* buf = sharded_buffer_at(is_dram, bank_base);
    if (buf == nullptr) {
        fail(fmt_accessor(what) + ": no sharded " + (is_dram ? "DRAM" : "L1") +
             " buffer starts at that address (give the TensorAccessor the buffer's address() and the "
             "TensorAccessorArgs of that buffer)");
    }
    // the compile-time args must describe the buffer: a stale or foreign accessor is an error
    bool same = rank == 2 && num_banks == buf->holders.size() && page_size == buf->aligned;
    for (uint32_t i = 0; same && i < 2; ++i) {
        same = tensor_shape[i] == buf->tensor_pages[i] && shard_shape[i] == buf->shard_pages[i];
    }
    for (uint32_t i = 0; same && i < num_banks; ++i) {
        const uint32_t packed = (bank_coords[i / 2] >> (16 * (i % 2))) & 0xffffu;
        const auto [hx, hy] = buf->holders[i];
        const uint32_t want = is_dram ? (hx << 8) : ((worker_noc_x(hx) << 8) | worker_noc_y(hy));
        same = packed == want;
    }
    if (!same) {
        fail(fmt_accessor(what) + ": the accessor's compile-time args do not describe the sharded buffer at "
             "that address (its shapes, banks or page size differ)");
    }
    const uint64_t pages = uint64_t(buf->tensor_pages[0]) * buf->tensor_pages[1];
    if (page_id >= pages || offset >= buf->page_size) {
        fail(fmt_accessor(what) + ": the sharded buffer has " + std::to_string(pages) + " pages of " +
             std::to_string(buf->page_size) + " bytes; the access lies outside its pages");
    }
    // the SDK's mapping (api/tensor/tensor_accessor.h): shard id and page offset in the shard,
    // round-robin over the banks
    uint32_t id = page_id, shard = 0, within = 0, grid_stride = 1, shard_stride = 1;
    for (int i = static_cast<int>(rank) - 1; i >= 0; --i) {
        const uint32_t coord = id % tensor_shape[i];
        id /= tensor_shape[i];
        shard += (coord / shard_shape[i]) * grid_stride;
        within += (coord % shard_shape[i]) * shard_stride;
        grid_stride *= (tensor_shape[i] + shard_shape[i] - 1) / shard_shape[i];
        shard_stride *= shard_shape[i];
    }
    const uint32_t bank = shard % num_banks;
    const uint64_t local = bank_base + (uint64_t(shard / num_banks) * shard_stride + within) * page_size + offset;
    const uint32_t packed = (bank_coords[bank / 2] >> (16 * (bank % 2))) & 0xffffu;
    if (is_dram) return make_noc_addr(packed >> 8, kDramNocY, local);
    return make_noc_addr((packed >> 8) & 0xff, packed & 0xff, local);
}

[[noreturn]] void ttmock::unsupported(const char* what) {
    fail(std::string(what) + " is not supported by the emulator");
}

// ---- NOC transfers --------------------------------------------------------------------------
// A NOC transfer to or from DRAM starts at a DRAM address aligned to the DRAM alignment (32 bytes on
// Wormhole: a page's footprint, Allocator::get_alignment) and at an L1 address with the same offset
// modulo it; otherwise the hardware moves other bytes (a partial read of a page, e.g. one face row
// of a tile through TensorAccessor::get_noc_addr(page, offset), must keep its offset a multiple of 32).
// Blackhole's noc_parameters.h has NOC_DRAM_READ_ALIGNMENT_BYTES 64: its DRAM reads need 64 bytes.
static void check_dram_alignment(uint64_t dram, uint32_t l1, const ApiCall& what, bool read) {
    const uint64_t local = dram & ((1ull << 36) - 1);
    const uint32_t mine = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(current_core().l1));
    const uint32_t off = l1 >= mine ? l1 - mine : l1;
    const bool blackhole = read && device().prof.name == "blackhole";
    const uint32_t align = blackhole ? 64 : 32;
    if (local % align != 0 || (off % align) != (local % align)) {
        fail(what.str() + ": the DRAM address " + std::to_string(local) + " (and the L1 address, at offset " +
             std::to_string(off) + ") must be " + std::to_string(align) + "-byte aligned (" +
             (blackhole ? "Blackhole's DRAM read alignment" : "the DRAM alignment") +
             "): the NOC would move other bytes");
    }
}

void ttmock::noc_read(uint64_t src, uint32_t dst_l1, uint32_t size) {
    Fiber& f = current();
    Core& c = *f.core_ptr;
    const ApiCall what{fmt_noc_read, {src, dst_l1, size}};
    const uint32_t off = l1_offset(c, dst_l1, size, what);
    bool is_dram = false;
    int core = -1;
    const uint8_t* s = resolve_noc_addr(src, size, what, &is_dram, &core);
    if (is_dram) check_dram_alignment(src, dst_l1, what, true);
    if (is_dram) {  // a write of this core still in flight over these bytes: a race (the
        // write lands when the writer's barrier completes; the read would see the old data)
        for (const Deferred& d : c.deferred) {
            if (d.kind == Deferred::Copy && !d.is_read && d.dst < s + size && s < d.dst + d.size) {
                fail(what.str() + ": reads DRAM that " + describe_fiber(*d.fiber) +
                     " is still writing (a noc_async_write without its barrier completed); the "
                     "reader must wait for the writer (an L1 semaphore the writer sets after "
                     "noc_async_write_barrier)");
            }
        }
    }
    if (core >= 0 && core != c.index) {  // another core's L1 changes during a round
        c.deferred.push_back(Deferred{Deferred::Copy, true, false, size, 0, c.l1 + off, s, 0, &f});
        ++f.deferred_reads;
    } else {  // DRAM, or this core's own L1: as it is now
        std::memmove(c.l1 + off, s, size);
    }
    f.pending.push_back(PendingTransfer{true, off, off + size, what});
    timing::record(f, timing::Op{is_dram ? timing::Kind::DramRead : timing::Kind::L1Read,
                                 static_cast<uint16_t>((src >> 36) & 0x3f), size});
    c.counters.noc_reads += 1;
    c.counters.noc_bytes_read += size;
    if (is_dram) c.counters.dram_bytes_read += size;
}

void ttmock::noc_write(uint32_t src_l1, uint64_t dst, uint32_t size) {
    Fiber& f = current();
    Core& c = *f.core_ptr;
    const ApiCall what{fmt_noc_write, {src_l1, dst, size}};
    const uint32_t off = l1_offset(c, src_l1, size, what);
    bool is_dram = false;
    int core = -1;
    uint8_t* d = resolve_noc_addr(dst, size, what, &is_dram, &core);
    if (is_dram) check_dram_alignment(dst, src_l1, what, false);
    if (core == c.index) {  // this core's own L1
        std::memmove(d, c.l1 + off, size);
    } else {  // DRAM or another core: other cores may be reading it during this round
        c.deferred.push_back(Deferred{Deferred::Copy, false, false, size, 0, d, c.l1 + off, 0, &f});
        ++f.deferred_writes;
    }
    f.pending.push_back(PendingTransfer{false, off, off + size, what});
    timing::record(f, timing::Op{is_dram ? timing::Kind::DramWrite : timing::Kind::L1Write,
                                 static_cast<uint16_t>((dst >> 36) & 0x3f), size});
    c.counters.noc_writes += 1;
    c.counters.noc_bytes_written += size;
    if (is_dram) c.counters.dram_bytes_written += size;
}

void ttmock::noc_read_barrier() { barrier(true); }

void ttmock::noc_write_barrier() { barrier(false); }

static void write_multicast(uint32_t src_l1, uint64_t mcast, uint32_t size, uint32_t num_dests,
                            bool loopback) {
    Fiber& f = current();
    Core& c = *f.core_ptr;
    const ApiCall what{fmt_mcast, {src_l1, size, num_dests, loopback ? 1u : 0u}};
    const uint32_t off = l1_offset(c, src_l1, size, what);
    const uint64_t local = mcast & ((1ull << 38) - 1);
    if (local + size > device().prof.l1_bytes) fail(what.str() + ": destination beyond L1");
    if (!(mcast >> 63)) fail(what.str() + ": destination is not a multicast address (get_noc_multicast_addr)");
    const std::vector<int> targets = multicast_cores(mcast, loopback, c.index, what);
    const uint32_t expected = static_cast<uint32_t>(targets.size()) - (loopback ? 1u : 0u);
    if (num_dests != expected && !(loopback && num_dests == targets.size())) {
        fail(what.str() + ": num_dests is " + std::to_string(num_dests) +
             " but the multicast rectangle holds " + std::to_string(expected) +
             " destination cores (excluding the sender)");
    }
    if (targets.empty()) return;
    Deferred op{Deferred::Multicast, false, loopback, size, 0, nullptr, c.l1 + off, mcast, &f};
    c.deferred.push_back(op);
    ++f.deferred_writes;
    f.pending.push_back(PendingTransfer{false, off, off + size, what});
    timing::record(f, timing::Op{timing::Kind::Mcast, static_cast<uint16_t>(targets.size()), size});
    c.counters.multicasts += 1;
    c.counters.noc_writes += 1;
    c.counters.noc_bytes_written += static_cast<uint64_t>(size) * targets.size();
}

void ttmock::noc_write_multicast(uint32_t src, uint64_t dst, uint32_t size, uint32_t num_dests,
                                 bool loopback) {
    write_multicast(src, dst, size, num_dests, loopback);
}

// ---- semaphores -----------------------------------------------------------------------------
// Timing: a semaphore update is a call in the kernel's log; a wait records how many updates of its
// semaphore had been applied when it was released (timing.hpp).
static void local_sem_update(Core& c, uint32_t offset) {
    Fiber& f = current();
    timing::record(f, timing::Op{timing::Kind::SemUpdate, 0});
    timing::sem_applied(device(), timing::sem_key(c.index, offset), f.id, timing::last_index(f));
}
static void remote_sem_update(Core& c) {
    Fiber& f = current();
    timing::record(f, timing::Op{timing::Kind::SemUpdate, 1});
    c.deferred.back().tlog_index = timing::last_index(f);
}
uint32_t ttmock::semaphore_addr(uint32_t id) {
    if (id >= device().sem_count) {
        fail("get_semaphore(" + std::to_string(id) + "): the program created " +
             std::to_string(device().sem_count) + " semaphore(s) (CreateSemaphore)");
    }
    return l1_addr(current_core(), device().prof.l1_base - 16u * (id + 1));
}

void ttmock::semaphore_wait(volatile uint32_t* sem, uint32_t val, bool at_least) {
    Core& c = current_core();
    const uint32_t addr = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(sem));
    const ApiCall what{fmt_sem_wait, {addr, val, at_least ? 1u : 0u}};
    l1_offset(c, addr, 4, what);
    c.counters.semaphore_ops += 1;
    block_until([&] { return at_least ? *sem >= val : *sem == val; },
                [&] {
                    return what.str() + ": semaphore holds " + std::to_string(*sem) +
                           ", waiting for " + (at_least ? "at least " : "") + std::to_string(val);
                });
    // released by the updates applied so far
    const uint64_t key = timing::sem_key(c.index, addr - l1_addr(c, 0));
    timing::record(current(), timing::Op{timing::Kind::SemWait, 0, timing::sem_updates(device(), key),
                                         static_cast<int64_t>(key)});
}

void ttmock::semaphore_set(volatile uint32_t* sem, uint32_t val) {
    Core& c = current_core();
    const uint32_t addr = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(sem));
    const uint32_t off = l1_offset(c, addr, 4, ApiCall{fmt_sem_set, {val}});
    c.counters.semaphore_ops += 1;
    *sem = val;
    local_sem_update(c, off);
}

void ttmock::semaphore_inc(uint64_t addr, uint32_t incr) {
    Core& c = current_core();
    const ApiCall what{fmt_sem_inc, {incr}};
    bool is_dram = false;
    int core = -1;
    uint8_t* p = resolve_noc_addr(addr, 4, what, &is_dram, &core);
    if (core == c.index) {
        uint32_t v;
        std::memcpy(&v, p, 4);
        v += incr;
        std::memcpy(p, &v, 4);
        local_sem_update(c, static_cast<uint32_t>(p - c.l1));
    } else {
        c.deferred.push_back(Deferred{Deferred::SemInc, false, false, 4, incr, p, nullptr, 0, &current()});
        remote_sem_update(c);
    }
    c.counters.semaphore_ops += 1;
}

void ttmock::semaphore_set_multicast(uint32_t src, uint64_t dst, uint32_t num_dests) {
    Core& c = current_core();
    const ApiCall what{fmt_sem_set_mcast, {num_dests}};
    const uint32_t off = l1_offset(c, src, 4, what);
    uint32_t v;
    std::memcpy(&v, c.l1 + off, 4);
    if (!(dst >> 63)) fail(what.str() + ": destination is not a multicast address (get_noc_multicast_addr)");
    const std::vector<int> targets = multicast_cores(dst, false, c.index, what);
    if (num_dests != targets.size()) {
        fail(what.str() + ": num_dests is " + std::to_string(num_dests) +
             " but the multicast rectangle holds " + std::to_string(targets.size()) +
             " destination cores (excluding the sender)");
    }
    c.deferred.push_back(Deferred{Deferred::SemSetMulticast, false, false, 4, v, nullptr, nullptr, dst, &current()});
    remote_sem_update(c);
    c.counters.semaphore_ops += 1;
}

void ttmock::semaphore_set_remote(uint32_t src, uint64_t dst) {
    Core& c = current_core();
    const ApiCall what{fmt_sem_set_remote, {}};
    const uint32_t off = l1_offset(c, src, 4, what);
    bool is_dram = false;
    int core = -1;
    uint8_t* p = resolve_noc_addr(dst, 4, what, &is_dram, &core);
    uint32_t v;
    std::memcpy(&v, c.l1 + off, 4);
    if (core == c.index) {
        std::memcpy(p, &v, 4);
        local_sem_update(c, static_cast<uint32_t>(p - c.l1));
    } else {
        c.deferred.push_back(Deferred{Deferred::SemSet, false, false, 4, v, p, nullptr, 0, &current()});
        remote_sem_update(c);
    }
    c.counters.semaphore_ops += 1;
}
