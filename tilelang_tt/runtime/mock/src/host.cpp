// tilelang-tt mock TT-Metalium: host API - programs, kernel JIT, device, buffers, command queue,
// workload launch. The functions have the SDK's names and signatures (tt-metalium/*.hpp).
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <set>
#include <sstream>

#include "host_internal.hpp"
#include "tt-metalium/tensor_accessor_args.hpp"

#ifndef TTMOCK_INCLUDE_DIR
#error "TTMOCK_INCLUDE_DIR must point at the mock headers"
#endif
#ifndef TTMOCK_KERNEL_FLAGS  // optimisation of JIT-compiled kernels (mockbuild.py sets it)
#define TTMOCK_KERNEL_FLAGS "-O2"
#endif
#ifndef TTMOCK_CXX
#define TTMOCK_CXX "c++"
#endif
#ifndef TTMOCK_VERSION
#define TTMOCK_VERSION "dev"
#endif

namespace ttmock {

namespace {

void check_on_grid(const std::vector<CoreCoord>& cores) {
    const Profile& p = device().prof;
    for (const CoreCoord& c : cores) {
        if (c.x >= p.grid_x || c.y >= p.grid_y) {
            host_fail("core " + c.str() + " is outside the " + std::to_string(p.grid_x) + "x" +
                      std::to_string(p.grid_y) + " compute grid of " + p.name);
        }
    }
}

std::vector<CoreCoord> cores_of(const std::variant<CoreCoord, CoreRange, CoreRangeSet>& spec) {
    std::vector<CoreCoord> out;
    if (auto* c = std::get_if<CoreCoord>(&spec)) out.push_back(*c);
    if (auto* r = std::get_if<CoreRange>(&spec)) out = tt::tt_metal::corerange_to_cores(CoreRangeSet(*r), std::nullopt, true);
    if (auto* s = std::get_if<CoreRangeSet>(&spec)) out = tt::tt_metal::corerange_to_cores(*s, std::nullopt, true);
    check_on_grid(out);
    return out;
}

std::vector<CoreCoord> cores_of(const std::variant<CoreRange, CoreRangeSet>& spec) {
    if (auto* r = std::get_if<CoreRange>(&spec)) return cores_of(std::variant<CoreCoord, CoreRange, CoreRangeSet>(*r));
    return cores_of(std::variant<CoreCoord, CoreRange, CoreRangeSet>(std::get<CoreRangeSet>(spec)));
}

uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
    for (unsigned char ch : s) {
        h ^= ch;
        h *= 1099511628211ull;
    }
    return h;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    if (!in) host_fail("CreateKernel: cannot read kernel source " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string cache_dir() {
    std::string dir;
    if (const char* c = std::getenv("TT_MOCK_CACHE"); c && *c) {
        dir = c;
    } else if (const char* home = std::getenv("HOME")) {
        dir = std::string(home) + "/.cache/tilelang-tt/mock";
    } else {
        dir = "/tmp/tilelang-tt-mock";
    }
    dir += "/kernels";
    // mkdir -p without a shell (a kernel's compile and load ask for it each time)
    for (size_t pos = dir.find('/', 1);; pos = dir.find('/', pos + 1)) {
        const std::string part = pos == std::string::npos ? dir : dir.substr(0, pos);
        if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) host_fail("cannot create kernel cache " + dir);
        if (pos == std::string::npos) break;
    }
    return dir;
}

std::string base_name(const std::string& path) {
    const auto slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A kernel's JIT build (as the SDK's at program build): its cached shared object and the command
// that makes it.
struct KernelBuild {
    std::string so, cmd, log, tmp;
};

KernelBuild kernel_build(const KernelDesc& k) {
    const std::string source = read_file(k.path);
    std::ostringstream flags;
    if (!k.compile_args.empty()) {  // as the SDK's JIT: -DKERNEL_COMPILE_TIME_ARGS=a,b,c
        flags << "-DKERNEL_COMPILE_TIME_ARGS=";
        for (size_t i = 0; i < k.compile_args.size(); ++i) flags << (i ? "," : "") << k.compile_args[i];
    }
    if (!k.named_compile_args.empty()) {  // as the SDK's JIT: {"name", value} pairs, sorted by name
        std::map<std::string, uint32_t> sorted(k.named_compile_args.begin(), k.named_compile_args.end());
        flags << " '-DKERNEL_COMPILE_TIME_ARG_MAP=";
        bool first = true;
        for (const auto& [name, value] : sorted) {
            for (char ch : name) {
                if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') {
                    host_fail("CreateKernel: named compile-time arg \"" + name + "\" is not an identifier");
                }
            }
            flags << (first ? "" : ",") << "{\"" << name << "\"," << value << "}";
            first = false;
        }
        flags << "'";
    }
    for (const auto& [name, value] : k.defines) flags << " '-D" << name << "=" << value << "'";
    if (!k.cb_formats.empty()) {  // as the SDK's JIT: the CBs' formats, known when the kernel is built
        flags << " '-DTTMOCK_CB_FORMATS=";
        for (const auto& [idx, f] : k.cb_formats) flags << "{" << int(idx) << "," << int(static_cast<uint8_t>(f)) << "},";
        flags << "'";
    }
    // what the SDK's firmware wrapper puts in front of the kernel: for compute kernels
    // `using namespace ckernel;` and DST_ACCUM_MODE, for data movement kernels the dataflow API
    if (k.kind == KernelKind::Compute) {
        flags << " -include ttmock/jit_compute.h -DTTMOCK_DST_ACCUM_MODE="
              << (k.compute.fp32_dest_acc_en ? "true" : "false")
              << " -DTTMOCK_DST_FULL_SYNC=" << (k.compute.dst_full_sync_en ? 1 : 0);
    } else {
        flags << " -include api/dataflow/dataflow_api.h -DNOC_INDEX="
              << (k.kind == KernelKind::Reader ? 1 : 0)
              << (k.kind == KernelKind::Reader ? " -DCOMPILE_FOR_NCRISC" : " -DCOMPILE_FOR_BRISC");
    }
    const std::string key_text = std::string(TTMOCK_VERSION) + "\n" + TTMOCK_CXX + " " +
                                 TTMOCK_KERNEL_FLAGS + "\n" +
                                 flags.str() + "\n" + source;
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(fnv1a(key_text)));
    KernelBuild b;
    b.so = cache_dir() + "/" + base_name(k.path) + "-" + hex + ".so";
    b.tmp = b.so + ".tmp" + std::to_string(getpid());
    b.log = b.tmp + ".log";
    // the kernel source's directory first, so kernel-local headers resolve as on the SDK
    std::string src_dir = k.path.substr(0, k.path.find_last_of('/') == std::string::npos
                                               ? 0 : k.path.find_last_of('/'));
    std::ostringstream cmd;
    cmd << TTMOCK_CXX << " -std=c++20 " << TTMOCK_KERNEL_FLAGS << " -fPIC -shared -w";
    if (!src_dir.empty()) cmd << " -I'" << src_dir << "'";
    cmd << " -I'" << TTMOCK_INCLUDE_DIR << "' " << flags.str() << " '" << k.path << "' -o '"
        << b.tmp << "' > '" << b.log << "' 2>&1";
    b.cmd = cmd.str();
    return b;
}

