// tilelang-tt mock TT-Metalium: DPRINT on the host. Formats a kernel's DEVICE_PRINT with fmt (the
// format language of the SDK's device print) and prints complete lines with the print server's
// prefix "0:(x=X,y=Y):RISC: ", for the cores and RISC-V threads TT_METAL_DPRINT_CORES /
// TT_METAL_DPRINT_RISCVS select ("all", "x,y", "(x,y),(x,y)", "(x1,y1)-(x2,y2)"). A core's lines
// are collected during a round and printed between rounds in core order, so the output does not
// depend on the number of host threads. Without fmt installed, "{}" fields are filled in order
// (integers, strings and pointers as fmt prints them, floats as std::to_chars' shortest form,
// which is fmt's too) and any other field is an error asking for fmt.
#if __has_include(<fmt/args.h>) && !defined(TTMOCK_NO_FMT)
#define TTMOCK_HAVE_FMT 1
#include <fmt/args.h>
#include <fmt/format.h>
#endif

#include <charconv>
#include <sstream>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <regex>
#include <string>

#include "emulator.hpp"
#include "hostdevcommon/dprint_common.h"
#include "ttmock/dprint.h"
#include "ttmock/numerics.hpp"

namespace ttmock {
namespace {

constexpr const char* kRiscNames[5] = {"BR", "NC", "TR0", "TR1", "TR2"};

struct XY {
    uint32_t x, y;
};

struct Selection {
    bool any = false, all = false;
    std::vector<std::pair<XY, XY>> ranges;  // inclusive rectangles
    bool riscs[5] = {true, true, true, true, true};

