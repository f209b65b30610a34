// tilelang-tt mock TT-Metalium: modelled device time (see timing.hpp and docs/MOCK.md).
#include "timing.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <queue>
#include <sstream>
#include <unordered_map>

#include "emulator.hpp"

namespace ttmock::timing {

// ---- device profiles (every figure: docs/MOCK.md "Device profiles") -----------------------------
namespace {
CostProfile wormhole(const char* name) {
    CostProfile p;
    p.name = name;
    p.arch = "wormhole_b0";
    return p;  // the defaults are Wormhole's
}
CostProfile blackhole_p150() {
    CostProfile p;
    p.name = "p150";
    p.arch = "blackhole";
    p.clock_ghz = 1.35;
    p.grid_cores = 130;
    p.noc_latency = 350;
    p.noc_bytes_per_cycle = 60.5;
    p.noc_issue = 35;
    p.dram_latency = 470;
    p.dram_bank_bytes_per_cycle = 46.3;
    p.dram_spec_gbps = 512;
    p.dram_banks = 8;
    return p;
}
}  // namespace

// The profile is chosen once, at the first call (create_device makes it): tile ops ask for it on
// every call, and reading the environment each time cost a few percent of the run.
static const CostProfile& choose_profile();
const CostProfile& profile() {
    static const CostProfile& chosen = choose_profile();
    return chosen;
}

static const CostProfile& choose_profile() {
    static const CostProfile n150 = wormhole("n150"), n300 = wormhole("n300"), p150 = blackhole_p150();
    const char* dev = std::getenv("TT_MOCK_DEVICE");
    const char* arch = std::getenv("TT_MOCK_ARCH");
    const bool bh = arch && std::string(arch) == "blackhole";
    if (dev == nullptr || *dev == '\0') return bh ? p150 : n150;
    const std::string d = dev;
    const CostProfile* p = d == "n150" ? &n150 : d == "n300" ? &n300 : d == "p150" ? &p150 : nullptr;
    if (p == nullptr) host_fail("unknown TT_MOCK_DEVICE '" + d + "' (use n150, n300 or p150)");
    if ((p->arch == "blackhole") != bh) {
        host_fail("TT_MOCK_DEVICE '" + d + "' is a " + p->arch + " device but the program was built for " +
                  (bh ? "blackhole" : "wormhole_b0"));
    }
    return *p;
}

double sfpu_instructions(const char* op) {
    // SFPU instructions per datum row group, estimated from the LLK functions the emulator models
    static const std::pair<const char*, double> table[] = {
        {"relu", 2},  {"exp", 12},     {"log", 14},  {"sqrt", 10}, {"rsqrt", 10}, {"recip", 10},
        {"sigmoid", 24}, {"tanh", 14}, {"gelu", 12}, {"add", 4},   {"sub", 4},    {"mul", 4},
        {"div", 14},  {"max", 4},      {"min", 4},   {"neg", 2},   {"abs", 2},
        {"trunc", 8}, {"floor", 12},   {"ceil", 12}, {"round", 10},
        {"sin", 20},  {"cos", 22},     {"tan", 30},  {"atan", 30}, {"sinh", 36}, {"cosh", 32},
        {"erf", 30},  {"power", 40},   {"pow", 44},  {"fmod", 40},  {"asin", 32}, {"acos", 34},
        {"asinh", 60}, {"acosh", 56},  {"atanh", 50}, {"log1p", 18}, {"rpow", 44}, {"atan2", 30},
        {"cumsum", 26}, {"reshuffle_rows", 40}, {"sfpu_reduce", 12},
    };
    for (const auto& [name, n] : table) {
        if (std::strcmp(op, name) == 0) return n;
    }
    return 4;
}

// ---- recording ----------------------------------------------------------------------------------
void record(Fiber& f, Op op) { f.tlog.push_back(op); }
uint32_t last_index(const Fiber& f) { return f.tlog_base + static_cast<uint32_t>(f.tlog.size()) - 1; }

void tile(Fiber& f, TileClass cls, double unpack, double math) {
    const int64_t x = (static_cast<int64_t>(std::llround(unpack * 16)) << 32) | std::llround(math * 16);
    if (!f.tlog.empty()) {
        Op& last = f.tlog.back();
        if (last.kind == Kind::Tile && last.cb == cls && last.x == x) {
            ++last.n;
            return;
        }
    }
    f.tlog.push_back(Op{Kind::Tile, static_cast<uint16_t>(cls), 1, x});
}

static void merge_engine(Fiber& f, Kind k, double cycles) {
    const int64_t x = std::llround(cycles * 16);
    if (!f.tlog.empty() && f.tlog.back().kind == k && f.tlog.back().x == x) {
        ++f.tlog.back().n;
        return;
    }
    f.tlog.push_back(Op{k, 0, 1, x});
}
void sfpu(Fiber& f, double cycles) { merge_engine(f, Kind::Sfpu, cycles); }
void pack(Fiber& f, double cycles) { merge_engine(f, Kind::Pack, cycles); }

void sem_applied(Device& d, uint64_t key, int fiber, uint32_t op_index) {
    d.cores[key >> 32].sem_log[static_cast<uint32_t>(key)].push_back(
        (static_cast<uint64_t>(fiber) << 32) | op_index);
}
uint32_t sem_updates(Device& d, uint64_t key) {
    const auto& log = d.cores[key >> 32].sem_log;
    auto it = log.find(static_cast<uint32_t>(key));
    return it == log.end() ? 0 : static_cast<uint32_t>(it->second.size());
}

// ---- results -----------------------------------------------------------------------------------
namespace {
struct RiscStats {
    double busy = 0, stalled = 0, end = 0;
};
struct CoreStats {
    RiscStats risc[5];  // reader, writer, unpack, math, pack
    double matmul = 0, sfpu = 0, fpu = 0;  // math engine cycles by kind
    bool active = false;
};
struct TraceEvent {
    int core, tid;
    double t0, t1;
    std::string name;
    bool stall;
};
struct Results {
    uint64_t launches = 0;
    double cycles = 0;  // device time, summed over launches
    double matmul = 0, sfpu = 0, fpu = 0;
    double dram_bytes = 0, noc_port_max = 0;
    double matmul_flops = 0;
    int active_compute_cores = 0;
    std::map<int, CoreStats> cores;
    std::vector<TraceEvent> trace;
    bool trace_truncated = false;
    std::string error;
};
Results g_res;
const char* kRiscNames[5] = {"NCRISC reader", "BRISC writer", "TRISC0 unpack", "TRISC1 math",
                             "TRISC2 pack"};
constexpr size_t kMaxTraceEvents = 2000000;

struct PushLog {
    std::vector<std::pair<uint64_t, double>> pushes, pops;  // (count after, time)
    std::vector<int> push_waiters, pop_waiters;
};

struct FiberSim {
    Fiber* f = nullptr;  // pc, and the indices below, count calls of the kernel's whole log
    int core = 0, base_tid = 0;
    bool compute = false;
    size_t pc = 0;
    double clk[3] = {0, 0, 0};  // data movement: [0]; compute: unpack, math, pack
    double busy[3] = {0, 0, 0}, stall[3] = {0, 0, 0};
    double reads_done = 0, writes_done = 0, tx_free = 0, rx_free = 0, port_busy = 0;
    double commit_t[2] = {0, 0}, release_t[2] = {0, 0};
    uint64_t ka = 0, kw = 0;
    bool done = false, queued = false;
    CoreStats* stats = nullptr;  // g_res.cores[core]
    std::string last_busy;
    // the calls of the kernel's log handed to the replay (take), not replayed yet: log[0] is call
    // log_base of the whole log; finished: the kernel had finished when they were taken
    std::vector<Op> log;
    size_t log_base = 0;
    bool finished = false;
};

uint64_t g_log_peak = 0;   // calls held in the logs at most
uint64_t g_log_total = 0;  // calls recorded

// The replay: a discrete-event simulation over the kernels' logs in modelled-time order. It runs
// between rounds as far as the logs reach: where it needs a call a kernel has not recorded yet
// (or the kernel's last call, which the next tile op may still merge into), it stops, and the next
// advance() goes on from that very point; so the replay is the same as one over the complete logs.
class Sim {
public:
    Sim(Device& d, std::vector<Fiber>& fibers, double t0) : d_(d), p_(profile()), t0_(t0) {
        trace_on_ = std::getenv("TT_MOCK_TRACE") != nullptr;
        fs_.resize(fibers.size());
        for (size_t i = 0; i < fibers.size(); ++i) {
            FiberSim& s = fs_[i];
            s.f = &fibers[i];
            s.core = fibers[i].core;
            s.compute = fibers[i].kind == KernelKind::Compute;
            s.base_tid = s.compute ? 2 : fibers[i].kind == KernelKind::Reader ? 0 : 1;
            s.stats = &g_res.cores[s.core];  // (std::map: the entry stays put)
            fibers[i].tlog_base = 0;
        }
        bank_free_.assign(p_.dram_banks, 0);
        // every clock is 0: the queue order does not depend on the kernels' first calls yet
        for (size_t i = 0; i < fs_.size(); ++i) enqueue(static_cast<int>(i));
    }