// Kernels load once per process; builds run in the background from CreateKernel (a program's
// kernels compile side by side, on the host's cores) until the program first needs them.
std::map<std::string, void*> loaded_kernels;
std::map<std::string, std::shared_future<std::string>> kernel_builds;  // .so -> compiler output on failure

void start_kernel_build(const KernelBuild& b) {
    struct stat st;
    if (loaded_kernels.count(b.so) || kernel_builds.count(b.so) || stat(b.so.c_str(), &st) == 0) return;
    kernel_builds[b.so] = std::async(std::launch::async, [b]() -> std::string {
        if (std::system(b.cmd.c_str()) != 0) {
            std::ifstream in(b.log);
            std::stringstream out;
            out << in.rdbuf();
            std::remove(b.log.c_str());
            std::remove(b.tmp.c_str());
            return "\n" + out.str();  // never empty: a failed build
        }
        std::remove(b.log.c_str());
        if (std::rename(b.tmp.c_str(), b.so.c_str()) != 0) return "cannot store compiled kernel " + b.so;
        return {};
    }).share();
}

// The kernel's entry point, once its build (started by CreateKernel) has finished.
void* compile_kernel(const KernelDesc& k) {
    const KernelBuild b = kernel_build(k);
    if (auto it = loaded_kernels.find(b.so); it != loaded_kernels.end()) return it->second;
    start_kernel_build(b);
    if (auto it = kernel_builds.find(b.so); it != kernel_builds.end()) {
        const std::string err = it->second.get();
        kernel_builds.erase(it);
        if (!err.empty()) {
            host_fail(err[0] == '\n' ? "CreateKernel: " + base_name(k.path) + " (" + kind_name(k.kind) +
                                           " kernel) does not compile against the TT-Metalium API:" + err
                                     : err);
        }
    }
    void* handle = dlopen(b.so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) host_fail(std::string("cannot load compiled kernel: ") + dlerror());
    void* entry = dlsym(handle, "_Z11kernel_mainv");
    if (!entry) {
        host_fail("kernel " + base_name(k.path) + " defines no `void kernel_main()`");
    }
    loaded_kernels[b.so] = entry;
    return entry;
}

}  // namespace

// The CB indices one CircularBufferConfig creates share its L1 region (bit i: c_i).
static uint32_t region_mask(const CBAlloc& cb) {
    uint32_t mask = 0;
    for (const auto& [idx, fmtv] : cb.formats) mask |= 1u << idx;
    return mask;
}

// A CB on an L1 buffer's memory (set_globally_allocated_address): on every core of the CB the
// ring must lie inside the shards of a sharded L1 buffer that core holds.
static void configure_global_cb(Device& d, const CBAlloc& cb) {
    const uint32_t addr = *cb.global_address;
    const ShardedBuffer* b = sharded_buffer_at(false, addr);
    const int idx0 = cb.formats.empty() ? -1 : cb.formats.begin()->first;
    if (b == nullptr) {
        host_fail("circular buffer c_" + std::to_string(idx0) + ": its globally allocated address " +
                  std::to_string(addr) + " starts no sharded L1 buffer (the emulator models CBs over sharded L1 buffers)");
    }
    for (const CoreCoord& cc : cb.cores) {
        uint32_t shards = 0;
        for (uint32_t s = 0; s < b->num_shards(); ++s) {
            if (b->holders[s % b->holders.size()] == std::make_pair(static_cast<uint32_t>(cc.x), static_cast<uint32_t>(cc.y))) {
                ++shards;
            }
        }
        if (uint64_t(shards) * b->shard_bytes() < cb.total_size) {
            host_fail("circular buffer c_" + std::to_string(idx0) + " on core " + cc.str() + " is globally allocated on the L1 buffer at " +
                      std::to_string(addr) + ", but that core holds " + std::to_string(shards) + " of its shards (" +
                      std::to_string(uint64_t(shards) * b->shard_bytes()) + " bytes) and the CB needs " +
                      std::to_string(cb.total_size) + " bytes: it would use L1 the buffer does not own there");
        }
        Core& c = d.core_at(cc.x, cc.y);
        for (const auto& [idx, fmtv] : cb.formats) {
            if (c.cb_cfg[idx].used) host_fail("circular buffer c_" + std::to_string(idx) + " is created twice on core " + cc.str());
            CBConfig& cfg = c.cb_cfg[idx];
            cfg.used = true;
            cfg.global = true;
            cfg.offset = addr;
            cfg.total_bytes = cb.total_size;
            cfg.format = fmtv;
            auto ps = cb.page_sizes.find(idx);
            if (ps == cb.page_sizes.end() || ps->second == 0 || cb.total_size % ps->second) {
                host_fail("circular buffer c_" + std::to_string(idx) + ": no page size, or the total size is not a multiple of it");
            }
            cfg.page_bytes = ps->second;
            cfg.region = region_mask(cb);
        }
    }
}

