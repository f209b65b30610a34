// tilelang-tt mock TT-Metalium: the compute engine (unpack -> FPU/SFPU on DST -> pack).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "emulator.hpp"
#include "fpu.hpp"
#include "sfpu.hpp"
#include "ttmock/compute_api.h"
#include "ttmock/numerics.hpp"

using namespace ttmock;

namespace {

ComputeState& engine(const std::string& what) {
    Fiber& f = current();
    f.last_call = what;
    if (f.kind != KernelKind::Compute || f.compute == nullptr) {
        fail(what + ": compute API called from a " + kind_name(f.kind) + " kernel");
    }
    return *f.compute;
}

ComputeState& started_engine(const std::string& what) {
    ComputeState& e = engine(what);
    if (!e.started) {
        fail(what + ": the compute engine is not configured; call compute_kernel_hw_startup "
                    "(once, first) before any other compute call");
    }
    return e;
}

const CBConfig& cb_cfg(uint32_t cb, const std::string& what) {
    Core& c = current_core();
    if (cb >= static_cast<uint32_t>(kMaxCBs) || !c.cb_cfg[cb].used) {
        fail(what + ": CB " + std::to_string(cb) + " was not created on this core");
    }
    return c.cb_cfg[cb];
}

tt::DataFormat fmt(uint32_t cb, const std::string& what) {
    const tt::DataFormat f = cb_cfg(cb, what).format;
    if (f != tt::DataFormat::Float16_b && f != tt::DataFormat::Float32) {
        fail(what + ": CB " + std::to_string(cb) + " has data format " + format_name(f) +
             ", which the emulator's compute engine does not model (Float16_b, Float32)");
    }
    return f;
}

void count(const std::string& op) { current_core().counters.tile_ops[op] += 1; }

// A CB configured UnpackToDestFp32 is unpacked straight into DST: the matrix engine, which
// reads the srcA/srcB registers, cannot take it as an operand.
void check_matrix_operand(const ComputeState& e, bool srca, uint32_t cb, const std::string& what) {
    if (cb < e.unpack_to_dest.size() && e.unpack_to_dest[cb] == UnpackToDestMode::UnpackToDestFp32) {
        fail(what + ": CB " + std::to_string(cb) + " is configured UnpackToDestFp32, so its tiles "
             "bypass the " + (srca ? "srcA" : "srcB") + " register the matrix engine reads; "
             "only copy_tile may read it");
    }
}

void check_src(const ComputeState& e, bool srca, uint32_t cb, const std::string& what) {
    const tt::DataFormat want = fmt(cb, what);
    const tt::DataFormat have = srca ? e.srca : e.srcb;
    if (want != have) {
        fail(what + ": unpacker " + (srca ? "srcA" : "srcB") + " is configured for " +
             format_name(have) + " but CB " + std::to_string(cb) + " holds " + format_name(want) +
             "; call reconfig_data_format_" + (srca ? "srca(" : "srcb(") + std::to_string(cb) + ")");
    }
}

void check_mode(const ComputeState& e, const std::string& mode, const std::string& init,
                const std::string& what) {
    if (e.fpu_mode != mode) {
        fail(what + ": the math engine is configured for '" +
             (e.fpu_mode.empty() ? std::string("nothing") : e.fpu_mode) + "'; call " + init +
             " first");
    }
}

void check_dst(const ComputeState& e, uint32_t idst, const std::string& what, bool packing) {
    if (packing) {
        if (e.dst_state != DstState::Waited) {
            fail(what + ": pack_tile outside tile_regs_wait()..tile_regs_release() (DST is " +
                 (e.dst_state == DstState::Acquired ? "acquired by math, not committed" :
                  e.dst_state == DstState::Committed ? "committed but tile_regs_wait was not called" :
                                                       "not acquired") + ")");
        }
    } else if (e.dst_state != DstState::Acquired) {
        fail(what + ": math on DST outside tile_regs_acquire()..tile_regs_commit()");
    }
    if (idst >= e.capacity()) {
        fail(what + ": DST index " + std::to_string(idst) + " but one acquire holds " +
             std::to_string(e.capacity()) + " tiles in this mode (" +
             (e.fp32_dest_acc ? "fp32_dest_acc_en" : "16-bit") + ", " +
             (e.full_sync ? "full-sync" : "half-sync") + ")");
    }
}

// The L1 page of front tile `itile` of `cb` (after checking it was waited for)
const uint8_t* front_page(uint32_t cb, uint32_t itile, const std::string& what) {
    const CBConfig& cfg = cb_cfg(cb, what);
    const CBState& s = current_core().cb[cb];
    if (itile >= s.waited) {
        fail(what + ": reads tile " + std::to_string(itile) + " of CB " + std::to_string(cb) +
             " but cb_wait_front guaranteed " + std::to_string(s.waited) + " page(s)");
    }
    const uint32_t page = (s.rd_page + itile) % cfg.pages();
    return current_core().l1 + cfg.offset + page * cfg.page_bytes;
}

// Unpack front tile `itile` of `cb` into a source register (`src_reg`: BF16 exactly, fp32 as TF32
// with a 32-bit DST or BF16 with a 16-bit one, both truncated) or straight into DST (fp32 exact).
void unpack(const ComputeState& e, uint32_t cb, uint32_t itile, bool src_reg, uint32_t* out,
            const std::string& what) {
    const uint8_t* p = front_page(cb, itile, what);
    if (cb_cfg(cb, what).format == tt::DataFormat::Float16_b) {
        fpu::unpack_bf16(reinterpret_cast<const uint16_t*>(p), out);
    } else if (src_reg) {
        fpu::unpack_fp32(reinterpret_cast<const uint32_t*>(p), out, e.fp32_dest_acc);
    } else {
        fpu::unpack_fp32_to_dst(reinterpret_cast<const uint32_t*>(p), out);
    }
}

// Checks the unpacker formats and the DST index, then unpacks the srcA and srcB operand tiles.
void unpack_ab(const ComputeState& e, uint32_t cb_a, uint32_t tile_a, uint32_t cb_b,
               uint32_t tile_b, uint32_t idst, uint32_t* a, uint32_t* b, const std::string& what) {
    check_src(e, true, cb_a, what);
    check_src(e, false, cb_b, what);
    check_matrix_operand(e, true, cb_a, what);
    check_matrix_operand(e, false, cb_b, what);
    check_dst(e, idst, what, false);
    unpack(e, cb_a, tile_a, true, a, what);
    unpack(e, cb_b, tile_b, true, b, what);
}

int phases(const ComputeState& e) { return fpu::fidelity_phases(static_cast<int>(e.fidelity)); }

std::string args5(const char* name, uint32_t a, uint32_t b, uint32_t c, uint32_t d, uint32_t e) {
    return std::string(name) + "(" + std::to_string(a) + ", " + std::to_string(b) + ", " +
           std::to_string(c) + ", " + std::to_string(d) + ", " + std::to_string(e) + ")";
}

}  // namespace

