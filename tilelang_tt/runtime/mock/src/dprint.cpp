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

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <regex>
#include <string>

#include "emulator.hpp"
#include "ttmock/dprint.h"

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

#ifdef TTMOCK_HAVE_FMT
std::string format_args(const char* format, const DPrintArg* args, unsigned n) {
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
        }
    }
    try {
        return fmt::vformat(format, store);
    } catch (const fmt::format_error& err) {
        fail("DPRINT(\"" + shown_format(format) + "\"): " + err.what() + " (the format language is fmt's)");
    }
}
#else
std::string format_one(const DPrintArg& a) {
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
    }
    return {};
}

std::string format_args(const char* format, const DPrintArg* args, unsigned n) {
    std::string out;
    unsigned next = 0;
    for (const char* c = format; *c; ++c) {
        if ((c[0] == '{' && c[1] == '{') || (c[0] == '}' && c[1] == '}')) {
            out += *c++;
        } else if (c[0] == '{' && c[1] == '}' && next < n) {
            out += format_one(args[next++]);
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
    const std::string text = format_args(format, args, n);
    for (int r = risc_lo; r <= risc_hi; ++r) {
        if (sel.riscs[r]) emit(c, r, text);
    }
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

}  // namespace ttmock