void launch(tt::tt_metal::detail::ProgramImpl& p) {
    Device& d = device();
    // reset core state, then configure CBs and semaphores
    for (Core& c : d.cores) {
        for (int i = 0; i < kMaxCBs; ++i) {
            c.cb_cfg[i] = CBConfig{};
            c.cb[i] = CBState{};
        }
        c.l1_used = d.prof.l1_base;
    }
    for (const CBAlloc& cb : p.cbs) {
        if (cb.global_address) {
            configure_global_cb(d, cb);
            continue;
        }
        uint32_t offset = d.prof.l1_base;
        for (const CoreCoord& cc : cb.cores) offset = std::max(offset, d.core_at(cc.x, cc.y).l1_used);
        // ProgramImpl::allocate_circular_buffers (tt_metal/impl/program/program.cpp) aligns each CB's
        // address to the allocator's DRAM alignment: 32 on Wormhole, 64 on Blackhole
        offset = (offset + d.prof.dram_align - 1) / d.prof.dram_align * d.prof.dram_align;
        for (const CoreCoord& cc : cb.cores) {
            Core& c = d.core_at(cc.x, cc.y);
            if (offset + cb.total_size > d.l1_buffers_bottom && d.l1_buffers_bottom < d.prof.l1_bytes) {
                std::ostringstream os;
                os << "circular buffers clash with L1 buffers on core (" << cc.x << "," << cc.y
                   << "): circular buffer c_" << static_cast<int>(cb.formats.begin()->first) << " needs "
                   << cb.total_size << " bytes at L1 offset " << offset << " but L1 buffers start at "
                   << d.l1_buffers_bottom;
                host_fail(os.str());
            }
            if (offset + cb.total_size > d.prof.l1_bytes) {
                std::ostringstream os;
                os << "L1 over capacity on core (" << cc.x << "," << cc.y << "): circular buffer c_"
                   << static_cast<int>(cb.formats.begin()->first) << " needs " << cb.total_size
                   << " bytes at L1 offset " << offset << " but L1 holds " << d.prof.l1_bytes
                   << " bytes (" << d.prof.l1_base << " reserved by firmware)";
                host_fail(os.str());
            }
            for (const auto& [idx, fmtv] : cb.formats) {
                if (c.cb_cfg[idx].used) {
                    host_fail("circular buffer c_" + std::to_string(idx) + " is created twice on core " +
                              cc.str());
                }
                CBConfig& cfg = c.cb_cfg[idx];
                cfg.used = true;
                cfg.offset = offset;
                cfg.total_bytes = cb.total_size;
                cfg.format = fmtv;
                cfg.region = region_mask(cb);
                auto ps = cb.page_sizes.find(idx);
                if (ps == cb.page_sizes.end()) {
                    host_fail("circular buffer c_" + std::to_string(idx) +
                              " has no page size (CircularBufferConfig::set_page_size)");
                }
                cfg.page_bytes = ps->second;
                if (cfg.page_bytes == 0 || cb.total_size % cfg.page_bytes) {
                    host_fail("circular buffer c_" + std::to_string(idx) + ": total size " +
                              std::to_string(cb.total_size) + " is not a multiple of the page size " +
                              std::to_string(cfg.page_bytes));
                }
            }
            c.l1_used = offset + cb.total_size;
        }
    }
    d.sem_count = static_cast<uint32_t>(p.semaphores.size());
    for (uint32_t id = 0; id < p.semaphores.size(); ++id) {
        for (const CoreCoord& cc : p.semaphores[id].cores) {
            Core& c = d.core_at(cc.x, cc.y);
            const uint32_t v = p.semaphores[id].initial;
            std::memcpy(c.l1 + d.prof.l1_base - 16u * (id + 1), &v, 4);
        }
    }
    // one fiber per (kernel, core); order: reader, compute, writer of each core
    std::vector<Fiber> fibers;
    for (size_t ki = 0; ki < p.kernels.size(); ++ki) {
        const KernelDesc& k = p.kernels[ki];
        void* entry = compile_kernel(k);
        for (const CoreCoord& cc : k.cores) {
            Fiber f;
            f.core = d.core_index(static_cast<uint32_t>(cc.x), static_cast<uint32_t>(cc.y));
            f.kind = k.kind;
            f.file = base_name(k.path);
            f.entry = reinterpret_cast<void (*)()>(entry);
            auto it = k.runtime_args.find({cc.x, cc.y});
            if (it != k.runtime_args.end()) f.args = it->second;
            if (k.kind == KernelKind::Compute) {
                f.compute = new ComputeState();
                f.compute->fp32_dest_acc = k.compute.fp32_dest_acc_en;
                f.compute->full_sync = k.compute.dst_full_sync_en;
                f.compute->fidelity = k.compute.math_fidelity;
                f.compute->approx = k.compute.math_approx_mode;
                f.compute->unpack_to_dest = k.compute.unpack_to_dest_mode;
            }
            d.cores[f.core].active = true;
            fibers.push_back(std::move(f));
        }
    }
    std::stable_sort(fibers.begin(), fibers.end(), [](const Fiber& a, const Fiber& b) {
        return a.core < b.core;
    });
    run_fibers(fibers);
    // every page produced must have been consumed, except on a CB over an L1 buffer (globally
    // allocated): there the pushed pages are the buffer's data, which the host reads afterwards
    for (const Core& c : d.cores) {
        if (!c.active) continue;
        for (int i = 0; i < kMaxCBs; ++i) {
            const CBState& s = c.cb[i];
            if (!c.cb_cfg[i].used || s.filled == 0 || c.cb_cfg[i].global) continue;
            host_fail("program finished with " + std::to_string(s.filled) + " unconsumed page(s) in CB " +
                      std::to_string(i) + " on core (" + std::to_string(c.x) + "," + std::to_string(c.y) +
                      "): " + s.pusher + " pushed " + std::to_string(s.pushed_total) +
                      " page(s) (last call: " + s.last_push + "), " +
                      (s.popped_total ? s.popper + " popped " + std::to_string(s.popped_total)
                                      : std::string("no kernel popped any")) +
                      "; every pushed page must be popped before the program ends");
        }
    }
}



