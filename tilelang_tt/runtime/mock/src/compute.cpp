// tilelang-tt mock TT-Metalium: the compute engine (unpack -> FPU/SFPU on DST -> pack).
//
// This file checks the protocol of each compute API call and hands the arithmetic to fpu.cpp /
// sfpu.cpp. A call's description is formatted only when an error message needs it, and modes are
// compared as integers: a tile op costs no string work.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "emulator.hpp"
#include "fpu.hpp"
#include "sfpu.hpp"
#include "ttmock/compute_api.h"
#include "ttmock/llk_defs.h"
#include "ttmock/numerics.hpp"

using namespace ttmock;

namespace {

// A compute API call: name, argument list, formatted on demand ("matmul_tiles(0, 1, 0, 0, 0)")
struct Call {
    const char* name;
    const char* suffix = "";
    int n = 0;
    uint32_t a[5] = {};
    std::string str() const {
        std::string s = std::string(name) + suffix + "(";
        for (int i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(a[i]);
        return s + ")";
    }
};
Call call(const char* name, std::initializer_list<uint32_t> args, const char* suffix = "") {
    Call c{name, suffix};
    for (uint32_t v : args) c.a[c.n++] = v;
    return c;
}

[[noreturn]] void fail_at(const Call& c, const std::string& message) {
    current().last_call = c.str();
    fail(c.str() + message);
}

// What the math engine is configured for (fpu_init), compared per tile as an integer
enum FpuOp : int {
    kNone, kMatmul, kAdd, kSub, kMul, kAddBcast, kSubBcast, kMulBcast, kCopy, kCopyTranspose,
    kTranspose, kReduce, kUnaryBcast, kOtherOp,
};
FpuOp fpu_op_of(const std::string& mode) {
    static const struct { const char* name; FpuOp op; } kModes[] = {
        {"matmul", kMatmul}, {"add", kAdd}, {"sub", kSub}, {"mul", kMul},
        {"add_bcast", kAddBcast}, {"sub_bcast", kSubBcast}, {"mul_bcast", kMulBcast},
        {"copy", kCopy}, {"copy_transpose", kCopyTranspose}, {"transpose", kTranspose},
        {"reduce", kReduce}, {"unary_bcast", kUnaryBcast}};
    for (const auto& m : kModes) {
        if (mode == m.name) return m.op;
    }
    return kOtherOp;
}

// Per-core tile op counters, found once per kind and then bumped through a pointer
enum Counter : int {
    kCntMatmul, kCntAdd, kCntSub, kCntMul, kCntBcastAdd, kCntBcastSub, kCntBcastMul, kCntCopy,
    kCntTranspose, kCntReduce, kCntPack, kCntWhere, kCntUnaryBcast, kCntCumsum, kCntReshuffle, kCntSfpuReduce, kCntSfpu = 16, kCntSfpuBinary = 64,  // room for every sfpu::Unary id
    kCntEnd = 96,  // ComputeState::op_counter's size
};
void count(ComputeState& e, int slot, const char* name, const char* prefix = "",
           const char* suffix = "") {
    uint64_t*& c = e.op_counter[slot];
    uint64_t*& t = e.op_ticks[slot];
    Core& core = current_core();
    if (c == nullptr) {
        const std::string key = std::string(prefix) + name + suffix;
        c = &core.counters.tile_ops[key];
        t = &core.tile_op_ticks[key];
    }
    ++*c;
    *t += core.tile_math_ticks - core.tile_math_mark;  // this op's timed math
    core.tile_math_mark = core.tile_math_ticks;
}

// Names the kernel passes (string literals of the API headers) mapped to ids once per call site:
// a small per-engine cache keyed by the literal's address, so a tile op compares no strings.
template <typename Parse>
int cached_id(ComputeState& e, int kind, const char* name, Parse parse) {
    auto& slot = e.name_cache[kind][(reinterpret_cast<uintptr_t>(name) >> 2) & 7];
    if (slot.first != name) slot = {name, parse(name)};
    return slot.second;
}

ComputeState& engine(const Call& what) {
    Fiber& f = current();
    if (f.kind != KernelKind::Compute || f.compute == nullptr) {
        fail_at(what, std::string(": compute API called from a ") + kind_name(f.kind) + " kernel");
    }
    return *f.compute;
}

ComputeState& started_engine(const Call& what) {
    ComputeState& e = engine(what);
    if (!e.started) {
        fail_at(what, ": the compute engine is not configured; call compute_kernel_hw_startup "
                      "(once, first) before any other compute call");
    }
    return e;
}

const CBConfig& cb_cfg(uint32_t cb, const Call& what) {
    Core& c = current_core();
    if (cb >= static_cast<uint32_t>(kMaxCBs) || !c.cb_cfg[cb].used) {
        fail_at(what, ": CB " + std::to_string(cb) + " was not created on this core");
    }
    return c.cb_cfg[cb];
}

tt::DataFormat fmt(uint32_t cb, const Call& what) {
    const tt::DataFormat f = cb_cfg(cb, what).format;
    if (f != tt::DataFormat::Float16_b && f != tt::DataFormat::Float16 && f != tt::DataFormat::Float32) {
        fail_at(what, ": CB " + std::to_string(cb) + " has data format " + format_name(f) +
                      ", which the emulator's compute engine does not model (Float16_b, Float16, Float32)");
    }
    // the unpacker and packer step through a CB by the tile size of its format
    const uint32_t page = cb_cfg(cb, what).page_bytes;
    if (page != tile_bytes(f)) {
        fail_at(what, ": CB " + std::to_string(cb) + " has " + std::to_string(page) +
                "-byte pages but its data format " + format_name(f) + " has " +
                std::to_string(tile_bytes(f)) + "-byte tiles; the unpacker and packer address a "
                "CB in tiles of its format (set_page_size must give the tile size)");
    }
    return f;
}

// A CB configured UnpackToDestFp32 is unpacked straight into DST: the matrix engine, which
// reads the srcA/srcB registers, cannot take it as an operand.
void check_matrix_operand(const ComputeState& e, bool srca, uint32_t cb, const Call& what) {
    if (cb < e.unpack_to_dest.size() && e.unpack_to_dest[cb] == tt::tt_metal::UnpackToDestMode::UnpackToDestFp32) {
        fail_at(what, ": CB " + std::to_string(cb) + " is configured UnpackToDestFp32, so its tiles "
                "bypass the " + (srca ? "srcA" : "srcB") + " register the matrix engine reads; "
                "only copy_tile may read it");
    }
}

void check_src(const ComputeState& e, bool srca, uint32_t cb, const Call& what) {
    const tt::DataFormat want = fmt(cb, what);
    const tt::DataFormat have = srca ? e.srca : e.srcb;
    if (want != have) {
        fail_at(what, std::string(": unpacker ") + (srca ? "srcA" : "srcB") + " is configured for " +
                format_name(have) + " but CB " + std::to_string(cb) + " holds " + format_name(want) +
                "; call reconfig_data_format_" + (srca ? "srca(" : "srcb(") + std::to_string(cb) + ")");
    }
}

void check_mode(const ComputeState& e, FpuOp mode, const char* init, const Call& what) {
    if (e.fpu_op != mode) {
        fail_at(what, ": the math engine is configured for '" +
                (e.fpu_mode.empty() ? std::string("nothing") : e.fpu_mode) + "'; call " + init +
                " first");
    }
}

void check_dst(const ComputeState& e, uint32_t idst, const Call& what, bool packing) {
    if (e.dst_state == DstState::Legacy) {
        // acquire_dst(): PACK waits for MATH's section to end (release_dst), so math after a pack
        // of the same section would race with the packer on hardware
        if (packing) e.legacy_packed = true;
        else if (e.legacy_packed) fail_at(what, ": math on DST after pack_tile in the same acquire_dst() section");
    } else if (packing) {
        if (e.dst_state != DstState::Waited) {
            fail_at(what, std::string(": pack_tile outside tile_regs_wait()..tile_regs_release() (DST is ") +
                    (e.dst_state == DstState::Acquired ? "acquired by math, not committed" :
                     e.dst_state == DstState::Committed ? "committed but tile_regs_wait was not called" :
                                                          "not acquired") + ")");
        }
    } else if (e.dst_state != DstState::Acquired) {
        fail_at(what, ": math on DST outside tile_regs_acquire()..tile_regs_commit()");
    }
    if (idst >= e.capacity()) {
        fail_at(what, ": DST index " + std::to_string(idst) + " but one acquire holds " +
                std::to_string(e.capacity()) + " tiles in this mode (" +
                (e.fp32_dest_acc ? "fp32_dest_acc_en" : "16-bit") + ", " +
                (e.full_sync ? "full-sync" : "half-sync") + ")");
    }
}

// The L1 page of front tile `itile` of `cb` (after checking it was waited for)
const uint8_t* front_page(uint32_t cb, uint32_t itile, const Call& what) {
    const CBConfig& cfg = cb_cfg(cb, what);
    const CBState& s = current_core().cb[cb];
    if (itile >= s.waited && !(itile < cfg.pages() && cb_unguarded(current_core(), static_cast<int>(cb), current(), what.str()))) {
        fail_at(what, ": reads tile " + std::to_string(itile) + " of CB " + std::to_string(cb) +
                " but cb_wait_front guaranteed " + std::to_string(s.waited) + " page(s)");
    }
    const uint32_t page = (s.rd_page + itile) % cfg.pages();
    return current_core().l1 + cfg.offset + page * cfg.page_bytes;
}

// The emulated 16-bit DST holds Float16_b values only: Float16 data needs fp32_dest_acc_en.
void check_fp16_dst(const ComputeState& e, uint32_t cb, const Call& what) {
    if (!e.fp32_dest_acc) {
        fail_at(what, ": CB " + std::to_string(cb) + " holds Float16 data, which the emulator models "
                "with fp32_dest_acc_en only (its 16-bit DST holds Float16_b); set fp32_dest_acc_en");
    }
}

// Unpack front tile `itile` of `cb` into a source register (`src_reg`: BF16 exactly, fp32 as TF32
// with a 32-bit DST or BF16 with a 16-bit one, both truncated) or straight into DST (fp32 exact).
void unpack(const ComputeState& e, uint32_t cb, uint32_t itile, bool src_reg, uint32_t* out,
            const Call& what) {
    const uint8_t* p = front_page(cb, itile, what);
    const tt::DataFormat f = cb_cfg(cb, what).format;
    if (f == tt::DataFormat::Float16) check_fp16_dst(e, cb, what);
    TileMathTimer tile_math_timer(current_core());
    if (f == tt::DataFormat::Float16_b) {
        fpu::unpack_bf16(reinterpret_cast<const uint16_t*>(p), out);
    } else if (f == tt::DataFormat::Float16) {
        fpu::unpack_fp16(reinterpret_cast<const uint16_t*>(p), out);
    } else if (src_reg) {
        fpu::unpack_fp32(reinterpret_cast<const uint32_t*>(p), out, e.fp32_dest_acc);
    } else {
        fpu::unpack_fp32_to_dst(reinterpret_cast<const uint32_t*>(p), out);
    }
}

// Checks the unpacker formats and the DST index, then unpacks the srcA and srcB operand tiles.
void unpack_ab(const ComputeState& e, uint32_t cb_a, uint32_t tile_a, uint32_t cb_b,
               uint32_t tile_b, uint32_t idst, uint32_t* a, uint32_t* b, const Call& what) {
    check_src(e, true, cb_a, what);
    check_src(e, false, cb_b, what);
    check_matrix_operand(e, true, cb_a, what);
    check_matrix_operand(e, false, cb_b, what);
    check_dst(e, idst, what, false);
    unpack(e, cb_a, tile_a, true, a, what);
    unpack(e, cb_b, tile_b, true, b, what);
}

int phases(const ComputeState& e) { return fpu::fidelity_phases(static_cast<int>(e.fidelity)); }

}  // namespace

// ---- configuration -------------------------------------------------------------------------
void ttmock::hw_startup(uint32_t icb0, uint32_t icb1, uint32_t ocb, bool reverse) {
    const Call what = call("compute_kernel_hw_startup", {icb0, icb1, ocb},
                           reverse ? "<SrcOrder::Reverse>" : "");
    ComputeState& e = engine(what);
    if (e.started) fail_at(what, ": compute_kernel_hw_startup is call-once and was already called");
    e.started = true;
    e.srca = fmt(reverse ? icb1 : icb0, what);
    e.srcb = fmt(reverse ? icb0 : icb1, what);
    e.pack = fmt(ocb, what);
}

void ttmock::fpu_init(const char* mode, uint32_t icb0, uint32_t icb1, uint32_t arg) {
    const Call what = call(mode, {icb0, icb1}, " init");
    ComputeState& e = started_engine(what);
    fmt(icb0, what);
    fmt(icb1, what);
    int op = cached_id(e, 0, mode, [](const char* m) { return static_cast<int>(fpu_op_of(m)); });
    if (op == kCopy && arg != 0) op = kCopyTranspose;
    if (op == kMatmul) e.matmul_transpose = arg != 0;
    if (op == kAddBcast || op == kSubBcast || op == kMulBcast || op == kUnaryBcast) e.bcast_type = static_cast<int>(arg);
    if (op == kReduce) {
        e.reduce_pool = static_cast<int>(arg / 4);
        e.reduce_dim = static_cast<int>(arg % 4);
    }
    if (op != e.fpu_op || op == kOtherOp) e.fpu_mode = op == kCopyTranspose ? "copy_transpose" : mode;
    e.fpu_op = op;
}

void ttmock::reconfig_srca(uint32_t cb) {
    const Call what = call("reconfig_data_format_srca", {cb});
    started_engine(what).srca = fmt(cb, what);
}
void ttmock::reconfig_srcb(uint32_t cb) {
    const Call what = call("reconfig_data_format_srcb", {cb});
    started_engine(what).srcb = fmt(cb, what);
}
void ttmock::pack_l1_acc(bool enable) {
    started_engine(call("pack_reconfig_l1_acc", {enable ? 1u : 0u})).pack_l1_acc = enable;
}

void ttmock::reconfig_pack(uint32_t cb) {
    const Call what = call("pack_reconfig_data_format", {cb});
    started_engine(what).pack = fmt(cb, what);
}

// ---- modelled time (timing.hpp) -------------------------------------------------------------------
// unpack cycles of one operand tile of a CB (the profile's figure is for a BF16 tile)
double unpack_cost(uint32_t cb) {
    const CBConfig& cfg = current_core().cb_cfg[cb];
    return timing::profile().unpack_tile * (cfg.page_bytes > 2048 ? 2.0 : 1.0);
}

// ---- DST lifecycle -------------------------------------------------------------------------------
void ttmock::regs(const char* step) {
    ComputeState& e = engine(call(step, {}));
    if (std::strcmp(step, "acquire_dst") == 0) {
        if (e.dst_state != DstState::Released) fail("acquire_dst(): DST is already acquired");
        std::memset(e.dst, 0, sizeof(e.dst[0]) * e.capacity());  // the tiles one acquire holds
        std::fill(std::begin(e.dst_written), std::end(e.dst_written), false);
        e.dst_state = DstState::Legacy;
        e.legacy_packed = false;
        note_progress();
        return;
    }
    if (std::strcmp(step, "release_dst") == 0) {
        if (e.dst_state != DstState::Legacy) fail("release_dst(): DST was not acquired with acquire_dst()");
        e.dst_state = DstState::Released;
        note_progress();
        return;
    }
    if (e.dst_state == DstState::Legacy) {
        fail(std::string(step) + "(): DST is held by acquire_dst() (release it with release_dst())");
    }
    static constexpr timing::Kind kinds[] = {timing::Kind::RegsAcquire, timing::Kind::RegsCommit,
                                             timing::Kind::RegsWait, timing::Kind::RegsRelease};
    const char c = step[10];
    timing::record(current(), timing::Op{kinds[c == 'a' ? 0 : c == 'c' ? 1 : c == 'w' ? 2 : 3]});
    switch (step[10]) {  // tile_regs_{a,c,w,r}...
        case 'a':  // tile_regs_acquire
            if (e.dst_state != DstState::Released) {
                fail("tile_regs_acquire(): DST is already acquired (missing tile_regs_commit / "
                     "tile_regs_wait / tile_regs_release since the last acquire)");
            }
            std::memset(e.dst, 0, sizeof(e.dst[0]) * e.capacity());  // the tiles one acquire holds
            std::fill(std::begin(e.dst_written), std::end(e.dst_written), false);
            e.dst_state = DstState::Acquired;
            break;
        case 'c':  // tile_regs_commit
            if (e.dst_state != DstState::Acquired) fail("tile_regs_commit(): DST was not acquired by math");
            e.dst_state = DstState::Committed;
            break;
        case 'w':  // tile_regs_wait
            if (e.dst_state != DstState::Committed) {
                fail("tile_regs_wait(): nothing committed (call tile_regs_commit after the math)");
            }
            e.dst_state = DstState::Waited;
            break;
        case 'r':  // tile_regs_release
            if (e.dst_state != DstState::Waited) {
                fail("tile_regs_release(): DST is not held by the packer (expected acquire -> commit "
                     "-> wait -> release)");
            }
            e.dst_state = DstState::Released;
            break;
    }
    note_progress();
}

// ---- FPU operations -------------------------------------------------------------------------------
void ttmock::matmul(uint32_t in0, uint32_t in1, uint32_t i0, uint32_t i1, uint32_t idst) {
    const Call what = call("matmul_tiles", {in0, in1, i0, i1, idst});
    ComputeState& e = started_engine(what);
    check_mode(e, kMatmul, "matmul_init(in0, in1)", what);
    check_src(e, true, in1, what);  // in1 -> srcA, in0 -> srcB
    check_src(e, false, in0, what);
    check_matrix_operand(e, true, in1, what);
    check_matrix_operand(e, false, in0, what);
    check_dst(e, idst, what, false);
    if (e.srca == tt::DataFormat::Float16_b && e.srcb == tt::DataFormat::Float16_b) {
        // BF16 operands unpack exactly: the matrix engine reads them from L1 (fpu::matmul_bf16)
        const auto* l1_b = reinterpret_cast<const uint16_t*>(front_page(in1, i1, what));
        const auto* l1_a = reinterpret_cast<const uint16_t*>(front_page(in0, i0, what));
        TileMathTimer tile_math_timer(current_core());
        fpu::matmul_bf16(e.dst[idst], l1_a, l1_b, e.matmul_transpose, phases(e), e.fp32_dest_acc);
    } else {
        uint32_t a[kTileElems], b[kTileElems];
        unpack(e, in1, i1, true, b, what);
        unpack(e, in0, i0, true, a, what);
        TileMathTimer tile_math_timer(current_core());
        fpu::matmul(e.dst[idst], a, b, e.matmul_transpose, phases(e), e.fp32_dest_acc);
    }
    e.dst_written[idst] = true;
    count(e, kCntMatmul, "matmul");
    const timing::CostProfile& tp = timing::profile();
    timing::tile(current(), timing::kMatmul, unpack_cost(in0) + unpack_cost(in1),
                 tp.matmul_per_phase * phases(e));
}

// add / sub run on ELWADD / ELWSUB (one phase: the LLK forces LoFi), mul on ELWMUL per phase
static void binop(ComputeState& e, char op, uint32_t idst, const uint32_t* a, const uint32_t* b,
                  int bcast) {
    TileMathTimer tile_math_timer(current_core());
    if (op == 'm') {
        fpu::eltwise_mul(e.dst[idst], a, b, bcast, phases(e), e.fp32_dest_acc);
    } else {
        fpu::eltwise_add(e.dst[idst], a, b, op == 's', bcast, e.fp32_dest_acc);
    }
    e.dst_written[idst] = true;
}

void ttmock::eltwise_binary(const char* op, uint32_t icb0, uint32_t icb1, uint32_t i0, uint32_t i1,
                            uint32_t idst) {
    const Call what = call(op, {icb0, icb1, i0, i1, idst}, "_tiles");
    ComputeState& e = started_engine(what);
    const int k = op[0] == 'a' ? 0 : op[0] == 's' ? 1 : 2;
    if (e.fpu_op != kAdd + k) {
        check_mode(e, static_cast<FpuOp>(kAdd + k), (std::string(op) + "_init(icb0, icb1)").c_str(), what);
    }
    uint32_t a[kTileElems], b[kTileElems];
    unpack_ab(e, icb0, i0, icb1, i1, idst, a, b, what);
    binop(e, op[0], idst, a, b, fpu::kBcastNone);
    count(e, kCntAdd + k, op);
    timing::tile(current(), timing::kFpu, unpack_cost(icb0) + unpack_cost(icb1),
                 timing::profile().eltwise_per_phase * (k == 2 ? phases(e) : 1));
}

void ttmock::eltwise_bcast(const char* op, int bcast, uint32_t icb0, uint32_t icb1, uint32_t i0,
                           uint32_t i1, uint32_t idst) {
    static const char* suffixes[] = {"_tiles_bcast<NONE>", "_tiles_bcast<COL>", "_tiles_bcast<ROW>",
                                     "_tiles_bcast<SCALAR>"};
    const Call what = call(op, {icb0, icb1, i0, i1, idst}, suffixes[bcast & 3]);
    ComputeState& e = started_engine(what);
    const int k = op[0] == 'a' ? 0 : op[0] == 's' ? 1 : 2;
    if (e.fpu_op != kAddBcast + k) {
        check_mode(e, static_cast<FpuOp>(kAddBcast + k),
                   (std::string(op) + "_bcast_<rows|cols|scalar>_init").c_str(), what);
    }
    if (e.bcast_type != bcast) fail_at(what, ": the broadcast init was for another broadcast type");
    uint32_t a[kTileElems], b[kTileElems];
    unpack_ab(e, icb0, i0, icb1, i1, idst, a, b, what);
    binop(e, op[0], idst, a, b, bcast);
    count(e, kCntBcastAdd + k, op, "bcast_");
    timing::tile(current(), timing::kFpu, unpack_cost(icb0) + unpack_cost(icb1),
                 timing::profile().eltwise_per_phase * (k == 2 ? phases(e) : 1));
}


namespace {
// whether CB icb is unpacked straight to DST (UnpackToDestFp32), which needs the 32-bit DST
bool unpacks_to_dest(const ComputeState& e, uint32_t icb, const Call& what) {
    const bool to_dest = icb < e.unpack_to_dest.size() &&
                         e.unpack_to_dest[icb] == tt::tt_metal::UnpackToDestMode::UnpackToDestFp32;
    if (to_dest && !e.fp32_dest_acc) {
        fail_at(what, ": CB " + std::to_string(icb) +
                " is UnpackToDestFp32 but the kernel was created without fp32_dest_acc_en");
    }
    return to_dest;
}
}  // namespace

void ttmock::copy(uint32_t icb, uint32_t itile, uint32_t idst) {
    const Call what = call("copy_tile", {icb, itile, idst});
    ComputeState& e = started_engine(what);
    if (e.fpu_op != kCopy && e.fpu_op != kCopyTranspose) {
        check_mode(e, kCopy, "copy_init(cb)", what);
    }
    check_src(e, true, icb, what);
    check_dst(e, idst, what, false);
    const bool to_dest = unpacks_to_dest(e, icb, what);
    if (to_dest) {
        unpack(e, icb, itile, false, e.dst[idst], what);
    } else {
        uint32_t a[kTileElems];
        unpack(e, icb, itile, true, a, what);
        {
            TileMathTimer tile_math_timer(current_core());
            fpu::datacopy(e.dst[idst], a, e.fpu_op == kCopyTranspose, e.fp32_dest_acc);
        }
    }
    e.dst_written[idst] = true;
    count(e, kCntCopy, "copy");
    timing::tile(current(), timing::kCopy, unpack_cost(icb), to_dest ? 0.0 : timing::profile().eltwise_per_phase);
}

void ttmock::unary_bcast(int bcast, uint32_t icb, uint32_t itile, uint32_t idst) {
    static const char* suffixes[] = {"<NONE>", "<COL>", "<ROW>", "<SCALAR>"};
    const Call what = call("unary_bcast", {icb, itile, idst}, suffixes[bcast & 3]);
    ComputeState& e = started_engine(what);
    check_mode(e, kUnaryBcast, "unary_bcast_init<BroadcastType>(icb)", what);
    if (e.bcast_type != bcast) fail_at(what, ": unary_bcast_init was for another broadcast type");
    check_dst(e, idst, what, false);
    // a CB unpacked straight to DST (UnpackToDestFp32) is broadcast exactly; any other goes
    // through SrcB (fp32 data truncated to TF32 or BF16 there) and MOVB2D (denormals flushed)
    const bool to_dest = unpacks_to_dest(e, icb, what);
    if (!to_dest) {
        check_src(e, false, icb, what);
        check_matrix_operand(e, false, icb, what);
    }
    uint32_t a[kTileElems], b[kTileElems];
    unpack(e, icb, itile, !to_dest, a, what);
    {
        TileMathTimer tile_math_timer(current_core());
        if (to_dest) {
            fpu::broadcast_tile(a, bcast, e.dst[idst]);
        } else {
            fpu::broadcast_tile(a, bcast, b);
            fpu::datacopy(e.dst[idst], b, false, e.fp32_dest_acc);
        }
    }
    e.dst_written[idst] = true;
    count(e, kCntUnaryBcast, "unary_bcast");
    timing::tile(current(), timing::kCopy, unpack_cost(icb), to_dest ? 0.0 : timing::profile().eltwise_per_phase);
}

void ttmock::transpose(uint32_t icb, uint32_t itile, uint32_t idst) {
    const Call what = call("transpose_tile", {icb, itile, idst});
    ComputeState& e = started_engine(what);
    check_mode(e, kTranspose, "transpose_init(icb)", what);
    check_src(e, true, icb, what);
    check_dst(e, idst, what, false);
    // a CB unpacked straight to DST (its unpack DST format Float32) is transposed in DST,
    // exactly; any other goes through SrcA (fp32 data truncated to TF32 or BF16 there)
    const bool to_dest = unpacks_to_dest(e, icb, what);
    uint32_t a[kTileElems];
    unpack(e, icb, itile, !to_dest, a, what);
    {
        TileMathTimer tile_math_timer(current_core());
        if (to_dest) {
            fpu::transpose_in_dst(e.dst[idst], a);
        } else {
            fpu::datacopy(e.dst[idst], a, true, e.fp32_dest_acc);
        }
    }
    e.dst_written[idst] = true;
    count(e, kCntTranspose, "transpose");
    timing::tile(current(), timing::kCopy, unpack_cost(icb), timing::profile().eltwise_per_phase);
}

void ttmock::reduce(int pool, int dim, uint32_t icb, uint32_t iscaler_cb, uint32_t itile,
                    uint32_t iscaler, uint32_t idst) {
    const Call what = call("reduce_tile", {icb, iscaler_cb, itile, iscaler, idst});
    ComputeState& e = started_engine(what);
    check_mode(e, kReduce, "reduce_init<pool, dim>(icb, scaler_cb, ocb)", what);
    if (e.reduce_pool != pool || e.reduce_dim != dim) {
        fail_at(what, ": reduce_init was for another pool type / dimension");
    }
    uint32_t a[kTileElems], s[kTileElems];
    unpack_ab(e, icb, itile, iscaler_cb, iscaler, idst, a, s, what);
    if (pool == MAX) {
        // GMPOOL takes no scaler: the SrcB operand must hold 1.0
        if (s[0] != 0x3F800000u) {
            fail_at(what, ": a MAX reduction's scaler tile must hold 1.0 (GMPOOL does not scale); "
                    "element [0][0] of CB " + std::to_string(iscaler_cb) + " is " +
                    std::to_string(std::bit_cast<float>(s[0])));
        }
        {
            TileMathTimer tile_math_timer(current_core());
            fpu::reduce_max(e.dst[idst], a, dim, !e.dst_written[idst]);
        }
    } else {
        {
            TileMathTimer tile_math_timer(current_core());
            fpu::reduce_sum(e.dst[idst], a, s, dim, phases(e), e.fp32_dest_acc);
        }
    }
    e.dst_written[idst] = true;
    count(e, kCntReduce, "reduce");
    const timing::CostProfile& tp = timing::profile();
    timing::tile(current(), timing::kReduce, unpack_cost(icb) + unpack_cost(iscaler_cb),
                 pool == MAX ? tp.eltwise_per_phase * 2 : tp.matmul_per_phase * phases(e));
}

// ---- SFPU ------------------------------------------------------------------------------------------
// sfpu_op: the init in force; unary functions by their sfpu::Unary id, the *_unary scalar ops
// share binop_with_scalar_tile_init (kScalarInit), binary ops kBinaryBase + sfpu::Binary id.
namespace {
constexpr int kScalarInit = 1000, kBinaryBase = 2000, kWhereInit = 3000, kRoundingInit = 4000,
              kCumsumInit = 5000, kReshuffleInit = 6000,
              kSfpuReduceInit = 7000;  // + pool * 256 + DataFormat
bool is_scalar_op(sfpu::Unary u) {
    return u == sfpu::Unary::AddScalar || u == sfpu::Unary::SubScalar || u == sfpu::Unary::MulScalar ||
           u == sfpu::Unary::DivScalar || u == sfpu::Unary::RsubScalar;
}
// floor / ceil / trunc share rounding_op_tile_init (api/compute/eltwise_unary/rounding.h)
bool is_rounding_op(sfpu::Unary u) {
    return u == sfpu::Unary::Floor || u == sfpu::Unary::Ceil || u == sfpu::Unary::Trunc ||
           u == sfpu::Unary::Round;
}
}  // namespace

void ttmock::sfpu_init(const char* op) {
    ComputeState& e = started_engine(call(op, {}, "_tile_init"));
    e.sfpu_op = cached_id(e, 3, op, [](const char* n) {
        const std::string name = n;
        if (name == "binop_with_scalar") return kScalarInit;
        if (name == "where") return kWhereInit;
        if (name == "rounding_op") return kRoundingInit;
        if (name == "cumsum") return kCumsumInit;
        if (name == "reshuffle_rows") return kReshuffleInit;
        if (name.size() > 7 && name.compare(name.size() - 7, 7, "_binary") == 0) {
            return kBinaryBase + static_cast<int>(sfpu::binary_from_name(name.substr(0, name.size() - 7).c_str()));
        }
        return static_cast<int>(sfpu::unary_from_name(n));
    });
}

void ttmock::sfpu_init_params(const char* op, uint32_t param0, uint32_t param1) {
    sfpu_init(op);
    ComputeState& e = started_engine(call(op, {}, "_tile_init"));
    e.sfpu_init_param[0] = std::bit_cast<float>(param0);
    e.sfpu_init_param[1] = std::bit_cast<float>(param1);
}

void ttmock::sfpu_unary(const char* op, uint32_t idst, float param, int approx) {
    const Call what = call(op, {idst}, "_tile");
    ComputeState& e = started_engine(what);
    const int id = cached_id(e, 1, op, [](const char* n) { return static_cast<int>(sfpu::unary_from_name(n)); });
    if (id == static_cast<int>(sfpu::Unary::Unknown)) fail(std::string("unknown SFPU op ") + op);
    const auto f = static_cast<sfpu::Unary>(id);
    const bool scalar = is_scalar_op(f), rounding = is_rounding_op(f);
    if (e.sfpu_op != (scalar ? kScalarInit : rounding ? kRoundingInit : id)) {
        fail_at(what, std::string(": call ") +
                (scalar ? "binop_with_scalar" : rounding ? "rounding_op" : op) + "_tile_init() first");
    }
    check_dst(e, idst, what, false);
    e.cumsum_live = false;  // the function's registers overwrite cumsum_tile's running totals
    {
        TileMathTimer tile_math_timer(current_core());
        const bool fmod = f == sfpu::Unary::Fmod;  // fmod_tile reads its init's divisor and 1/divisor
        sfpu::unary(f, e.dst[idst], fmod ? e.sfpu_init_param[0] : param,
                    approx == kApproxFromConfig ? e.approx : approx != 0, e.fp32_dest_acc,
                    fmod ? e.sfpu_init_param[1] : 0.0f);
    }
    e.dst_written[idst] = true;
    count(e, kCntSfpu + id, op, "sfpu_");
    timing::sfpu(current(), timing::sfpu_instructions(op) * timing::profile().sfpu_instr);
}

void ttmock::sfpu_binary(const char* op, uint32_t i0, uint32_t i1, uint32_t odst) {
    const Call what = call(op, {i0, i1, odst}, "_binary_tile");
    ComputeState& e = started_engine(what);
    const auto f = static_cast<sfpu::Binary>(
        cached_id(e, 2, op, [](const char* n) { return static_cast<int>(sfpu::binary_from_name(n)); }));
    if (f == sfpu::Binary::Unknown) fail(std::string("unknown SFPU binary op ") + op);
    if (e.sfpu_op != kBinaryBase + static_cast<int>(f)) {
        fail_at(what, std::string(": call ") + op + "_binary_tile_init() first");
    }
    check_dst(e, i0, what, false);
    check_dst(e, i1, what, false);
    check_dst(e, odst, what, false);
    e.cumsum_live = false;
    {
        TileMathTimer tile_math_timer(current_core());
        sfpu::binary(f, e.dst[odst], e.dst[i0], e.dst[i1], e.fp32_dest_acc, e.approx);
    }
    e.dst_written[odst] = true;
    count(e, kCntSfpuBinary + static_cast<int>(f), op, "sfpu_", "_binary");
    timing::sfpu(current(), timing::sfpu_instructions(op) * timing::profile().sfpu_instr);
}

void ttmock::sfpu_where(uint32_t icond, uint32_t i1, uint32_t i2, uint32_t odst, int format) {
    const Call what = call("where_tile", {icond, i1, i2, odst});
    ComputeState& e = started_engine(what);
    if (e.sfpu_op != kWhereInit) fail_at(what, ": call where_tile_init() first");
    // the LLK loads and stores 32-bit data for Float32 (and the integer formats), the low 16 bits
    // for Float16_b: the format must be the DST's
    const bool f32 = format == static_cast<int>(tt::DataFormat::Float32);
    if (!f32 && format != static_cast<int>(tt::DataFormat::Float16_b)) {
        fail_at(what, ": the emulator models where_tile for Float32 and Float16_b data only");
    }
    if (f32 != e.fp32_dest_acc) {
        fail_at(what, std::string(": where_tile<") + (f32 ? "Float32" : "Float16_b") + "> with a " +
                (e.fp32_dest_acc ? "32" : "16") + "-bit DST (fp32_dest_acc_en = " +
                (e.fp32_dest_acc ? "true" : "false") + ")");
    }
    for (uint32_t i : {icond, i1, i2, odst}) check_dst(e, i, what, false);
    e.cumsum_live = false;
    {
        TileMathTimer tile_math_timer(current_core());
        sfpu::where(e.dst[odst], e.dst[icond], e.dst[i1], e.dst[i2], e.fp32_dest_acc);
    }
    e.dst_written[odst] = true;
    count(e, kCntWhere, "sfpu_where");
}

void ttmock::sfpu_cumsum(uint32_t idst, bool first) {
    const Call what = call("cumsum_tile", {idst, static_cast<uint32_t>(first)});
    ComputeState& e = started_engine(what);
    if (e.sfpu_op != kCumsumInit) fail_at(what, ": call cumsum_tile_init() first");
    if (!first && !e.cumsum_live) {
        fail_at(what, ": first = false, but the running column totals are gone: no cumsum_tile ran "
                      "before it, or another SFPU operation ran since the previous one (the totals "
                      "live in SFPU registers; no other SFPU operation may run between the "
                      "cumsum_tile calls of one column)");
    }
    check_dst(e, idst, what, false);
    {
        TileMathTimer tile_math_timer(current_core());
        sfpu::cumsum(e.dst[idst], e.cumsum_carry, first, e.fp32_dest_acc);
    }
    e.cumsum_live = true;
    e.dst_written[idst] = true;
    count(e, kCntCumsum, "sfpu_cumsum");
    timing::sfpu(current(), timing::sfpu_instructions("cumsum") * timing::profile().sfpu_instr);
}

namespace {
// SFPSWAP's comparison (ISA SFPSWAP.md SignMagIsSmaller): the bits as sign-magnitude integers,
// for float32 the total order -NaN < -inf < ... < -0 < +0 < ... < +inf < +NaN
int32_t sign_magnitude_key(uint32_t u) {
    return static_cast<int32_t>(u ^ (static_cast<uint32_t>(static_cast<int32_t>(u) >> 31) >> 1));
}
constexpr uint32_t kUnmodeledNaN = 0x7FC00000u;
}  // namespace

void ttmock::sfpu_reduce_init(int pool, int format) {
    ComputeState& e = started_engine(call("sfpu_reduce_init", {}));
    e.sfpu_op = kSfpuReduceInit + pool * 256 + format;
}

void ttmock::sfpu_reduce(int pool, int format, int dim, uint32_t idst, uint32_t ct_dim, uint32_t rt_dim) {
    // ckernel_sfpu_reduce.h (Wormhole / Blackhole), the cases the emulator models: Float32 data in
    // a 32-bit DST, MAX / MIN. REDUCE_ROW: each row of the ct_dim x rt_dim block of DST tiles from
    // idst (tile idst + i * ct_dim + j) reduced by SFPSWAP compare-and-swaps into column 0 of the
    // row's first tile; REDUCE_COL (one tile): each column into row 0. SFPLOAD reads the fp32 bits
    // exactly, SFPSWAP orders them as sign-magnitude integers (no arithmetic), SFPSTORE flushes a
    // denormal result to a zero of its sign. The LLK stores intermediate values over the rest of
    // the block; the emulator does not model them and writes NaN there, so a reader of them shows.
    const Call what = call("sfpu_reduce", {idst, ct_dim, rt_dim});
    ComputeState& e = started_engine(what);
    if (e.sfpu_op != kSfpuReduceInit + pool * 256 + format) {
        fail_at(what, ": call sfpu_reduce_init with the same PoolType and DataFormat first");
    }
    if (format != static_cast<int>(tt::DataFormat::Float32)) {
        unsupported("sfpu_reduce of a format other than Float32");
    }
    if (!e.fp32_dest_acc) fail_at(what, ": sfpu_reduce<Float32> needs fp32_dest_acc_en (a 32-bit DST)");
    const bool is_min = pool == static_cast<int>(ckernel::PoolType::MIN);
    if (!is_min && pool != static_cast<int>(ckernel::PoolType::MAX)) {
        unsupported("sfpu_reduce with a PoolType other than MAX / MIN");
    }
    const bool row = dim == static_cast<int>(ckernel::ReduceDim::REDUCE_ROW);
    if (!row && dim != static_cast<int>(ckernel::ReduceDim::REDUCE_COL)) fail_at(what, ": unknown ReduceDim");
    if (!row && (ct_dim != 1 || rt_dim != 1)) fail_at(what, ": REDUCE_COL takes one tile (ct_dim = rt_dim = 1)");
    if (ct_dim == 0 || rt_dim == 0) fail_at(what, ": an empty block");
    for (uint32_t t = 0; t < ct_dim * rt_dim; ++t) check_dst(e, idst + t, what, false);
    e.cumsum_live = false;
    auto at = [](uint32_t r, uint32_t c) { return ((r >> 4) * 2 + (c >> 4)) * 256 + (r & 15) * 16 + (c & 15); };
    auto better = [is_min](uint32_t a, uint32_t b) {  // a replaces b
        return is_min ? sign_magnitude_key(a) < sign_magnitude_key(b) : sign_magnitude_key(a) > sign_magnitude_key(b);
    };
    auto stored = [](uint32_t u) { return (u & 0x7F800000u) ? u : (u & 0x80000000u); };
    {
        TileMathTimer tile_math_timer(current_core());
        for (uint32_t i = 0; i < rt_dim; ++i) {
            const uint32_t base = idst + i * ct_dim;
            uint32_t result[32];
            for (uint32_t l = 0; l < 32; ++l) {
                uint32_t m = row ? e.dst[base][at(l, 0)] : e.dst[base][at(0, l)];
                for (uint32_t j = 0; j < ct_dim; ++j) {
                    for (uint32_t k = 0; k < 32; ++k) {
                        const uint32_t v = row ? e.dst[base + j][at(l, k)] : e.dst[base][at(k, l)];
                        if (better(v, m)) m = v;
                    }
                }
                result[l] = stored(m);
            }
            for (uint32_t j = 0; j < ct_dim; ++j) {
                std::fill(e.dst[base + j], e.dst[base + j] + kTileElems, kUnmodeledNaN);
                e.dst_written[base + j] = true;
            }
            for (uint32_t l = 0; l < 32; ++l) e.dst[base][row ? at(l, 0) : at(0, l)] = result[l];
        }
    }
    count(e, kCntSfpuReduce, "sfpu_reduce");
    timing::sfpu(current(), ct_dim * rt_dim * timing::sfpu_instructions("sfpu_reduce") * timing::profile().sfpu_instr);
}

uint32_t ttmock::cb_tile_address(uint32_t cb, uint32_t tile_index) {
    // api/compute/cb_api.h: the address of a front tile the compute kernel waited for
    const Call what = call("get_tile_address", {cb, tile_index});
    started_engine(what);
    return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(front_page(cb, tile_index, what)));
}

