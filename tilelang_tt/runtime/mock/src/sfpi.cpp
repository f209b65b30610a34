// tilelang-tt mock TT-Metalium: the SFPI vector interface of compute kernels (sfpi.h) and the LLK
// SFPU wrappers around it: caller checks, LaneEnabled and the condition-code stack, DST addressing
// of dst_reg, the programmable constants. The lane arithmetic is in sfpu.cpp.
//
// DST addressing follows the Tensix ISA documentation (WormholeB0 SFPLOAD / SFPSTORE): an address
// selects the aligned group of four rows (addr & ~3) and the even or odd columns (addr & 2); lane l
// is row + l / 8, column (l % 8) * 2 (+ 1 for odd). dst_reg[i] is address 2 * i from the Dst row
// counter, dst_reg++ adds 2, and the LLK wrappers set the counter to tile * 64 and step it 16 rows
// a face (llk_math_eltwise_sfpu_common.h, TT-Metalium 0.81.1). So within a face, dst_reg[0..7]
// cover its 16 rows and dst_reg[32 * t + i] is the same place of tile t.
#include <cstring>
#include <string>

#include "emulator.hpp"
#include "timing.hpp"
#include "ttmock/sfpi_rt.h"

using namespace ttmock;

namespace {

constexpr int kRowsPerTile = 64;

[[noreturn]] void sfpi_fail(const std::string& call, const std::string& message) {
    current().last_call = call;
    fail(call + ": " + message);
}

// The SFPU is driven by the compute kernel's MATH thread
ComputeState& sfpu_engine(const char* call) {
    Fiber& f = current();
    if (f.kind != KernelKind::Compute || f.compute == nullptr) {
        sfpi_fail(call, std::string("SFPI is the vector engine of a compute kernel's MATH thread; a ") +
                            kind_name(f.kind) + " kernel cannot use it");
    }
    return *f.compute;
}

// The call an error names, formatted only when there is an error: "write of dst_reg[3]" or a name
struct CallName {
    const char* what;
    int idx = -1;  // >= 0: a dst_reg access
    std::string str() const { return idx < 0 ? std::string(what) : std::string(what) + "dst_reg[" + std::to_string(idx) + "]"; }
};

// DST access: only while the MATH thread holds DST
ComputeState& dst_engine(const CallName& name) {
    Fiber& f = current();
    if (f.kind != KernelKind::Compute || f.compute == nullptr) sfpu_engine(name.str().c_str());
    ComputeState& e = *f.compute;
    auto call = [&] { return name.str(); };
    if (!e.started) {
        sfpi_fail(call(), "the compute engine is not configured; call compute_kernel_hw_startup "
                        "(or init_sfpu) first");
    }
    const bool held = e.dst_state == DstState::Acquired || (e.dst_state == DstState::Legacy && !e.legacy_packed);
    if (!held) {
        sfpi_fail(call(), "SFPU access to DST outside tile_regs_acquire()..tile_regs_commit() (the MATH "
                        "thread holds DST only there)");
    }
    return e;
}

// The DST word of `lane` at SFPLOAD/SFPSTORE address `addr`, checked against the mode's capacity
uint32_t* word(ComputeState& e, int addr, int lane) {
    const int row = (addr & ~3) + lane / 8;
    const int col = (lane & 7) * 2 + ((addr & 2) ? 1 : 0);
    return &e.dst[row / kRowsPerTile][(row % kRowsPerTile) * 16 + col];
}

int address(ComputeState& e, int idx, const CallName& name) {
    const SfpiState& s = e.sfpi;
    const long addr = s.base_row + 2L * (static_cast<long>(idx) + s.incr);
    const long rows = static_cast<long>(e.capacity()) * kRowsPerTile;
    if (addr < 0 || (addr & ~3L) + 3 >= rows) {
        sfpi_fail(name.str(), "addresses DST row " + std::to_string(addr & ~3L) + " (tile " +
                            std::to_string(addr >= 0 ? addr / kRowsPerTile : -1) + ", from the Dst counter at row " +
                            std::to_string(s.base_row) + " + 2 x (" + std::to_string(idx) +
                            (s.incr ? " + " + std::to_string(s.incr) + " dst_reg++" : std::string()) +
                            ")) but one acquire holds " + std::to_string(e.capacity()) + " tiles (rows 0.." +
                            std::to_string(rows - 1) + ") in this mode (" +
                            (e.fp32_dest_acc ? "fp32_dest_acc_en" : "16-bit") + ", " +
                            (e.full_sync ? "full-sync" : "half-sync") + ")");
    }
    return static_cast<int>(addr);
}

}  // namespace

