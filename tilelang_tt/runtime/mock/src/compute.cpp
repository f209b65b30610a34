// tilelang-tt mock TT-Metalium: the compute engine (unpack -> FPU/SFPU on DST -> pack).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "emulator.hpp"
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
    // the unpacker and packer step through a CB by the tile size of its format
    const uint32_t page = cb_cfg(cb, what).page_bytes;
    if (page != tile_bytes(f)) {
        fail(what + ": CB " + std::to_string(cb) + " has " + std::to_string(page) +
             "-byte pages but its data format " + format_name(f) + " has " +
             std::to_string(tile_bytes(f)) + "-byte tiles; the unpacker and packer address a "
             "CB in tiles of its format (set_page_size must give the tile size)");
    }
    return f;
}

void count(const std::string& op) { current_core().counters.tile_ops[op] += 1; }

// A CB configured UnpackToDestFp32 is unpacked straight into DST: the matrix engine, which
// reads the srcA/srcB registers, cannot take it as an operand.
void check_matrix_operand(const ComputeState& e, bool srca, uint32_t cb, const std::string& what) {
    if (cb < e.unpack_to_dest.size() && e.unpack_to_dest[cb] == tt::tt_metal::UnpackToDestMode::UnpackToDestFp32) {
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

// Unpack front tile `itile` of `cb` as floats (face layout). `src_reg`: through srcA/srcB
// registers (TF32); otherwise straight to DST.
void unpack(uint32_t cb, uint32_t itile, bool src_reg, float* out, const std::string& what) {
    const CBConfig& cfg = cb_cfg(cb, what);
    const CBState& s = current_core().cb[cb];
    if (itile >= s.waited) {
        fail(what + ": reads tile " + std::to_string(itile) + " of CB " + std::to_string(cb) +
             " but cb_wait_front guaranteed " + std::to_string(s.waited) + " page(s)");
    }
    const uint32_t page = (s.rd_page + itile) % cfg.pages();
    const uint8_t* p = current_core().l1 + cfg.offset + page * cfg.page_bytes;
    if (cfg.format == tt::DataFormat::Float16_b) {
        const auto* h = reinterpret_cast<const uint16_t*>(p);
        for (uint32_t i = 0; i < kTileElems; ++i) out[i] = bf16_bits_to_float(h[i]);
    } else {
        const auto* h = reinterpret_cast<const float*>(p);
        for (uint32_t i = 0; i < kTileElems; ++i) out[i] = src_reg ? round_tf32(h[i]) : h[i];
    }
}

// Checks the unpacker formats and the DST index, then unpacks the srcA and srcB operand tiles.
void unpack_ab(const ComputeState& e, uint32_t cb_a, uint32_t tile_a, uint32_t cb_b,
               uint32_t tile_b, uint32_t idst, float* a, float* b, const std::string& what) {
    check_src(e, true, cb_a, what);
    check_src(e, false, cb_b, what);
    check_matrix_operand(e, true, cb_a, what);
    check_matrix_operand(e, false, cb_b, what);
    check_dst(e, idst, what, false);
    unpack(cb_a, tile_a, true, a, what);
    unpack(cb_b, tile_b, true, b, what);
}

void store_dst(ComputeState& e, uint32_t idst, const float* v) {
    for (uint32_t i = 0; i < kTileElems; ++i) e.dst[idst][i] = e.fp32_dest_acc ? v[i] : round_bf16(v[i]);
    e.dst_written[idst] = true;
}

std::string args5(const char* name, uint32_t a, uint32_t b, uint32_t c, uint32_t d, uint32_t e) {
    return std::string(name) + "(" + std::to_string(a) + ", " + std::to_string(b) + ", " +
           std::to_string(c) + ", " + std::to_string(d) + ", " + std::to_string(e) + ")";
}

float sfpu_apply(const std::string& op, float x, float p) {
    if (op == "fill") return p;
    if (op == "add_unary") return x + p;
    if (op == "sub_unary") return x - p;
    if (op == "mul_unary") return x * p;
    if (op == "div_unary") return x / p;
    if (op == "rsub_unary") return p - x;
    if (op == "exp") return std::exp(x);
    if (op == "log") return std::log(x);
    if (op == "sqrt") return std::sqrt(x);
    if (op == "rsqrt") return 1.0f / std::sqrt(x);
    if (op == "recip") return 1.0f / x;
    if (op == "relu") return x > 0.0f ? x : 0.0f;
    if (op == "gelu") return 0.5f * x * (1.0f + std::erf(x / std::sqrt(2.0f)));
    if (op == "sigmoid") return 1.0f / (1.0f + std::exp(-x));
    if (op == "tanh") return std::tanh(x);
    if (op == "abs") return std::fabs(x);
    if (op == "negative") return -x;
    if (op == "square") return x * x;
    if (op == "silu") return x / (1.0f + std::exp(-x));
    fail("unknown SFPU op " + op);
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
        for (auto& t : e.dst) std::fill(std::begin(t), std::end(t), 0.0f);
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
    static thread_local float a[kTileElems], b[kTileElems], acc[kTileElems];
    unpack_ab(e, in1, i1, in0, i0, idst, b, a, what);  // in1 -> srcA, in0 -> srcB
    for (uint32_t r = 0; r < 32; ++r) {
        for (uint32_t c = 0; c < 32; ++c) {
            float sum = 0.0f;
            for (uint32_t k = 0; k < 32; ++k) {
                const float bv = e.matmul_transpose ? b[face_index(c, k)] : b[face_index(k, c)];
                sum += a[face_index(r, k)] * bv;
            }
            acc[face_index(r, c)] = e.dst[idst][face_index(r, c)] + sum;
        }
    }
    store_dst(e, idst, acc);
    count("matmul");
}

static float binop(const std::string& op, float x, float y) {
    if (op == "add") return x + y;
    if (op == "sub") return x - y;
    return x * y;
}

void ttmock::eltwise_binary(const char* op, uint32_t icb0, uint32_t icb1, uint32_t i0, uint32_t i1,
                            uint32_t idst) {
    const std::string what = args5((std::string(op) + "_tiles").c_str(), icb0, icb1, i0, i1, idst);
    ComputeState& e = started_engine(what);
    check_mode(e, op, std::string(op) + "_init(icb0, icb1)", what);
    static thread_local float a[kTileElems], b[kTileElems], out[kTileElems];
    unpack_ab(e, icb0, i0, icb1, i1, idst, a, b, what);
    for (uint32_t i = 0; i < kTileElems; ++i) out[i] = binop(op, a[i], b[i]);
    store_dst(e, idst, out);
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
    static thread_local float a[kTileElems], b[kTileElems], out[kTileElems];
    unpack_ab(e, icb0, i0, icb1, i1, idst, a, b, what);
    for (uint32_t r = 0; r < 32; ++r) {
        for (uint32_t c = 0; c < 32; ++c) {
            float y = b[face_index(r, c)];
            if (bcast == ROW) y = b[face_index(0, c)];
            if (bcast == COL) y = b[face_index(r, 0)];
            if (bcast == SCALAR) y = b[face_index(0, 0)];
            out[face_index(r, c)] = binop(op, a[face_index(r, c)], y);
        }
    }
    store_dst(e, idst, out);
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
                         e.unpack_to_dest[icb] == tt::tt_metal::UnpackToDestMode::UnpackToDestFp32;
    if (to_dest && !e.fp32_dest_acc) {
        fail(what + ": CB " + std::to_string(icb) +
             " is UnpackToDestFp32 but the kernel was created without fp32_dest_acc_en");
    }
    static thread_local float a[kTileElems], out[kTileElems];
    unpack(icb, itile, !to_dest, a, what);
    for (uint32_t r = 0; r < 32; ++r) {
        for (uint32_t c = 0; c < 32; ++c) {
            out[face_index(r, c)] =
                e.fpu_mode == "copy_transpose" ? a[face_index(c, r)] : a[face_index(r, c)];
        }
    }
    store_dst(e, idst, out);
    count("copy");
}

void ttmock::transpose(uint32_t icb, uint32_t itile, uint32_t idst) {
    const std::string what = "transpose_tile(" + std::to_string(icb) + ", " +
                             std::to_string(itile) + ", " + std::to_string(idst) + ")";
    ComputeState& e = started_engine(what);
    check_mode(e, "transpose", "transpose_init(icb)", what);
    check_src(e, true, icb, what);
    check_dst(e, idst, what, false);
    static thread_local float a[kTileElems], out[kTileElems];
    unpack(icb, itile, true, a, what);
    for (uint32_t r = 0; r < 32; ++r)
        for (uint32_t c = 0; c < 32; ++c) out[face_index(r, c)] = a[face_index(c, r)];
    store_dst(e, idst, out);
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
    static thread_local float a[kTileElems], s[kTileElems], out[kTileElems];
    unpack_ab(e, icb, itile, iscaler_cb, iscaler, idst, a, s, what);
    const float scale = s[0];
    std::memcpy(out, e.dst[idst], sizeof(out));
    const bool first = !e.dst_written[idst];  // the first reduction into a tile sets it
    auto combine = [&](uint32_t at, float v) {
        out[at] = first ? v : pool == MAX ? std::max(out[at], v) : out[at] + v;
    };
    if (dim == REDUCE_ROW) {
        for (uint32_t r = 0; r < 32; ++r) {
            float acc = pool == MAX ? -INFINITY : 0.0f;
            for (uint32_t c = 0; c < 32; ++c) {
                const float v = a[face_index(r, c)] * scale;
                acc = pool == MAX ? std::max(acc, v) : acc + v;
            }
            combine(face_index(r, 0), acc);
        }
    } else if (dim == REDUCE_COL) {
        for (uint32_t c = 0; c < 32; ++c) {
            float acc = pool == MAX ? -INFINITY : 0.0f;
            for (uint32_t r = 0; r < 32; ++r) {
                const float v = a[face_index(r, c)] * scale;
                acc = pool == MAX ? std::max(acc, v) : acc + v;
            }
            combine(face_index(0, c), acc);
        }
    } else {
        float acc = pool == MAX ? -INFINITY : 0.0f;
        for (uint32_t i = 0; i < kTileElems; ++i) {
            const float v = a[i] * scale;
            acc = pool == MAX ? std::max(acc, v) : acc + v;
        }
        combine(0, acc);
    }
    store_dst(e, idst, out);
    count("reduce");
}

// ---- SFPU ------------------------------------------------------------------------------------------
void ttmock::sfpu_init(const char* op) {
    ComputeState& e = started_engine(std::string(op) + "_tile_init()");
    e.sfpu_mode = op;
}

void ttmock::sfpu_unary(const char* op_c, uint32_t idst, float param) {
    const std::string op = op_c;
    const bool scalar = op.size() > 6 && op.compare(op.size() - 6, 6, "_unary") == 0;
    const std::string what = op + "_tile(" + std::to_string(idst) + ")";
    const std::string init = scalar ? "binop_with_scalar" : op;
    ComputeState& e = started_engine(what);
    if (e.sfpu_mode != init) fail(what + ": call " + init + "_tile_init() first");
    check_dst(e, idst, what, false);
    static thread_local float out[kTileElems];
    for (uint32_t i = 0; i < kTileElems; ++i) out[i] = sfpu_apply(op, e.dst[idst][i], param);
    store_dst(e, idst, out);
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
    static thread_local float out[kTileElems];
    for (uint32_t i = 0; i < kTileElems; ++i) {
        const float x = e.dst[i0][i], y = e.dst[i1][i];
        out[i] = op == "add" ? x + y : op == "sub" ? x - y : op == "mul" ? x * y : x / y;
    }
    store_dst(e, odst, out);
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
        for (uint32_t i = 0; i < kTileElems; ++i) h[i] = float_to_bf16_bits(e.dst[idst][i]);
    } else {
        auto* h = reinterpret_cast<float*>(p);
        for (uint32_t i = 0; i < kTileElems; ++i) h[i] = e.dst[idst][i];
    }
    count("pack");
}