    // between rounds: the semaphore updates applied and the calls the kernels recorded so far (but
    // a last tile / SFPU / pack op of an unfinished kernel, which the next one may merge into) move
    // from the kernels' logs to the replay's
    void take() {
        take_sem_updates();
        uint64_t held = 0;
        for (FiberSim& s : fs_) {
            Fiber& f = *s.f;
            size_t n = f.tlog.size();
            if (!f.finished && n > 0) {
                const Kind k = f.tlog.back().kind;
                if (k == Kind::Tile || k == Kind::Sfpu || k == Kind::Pack) --n;
            }
            s.log.insert(s.log.end(), f.tlog.begin(), f.tlog.begin() + static_cast<std::ptrdiff_t>(n));
            f.tlog.erase(f.tlog.begin(), f.tlog.begin() + static_cast<std::ptrdiff_t>(n));
            f.tlog_base += static_cast<uint32_t>(n);
            s.finished = f.finished;
            held += s.log.size() + f.tlog.size();
        }
        g_log_peak = std::max(g_log_peak, held);
    }

    // replays as far as the calls taken reach, then drops the calls replayed. It reads and writes
    // the replay's own state only, so it may run while the kernels run their next round.
    void advance() {
        if (paused_ < 0 || resume(paused_)) {
            while (!pq_.empty()) {
                auto [t, i] = pq_.top();
                pq_.pop();
                fs_[i].queued = false;
                if (!resume(i)) break;
            }
        }
        for (FiberSim& s : fs_) {
            const size_t used = s.pc - s.log_base;
            if (used == s.log.size() && s.done) {
                std::vector<Op>().swap(s.log);
                s.log_base = s.pc;
            } else if (used >= 16 && 2 * used >= s.log.size()) {
                s.log.erase(s.log.begin(), s.log.begin() + static_cast<std::ptrdiff_t>(used));
                s.log_base = s.pc;
            }
        }
    }