// ---- configuration -------------------------------------------------------------------------
void ttmock::hw_startup(uint32_t icb0, uint32_t icb1, uint32_t ocb, bool reverse) {
    const std::string what = std::string("compute_kernel_hw_startup") +
                             (reverse ? "<SrcOrder::Reverse>(" : "(") + std::to_string(icb0) +
                             ", " + std::to_string(icb1) + ", " + std::to_string(ocb) + ")";
    ComputeState& e = engine(what);
    if (e.started) fail(what + ": compute_kernel_hw_startup is call-once and was already called");
    e.started = true;
    e.srca = fmt(reverse ? icb1 : icb0, what);
    e.srcb = fmt(reverse ? icb0 : icb1, what);
    e.pack = fmt(ocb, what);
}

void ttmock::fpu_init(const char* mode, uint32_t icb0, uint32_t icb1, uint32_t arg) {
    const std::string what = std::string(mode) + " init(" + std::to_string(icb0) + ", " +
                             std::to_string(icb1) + ")";
    ComputeState& e = started_engine(what);
    fmt(icb0, what);
    fmt(icb1, what);
    e.fpu_mode = mode;
    if (e.fpu_mode == "matmul") e.matmul_transpose = arg != 0;
    if (e.fpu_mode.size() > 6 && e.fpu_mode.substr(e.fpu_mode.size() - 6) == "_bcast") {
        e.bcast_type = static_cast<int>(arg);
    }
    if (e.fpu_mode == "reduce") {
        e.reduce_pool = static_cast<int>(arg / 4);
        e.reduce_dim = static_cast<int>(arg % 4);
    }
    if (e.fpu_mode == "copy" && arg != 0) e.fpu_mode = "copy_transpose";
}