uint64_t create_sharded_buffer(uint64_t size, const tt::tt_metal::distributed::DeviceLocalBufferConfig& local) {
    using tt::tt_metal::BufferType;
    using tt::tt_metal::TensorMemoryLayout;
    Device& d = device();
    const char* what = "MeshBuffer::create (sharded)";
    const TensorMemoryLayout layout = local.sharding_args.buffer_layout();
    if (layout != TensorMemoryLayout::HEIGHT_SHARDED && layout != TensorMemoryLayout::WIDTH_SHARDED &&
        layout != TensorMemoryLayout::BLOCK_SHARDED) {
        host_fail(std::string(what) + ": only HEIGHT / WIDTH / BLOCK_SHARDED layouts with a ShardSpecBuffer are emulated");
    }
    const auto& spec = local.sharding_args.shard_spec();
    if (!spec.has_value()) host_fail(std::string(what) + ": the sharding args carry no ShardSpecBuffer");
    if (local.buffer_type != BufferType::DRAM && local.buffer_type != BufferType::L1) {
        host_fail(std::string(what) + ": sharded buffers live in DRAM or L1");
    }
    if (spec->orientation() != tt::tt_metal::ShardOrientation::ROW_MAJOR) {
        host_fail(std::string(what) + ": only ShardOrientation::ROW_MAJOR is emulated");
    }
    ShardedBuffer b;
    b.is_dram = local.buffer_type == BufferType::DRAM;
    b.page_size = static_cast<uint32_t>(local.page_size);
    b.aligned = b.is_dram ? static_cast<uint32_t>(dram_page_stride(b.page_size)) : (b.page_size + 15u) & ~15u;
    const auto shard = spec->shape(), page = spec->page_shape;
    if (page[0] == 0 || page[1] == 0 || shard[0] % page[0] || shard[1] % page[1]) {
        host_fail(std::string(what) + ": the shard shape " + std::to_string(shard[0]) + "x" + std::to_string(shard[1]) +
                  " is not a whole number of " + std::to_string(page[0]) + "x" + std::to_string(page[1]) + " pages");
    }
    for (int i = 0; i < 2; ++i) {
        b.tensor_pages[i] = spec->tensor2d_shape_in_pages[i];
        b.shard_pages[i] = shard[i] / page[i];
        if (b.shard_pages[i] == 0 || b.tensor_pages[i] % b.shard_pages[i]) {
            host_fail(std::string(what) + ": shards of " + std::to_string(b.shard_pages[0]) + "x" +
                      std::to_string(b.shard_pages[1]) + " pages do not split the " + std::to_string(b.tensor_pages[0]) +
                      "x" + std::to_string(b.tensor_pages[1]) + "-page tensor evenly (uneven shards are not emulated)");
        }
    }
    // As TT-Metalium's Buffer, the layout does not constrain the shard's shape: shards of any 2-D
    // shape are placed in row-major shard order over the grid's cores (a HEIGHT_SHARDED buffer
    // whose shards are narrower than the tensor is placed like any other).
    if (uint64_t(b.tensor_pages[0]) * b.tensor_pages[1] * b.page_size != size) {
        host_fail(std::string(what) + ": size " + std::to_string(size) + " is not the tensor's " +
                  std::to_string(b.tensor_pages[0]) + "x" + std::to_string(b.tensor_pages[1]) + " pages of " +
                  std::to_string(b.page_size) + " bytes");
    }
    for (const auto& c : tt::tt_metal::corerange_to_cores(spec->grid(), std::nullopt, true)) {
        const auto x = static_cast<uint32_t>(c.x), y = static_cast<uint32_t>(c.y);
        if (b.is_dram ? (y != 0 || x >= d.prof.dram_banks) : (x >= d.prof.grid_x || y >= d.prof.grid_y)) {
            host_fail(std::string(what) + ": shard grid entry " + c.str() + " is not a " +
                      (b.is_dram ? "DRAM bank {bank, 0}" : "worker core") + " of the device");
        }
        b.holders.emplace_back(x, y);
    }
    if (b.holders.empty()) host_fail(std::string(what) + ": the shard grid is empty");
    if (b.num_shards() > b.holders.size() && layout == TensorMemoryLayout::BLOCK_SHARDED) {
        host_fail(std::string(what) + ": a BLOCK_SHARDED buffer needs one core per shard");
    }
    place_sharded(b, what);
    return b.base;
}

// L1 buffers are allocated from the top of L1 down, at one address on every core (as the SDK's
// allocator keeps L1 banks in lockstep); DRAM sharded buffers above every bank's top.
void place_sharded(ShardedBuffer& b, const char* what) {
    Device& d = device();
    const uint64_t per_holder = uint64_t(b.shards_per_holder()) * b.shard_bytes();
    if (b.is_dram) {
        uint64_t base = 0;
        for (uint64_t t : d.dram_top) base = std::max(base, t);
        base = (base + d.prof.dram_align - 1) / d.prof.dram_align * d.prof.dram_align;
        if (base == 0) base = d.prof.dram_align;
        if (base + per_holder > d.prof.dram_bank_bytes) host_fail("DRAM is full");
        for (uint32_t i = 0; i < d.prof.dram_banks; ++i) {
            d.dram_top[i] = base + per_holder;
            if (d.dram[i].size() < d.dram_top[i]) d.dram[i].resize(d.dram_top[i]);
        }
        b.base = base;
    } else {
        // L1 buffers are allocated from the top of L1 down, at one address on every core
        const uint64_t bottom = d.l1_buffers_bottom;
        if (per_holder + d.prof.l1_base > bottom) {
            host_fail(std::string(what) + ": L1 over capacity: each core needs " + std::to_string(per_holder) +
                      " bytes for its shards but " + std::to_string(bottom - d.prof.l1_base) + " bytes are free");
        }
        b.base = (bottom - per_holder) & ~31ull;
        d.l1_buffers_bottom = static_cast<uint32_t>(b.base);
    }
    d.sharded_buffers.push_back(b);
}

uint64_t create_l1_interleaved_buffer(uint64_t size, uint32_t page_size) {
    Device& d = device();
    const char* what = "MeshBuffer::create (L1 interleaved)";
    if (page_size == 0 || size % page_size) {
        host_fail(std::string(what) + ": size " + std::to_string(size) + " is not a multiple of the page size " +
                  std::to_string(page_size));
    }
    ShardedBuffer b;
    b.interleaved = true;
    b.page_size = page_size;
    b.aligned = (page_size + 15u) & ~15u;
    b.tensor_pages[0] = static_cast<uint32_t>(size / page_size);
    b.tensor_pages[1] = 1;
    b.shard_pages[0] = b.shard_pages[1] = 1;
    for (uint32_t y = 0; y < d.prof.grid_y; ++y) {
        for (uint32_t x = 0; x < d.prof.grid_x; ++x) b.holders.emplace_back(x, y);
    }
    place_sharded(b, what);
    return b.base;
}

}  // namespace ttmock