    // once every kernel has finished: the logs are complete
    double finish() {
        take();
        advance();
        double end = 0;
        for (FiberSim& s : fs_) {
            if (!s.done && g_res.error.empty()) {
                g_res.error = "the timing replay could not finish " + describe_fiber(*s.f) +
                              " (a wait the functional run satisfied has no recorded release)";
            }
            for (double c : s.clk) end = std::max(end, c);
        }
        collect(end);
        return end;
    }

private:
    Device& d_;
    const CostProfile& p_;
    double t0_;
    bool trace_on_ = false;
    std::vector<FiberSim> fs_;
    std::unordered_map<uint64_t, PushLog> cbs_;  // (core << 8 | cb)
    std::map<uint64_t, std::vector<int>> sem_waiters_;
    // semaphore updates: (fiber, op) -> (key, place in the key's list of updates), for the updates
    // not replayed yet
    std::unordered_map<uint64_t, std::vector<std::pair<uint64_t, uint32_t>>> updates_of_;
    struct SemTimes {
        size_t seen = 0;                     // updates of the key taken into updates_of_
        std::vector<double> prefix_max;      // [k]: latest arrival of the key's updates 0..k
        std::map<uint32_t, double> pending;  // arrivals of updates beyond an unreplayed one
    };
    std::map<uint64_t, SemTimes> sem_;
    int paused_ = -1;  // the kernel whose step stopped at a call not recorded yet
    std::vector<double> bank_free_;
    double dram_bytes_ = 0;
    using QE = std::pair<double, int>;
    std::priority_queue<QE, std::vector<QE>, std::greater<QE>> pq_;