void ttmock::reconfig_srca(uint32_t cb) {
    const std::string what = "reconfig_data_format_srca(" + std::to_string(cb) + ")";
    started_engine(what).srca = fmt(cb, what);
}
void ttmock::reconfig_srcb(uint32_t cb) {
    const std::string what = "reconfig_data_format_srcb(" + std::to_string(cb) + ")";
    started_engine(what).srcb = fmt(cb, what);
}
void ttmock::pack_l1_acc(bool enable) {
    started_engine("pack_reconfig_l1_acc(" + std::to_string(enable ? 1 : 0) + ")").pack_l1_acc = enable;
}

void ttmock::reconfig_pack(uint32_t cb) {
    const std::string what = "pack_reconfig_data_format(" + std::to_string(cb) + ")";
    started_engine(what).pack = fmt(cb, what);
}

// ---- DST lifecycle -------------------------------------------------------------------------------
void ttmock::regs(const char* step_c) {
    const std::string step = step_c;
    ComputeState& e = engine(step + "()");
    if (step == "tile_regs_acquire") {
        if (e.dst_state != DstState::Released) {
            fail(step + "(): DST is already acquired (missing tile_regs_commit / tile_regs_wait / "
                        "tile_regs_release since the last acquire)");
        }
        for (auto& t : e.dst) std::fill(std::begin(t), std::end(t), 0u);
        std::fill(std::begin(e.dst_written), std::end(e.dst_written), false);
        e.dst_state = DstState::Acquired;
    } else if (step == "tile_regs_commit") {
        if (e.dst_state != DstState::Acquired) fail("tile_regs_commit(): DST was not acquired by math");
        e.dst_state = DstState::Committed;
    } else if (step == "tile_regs_wait") {
        if (e.dst_state != DstState::Committed) {
            fail("tile_regs_wait(): nothing committed (call tile_regs_commit after the math)");
        }
        e.dst_state = DstState::Waited;
    } else if (step == "tile_regs_release") {
        if (e.dst_state != DstState::Waited) {
            fail("tile_regs_release(): DST is not held by the packer (expected acquire -> commit "
                 "-> wait -> release)");
        }
        e.dst_state = DstState::Released;
    }
    note_progress();
}

// ---- FPU operations -------------------------------------------------------------------------------
void ttmock::matmul(uint32_t in0, uint32_t in1, uint32_t i0, uint32_t i1, uint32_t idst) {
    const std::string what = args5("matmul_tiles", in0, in1, i0, i1, idst);
    ComputeState& e = started_engine(what);
    check_mode(e, "matmul", "matmul_init(in0, in1)", what);
    uint32_t a[kTileElems], b[kTileElems];
    unpack_ab(e, in1, i1, in0, i0, idst, b, a, what);  // in1 -> srcA, in0 -> srcB
    fpu::matmul(e.dst[idst], a, b, e.matmul_transpose, phases(e), e.fp32_dest_acc);
    e.dst_written[idst] = true;
    count("matmul");
}

// add / sub run on ELWADD / ELWSUB (one phase: the LLK forces LoFi), mul on ELWMUL per phase
static void binop(ComputeState& e, const char* op, uint32_t idst, const uint32_t* a,
                  const uint32_t* b, int bcast) {
    if (op[0] == 'm') {
        fpu::eltwise_mul(e.dst[idst], a, b, bcast, phases(e), e.fp32_dest_acc);
    } else {
        fpu::eltwise_add(e.dst[idst], a, b, op[0] == 's', bcast, e.fp32_dest_acc);
    }
    e.dst_written[idst] = true;
}

void ttmock::eltwise_binary(const char* op, uint32_t icb0, uint32_t icb1, uint32_t i0, uint32_t i1,
                            uint32_t idst) {
    const std::string what = args5((std::string(op) + "_tiles").c_str(), icb0, icb1, i0, i1, idst);
    ComputeState& e = started_engine(what);
    check_mode(e, op, std::string(op) + "_init(icb0, icb1)", what);
    uint32_t a[kTileElems], b[kTileElems];
    unpack_ab(e, icb0, i0, icb1, i1, idst, a, b, what);
    binop(e, op, idst, a, b, fpu::kBcastNone);
    count(op);
}