    bool selects(uint32_t x, uint32_t y) const {
        if (all) return true;
        for (const auto& [lo, hi] : ranges) {
            if (x >= lo.x && x <= hi.x && y >= lo.y && y <= hi.y) return true;
        }
        return false;
    }
};

Selection parse_selection() {
    Selection sel;
    const char* cores = std::getenv("TT_METAL_DPRINT_CORES");
    if (cores == nullptr || *cores == 0) return sel;
    sel.any = true;
    const std::string spec = cores;
    if (spec == "all" || spec == "worker" || spec == "workers") {
        sel.all = true;
    } else {
        static const std::regex range(R"(\((\d+),(\d+)\)-\((\d+),(\d+)\))"), pair(R"(\(?(\d+),(\d+)\)?)");
        std::string rest = spec;
        std::smatch m;
        while (!rest.empty()) {
            if (std::regex_search(rest, m, range) && m.position(0) == 0) {
                sel.ranges.push_back({XY{static_cast<uint32_t>(std::stoul(m[1])), static_cast<uint32_t>(std::stoul(m[2]))},
                                      XY{static_cast<uint32_t>(std::stoul(m[3])), static_cast<uint32_t>(std::stoul(m[4]))}});
            } else if (std::regex_search(rest, m, pair) && m.position(0) == 0) {
                XY c{static_cast<uint32_t>(std::stoul(m[1])), static_cast<uint32_t>(std::stoul(m[2]))};
                sel.ranges.push_back({c, c});
            } else {
                host_fail("TT_METAL_DPRINT_CORES=" + spec +
                          ": expected all, x,y, (x,y),(x,y) or (x1,y1)-(x2,y2)");
            }
            rest = rest.substr(m.length(0));
            if (!rest.empty() && (rest[0] == ',' || rest[0] == ';' || rest[0] == ' ')) rest = rest.substr(1);
        }
    }
    if (const char* riscs = std::getenv("TT_METAL_DPRINT_RISCVS"); riscs && *riscs) {
        const std::string r = riscs;
        for (int i = 0; i < 5; ++i) sel.riscs[i] = r.find(kRiscNames[i]) != std::string::npos;
        if (r.find("TR*") != std::string::npos) sel.riscs[2] = sel.riscs[3] = sel.riscs[4] = true;
    }
    return sel;
}

const Selection& selection() {
    static const Selection sel = parse_selection();
    return sel;
}

std::string shown_format(const char* format) {  // the format string as written in the kernel
    std::string shown;
    for (const char* ch = format; *ch; ++ch) shown += *ch == '\n' ? std::string("\\n") : std::string(1, *ch);
    return shown;
}

// A TileSlice as TT-Metalium's print server writes it: the samples row by row, separated by
// spaces, each as the C++ stream prints it (6 significant digits), a newline after each row with
// endl_rows; a note when the slice had more samples than the TileSlice holds; the MATH thread's
// warning (it has no CB pointers).
std::string tile_slice_text(const void* p, int risc) {
    const auto* front = static_cast<const TileSliceHostDev<0>*>(p);
    const auto* ts = front;
    if (risc == 3) return "Warning: MATH core does not support TileSlice printing, omitting print...\n";
    if (risc == 4) ts = reinterpret_cast<const TileSliceHostDev<0>*>(static_cast<const uint8_t*>(p) + sizeof(TileSliceHostDev<0>) + front->pad);
    std::ostringstream os;
    const tt::DataFormat df = static_cast<tt::DataFormat>(ts->data_format);
    if (ts->return_code == DPrintErrorUnsupportedFormat) {
        os << "Tried printing CBIndex::c_" << int(ts->cb_id) << ": Unsupported data format (" << format_name(df) << ")\n";
        return os.str();
    }
    const SliceRange& r = ts->slice_range;
    const uint8_t* data = ts->data;
    uint32_t i = 0;
    for (int h = r.h0; h < r.h1; h += r.hs) {
        bool exceeded = false;
        for (int w = r.w0; w < r.w1; w += r.ws) {
            if (i >= ts->data_count) {
                exceeded = true;
                break;
            }
            switch (df) {
                case tt::DataFormat::Float16_b: {
                    uint16_t b;
                    std::memcpy(&b, data + 2 * i, 2);
                    os << bf16_bits_to_float(b);
                    break;
                }
                case tt::DataFormat::Float32: {
                    float f;
                    std::memcpy(&f, data + 4 * i, 4);
                    os << f;
                    break;
                }
                case tt::DataFormat::Int32: {
                    int32_t v;
                    std::memcpy(&v, data + 4 * i, 4);
                    os << v;
                    break;
                }
                case tt::DataFormat::UInt32: {
                    uint32_t v;
                    std::memcpy(&v, data + 4 * i, 4);
                    os << v;
                    break;
                }
                case tt::DataFormat::UInt16: {
                    uint16_t v;
                    std::memcpy(&v, data + 2 * i, 2);
                    os << v;
                    break;
                }
                case tt::DataFormat::UInt8: os << unsigned(data[i]); break;
                case tt::DataFormat::Int8: os << int(static_cast<int8_t>(data[i])); break;
                default: break;
            }
            if (w + r.ws < r.w1) os << " ";
            ++i;
        }
        if (exceeded) {
            os << "<TileSlice data truncated due to exceeding max count (" << unsigned(ts->data_count) << ")>\n";
            break;
        }
        if (ts->endl_rows) os << "\n";
    }
    return os.str();
}

#ifdef TTMOCK_HAVE_FMT
std::string format_args(const char* format, const DPrintArg* args, unsigned n, int risc) {
    fmt::dynamic_format_arg_store<fmt::format_context> store;
    for (unsigned i = 0; i < n; ++i) {
        const DPrintArg& a = args[i];
        switch (a.kind) {
            case DPrintArg::Signed: store.push_back(a.i); break;
            case DPrintArg::Unsigned: store.push_back(a.u); break;
            case DPrintArg::Float: store.push_back(a.f); break;
            case DPrintArg::String: store.push_back(a.s); break;
            case DPrintArg::Char: store.push_back(static_cast<char>(a.i)); break;
            case DPrintArg::Bool: store.push_back(a.u != 0); break;
            case DPrintArg::Pointer: store.push_back(a.p); break;
            case DPrintArg::TileSlice: store.push_back(tile_slice_text(a.p, risc)); break;
        }
    }
    try {
        return fmt::vformat(format, store);
    } catch (const fmt::format_error& err) {
        fail("DPRINT(\"" + shown_format(format) + "\"): " + err.what() + " (the format language is fmt's)");
    }
}
#else
std::string format_one(const DPrintArg& a, int risc) {
    char buf[64];
    switch (a.kind) {
        case DPrintArg::Signed: return std::to_string(a.i);
        case DPrintArg::Unsigned: return std::to_string(a.u);
        case DPrintArg::Float: {
            const auto r = std::to_chars(buf, buf + sizeof(buf), a.f);
            return std::string(buf, r.ptr);
        }
        case DPrintArg::String: return a.s;
        case DPrintArg::Char: return std::string(1, static_cast<char>(a.i));
        case DPrintArg::Bool: return a.u ? "true" : "false";
        case DPrintArg::Pointer: std::snprintf(buf, sizeof(buf), "%p", a.p); return buf;
        case DPrintArg::TileSlice: return tile_slice_text(a.p, risc);
    }
    return {};
}

std::string format_args(const char* format, const DPrintArg* args, unsigned n, int risc) {
    std::string out;
    unsigned next = 0;
    for (const char* c = format; *c; ++c) {
        if ((c[0] == '{' && c[1] == '{') || (c[0] == '}' && c[1] == '}')) {
            out += *c++;
        } else if (c[0] == '{' && c[1] == '}' && next < n) {
            out += format_one(args[next++], risc);
            ++c;
        } else if (c[0] == '{' || c[0] == '}') {
            fail("DPRINT(\"" + shown_format(format) + "\"): this emulator was built without fmt, so it "
                 "prints only \"{}\" fields, one per argument (install libfmt-dev for fmt's format language)");
        } else {
            out += *c;
        }
    }
    return out;
}
#endif

void emit(Core& c, int risc, const std::string& text) {
    std::string& line = c.dprint_partial[risc];
    for (char ch : text) {
        line += ch;
        if (ch == '\n') {
            c.dprint_out += "0:(x=" + std::to_string(c.x) + ",y=" + std::to_string(c.y) + "):" + kRiscNames[risc] +
                            ": " + line;
            line.clear();
        }
    }
}

}  // namespace

void dprint(int which, const char* format, const DPrintArg* args, unsigned n) {
    const Selection& sel = selection();
    Core& c = current_core();
    if (!sel.any || !sel.selects(c.x, c.y)) return;
    const KernelKind kind = current().kind;
    int risc_lo = 0, risc_hi = -1;  // the threads that print: [risc_lo, risc_hi]
    if (kind == KernelKind::Compute) {
        if (which == 0) risc_lo = 2, risc_hi = 4;
        else if (which <= 3) risc_lo = risc_hi = which + 1;
    } else {
        const int risc = kind == KernelKind::Writer ? 0 : 1;  // RISCV_0 = BRISC (NOC 0), RISCV_1 = NCRISC
        if (which == 0 || (which == 4 && risc == 0) || (which == 5 && risc == 1)) risc_lo = risc_hi = risc;
    }
    if (risc_hi < risc_lo) return;
    bool per_thread = false;  // a TileSlice prints what each thread sees
    for (unsigned i = 0; i < n; ++i) per_thread |= args[i].kind == DPrintArg::TileSlice;
    const std::string text = per_thread ? std::string() : format_args(format, args, n, risc_lo);
    for (int r = risc_lo; r <= risc_hi; ++r) {
        if (sel.riscs[r]) emit(c, r, per_thread ? format_args(format, args, n, r) : text);
    }
}

void tile_slice(void* front, void* back, int max_bytes, uint8_t cb, int tile_idx, const SliceRange& range,
                int ptr_type, bool endl_rows, bool untilize) {
    Core& core = current_core();
    const std::string call = "TileSlice(" + std::to_string(cb) + ", " + std::to_string(tile_idx) + ", ...)";
    if (cb >= static_cast<uint32_t>(kMaxCBs) || !core.cb_cfg[cb].used) {
        current().last_call = call;
        fail(call + ": CB " + std::to_string(cb) + " was not created on this core");
    }
    const CBConfig& cfg = core.cb_cfg[cb];
    const CBState& s = core.cb[cb];
    auto capture = [&](void* out, bool read_ptr) {
        auto* ts = static_cast<TileSliceHostDev<0>*>(out);
        ts->slice_range = range;
        ts->cb_id = cb;
        ts->endl_rows = endl_rows;
        ts->data_count = 0;
        ts->pad = static_cast<uint8_t>(max_bytes);
        ts->data_format = static_cast<uint8_t>(cfg.format);
        const uint32_t page = read_ptr ? s.rd_page : s.wr_page;
        const uint64_t offset = cfg.offset + static_cast<uint64_t>(page) * cfg.page_bytes +
                                static_cast<int64_t>(tile_idx) * cfg.page_bytes;
        ts->cb_ptr = static_cast<uint32_t>(offset);
        uint32_t bytes = 0;
        switch (cfg.format) {
            case tt::DataFormat::Float32: case tt::DataFormat::Int32: case tt::DataFormat::UInt32: bytes = 4; break;
            case tt::DataFormat::Float16_b: case tt::DataFormat::UInt16: bytes = 2; break;
            case tt::DataFormat::Int8: case tt::DataFormat::UInt8: bytes = 1; break;
            default: ts->return_code = DPrintErrorUnsupportedFormat; return;
        }
        if (tile_idx < 0 || offset + 1024u * bytes > device().prof.l1_bytes) {
            current().last_call = call;
            fail(call + ": tile " + std::to_string(tile_idx) + " of CB " + std::to_string(cb) + " lies outside L1");
        }
        ts->return_code = DPrintOK;
        const uint8_t* tile = core.l1 + offset;
        uint32_t at = 0;
        for (uint32_t h = range.h0; h < range.h1; h += range.hs) {
            for (uint32_t w = range.w0; w < range.w1; w += range.ws) {
                if (at + bytes > static_cast<uint32_t>(max_bytes)) return;
                const uint32_t idx = untilize ? face_index(h, w) : w + h * 32;
                std::memcpy(ts->data + at, tile + idx * bytes, bytes);
                at += bytes;
                ++ts->data_count;
            }
            if (range.ws == 0) break;
        }
    };
    if (range.hs == 0 || range.ws == 0) {
        current().last_call = call;
        fail(call + ": a SliceRange step of 0");
    }
    capture(front, ptr_type != 0);
    if (back != nullptr) capture(back, false);
}

void dprint_flush(std::vector<Core*>& cores) {
    bool any = false;
    for (Core* c : cores) {
        if (c->dprint_out.empty()) continue;
        std::fputs(c->dprint_out.c_str(), stdout);
        c->dprint_out.clear();
        any = true;
    }
    if (any) std::fflush(stdout);
}

// ASSERT (api/debug/assert.h): a kernel's failed device assert, as the watcher reports it
[[noreturn]] void assert_tripped(const char* condition, const char* file, int line) {
    std::string where = file;
    const auto slash = where.find_last_of('/');
    if (slash != std::string::npos) where = where.substr(slash + 1);
    fail("ASSERT(" + std::string(condition) + ") failed at " + where + ":" + std::to_string(line) +
         " (the watcher's assert: on hardware the core hangs and the watcher reports it)");
}

}  // namespace ttmock