    static int engine_of(Kind k) {
        switch (k) {
            case Kind::Tile: case Kind::CbWait: case Kind::CbPop: return 0;
            case Kind::Sfpu: case Kind::RegsAcquire: case Kind::RegsCommit: return 1;
            case Kind::Pack: case Kind::CbReserve: case Kind::CbPush: case Kind::RegsWait:
            case Kind::RegsRelease: return 2;
            default: return 1;  // semaphores etc. on a compute kernel: the math thread
        }
    }
    int eng(const FiberSim& s, Kind k) const { return s.compute ? engine_of(k) : 0; }

    // calls of the kernel's log the replay may read: those taken (all once it finished; before, all
    // but a last tile / SFPU / pack op, which the next one may merge into)
    size_t avail(const FiberSim& s) const { return s.log_base + s.log.size(); }
    const Op& at(const FiberSim& s, size_t pc) const { return s.log[pc - s.log_base]; }

    void enqueue(int i) {
        FiberSim& s = fs_[i];
        if (s.done || s.queued) return;
        s.queued = true;
        // (a kernel is queued at a call it has recorded, or at the start, when every clock is 0)
        const double t = s.pc < avail(s) ? s.clk[eng(s, at(s, s.pc).kind)] : s.clk[0];
        pq_.push({t, i});
    }
    // steps kernel i; false when the replay stopped at a call not recorded yet
    bool resume(int i) {
        paused_ = -1;
        step(i);
        return paused_ < 0;
    }

    // the semaphore updates applied since the last advance (semaphore waits name them)
    void take_sem_updates() {
        for (Core& c : d_.cores) {
            for (auto& [off, list] : c.sem_log) {
                const uint64_t key = sem_key(c.index, off);
                SemTimes& st = sem_[key];
                for (; st.seen < list.size(); ++st.seen) {
                    updates_of_[list[st.seen]].push_back({key, static_cast<uint32_t>(st.seen)});
                }
            }
        }
    }
    void sem_arrival(uint64_t key, uint32_t k, double t) {
        SemTimes& st = sem_[key];
        if (k != st.prefix_max.size()) {
            st.pending[k] = t;
            return;
        }
        st.prefix_max.push_back(st.prefix_max.empty() ? t : std::max(st.prefix_max.back(), t));
        for (auto it = st.pending.begin(); it != st.pending.end() && it->first == st.prefix_max.size();
             it = st.pending.erase(it)) {
            st.prefix_max.push_back(std::max(st.prefix_max.back(), it->second));
        }
    }

    // what a span of the trace shows, formatted only when the trace is written
    struct Label {
        const char* text;
        const char* more = nullptr;  // appended
        int cb = -1;                 // " CB <cb>" appended
        std::string str() const {
            std::string r(text);
            if (more) r += more;
            if (cb >= 0) r += " CB " + std::to_string(cb);
            return r;
        }
    };
    static Label cb_label(const char* what, uint16_t cb) { return Label{what, nullptr, cb}; }

    void trace(const FiberSim& s, int e, double a, double b, const Label& label, bool stall) {
        if (!trace_on_ || b <= a) return;
        const std::string name = label.str();
        if (g_res.trace.size() >= kMaxTraceEvents) {
            g_res.trace_truncated = true;
            return;
        }
        const int tid = s.compute ? 2 + e : s.base_tid;
        if (!stall && !g_res.trace.empty()) {  // merge back-to-back busy spans of one name
            TraceEvent& last = g_res.trace.back();
            if (!last.stall && last.core == s.core && last.tid == tid && last.name == name &&
                std::abs(last.t1 - (a + t0_)) < 1e-6) {
                last.t1 = b + t0_;
                return;
            }
        }
        g_res.trace.push_back(TraceEvent{s.core, tid, a + t0_, b + t0_, name, stall});
    }
    void work(FiberSim& s, int e, double cycles, const Label& name) {
        trace(s, e, s.clk[e], s.clk[e] + cycles, name, false);
        s.clk[e] += cycles;
        s.busy[e] += cycles;
    }
    void wait_until(FiberSim& s, int e, double t, const Label& what) {
        if (t > s.clk[e]) {
            trace(s, e, s.clk[e], t, what, true);
            s.stall[e] += t - s.clk[e];
            s.clk[e] = t;
        }
    }
    PushLog& cb(const FiberSim& s, uint16_t id) { return cbs_[(static_cast<uint64_t>(s.core) << 8) | id]; }
    static double find(const std::vector<std::pair<uint64_t, double>>& log, int64_t count, bool* ok) {
        auto it = std::lower_bound(log.begin(), log.end(), count,
                                   [](const std::pair<uint64_t, double>& e, int64_t v) {
                                       return static_cast<int64_t>(e.first) < v;
                                   });
        *ok = it != log.end();
        return *ok ? it->second : 0;
    }
    void wake(std::vector<int>& waiters) {
        std::vector<int> w;
        w.swap(waiters);
        for (int i : w) enqueue(i);
    }
    // a NOC request is served in modelled-time order: go back to the queue when others are earlier
    bool must_yield(int i, double t) {
        if (pq_.empty() || t <= pq_.top().first) return false;
        enqueue(i);
        return true;
    }