void ttmock::eltwise_bcast(const char* op, int bcast, uint32_t icb0, uint32_t icb1, uint32_t i0,
                           uint32_t i1, uint32_t idst) {
    static const char* names[] = {"NONE", "COL", "ROW", "SCALAR"};
    const std::string what = args5((std::string(op) + "_tiles_bcast<" + names[bcast & 3] + ">").c_str(),
                                   icb0, icb1, i0, i1, idst);
    ComputeState& e = started_engine(what);
    check_mode(e, std::string(op) + "_bcast", std::string(op) + "_bcast_<rows|cols|scalar>_init", what);
    if (e.bcast_type != bcast) fail(what + ": the broadcast init was for another broadcast type");
    uint32_t a[kTileElems], b[kTileElems];
    unpack_ab(e, icb0, i0, icb1, i1, idst, a, b, what);
    binop(e, op, idst, a, b, bcast);
    count(std::string("bcast_") + op);
}

void ttmock::copy(uint32_t icb, uint32_t itile, uint32_t idst) {
    const std::string what = "copy_tile(" + std::to_string(icb) + ", " + std::to_string(itile) +
                             ", " + std::to_string(idst) + ")";
    ComputeState& e = started_engine(what);
    if (e.fpu_mode != "copy" && e.fpu_mode != "copy_transpose") {
        check_mode(e, "copy", "copy_init(cb)", what);
    }
    check_src(e, true, icb, what);
    check_dst(e, idst, what, false);
    const bool to_dest = icb < e.unpack_to_dest.size() &&
                         e.unpack_to_dest[icb] == UnpackToDestMode::UnpackToDestFp32;
    if (to_dest && !e.fp32_dest_acc) {
        fail(what + ": CB " + std::to_string(icb) +
             " is UnpackToDestFp32 but the kernel was created without fp32_dest_acc_en");
    }
    uint32_t a[kTileElems];
    unpack(e, icb, itile, !to_dest, a, what);
    if (to_dest) {
        std::memcpy(e.dst[idst], a, sizeof(a));
    } else {
        fpu::datacopy(e.dst[idst], a, e.fpu_mode == "copy_transpose", e.fp32_dest_acc);
    }
    e.dst_written[idst] = true;
    count("copy");
}

void ttmock::transpose(uint32_t icb, uint32_t itile, uint32_t idst) {
    const std::string what = "transpose_wh_tile(" + std::to_string(icb) + ", " +
                             std::to_string(itile) + ", " + std::to_string(idst) + ")";
    ComputeState& e = started_engine(what);
    check_mode(e, "transpose", "transpose_wh_init(icb, ocb)", what);
    check_src(e, true, icb, what);
    check_dst(e, idst, what, false);
    uint32_t a[kTileElems];
    unpack(e, icb, itile, true, a, what);
    fpu::datacopy(e.dst[idst], a, true, e.fp32_dest_acc);
    e.dst_written[idst] = true;
    count("transpose");
}

void ttmock::reduce(int pool, int dim, uint32_t icb, uint32_t iscaler_cb, uint32_t itile,
                    uint32_t iscaler, uint32_t idst) {
    const std::string what = args5("reduce_tile", icb, iscaler_cb, itile, iscaler, idst);
    ComputeState& e = started_engine(what);
    check_mode(e, "reduce", "reduce_init<pool, dim>(icb, scaler_cb, ocb)", what);
    if (e.reduce_pool != pool || e.reduce_dim != dim) {
        fail(what + ": reduce_init was for another pool type / dimension");
    }
    uint32_t a[kTileElems], s[kTileElems];
    unpack_ab(e, icb, itile, iscaler_cb, iscaler, idst, a, s, what);
    if (pool == MAX) {
        // GMPOOL takes no scaler: the SrcB operand must hold 1.0
        if (s[0] != 0x3F800000u) {
            fail(what + ": a MAX reduction's scaler tile must hold 1.0 (GMPOOL does not scale); "
                 "element [0][0] of CB " + std::to_string(iscaler_cb) + " is " +
                 std::to_string(std::bit_cast<float>(s[0])));
        }
        fpu::reduce_max(e.dst[idst], a, dim, !e.dst_written[idst]);
    } else {
        fpu::reduce_sum(e.dst[idst], a, s, dim, phases(e), e.fp32_dest_acc);
    }
    e.dst_written[idst] = true;
    count("reduce");
}