using namespace ttmock;

namespace tt::tt_metal {

// ---- programs, kernels, circular buffers, semaphores, runtime args -------------------------------

Program::Program() : internal_(std::make_shared<detail::ProgramImpl>()) {}
Program::Program(Program&& other) noexcept = default;
Program& Program::operator=(Program&& other) noexcept = default;
Program::~Program() noexcept = default;

Program CreateProgram() { return Program(); }

CBHandle CreateCircularBuffer(Program& program, const std::variant<CoreCoord, CoreRange, CoreRangeSet>& spec,
                              const CircularBufferConfig& config) {
    CBAlloc a;
    a.cores = cores_of(spec);
    a.total_size = config.total_size();
    a.global_address = config.globally_allocated_address();
    for (uint8_t idx : config.buffer_indices()) {
        if (idx >= kMaxCBs) {
            host_fail("CreateCircularBuffer: CB index " + std::to_string(idx) + " >= " + std::to_string(kMaxCBs) +
                      ", the number of CBs of " + device().prof.name);
        }
        const tt::DataFormat f = *config.data_formats()[idx];
        if (tile_bytes(f) == 0) {
            host_fail(std::string("CreateCircularBuffer: data format ") + format_name(f) +
                      " is not supported by the emulator (Float16_b, Float32, Int32, UInt32, UInt16)");
        }
        a.formats[idx] = f;
        if (config.page_sizes()[idx]) a.page_sizes[idx] = *config.page_sizes()[idx];
    }
    program.impl().cbs.push_back(a);
    return program.impl().cbs.size();
}

KernelHandle CreateKernel(Program& program, const std::string& file,
                          const std::variant<CoreCoord, CoreRange, CoreRangeSet>& spec,
                          const std::variant<DataMovementConfig, ComputeConfig>& config) {
    KernelDesc k;
    k.path = file;
    k.cores = cores_of(spec);
    if (auto* dm = std::get_if<DataMovementConfig>(&config)) {
        k.kind = dm->processor == DataMovementProcessor::RISCV_1 ? KernelKind::Reader : KernelKind::Writer;
        k.compile_args = dm->compile_args;
        k.defines = dm->defines;
        k.named_compile_args = dm->named_compile_args;
    } else {
        const ComputeConfig& cc = std::get<ComputeConfig>(config);
        k.kind = KernelKind::Compute;
        k.compile_args = cc.compile_args;
        k.defines = cc.defines;
        k.compute = cc;
        k.named_compile_args = cc.named_compile_args;
    }
    for (const KernelDesc& other : program.impl().kernels) {
        const bool same_proc = other.kind == k.kind;
        for (const CoreCoord& a : other.cores)
            for (const CoreCoord& b : k.cores)
                if (same_proc && a == b) {
                    host_fail("CreateKernel: core " + a.str() + " already runs a " + kind_name(k.kind) +
                              " kernel (" + base_name(other.path) + ")");
                }
    }
    // the formats of the CBs every core of the kernel has (same format on each)
    std::map<uint8_t, std::map<std::pair<std::size_t, std::size_t>, tt::DataFormat>> seen;
    for (const CBAlloc& cb : program.impl().cbs) {
        for (const CoreCoord& c : cb.cores) {
            for (const auto& [idx, f] : cb.formats) seen[idx][{c.x, c.y}] = f;
        }
    }
    for (const auto& [idx, per_core] : seen) {
        bool all = !k.cores.empty();
        const auto first = per_core.find({k.cores.empty() ? 0 : k.cores[0].x, k.cores.empty() ? 0 : k.cores[0].y});
        for (const CoreCoord& c : k.cores) {
            auto it = per_core.find({c.x, c.y});
            all = all && it != per_core.end() && first != per_core.end() && it->second == first->second;
        }
        if (all) k.cb_formats[idx] = first->second;
    }
    start_kernel_build(kernel_build(k));  // compiles while the host goes on; the launch waits for it
    program.impl().kernels.push_back(std::move(k));
    return static_cast<KernelHandle>(program.impl().kernels.size() - 1);
}

uint32_t CreateSemaphore(Program& program, const std::variant<CoreRange, CoreRangeSet>& spec, uint32_t initial) {
    program.impl().semaphores.push_back({cores_of(spec), initial});
    if (program.impl().semaphores.size() > 16) host_fail("CreateSemaphore: at most 16 semaphores per program");
    return static_cast<uint32_t>(program.impl().semaphores.size() - 1);
}

namespace {
// Runtime args are set through a const Program&, as in the SDK (they live in the program's state).
void set_args_on(const Program& program, KernelHandle kernel, const std::vector<CoreCoord>& cores,
                 const std::vector<uint32_t>& args) {
    auto& kernels = const_cast<detail::ProgramImpl&>(program.impl()).kernels;
    if (kernel >= kernels.size()) host_fail("SetRuntimeArgs: unknown kernel handle");
    KernelDesc& k = kernels[kernel];
    if (args.size() > 341) {
        host_fail("SetRuntimeArgs: " + std::to_string(args.size()) + " runtime args for " +
                  base_name(k.path) + "; a core accepts at most 341 (4-byte) args");
    }
    for (const CoreCoord& c : cores) {
        bool member = false;
        for (const CoreCoord& kc : k.cores) member |= kc == c;
        if (!member) host_fail("SetRuntimeArgs: kernel " + base_name(k.path) + " does not run on core " + c.str());
        k.runtime_args[{c.x, c.y}] = args;
    }
}
}  // namespace

void SetRuntimeArgs(const Program& program, KernelHandle kernel,
                    const std::variant<CoreCoord, CoreRange, CoreRangeSet>& spec, ttsl::Span<const uint32_t> args) {
    set_args_on(program, kernel, cores_of(spec), std::vector<uint32_t>(args.begin(), args.end()));
}

void SetRuntimeArgs(const Program& program, KernelHandle kernel,
                    const std::variant<CoreCoord, CoreRange, CoreRangeSet>& spec,
                    std::initializer_list<uint32_t> args) {
    set_args_on(program, kernel, cores_of(spec), std::vector<uint32_t>(args));
}

void SetRuntimeArgs(const Program& program, KernelHandle kernel, const std::vector<CoreCoord>& cores,
                    const std::vector<std::vector<uint32_t>>& args) {
    if (cores.size() != args.size()) {
        host_fail("SetRuntimeArgs: " + std::to_string(cores.size()) + " cores but " + std::to_string(args.size()) +
                  " argument lists");
    }
    check_on_grid(cores);
    for (size_t i = 0; i < cores.size(); ++i) set_args_on(program, kernel, {cores[i]}, args[i]);
}

// ---- TensorAccessorArgs ----------------------------------------------------------------------------

TensorAccessorArgs::TensorAccessorArgs(const distributed::MeshBuffer& buffer, tensor_accessor::ArgsConfig cfg)
    : buffer_(&buffer), args_config_(cfg) {
    update_args_config();
}
TensorAccessorArgs::TensorAccessorArgs(const distributed::MeshBuffer* buffer, tensor_accessor::ArgsConfig cfg)
    : buffer_(buffer), args_config_(cfg) {
    update_args_config();
}
TensorAccessorArgs::TensorAccessorArgs(const std::shared_ptr<distributed::MeshBuffer>& buffer,
                                       tensor_accessor::ArgsConfig cfg)
    : buffer_(buffer.get()), args_config_(cfg) {
    update_args_config();
}

TensorAccessorArgs::TensorAccessorArgs(const Buffer& buffer, tensor_accessor::ArgsConfig cfg)
    : buffer_(buffer.mesh_buffer_), args_config_(cfg) {
    update_args_config();
}
TensorAccessorArgs::TensorAccessorArgs(const Buffer* buffer, tensor_accessor::ArgsConfig cfg)
    : buffer_(buffer ? buffer->mesh_buffer_ : nullptr), args_config_(cfg) {
    update_args_config();
}
TensorAccessorArgs::TensorAccessorArgs(const std::shared_ptr<Buffer>& buffer, tensor_accessor::ArgsConfig cfg)
    : TensorAccessorArgs(buffer.get(), cfg) {}

void TensorAccessorArgs::update_args_config() {
    if (buffer_ == nullptr) {
        args_config_ = tensor_accessor::ArgConfig::None;
        return;
    }
    if ((args_config_.raw() & static_cast<uint8_t>(tensor_accessor::ArgConfig::Runtime)) != 0) {
        host_fail("TensorAccessorArgs: runtime ArgConfig bits (args passed as common runtime args) are not emulated");
    }
    args_config_.set(tensor_accessor::ArgConfig::IsDram,
                     buffer_->device_local_config().buffer_type == BufferType::DRAM);
    args_config_.set(tensor_accessor::ArgConfig::Sharded,
                     buffer_->device_local_config().sharding_args.buffer_layout() != TensorMemoryLayout::INTERLEAVED);
}

void TensorAccessorArgs::append_to(std::vector<uint32_t>& cta) const {
    if (buffer_ == nullptr) {  // an absent optional tensor: two zero words
        cta.insert(cta.end(), {0u, 0u});
        return;
    }
    const bool dram = args_config_.test(tensor_accessor::ArgConfig::IsDram);
    const uint32_t page = buffer_->page_size();
    const uint32_t align = dram ? device().prof.dram_align : 16u;  // DRAM / L1 alignment of the emulated device
    cta.push_back(args_config_.raw());
    cta.push_back((page + align - 1) / align * align);
    if (!args_config_.test(tensor_accessor::ArgConfig::Sharded)) return;
    // sharded: rank, banks (round-robin), tensor and shard shapes in pages, packed bank coordinates
    const ttmock::ShardedBuffer* b = ttmock::sharded_buffer_at(dram, buffer_->address());
    if (b == nullptr) host_fail("TensorAccessorArgs: the sharded MeshBuffer is not allocated");
    const auto n = static_cast<uint32_t>(b->holders.size());
    cta.insert(cta.end(), {2u, n, b->tensor_pages[0], b->tensor_pages[1], b->shard_pages[0], b->shard_pages[1]});
    for (uint32_t i = 0; i < n; i += 2) {
        uint32_t word = 0;
        for (uint32_t k = 0; k < 2 && i + k < n; ++k) {
            const auto [hx, hy] = b->holders[i + k];
            const uint32_t packed = dram ? (hx << 8) : ((ttmock::worker_noc_x(hx) << 8) | ttmock::worker_noc_y(hy));
            word |= packed << (16 * k);
        }
        cta.push_back(word);
    }
}

std::vector<uint32_t> TensorAccessorArgs::get_compile_time_args() const {
    std::vector<uint32_t> out;
    append_to(out);
    return out;
}

}  // namespace tt::tt_metal