    void step(int i) {
        FiberSim& s = fs_[i];
        for (;;) {
            if (s.pc >= avail(s)) {
                if (s.finished) break;
                paused_ = i;
                return;
            }
            const Op& op = at(s, s.pc);
            const int e = eng(s, op.kind);
            switch (op.kind) {
                case Kind::Tile: {
                    const double u = static_cast<double>(op.x >> 32) / 16, m = static_cast<double>(op.x & 0xffffffff) / 16;
                    const double k = op.n;
                    static const char* names[] = {"matmul", "fpu", "copy", "reduce"};
                    const char* name = names[op.cb & 3];
                    const double u0 = s.clk[0];
                    work(s, 0, k * u, Label{"unpack ", name});
                    const double m_end = std::max(s.clk[1] + k * m, u0 + (u >= m ? k * u + m : u + k * m));
                    wait_until(s, 1, m_end - k * m, Label{"wait unpack"});
                    work(s, 1, k * m, Label{name});
                    CoreStats& cs = *s.stats;
                    if (op.cb == kMatmul) cs.matmul += k * m; else cs.fpu += k * m;
                    break;
                }
                case Kind::Sfpu: {
                    const double c = static_cast<double>(op.x) / 16 * op.n;
                    work(s, 1, c, Label{"sfpu"});
                    s.stats->sfpu += c;
                    break;
                }
                case Kind::Pack: work(s, 2, static_cast<double>(op.x) / 16 * op.n, Label{"pack"}); break;
                case Kind::CbWait: {
                    bool ok = false;
                    PushLog& l = cb(s, op.cb);
                    const double t = find(l.pushes, op.x, &ok);
                    if (!ok) { l.push_waiters.push_back(i); return; }
                    wait_until(s, e, t, cb_label("cb_wait_front", op.cb));
                    work(s, e, p_.cb_call, cb_label("cb_wait_front", op.cb));
                    break;
                }
                case Kind::CbReserve: {
                    if (op.x > 0) {
                        bool ok = false;
                        PushLog& l = cb(s, op.cb);
                        const double t = find(l.pops, op.x, &ok);
                        if (!ok) { l.pop_waiters.push_back(i); return; }
                        wait_until(s, e, t, cb_label("cb_reserve_back", op.cb));
                    }
                    work(s, e, p_.cb_call, cb_label("cb_reserve_back", op.cb));
                    break;
                }
                case Kind::CbPush: case Kind::CbPop: {
                    work(s, e, p_.cb_call, cb_label(op.kind == Kind::CbPush ? "cb_push_back" : "cb_pop_front", op.cb));
                    PushLog& l = cb(s, op.cb);
                    if (op.kind == Kind::CbPush) {
                        l.pushes.push_back({static_cast<uint64_t>(op.x), s.clk[e]});
                        wake(l.push_waiters);
                    } else {
                        l.pops.push_back({static_cast<uint64_t>(op.x), s.clk[e]});
                        wake(l.pop_waiters);
                    }
                    break;
                }
                case Kind::DramRead: case Kind::L1Read: {
                    if (must_yield(i, s.clk[e])) return;
                    work(s, e, p_.noc_issue, Label{op.kind == Kind::DramRead ? "noc read DRAM" : "noc read L1"});
                    const double bytes = op.n, xfer = bytes / p_.noc_bytes_per_cycle;
                    double ready;
                    if (op.kind == Kind::DramRead) {
                        const uint32_t b = op.cb % p_.dram_banks;
                        const double start = std::max(s.clk[e] + p_.dram_latency / 2, bank_free_[b]);
                        bank_free_[b] = start + bytes / p_.dram_bank_bytes_per_cycle;
                        ready = bank_free_[b] + p_.dram_latency / 2;
                        dram_bytes_ += bytes;
                    } else {
                        ready = s.clk[e] + p_.noc_latency + xfer;
                    }
                    const double arrive = std::max(ready, s.rx_free + xfer);
                    s.rx_free = arrive;
                    s.port_busy += xfer;
                    s.reads_done = std::max(s.reads_done, arrive);
                    break;
                }
                case Kind::DramWrite: case Kind::L1Write: case Kind::Mcast: {
                    if (must_yield(i, s.clk[e])) return;
                    work(s, e, p_.noc_issue, Label{op.kind == Kind::Mcast ? "noc multicast" : op.kind == Kind::DramWrite ? "noc write DRAM" : "noc write L1"});
                    const double bytes = op.n;
                    double occ = bytes / p_.noc_bytes_per_cycle;
                    if (op.kind == Kind::Mcast) occ *= 1 + op.cb / p_.mcast_occupancy_dests;
                    const double start = std::max(s.clk[e], s.tx_free);
                    s.tx_free = start + occ;
                    s.port_busy += occ;
                    double ack;
                    if (op.kind == Kind::DramWrite) {
                        const uint32_t b = op.cb % p_.dram_banks;
                        const double at = std::max(s.tx_free + p_.dram_latency / 2, bank_free_[b]);
                        bank_free_[b] = at + bytes / p_.dram_bank_bytes_per_cycle;
                        ack = bank_free_[b] + p_.dram_latency / 2;
                        dram_bytes_ += bytes;
                    } else if (op.kind == Kind::Mcast) {
                        ack = s.tx_free + p_.noc_latency + p_.mcast_latency + p_.mcast_per_dest * op.cb;
                    } else {
                        ack = s.tx_free + p_.noc_latency;
                    }
                    s.writes_done = std::max(s.writes_done, ack);
                    break;
                }
                case Kind::ReadBarrier:
                    wait_until(s, e, s.reads_done, Label{"noc_async_read_barrier"});
                    break;
                case Kind::WriteBarrier:
                    wait_until(s, e, s.writes_done, Label{"noc_async_write_barrier"});
                    break;
                case Kind::SemUpdate: {
                    double t;
                    if (op.cb) {
                        // a posted write after this kernel's earlier writes: it lands after them
                        work(s, e, p_.noc_issue, Label{"semaphore"});
                        t = std::max(s.clk[e] + p_.noc_latency, s.writes_done);
                    } else {
                        work(s, e, p_.cb_call, Label{"semaphore"});
                        t = s.clk[e];
                    }
                    auto it = updates_of_.find((static_cast<uint64_t>(i) << 32) | s.pc);
                    if (it != updates_of_.end()) {
                        for (const auto& [key, k] : it->second) {
                            sem_arrival(key, k, t);
                            auto w = sem_waiters_.find(key);
                            if (w != sem_waiters_.end()) wake(w->second);
                        }
                        updates_of_.erase(it);
                    }
                    break;
                }
                case Kind::SemWait: {
                    // released by the key's first n updates: once all of them are replayed, at the
                    // latest arrival
                    const uint64_t key = static_cast<uint64_t>(op.x);
                    double t = 0;
                    if (op.n > 0) {
                        const SemTimes& st = sem_[key];
                        if (st.prefix_max.size() < op.n) { sem_waiters_[key].push_back(i); return; }
                        t = std::max(0.0, st.prefix_max[op.n - 1]);
                    }
                    wait_until(s, e, t, Label{"noc_semaphore_wait"});
                    work(s, e, p_.cb_call, Label{"semaphore"});
                    break;
                }
                case Kind::RegsAcquire: {
                    const int half = s.f->compute && s.f->compute->full_sync ? 0 : static_cast<int>(s.ka & 1);
                    wait_until(s, 1, s.release_t[half], Label{"tile_regs_acquire (DST held by pack)"});
                    work(s, 1, p_.cb_call, Label{"dst"});
                    break;
                }
                case Kind::RegsCommit: {
                    const int half = s.f->compute && s.f->compute->full_sync ? 0 : static_cast<int>(s.ka & 1);
                    work(s, 1, p_.cb_call, Label{"dst"});
                    s.commit_t[half] = s.clk[1];
                    ++s.ka;
                    break;
                }
                case Kind::RegsWait: {
                    const int half = s.f->compute && s.f->compute->full_sync ? 0 : static_cast<int>(s.kw & 1);
                    wait_until(s, 2, s.commit_t[half], Label{"tile_regs_wait (math)"});
                    work(s, 2, p_.cb_call, Label{"dst"});
                    break;
                }
                case Kind::RegsRelease: {
                    const int half = s.f->compute && s.f->compute->full_sync ? 0 : static_cast<int>(s.kw & 1);
                    work(s, 2, p_.cb_call, Label{"dst"});
                    s.release_t[half] = s.clk[2];
                    ++s.kw;
                    break;
                }
            }
            ++s.pc;
        }
        s.done = true;
        // a finished kernel is done when its last transfers have landed
        const double last = std::max(s.reads_done, s.writes_done);
        if (last > s.clk[0] && !s.compute) wait_until(s, 0, last, Label{"transfers in flight"});
    }

