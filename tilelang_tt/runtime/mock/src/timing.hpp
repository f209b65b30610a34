// tilelang-tt mock TT-Metalium: modelled device time (docs/MOCK.md, "Modelled device time").
//
// The functional run records, per kernel (RISC), the calls that cost time or order it: tile ops,
// CB handshakes, NOC transfers, barriers, semaphores and DST hand-offs, each with what it waits
// for expressed in the program's own terms (the n-th page pushed to a CB, the first k updates of
// a semaphore). After the run, a discrete-event simulation replays these logs in modelled-time
// order against a device profile: a blocking call resumes at the time of the event that released
// it, DRAM banks and NOC ports serve requests in time order. The logs are a function of the
// program alone (the round structure makes them so), hence so is the modelled time.
//
// The replay runs during the functional run, on the calls of the rounds before, as far as the logs
// reach, and drops the calls it has replayed: the logs hold about a round's worth of calls, not
// the whole run's. It is the same sequential replay as one run over the complete logs (it stops
// only where it would read a call not yet recorded, and goes on from there), so the results do
// not depend on where it stopped.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ttmock {
struct Fiber;
struct Device;

namespace timing {

// A device profile: every figure is cited in docs/MOCK.md ("Device profiles").
struct CostProfile {
    std::string name;          // n150, n300, p150
    std::string arch;          // wormhole_b0, blackhole
    double clock_ghz = 1.0;    // AICLK
    uint32_t grid_cores = 64;  // compute grid used for utilisation (GEMM_FLOPS.md)
    // compute, cycles per 32x32 tile
    double matmul_per_phase = 16;   // 32x32x32 product per fidelity phase
    double eltwise_per_phase = 8;   // FPU elementwise (8x16 datums per cycle)
    double unpack_tile = 8;         // unpacker, per operand tile (assumed)
    double pack_tile = 16;          // packer, per tile (assumed)
    double sfpu_instr = 32;         // one SFPU instruction over a tile (32 datums/cycle)
    double cb_call = 4;             // CB handshake / DST hand-off (assumed)
    // NOC
    double noc_latency = 275;       // fixed latency of a unicast transfer, cycles
    double noc_bytes_per_cycle = 28.5;
    double noc_issue = 22;          // RISC cycles to issue one transaction
    double mcast_latency = 160;     // extra latency of a multicast
    double mcast_per_dest = 2.5;    // extra latency per destination
    double mcast_occupancy_dests = 80;  // port occupancy grows by (1 + dests / this)
    // DRAM
    double dram_latency = 394;      // request + response latency, cycles
    double dram_bank_bytes_per_cycle = 22.25;
    double dram_spec_gbps = 288;    // the physical roof
    uint32_t dram_banks = 12;
};
const CostProfile& profile();  // from TT_MOCK_DEVICE (default by TT_MOCK_ARCH: n150 / p150)

enum class Kind : uint8_t {
    Tile,        // unpack + math: n tiles, x = (unpack cycles << 32) | math cycles, cb = class
    Sfpu,        // math engine only: n tiles, x = cycles each
    Pack,        // n tiles, x = cycles each
    CbWait,      // cb, x = pushed count that releases it
    CbReserve,   // cb, x = popped count that releases it (int64; <= 0: free)
    CbPush,      // cb, x = pushed count after the push
    CbPop,       // cb, x = popped count after the pop
    DramRead,    // cb = bank, n = bytes
    DramWrite,   // cb = bank, n = bytes
    L1Read,      // n = bytes (another core's or this core's L1)
    L1Write,     // n = bytes
    Mcast,       // n = bytes, cb = destinations
    ReadBarrier,
    WriteBarrier,
    SemUpdate,   // x = semaphore key; cb = 1: remote (arrives over the NOC), 0: local
    SemWait,     // x = semaphore key, n = updates of the key that released it
    RegsAcquire,
    RegsCommit,
    RegsWait,
    RegsRelease,
};
enum TileClass : uint16_t { kMatmul = 0, kFpu = 1, kCopy = 2, kReduce = 3 };

struct Op {
    Kind kind;
    uint16_t cb = 0;
    uint32_t n = 0;
    int64_t x = 0;
};

inline uint64_t sem_key(int core, uint32_t offset) {
    return (static_cast<uint64_t>(core) << 32) | offset;
}

// ---- recording (called by the API on the running kernel) -----------------------------------
void record(Fiber& f, Op op);
void tile(Fiber& f, TileClass cls, double unpack, double math);
void sfpu(Fiber& f, double cycles);
void pack(Fiber& f, double cycles);
// the index of the kernel's last recorded call in its whole log (calls already replayed and
// dropped included)
uint32_t last_index(const Fiber& f);
// a semaphore update applied to (core, offset): its place in the key's list of updates
void sem_applied(Device& d, uint64_t key, int fiber, uint32_t op_index);
uint32_t sem_updates(Device& d, uint64_t key);

// SFPU cost of a function, in instructions per tile (estimates, docs/MOCK.md)
double sfpu_instructions(const char* op);

// ---- simulation ------------------------------------------------------------------------------
// The replay of one program launch (the fibers of run_fibers): begin before its first round;
// take between rounds (one thread, the round's effects applied): the calls recorded so far and
// the semaphore updates applied move to the replay; advance replays what was taken - it touches
// no state of the kernels, so it may run while they run their next round (not alongside a take);
// finish once every kernel has finished; finish accumulates the results.
void replay_begin(Device& d, std::vector<Fiber>& fibers);
void replay_take();
void replay_advance();
void replay_finish(Device& d, std::vector<Fiber>& fibers);
// calls held in the logs at most (all kernels of a launch, any launch of the process), and
// calls recorded (all launches)
uint64_t log_peak_ops();
uint64_t log_total_ops();
// JSON object of the accumulated results ("device" in the statistics)
std::string results_json(const Device& d);

}  // namespace timing
}  // namespace ttmock