namespace ttmock {
namespace {

using tt::tt_metal::distributed::MeshBuffer;

// The emulated device's command queue: every enqueued command completes before it returns.
class EmulatedCommandQueue final : public tt::tt_metal::distributed::MeshCommandQueue {
public:
    explicit EmulatedCommandQueue(tt::tt_metal::distributed::MeshDevice* d) : MeshCommandQueue(d, 0) {}

    void enqueue_mesh_workload(tt::tt_metal::distributed::MeshWorkload& workload, bool) override {
        for (tt::tt_metal::Program& p : workload.impl().programs) launch(p.impl());
    }
    void enqueue_write_mesh_buffer(const std::shared_ptr<MeshBuffer>& buffer, const void* data, bool) override {
        const auto* src = static_cast<const uint8_t*>(data);
        for_each_page(*buffer, "EnqueueWriteMeshBuffer",
                      [&](uint8_t* dst, std::size_t off, std::size_t n) { std::memcpy(dst, src + off, n); });
    }
    void enqueue_read_mesh_buffer(void* data, const std::shared_ptr<MeshBuffer>& buffer, bool) override {
        auto* dst = static_cast<uint8_t*>(data);
        for_each_page(*buffer, "EnqueueReadMeshBuffer",
                      [&](uint8_t* src, std::size_t off, std::size_t n) { std::memcpy(dst + off, src, n); });
    }
    void finish(ttsl::Span<const tt::tt_metal::SubDeviceId> sub_device_ids) override {
        for (const auto& id : sub_device_ids) {
            if (*id != 0) {
                host_fail("Finish: sub-device " + std::to_string(*id) + " does not exist (the emulator has 0)");
            }
        }
    }

private:
    static void for_each_page(const MeshBuffer& b, const char* what,
                              const std::function<void(uint8_t*, std::size_t, std::size_t)>& fn) {
        if (!b.is_allocated()) host_fail(std::string(what) + ": the MeshBuffer was deallocated");
        Device& d = ttmock::device();
        const bool dram = b.device_local_config().buffer_type == tt::tt_metal::BufferType::DRAM;
        // pages in parallel parts of at least 1 MB (each copies its own pages)
        if (const ShardedBuffer* sb = sharded_buffer_at(dram, b.address())) {
            const uint64_t pages = (b.size() + sb->page_size - 1) / sb->page_size;
            parallel_ranges(pages, (1u << 20) / sb->page_size + 1, [&](size_t lo, size_t hi) {
                for (uint64_t page = lo; page < hi; ++page) {
                    const auto [holder, off] = sb->locate(page);
                    const auto [hx, hy] = sb->holders[holder];
                    uint8_t* mem = dram ? d.dram[hx].data() : d.core_at(hx, hy).l1;
                    fn(mem + b.address() + off, page * sb->page_size, sb->page_size);
                }
            });
            return;
        }
        const uint64_t ps = b.page_size(), stride = dram_page_stride(ps);
        const uint64_t pages = (b.size() + ps - 1) / ps;
        parallel_ranges(pages, (1u << 20) / ps + 1, [&](size_t lo, size_t hi) {
            for (uint64_t page = lo; page < hi; ++page) {
                auto& bank = d.dram[page % d.prof.dram_banks];
                fn(bank.data() + b.address() + (page / d.prof.dram_banks) * stride, page * ps, ps);
            }
        });
    }
};

}  // namespace
}  // namespace ttmock