    void collect(double end) {
        for (FiberSim& s : fs_) {
            CoreStats& cs = g_res.cores[s.core];
            cs.active = true;
            for (int e = 0; e < (s.compute ? 3 : 1); ++e) {
                RiscStats& r = cs.risc[s.compute ? 2 + e : s.base_tid];
                r.busy += s.busy[e];
                r.stalled += s.stall[e];
                r.end = std::max(r.end, t0_ + s.clk[e]);
            }
            g_res.noc_port_max = std::max(g_res.noc_port_max, end > 0 ? s.port_busy / end : 0.0);
        }
        g_res.dram_bytes += dram_bytes_;
        (void)d_;
    }
};
}  // namespace

namespace {
std::unique_ptr<Sim> g_sim;
}

void replay_begin(Device& d, std::vector<Fiber>& fibers) { g_sim = std::make_unique<Sim>(d, fibers, g_res.cycles); }

// TT_MOCK_REPLAY_AT_END=1: replay once, after the run, over the complete logs (for tests: the
// results must be the same)
static bool replay_at_end() {
    static const bool at_end = [] {
        const char* v = std::getenv("TT_MOCK_REPLAY_AT_END");
        return v != nullptr && *v != '\0' && *v != '0';
    }();
    return at_end;
}
void replay_take() {
    if (g_sim && !replay_at_end()) g_sim->take();
}
void replay_advance() {
    if (g_sim && !replay_at_end()) g_sim->advance();
}

void replay_finish(Device& d, std::vector<Fiber>& fibers) {
    const double end = g_sim->finish();
    g_sim.reset();
    for (const Fiber& f : fibers) g_log_total += f.tlog_base + f.tlog.size();
    g_res.cycles += end;
    ++g_res.launches;
    for (Fiber& f : fibers) {
        std::vector<Op>().swap(f.tlog);
        f.tlog_base = 0;
    }
    for (Core& c : d.cores) c.sem_log.clear();
}

uint64_t log_peak_ops() { return g_log_peak; }
uint64_t log_total_ops() { return g_log_total; }

static std::string num(double v) {
    std::ostringstream os;
    os.precision(10);
    os << v;
    return os.str();
}

static void write_trace(const CostProfile& p) {
    const char* path = std::getenv("TT_MOCK_TRACE");
    if (path == nullptr || *path == '\0') return;
    std::ofstream os(path);
    const double us = 1.0 / (p.clock_ghz * 1000.0);  // cycles -> microseconds
    const Device& d = device();
    os << "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"device\": \"" << p.name
       << "\", \"truncated\": " << (g_res.trace_truncated ? "true" : "false") << "}, \"traceEvents\": [";
    bool first = true;
    for (const auto& [core, cs] : g_res.cores) {
        const Core& c = d.cores[core];
        os << (first ? "" : ",") << "\n{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": " << core
           << ", \"args\": {\"name\": \"core (" << c.x << "," << c.y << ")\"}}";
        first = false;
        for (int t = 0; t < 5; ++t) {
            os << ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " << core << ", \"tid\": " << t
               << ", \"args\": {\"name\": \"" << kRiscNames[t] << "\"}}";
        }
    }
    for (const TraceEvent& e : g_res.trace) {
        os << ",\n{\"ph\": \"X\", \"pid\": " << e.core << ", \"tid\": " << e.tid << ", \"ts\": "
           << num(e.t0 * us) << ", \"dur\": " << num((e.t1 - e.t0) * us) << ", \"name\": \""
           << (e.stall ? "stall: " : "") << e.name << "\", \"cat\": \"" << (e.stall ? "stall" : "busy")
           << "\"}";
    }
    os << "\n]}\n";
}

std::string results_json(const Device& d) {
    const CostProfile& p = profile();
    write_trace(p);
    const double T = g_res.cycles;
    const double ns = T / p.clock_ghz;
    double matmul = 0, sfpu = 0;
    int compute_cores = 0;
    for (const auto& [core, cs] : g_res.cores) {
        matmul += cs.matmul;
        sfpu += cs.sfpu;
        if (cs.risc[3].busy > 0) ++compute_cores;
    }
    const double grid = p.grid_cores;
    const double matrix_util = T > 0 ? matmul / (grid * T) : 0;
    const double dram_gbps = ns > 0 ? g_res.dram_bytes / ns : 0;
    const double dram_util = dram_gbps / p.dram_spec_gbps;
    // the bound: the resource the busiest of the active cores spend most of the time in
    const double achievable = p.dram_bank_bytes_per_cycle * p.dram_banks * p.clock_ghz;
    std::vector<std::pair<double, const char*>> use = {
        {compute_cores && T > 0 ? matmul / (compute_cores * T) : 0, "matrix engine"},
        {compute_cores && T > 0 ? sfpu / (compute_cores * T) : 0, "SFPU"},
        {achievable > 0 ? dram_gbps / achievable : 0, "DRAM"},
        {g_res.noc_port_max, "NOC"}};
    auto best = std::max_element(use.begin(), use.end());
    const char* bound = best->first >= 0.5 ? best->second : "latency";
    std::ostringstream os;
    os << "{\"profile\": \"" << p.name << "\", \"clock_ghz\": " << num(p.clock_ghz)
       << ", \"launches\": " << g_res.launches << ", \"cycles\": " << num(T)
       << ", \"device_time_ns\": " << num(ns) << ", \"bound\": \"" << (T > 0 ? bound : "none")
       << "\", \"matrix_engine_utilization\": " << num(matrix_util)
       << ", \"matrix_engine_cycles\": " << num(matmul) << ", \"sfpu_cycles\": " << num(sfpu)
       << ", \"dram_bytes\": " << num(g_res.dram_bytes) << ", \"dram_gbps\": " << num(dram_gbps)
       << ", \"dram_utilization\": " << num(dram_util) << ", \"dram_spec_gbps\": " << num(p.dram_spec_gbps)
       << ", \"noc_port_utilization\": " << num(g_res.noc_port_max)
       << ", \"peak_tflops_lofi\": " << num(grid * 2.0 * 32 * 32 * 32 / p.matmul_per_phase * p.clock_ghz / 1000.0)
       << ", \"grid_cores\": " << p.grid_cores;
    if (!g_res.error.empty()) os << ", \"error\": \"" << g_res.error << "\"";
    os << ", \"cores\": [";
    bool first = true;
    for (const auto& [core, cs] : g_res.cores) {
        const Core& c = d.cores[core];
        os << (first ? "" : ", ") << "{\"core\": [" << c.x << ", " << c.y << "], \"matmul_cycles\": "
           << num(cs.matmul) << ", \"risc\": {";
        first = false;
        bool f2 = true;
        for (int t = 0; t < 5; ++t) {
            const RiscStats& r = cs.risc[t];
            if (r.busy == 0 && r.stalled == 0 && r.end == 0) continue;
            os << (f2 ? "" : ", ") << "\"" << kRiscNames[t] << "\": {\"busy\": " << num(r.busy)
               << ", \"stalled\": " << num(r.stalled) << ", \"end\": " << num(r.end) << "}";
            f2 = false;
        }
        os << "}}";
    }
    os << "]}";
    return os.str();
}

}  // namespace ttmock::timing
