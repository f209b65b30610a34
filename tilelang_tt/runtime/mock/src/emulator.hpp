// tilelang-tt mock TT-Metalium: the emulator's internal state (not seen by kernels or hosts).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ttmock/types.hpp"

namespace ttmock {

constexpr int kMaxCBs = 32;
constexpr uint32_t kTileElems = 1024;

struct Profile {
    std::string name;
    uint32_t grid_x, grid_y;
    uint32_t l1_bytes;
    uint32_t l1_base;  // first byte of L1 available to CBs / semaphores (below: firmware)
    uint32_t dram_banks;
    uint64_t dram_bank_bytes;
};
const Profile& profile_from_env();

enum class KernelKind { Reader, Writer, Compute };
const char* kind_name(KernelKind k);

// Static configuration of one CB on one core (set by the host program).
struct CBConfig {
    bool used = false;
    uint32_t offset = 0;  // L1 offset of the ring
    uint32_t total_bytes = 0;
    uint32_t page_bytes = 0;
    tt::DataFormat format = tt::DataFormat::Invalid;
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
    std::string pusher, popper;  // the kernels that pushed / popped last (for messages)
    std::string last_push;       // the last cb_push_back call
};

struct PendingTransfer {
    bool is_read;           // NOC read into this core's L1
    uint8_t* dst;           // destination bytes
    const uint8_t* src;     // source bytes
    uint32_t size;
    uint32_t l1_lo, l1_hi;  // local L1 range involved (offsets), for conflict checks
    std::string what;       // the call, for messages
    // multicast / remote writes go to several destinations
    std::vector<uint8_t*> extra_dsts;
    int target_core = -1;   // for remote L1 writes: the written core (progress tracking)
};

struct Counters {
    uint64_t dram_bytes_read = 0, dram_bytes_written = 0;
    uint64_t noc_reads = 0, noc_writes = 0, noc_bytes_read = 0, noc_bytes_written = 0;
    uint64_t multicasts = 0, semaphore_ops = 0;
    std::map<std::string, uint64_t> tile_ops;
};

struct Core {
    uint32_t x = 0, y = 0;  // logical coordinates
    uint8_t* l1 = nullptr;  // l1_bytes of memory mapped below 4 GiB: L1 addresses are pointers
    CBConfig cb_cfg[kMaxCBs];
    CBState cb[kMaxCBs];
    uint32_t l1_used = 0;  // bytes allocated to CBs and semaphores
    Counters counters;
    bool active = false;
};

// Compute engine state of one compute fiber.
enum class DstState { Released, Acquired, Committed, Waited };
struct ComputeState {
    bool fp32_dest_acc = false;
    bool full_sync = false;
    MathFidelity fidelity = MathFidelity::HiFi4;
    std::vector<UnpackToDestMode> unpack_to_dest;
    DstState dst_state = DstState::Released;
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
    uint64_t* op_counter[64] = {};  // this core's tile_ops counters, by compute.cpp's op id
    std::pair<const char*, int> name_cache[4][8] = {};  // API name literal -> id (compute.cpp)
    bool matmul_transpose = false;
    int bcast_type = 0;
    int reduce_pool = 0, reduce_dim = 0;
    uint32_t capacity() const {
        uint32_t tiles = full_sync ? 16 : 8;
        return fp32_dest_acc ? tiles / 2 : tiles;
    }
};

struct Fiber;

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
    std::string blocked;  // why the fiber is blocked (empty when runnable)
    std::vector<PendingTransfer> pending;
    ComputeState* compute = nullptr;
    std::string last_call;
};

// An interleaved DRAM buffer: page p lives in bank p % banks at base + (p / banks) * aligned.
struct DramBuffer {
    uint64_t base = 0, pages = 0, page_size = 0, aligned = 0;
};

struct Device {
    Profile prof;
    std::vector<Core> cores;
    uint8_t* l1_region = nullptr;
    std::vector<std::vector<uint8_t>> dram;  // per bank
    std::vector<uint64_t> dram_top;          // per-bank bump allocator (bytes)
    std::vector<DramBuffer> dram_buffers;    // every buffer allocated (NOC accesses must hit one)
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
Core& current_core();

// Scheduler: blocks the calling fiber until `ready()` holds; `what` describes the wait.
template <typename F>
void block_until(F ready, const std::string& what);
void yield_blocked(const std::string& what);
void note_progress();

// Errors: print a TT-MOCK ERROR block naming core, kernel and call, then exit(3).
[[noreturn]] void fail(const std::string& message);
[[noreturn]] void host_fail(const std::string& message);

// Runs all fibers to completion (or reports a deadlock / protocol error).
void run_fibers(std::vector<Fiber>& fibers);

void write_stats();

// NOC addresses: (core or DRAM bank coordinates, local address).
uint64_t make_noc_addr(uint32_t x, uint32_t y, uint64_t local);
uint8_t* resolve_noc_addr(uint64_t noc_addr, uint32_t size, const char* what, bool* is_dram,
                          int* core_index);
constexpr uint32_t kDramNocY = 0x3f;  // pseudo NOC row holding the DRAM banks
uint32_t worker_noc_x(uint32_t logical_x);
uint32_t worker_noc_y(uint32_t logical_y);

std::string describe_fiber(const Fiber& f);

template <typename F>
void block_until(F ready, const std::string& what) {
    if (ready()) return;
    Fiber& f = current();
    while (!ready()) yield_blocked(what);
    (void)f;
}

}  // namespace ttmock