namespace tt::tt_metal {

// ---- Allocator: the emulated device's banks ----------------------------------------------------
namespace {
void check_bank_type(const BufferType& t, const char* what) {
    if (t != BufferType::DRAM && t != BufferType::L1) {
        ttmock::host_fail(std::string("Allocator::") + what + ": the emulated device has DRAM and L1 banks only");
    }
}
}  // namespace

uint32_t Allocator::get_alignment(BufferType buffer_type) const {
    check_bank_type(buffer_type, "get_alignment");
    return buffer_type == BufferType::DRAM ? device().prof.dram_align : 16u;
}
uint32_t Allocator::get_num_banks(const BufferType& buffer_type) const {
    check_bank_type(buffer_type, "get_num_banks");
    const auto& p = ttmock::device().prof;
    return buffer_type == BufferType::DRAM ? p.dram_banks : p.grid_x * p.grid_y;
}
DeviceAddr Allocator::get_bank_size(const BufferType& buffer_type) const {
    check_bank_type(buffer_type, "get_bank_size");
    const auto& p = ttmock::device().prof;
    return buffer_type == BufferType::DRAM ? p.dram_bank_bytes : DeviceAddr(p.l1_bytes - p.l1_base);
}
CoreCoord Allocator::get_logical_core_from_bank_id(uint32_t bank_id) const {
    const auto& p = ttmock::device().prof;
    if (bank_id >= p.grid_x * p.grid_y) {
        ttmock::host_fail("Allocator::get_logical_core_from_bank_id: L1 bank " + std::to_string(bank_id) +
                          " does not exist (" + std::to_string(p.grid_x * p.grid_y) + " banks)");
    }
    return CoreCoord(bank_id % p.grid_x, bank_id / p.grid_x);
}
DeviceAddr Allocator::get_worker_l1_size() const { return ttmock::device().prof.l1_bytes; }

}  // namespace tt::tt_metal