uint32_t ttmock::cb_read_tile_value(uint32_t cb, uint32_t tile_index, uint32_t element_offset) {
    // api/compute/cb_api.h: the 32-bit word `element_offset` of a front tile the compute kernel
    // waited for (the SDK's UNPACK thread reads it from L1 and hands it to MATH and PACK)
    const Call what = call("read_tile_value", {cb, tile_index, element_offset});
    started_engine(what);
    const uint8_t* page = front_page(cb, tile_index, what);
    const uint32_t page_bytes = cb_cfg(cb, what).page_bytes;
    if (uint64_t(element_offset) * 4 + 4 > page_bytes) {
        fail_at(what, ": word " + std::to_string(element_offset) + " is past the end of the CB's " +
                std::to_string(page_bytes) + "-byte page");
    }
    uint32_t value;
    std::memcpy(&value, page + 4 * size_t(element_offset), 4);
    return value;
}

void ttmock::sfpu_reshuffle_rows(uint32_t idst, uint32_t idx_addr) {
    const Call what = call("reshuffle_rows_tile", {idst, idx_addr});
    ComputeState& e = started_engine(what);
    if (e.sfpu_op != kReshuffleInit) fail_at(what, ": call reshuffle_rows_tile_init() first");
    check_dst(e, idst, what, false);
    check_dst(e, idst + 1, what, false);  // the LLK writes the next DST tile
    // the LLK reads the 32 destination rows (one byte each) at idx_addr + 16
    const Core& core = current_core();
    const uint64_t lo = reinterpret_cast<uintptr_t>(core.l1) + device().prof.l1_base;
    const uint64_t hi = reinterpret_cast<uintptr_t>(core.l1) + device().prof.l1_bytes;
    const uint64_t at = uint64_t(idx_addr) + 16;
    if (at < lo || at + 32 > hi) {
        fail_at(what, ": the row indices at idx_addr + 16 are not in this core's L1 (pass the "
                      "address of a tile the kernel holds, e.g. get_tile_address(cb, 0) - 16)");
    }
    e.cumsum_live = false;
    {
        TileMathTimer tile_math_timer(current_core());
        sfpu::reshuffle_rows(e.dst[idst], e.dst[idst + 1], reinterpret_cast<const uint8_t*>(uintptr_t(at)),
                             e.fp32_dest_acc);
    }
    e.dst_written[idst + 1] = true;
    count(e, kCntReshuffle, "sfpu_reshuffle_rows");
    timing::sfpu(current(), timing::sfpu_instructions("reshuffle_rows") * timing::profile().sfpu_instr);
}