namespace ttmock::sfpi_rt {

uint32_t enabled() { return sfpu_engine("SFPI").sfpi.lanes; }

void assign(uint32_t* dst, const uint32_t* src) {
    const uint32_t m = sfpu_engine("SFPI assignment").sfpi.lanes;
    if (m == 0xFFFFFFFFu) {
        std::memcpy(dst, src, kLanes * 4);
        return;
    }
    for (int i = 0; i < kLanes; ++i) {
        if ((m >> i) & 1) dst[i] = src[i];
    }
}

void cc_if(uint32_t cond) {
    SfpiState& s = sfpu_engine("v_if").sfpi;
    if (s.depth >= SfpiState::kMaxDepth) {
        sfpi_fail("v_if", "more than " + std::to_string(SfpiState::kMaxDepth) +
                              " nested v_if levels (the SFPU's condition-code stack)");
    }
    s.parent[s.depth] = s.lanes;
    s.lanes &= cond;
    s.taken[s.depth] = s.lanes;
    ++s.depth;
}

void cc_elseif(uint32_t cond) {
    SfpiState& s = sfpu_engine("v_elseif").sfpi;
    if (s.depth == 0) sfpi_fail("v_elseif", "no open v_if");
    const int d = s.depth - 1;
    s.lanes = s.parent[d] & ~s.taken[d] & cond;
    s.taken[d] |= s.lanes;
}

void cc_else() {
    SfpiState& s = sfpu_engine("v_else").sfpi;
    if (s.depth == 0) sfpi_fail("v_else", "no open v_if");
    const int d = s.depth - 1;
    s.lanes = s.parent[d] & ~s.taken[d];
    s.taken[d] = s.parent[d];
}

void cc_end() {
    SfpiState& s = sfpu_engine("v_endif").sfpi;
    if (s.depth == 0) sfpi_fail("v_endif", "no open v_if");
    --s.depth;
    s.lanes = s.parent[s.depth];
}

void cc_and(uint32_t cond) {
    SfpiState& s = sfpu_engine("v_and").sfpi;
    if (s.depth == 0) sfpi_fail("v_and", "v_and outside v_if");
    s.lanes &= cond;
}

void load(int idx, uint32_t* bits) {
    const CallName call{"read of ", idx};
    ComputeState& e = dst_engine(call);
    const int addr = address(e, idx, call);
    // SFPLOAD (MOD0_FMT_SRCB): FP32 with a 32-bit DST, BF16 (the high half) with a 16-bit one
    const uint32_t keep = e.fp32_dest_acc ? 0xFFFFFFFFu : 0xFFFF0000u;
    for (int l = 0; l < kLanes; ++l) bits[l] = *word(e, addr, l) & keep;
}

void store(int idx, const uint32_t* bits, bool is_float) {
    const CallName call{"write of ", idx};
    ComputeState& e = dst_engine(call);
    const int addr = address(e, idx, call);
    const uint32_t keep = e.fp32_dest_acc ? 0xFFFFFFFFu : 0xFFFF0000u;
    const uint32_t m = e.sfpi.lanes;
    for (int l = 0; l < kLanes; ++l) {
        if (!((m >> l) & 1)) continue;
        uint32_t u = bits[l];
        // SFPSTORE: denormals flushed (sign kept); a 16-bit DST keeps the BF16 half (truncation)
        if (is_float && !(u & 0x7F800000u)) u &= 0x80000000u;
        *word(e, addr, l) = u & keep;
    }
    const int row = addr & ~3;
    e.dst_written[row / kRowsPerTile] = true;
}

void dst_incr(int n) {
    ComputeState& e = sfpu_engine("dst_reg++");
    e.sfpi.incr += n;
}

uint32_t prgm_const(int k) { return sfpu_engine("vConstPrgm").sfpi.prgm[k]; }
void set_prgm_const(int k, uint32_t bits) { sfpu_engine("vConstPrgm =").sfpi.prgm[k] = bits; }

void sfpu_start(const char* call, uint32_t tile, const uint32_t* check, int ncheck) {
    ComputeState& e = dst_engine(CallName{call});
    for (int i = 0; i < ncheck; ++i) {
        if (check[i] >= e.capacity()) {
            sfpi_fail(call, "DST index " + std::to_string(check[i]) + " but one acquire holds " +
                                std::to_string(e.capacity()) + " tiles in this mode (" +
                                (e.fp32_dest_acc ? "fp32_dest_acc_en" : "16-bit") + ", " +
                                (e.full_sync ? "full-sync" : "half-sync") + ")");
        }
    }
    if (e.sfpi.wrapper != nullptr) {
        sfpi_fail(call, std::string("called inside ") + e.sfpi.wrapper);
    }
    e.sfpi.wrapper = call;
    e.cumsum_live = false;  // the kernel's own SFPI code may use any SFPU register
    e.sfpi.base_row = static_cast<int>(tile) * kRowsPerTile;
    e.sfpi.incr = 0;
    if (e.sfpi.counter == nullptr) e.sfpi.counter = &current_core().counters.tile_ops["sfpi"];
    ++*e.sfpi.counter;
    timing::sfpu(current(), timing::profile().sfpu_instr * 4);  // an estimate: a few instructions per datum
}

void face_step(int faces) {
    ComputeState& e = sfpu_engine("_llk_math_eltwise_sfpu_inc_dst_face_addr_");
    e.sfpi.base_row += 16 * faces;
    e.sfpi.incr = 0;
}

void sfpu_done() {
    ComputeState& e = sfpu_engine("_llk_math_eltwise_sfpu_done_");
    if (e.sfpi.depth != 0) {
        sfpi_fail(e.sfpi.wrapper ? e.sfpi.wrapper : "SFPI", "returned with an open v_if");
    }
    e.sfpi.wrapper = nullptr;
    e.sfpi.base_row = 0;
    e.sfpi.incr = 0;
    e.sfpi.lanes = 0xFFFFFFFFu;
}

}  // namespace ttmock::sfpi_rt