namespace tt::tt_metal::distributed {

// ---- MeshDevice --------------------------------------------------------------------------------

std::shared_ptr<MeshDevice> MeshDevice::create_unit_mesh(int device_id, size_t, size_t, size_t num_command_queues,
                                                         const DispatchCoreConfig&,
                                                         ttsl::Span<const std::uint32_t> l1_bank_remap, size_t) {
    if (device_id != 0) host_fail("the emulator provides device 0 only");
    if (num_command_queues != 1) host_fail("the emulator provides one command queue per device");
    if (!l1_bank_remap.empty()) host_fail("MeshDevice::create_unit_mesh: L1 bank remapping is not emulated");
    create_device();
    std::shared_ptr<MeshDevice> mesh(new MeshDevice());
    mesh->pimpl_ = std::make_unique<MeshDeviceImpl>();
    mesh->pimpl_->command_queue = std::make_unique<EmulatedCommandQueue>(mesh.get());
    return mesh;
}

MeshDevice::~MeshDevice() { close(); }

bool MeshDevice::close() {
    if (pimpl_ && pimpl_->open) {
        destroy_device();
        pimpl_->open = false;
    }
    return true;
}

MeshCommandQueue& MeshDevice::mesh_command_queue(std::optional<uint8_t> cq_id) const {
    if (cq_id.value_or(0) != 0) {
        host_fail("mesh_command_queue: command queue " + std::to_string(*cq_id) + " does not exist");
    }
    return *pimpl_->command_queue;
}

int MeshDevice::id() const { return 0; }
size_t MeshDevice::num_devices() const { return 1; }
const MeshShape& MeshDevice::shape() const { return pimpl_->shape; }
int MeshDevice::num_dram_channels() const { return static_cast<int>(device().prof.dram_banks); }
uint32_t MeshDevice::l1_size_per_core() const { return device().prof.l1_bytes; }

CoreCoord MeshDevice::compute_with_storage_grid_size() const {
    return CoreCoord(device().prof.grid_x, device().prof.grid_y);
}
CoreCoord MeshDevice::logical_grid_size() const { return compute_with_storage_grid_size(); }
const std::unique_ptr<Allocator>& MeshDevice::allocator() const { return pimpl_->allocator; }

CoreCoord MeshDevice::worker_core_from_logical_core(const CoreCoord& logical) const {
    return CoreCoord(worker_noc_x(static_cast<uint32_t>(logical.x)), worker_noc_y(static_cast<uint32_t>(logical.y)));
}

// ---- MeshBuffer --------------------------------------------------------------------------------

MeshBuffer::MeshBuffer(const MeshBufferConfig& config, const DeviceLocalBufferConfig& local, DeviceAddr address,
                       DeviceAddr device_local_size, MeshDevice* mesh_device)
    : config_(config), device_local_config_(local), mesh_device_(mesh_device), address_(address),
      device_local_size_(device_local_size), allocated_(true),
      reference_(new Buffer(address, device_local_size, local.buffer_type, local.page_size, local.sharding_args.buffer_layout())) {
    reference_->mesh_buffer_ = this;
}

Buffer* MeshBuffer::get_reference_buffer() const { return reference_.get(); }
Buffer* MeshBuffer::get_backing_buffer() const { return reference_.get(); }

std::shared_ptr<MeshBuffer> MeshBuffer::create(const MeshBufferConfig& config, const DeviceLocalBufferConfig& local,
                                               MeshDevice* mesh_device, std::optional<DeviceAddr> address) {
    Device& d = ttmock::device();
    const auto* replicated = std::get_if<ReplicatedBufferConfig>(&config);
    if (replicated == nullptr) host_fail("MeshBuffer::create: sharded MeshBuffers are not emulated");
    if (local.sharding_args.buffer_layout() != TensorMemoryLayout::INTERLEAVED) {
        if (address.has_value()) host_fail("MeshBuffer::create at a given address is not emulated");
        const uint64_t base = ttmock::create_sharded_buffer(replicated->size, local);
        return std::shared_ptr<MeshBuffer>(new MeshBuffer(config, local, base, replicated->size, mesh_device));
    }
    if (address.has_value()) host_fail("MeshBuffer::create at a given address is not emulated");
    if (local.buffer_type == BufferType::L1) {
        const uint64_t base = ttmock::create_l1_interleaved_buffer(replicated->size, static_cast<uint32_t>(local.page_size));
        return std::shared_ptr<MeshBuffer>(new MeshBuffer(config, local, base, replicated->size, mesh_device));
    }
    if (local.buffer_type != BufferType::DRAM) {
        host_fail("MeshBuffer::create: buffers live in DRAM or L1 (L1_SMALL, TRACE and system memory are not emulated)");
    }
    if (local.page_size == 0 || replicated->size % local.page_size) {
        host_fail("MeshBuffer::create: size " + std::to_string(replicated->size) +
                  " is not a multiple of the page size " + std::to_string(local.page_size));
    }
    const uint64_t pages = replicated->size / local.page_size;
    const uint64_t stride = dram_page_stride(local.page_size);
    const uint64_t per_bank = (pages + d.prof.dram_banks - 1) / d.prof.dram_banks;
    uint64_t base = 0;
    for (uint64_t t : d.dram_top) base = std::max(base, t);
    base = (base + d.prof.dram_align - 1) / d.prof.dram_align * d.prof.dram_align;
    if (base == 0) base = d.prof.dram_align;  // address 0 is never handed out
    if (base + per_bank * stride > d.prof.dram_bank_bytes) host_fail("DRAM is full");
    for (uint32_t i = 0; i < d.prof.dram_banks; ++i) {
        d.dram_top[i] = base + per_bank * stride;
        if (d.dram[i].size() < d.dram_top[i]) d.dram[i].resize(d.dram_top[i]);
    }
    d.dram_buffers.push_back({base, pages, local.page_size, stride});
    return std::shared_ptr<MeshBuffer>(new MeshBuffer(config, local, base, replicated->size, mesh_device));
}

MeshBuffer::~MeshBuffer() = default;
MeshBuffer::MeshBuffer(MeshBuffer&& other) noexcept = default;
MeshBuffer& MeshBuffer::operator=(MeshBuffer&& other) noexcept = default;

bool MeshBuffer::is_allocated() const { return allocated_; }
void MeshBuffer::deallocate() {
    // the emulator does not reuse DRAM addresses, but gives an interleaved DRAM buffer's host
    // memory back (a program frees its inputs once the device is done with them)
    if (allocated_ && ttmock::device_exists() && device_local_config_.buffer_type == BufferType::DRAM &&
        device_local_config_.sharding_args.buffer_layout() == TensorMemoryLayout::INTERLEAVED &&
        device_local_config_.page_size != 0) {
        Device& d = ttmock::device();
        const uint64_t pages = device_local_size_ / device_local_config_.page_size;
        const uint64_t per_bank = (pages + d.prof.dram_banks - 1) / d.prof.dram_banks;
        const uint64_t bytes = per_bank * dram_page_stride(device_local_config_.page_size);
        for (auto& bank : d.dram) bank.release(address_, bytes);
    }
    allocated_ = false;
}
MeshDevice* MeshBuffer::device() const { return mesh_device_; }
DeviceAddr MeshBuffer::size() const { return device_local_size_; }

MeshBufferLayout MeshBuffer::global_layout() const {
    return std::holds_alternative<ReplicatedBufferConfig>(config_) ? MeshBufferLayout::REPLICATED
                                                                   : MeshBufferLayout::SHARDED;
}

const ShardedBufferConfig& MeshBuffer::global_shard_spec() const {
    const auto* sharded = std::get_if<ShardedBufferConfig>(&config_);
    if (sharded == nullptr) host_fail("MeshBuffer::global_shard_spec: the buffer is replicated, not sharded");
    return *sharded;
}

// ---- workloads ---------------------------------------------------------------------------------

MeshWorkload::MeshWorkload() : pimpl_(std::make_unique<MeshWorkloadImpl>()) {}
MeshWorkload::~MeshWorkload() = default;
MeshWorkload::MeshWorkload(MeshWorkload&& other) noexcept = default;
MeshWorkload& MeshWorkload::operator=(MeshWorkload&& other) noexcept = default;

void MeshWorkload::add_program(const MeshCoordinateRange& range, Program&& program) {
    if (range.shape().mesh_size() != 1) host_fail("MeshWorkload::add_program: the emulated mesh has one device");
    pimpl_->programs.push_back(std::move(program));
}

void EnqueueMeshWorkload(MeshCommandQueue& cq, MeshWorkload& workload, bool blocking) {
    cq.enqueue_mesh_workload(workload, blocking);
}

void Finish(MeshCommandQueue& cq, ttsl::Span<const SubDeviceId> sub_device_ids) { cq.finish(sub_device_ids); }

}  // namespace tt::tt_metal::distributed