// ---- pack -----------------------------------------------------------------------------------------
void ttmock::pack(uint32_t idst, uint32_t ocb, uint32_t out_index, bool out_of_order) {
    const Call what = call("pack_tile", {idst, ocb, out_index}, out_of_order ? "<true>" : "");
    ComputeState& e = started_engine(what);
    check_dst(e, idst, what, true);
    const tt::DataFormat f = fmt(ocb, what);
    if (f != e.pack) {
        fail_at(what, std::string(": the packer is configured for ") + format_name(e.pack) + " but CB " +
                std::to_string(ocb) + " holds " + format_name(f) + "; call pack_reconfig_data_format(" +
                std::to_string(ocb) + ")");
    }
    const CBConfig& cfg = cb_cfg(ocb, what);
    CBState& s = current_core().cb[ocb];
    const uint32_t pos = out_of_order ? out_index : s.pack_pos;
    if (pos >= s.reserved && !(pos < cfg.pages() && cb_unguarded(current_core(), static_cast<int>(ocb), current(), what.str()))) {
        fail_at(what, ": writes position " + std::to_string(pos) + " of CB " + std::to_string(ocb) +
                " but cb_reserve_back reserved " + std::to_string(s.reserved) + " page(s)");
    }
    if (!out_of_order) s.pack_pos += 1;
    const uint32_t page = (s.wr_page + pos) % cfg.pages();
    uint8_t* p = current_core().l1 + cfg.offset + page * cfg.page_bytes;
    TileMathTimer tile_math_timer(current_core());
    if (f == tt::DataFormat::Float16_b) {
        auto* h = reinterpret_cast<uint16_t*>(p);
        if (e.pack_l1_acc) {
            fpu::pack_bf16_l1_acc(e.dst[idst], h, e.fp32_dest_acc);
        } else {
            fpu::pack_bf16(e.dst[idst], h, e.fp32_dest_acc);
        }
    } else if (f == tt::DataFormat::Float16) {
        check_fp16_dst(e, ocb, what);
        if (e.pack_l1_acc) {
            fail_at(what, ": L1 accumulation into the Float16 CB " + std::to_string(ocb) +
                    " is not modelled by the emulator");
        }
        fpu::pack_fp16(e.dst[idst], reinterpret_cast<uint16_t*>(p));
    } else {
        auto* h = reinterpret_cast<uint32_t*>(p);
        if (e.pack_l1_acc) {
            fpu::pack_fp32_l1_acc(e.dst[idst], h, e.fp32_dest_acc);
        } else {
            fpu::pack_fp32(e.dst[idst], h, e.fp32_dest_acc);
        }
    }
    count(e, kCntPack, "pack");
    timing::pack(current(), timing::profile().pack_tile * (cfg.page_bytes > 2048 ? 2.0 : 1.0));
}
static_assert(static_cast<int>(ttmock::sfpu::Unary::Unknown) < 64 - 16 &&
              static_cast<int>(ttmock::sfpu::Binary::Unknown) < 96 - 64, "SFPU op counters overlap");