// ---- SFPU ------------------------------------------------------------------------------------------
void ttmock::sfpu_init(const char* op) {
    ComputeState& e = started_engine(std::string(op) + "_tile_init()");
    e.sfpu_mode = op;
}

void ttmock::sfpu_unary(const char* op_c, uint32_t idst, float param, bool approx) {
    const std::string op = op_c;
    const bool scalar = op.size() > 6 && op.compare(op.size() - 6, 6, "_unary") == 0;
    const std::string what = op + "_tile(" + std::to_string(idst) + ")";
    const std::string init = scalar ? "binop_with_scalar" : op;
    ComputeState& e = started_engine(what);
    if (e.sfpu_mode != init) fail(what + ": call " + init + "_tile_init() first");
    check_dst(e, idst, what, false);
    const sfpu::Unary f = sfpu::unary_from_name(op_c);
    if (f == sfpu::Unary::Unknown) fail("unknown SFPU op " + op);
    sfpu::unary(f, e.dst[idst], param, approx, e.fp32_dest_acc);
    e.dst_written[idst] = true;
    count("sfpu_" + op);
}

void ttmock::sfpu_binary(const char* op_c, uint32_t i0, uint32_t i1, uint32_t odst) {
    const std::string op = op_c;
    const std::string what = op + "_binary_tile(" + std::to_string(i0) + ", " +
                             std::to_string(i1) + ", " + std::to_string(odst) + ")";
    ComputeState& e = started_engine(what);
    if (e.sfpu_mode != op + "_binary") fail(what + ": call " + op + "_binary_tile_init() first");
    check_dst(e, i0, what, false);
    check_dst(e, i1, what, false);
    check_dst(e, odst, what, false);
    const sfpu::Binary f = sfpu::binary_from_name(op_c);
    if (f == sfpu::Binary::Unknown) fail("unknown SFPU binary op " + op);
    sfpu::binary(f, e.dst[odst], e.dst[i0], e.dst[i1], e.fp32_dest_acc);
    e.dst_written[odst] = true;
    count("sfpu_" + op + "_binary");
}

// ---- pack -----------------------------------------------------------------------------------------
void ttmock::pack(uint32_t idst, uint32_t ocb, uint32_t out_index, bool out_of_order) {
    const std::string what = std::string("pack_tile") + (out_of_order ? "<true>(" : "(") +
                             std::to_string(idst) + ", " + std::to_string(ocb) + ", " +
                             std::to_string(out_index) + ")";
    ComputeState& e = started_engine(what);
    check_dst(e, idst, what, true);
    const tt::DataFormat f = fmt(ocb, what);
    if (f != e.pack) {
        fail(what + ": the packer is configured for " + format_name(e.pack) + " but CB " +
             std::to_string(ocb) + " holds " + format_name(f) + "; call pack_reconfig_data_format(" +
             std::to_string(ocb) + ")");
    }
    const CBConfig& cfg = cb_cfg(ocb, what);
    CBState& s = current_core().cb[ocb];
    const uint32_t pos = out_of_order ? out_index : s.pack_pos;
    if (pos >= s.reserved) {
        fail(what + ": writes position " + std::to_string(pos) + " of CB " + std::to_string(ocb) +
             " but cb_reserve_back reserved " + std::to_string(s.reserved) + " page(s)");
    }
    if (!out_of_order) s.pack_pos += 1;
    const uint32_t page = (s.wr_page + pos) % cfg.pages();
    uint8_t* p = current_core().l1 + cfg.offset + page * cfg.page_bytes;
    if (f == tt::DataFormat::Float16_b) {
        auto* h = reinterpret_cast<uint16_t*>(p);
        if (e.pack_l1_acc) {
            fpu::pack_bf16_l1_acc(e.dst[idst], h, e.fp32_dest_acc);
        } else {
            fpu::pack_bf16(e.dst[idst], h, e.fp32_dest_acc);
        }
    } else {
        auto* h = reinterpret_cast<uint32_t*>(p);
        if (e.pack_l1_acc) {
            fpu::pack_fp32_l1_acc(e.dst[idst], h, e.fp32_dest_acc);
        } else {
            fpu::pack_fp32(e.dst[idst], h, e.fp32_dest_acc);
        }
    }
    count("pack");
}
