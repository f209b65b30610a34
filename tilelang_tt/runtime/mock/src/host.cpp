// tilelang-tt mock TT-Metalium: host API - buffers, programs, kernel JIT, workload launch.
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "emulator.hpp"
#include "tt-metalium/host_api.hpp"
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

struct CBAlloc {
    std::vector<CoreCoord> cores;
    std::map<uint8_t, tt::DataFormat> formats;
    std::map<uint8_t, uint32_t> page_sizes;
    uint32_t total_size = 0;
};

struct KernelDesc {
    std::string path;
    std::vector<CoreCoord> cores;
    KernelKind kind;
    std::vector<uint32_t> compile_args;
    std::map<std::string, std::string> defines;
    tt::tt_metal::ComputeConfig compute;
    std::map<std::pair<std::size_t, std::size_t>, std::vector<uint32_t>> runtime_args;
};

struct SemaphoreDesc {
    std::vector<CoreCoord> cores;
    uint32_t initial;
};

struct ProgramImpl {
    std::vector<CBAlloc> cbs;
    std::vector<KernelDesc> kernels;
    std::vector<SemaphoreDesc> semaphores;
};

struct BufferImpl {
    uint64_t address = 0, size = 0, page_size = 0;
    tt::tt_metal::BufferType type = tt::tt_metal::BufferType::DRAM;
};

namespace {

std::vector<CoreCoord> cores_of(const tt::tt_metal::CoreSpec& spec) {
    std::vector<CoreCoord> out;
    if (auto* c = std::get_if<CoreCoord>(&spec)) out.push_back(*c);
    if (auto* r = std::get_if<CoreRange>(&spec)) out = r->cores();
    if (auto* s = std::get_if<CoreRangeSet>(&spec)) out = s->cores();
    const Profile& p = device().prof;
    for (const CoreCoord& c : out) {
        if (c.x >= p.grid_x || c.y >= p.grid_y) {
            host_fail("core " + c.str() + " is outside the " + std::to_string(p.grid_x) + "x" +
                      std::to_string(p.grid_y) + " compute grid of " + p.name);
        }
    }
    return out;
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
    std::string cmd = "mkdir -p '" + dir + "'";
    if (std::system(cmd.c_str()) != 0) host_fail("cannot create kernel cache " + dir);
    return dir;
}

std::string base_name(const std::string& path) {
    const auto slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// JIT-compile one kernel (as the SDK does at program build) into a cached shared object.
void* compile_kernel(const KernelDesc& k) {
    static std::map<std::string, void*> loaded;
    const std::string source = read_file(k.path);
    std::ostringstream flags;
    if (!k.compile_args.empty()) {  // as the SDK's JIT: -DKERNEL_COMPILE_TIME_ARGS=a,b,c
        flags << "-DKERNEL_COMPILE_TIME_ARGS=";
        for (size_t i = 0; i < k.compile_args.size(); ++i) flags << (i ? "," : "") << k.compile_args[i];
    }
    for (const auto& [name, value] : k.defines) flags << " '-D" << name << "=" << value << "'";
    // what the SDK's firmware wrapper puts in front of the kernel: for compute kernels
    // `using namespace ckernel;` and DST_ACCUM_MODE, for data movement kernels the dataflow API
    if (k.kind == KernelKind::Compute) {
        flags << " -include ttmock/jit_compute.h -DTTMOCK_DST_ACCUM_MODE="
              << (k.compute.fp32_dest_acc_en ? "true" : "false");
    } else {
        flags << " -include api/dataflow/dataflow_api.h -DNOC_INDEX="
              << (k.kind == KernelKind::Reader ? 1 : 0);
    }
    const std::string key_text = std::string(TTMOCK_VERSION) + "\n" + TTMOCK_CXX + " " +
                                 TTMOCK_KERNEL_FLAGS + "\n" +
                                 flags.str() + "\n" + source;
    char hex[17];
    std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(fnv1a(key_text)));
    const std::string dir = cache_dir();
    const std::string so = dir + "/" + base_name(k.path) + "-" + hex + ".so";
    if (auto it = loaded.find(so); it != loaded.end()) return it->second;
    struct stat st;
    if (stat(so.c_str(), &st) != 0) {
        const std::string tmp = so + ".tmp" + std::to_string(getpid());
        const std::string log = tmp + ".log";
        // the kernel source's directory first, so kernel-local headers resolve as on the SDK
        std::string src_dir = k.path.substr(0, k.path.find_last_of('/') == std::string::npos
                                                   ? 0 : k.path.find_last_of('/'));
        std::ostringstream cmd;
        cmd << TTMOCK_CXX << " -std=c++20 " << TTMOCK_KERNEL_FLAGS << " -fPIC -shared -w";
        if (!src_dir.empty()) cmd << " -I'" << src_dir << "'";
        cmd << " -I'" << TTMOCK_INCLUDE_DIR << "' " << flags.str() << " '" << k.path << "' -o '"
            << tmp << "' > '" << log << "' 2>&1";
        if (std::system(cmd.str().c_str()) != 0) {
            std::string out = read_file(log);
            std::remove(log.c_str());
            host_fail("CreateKernel: " + base_name(k.path) + " (" + kind_name(k.kind) +
                      " kernel) does not compile against the TT-Metalium API:\n" + out);
        }
        std::remove(log.c_str());
        if (std::rename(tmp.c_str(), so.c_str()) != 0) host_fail("cannot store compiled kernel " + so);
    }
    void* handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) host_fail(std::string("cannot load compiled kernel: ") + dlerror());
    void* entry = dlsym(handle, "_Z11kernel_mainv");
    if (!entry) {
        host_fail("kernel " + base_name(k.path) + " defines no `void kernel_main()`");
    }
    loaded[so] = entry;
    return entry;
}

void launch(ProgramImpl& p) {
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
        uint32_t offset = d.prof.l1_base;
        for (const CoreCoord& cc : cb.cores) offset = std::max(offset, d.core_at(cc.x, cc.y).l1_used);
        offset = (offset + 31u) & ~31u;
        for (const CoreCoord& cc : cb.cores) {
            Core& c = d.core_at(cc.x, cc.y);
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
    // every page produced must have been consumed
    for (const Core& c : d.cores) {
        if (!c.active) continue;
        for (int i = 0; i < kMaxCBs; ++i) {
            const CBState& s = c.cb[i];
            if (!c.cb_cfg[i].used || s.filled == 0) continue;
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

}  // namespace
}  // namespace ttmock

using namespace ttmock;

namespace tt::tt_metal {

CircularBufferConfig::CircularBufferConfig(uint32_t total_size,
                                           const std::map<uint8_t, tt::DataFormat>& spec)
    : total_size_(total_size), formats_(spec) {}

CircularBufferConfig& CircularBufferConfig::set_page_size(uint8_t index, uint32_t page_size) {
    if (!formats_.count(index)) {
        host_fail("CircularBufferConfig::set_page_size: CB index " + std::to_string(index) +
                  " has no data format in this config");
    }
    page_sizes_[index] = page_size;
    return *this;
}

Program::Program() : impl(std::make_shared<ProgramImpl>()) {}
Program CreateProgram() { return Program(); }

CBHandle CreateCircularBuffer(Program& program, const CoreSpec& spec, const CircularBufferConfig& config) {
    CBAlloc a;
    a.cores = cores_of(spec);
    a.formats = config.data_formats();
    a.page_sizes = config.page_sizes();
    a.total_size = config.total_size();
    for (const auto& [idx, f] : a.formats) {
        if (idx >= kMaxCBs) host_fail("CreateCircularBuffer: CB index " + std::to_string(idx) + " >= 32");
        if (tile_bytes(f) == 0) {
            host_fail(std::string("CreateCircularBuffer: data format ") + format_name(f) +
                      " is not supported by the emulator (Float16_b, Float32, Int32, UInt32, UInt16)");
        }
    }
    program.impl->cbs.push_back(a);
    return program.impl->cbs.size();
}

KernelHandle CreateKernel(Program& program, const std::string& file, const CoreSpec& spec,
                          const std::variant<DataMovementConfig, ComputeConfig, EthernetConfig>& config) {
    KernelDesc k;
    k.path = file;
    k.cores = cores_of(spec);
    if (auto* dm = std::get_if<DataMovementConfig>(&config)) {
        k.kind = dm->processor == DataMovementProcessor::RISCV_1 ? KernelKind::Reader : KernelKind::Writer;
        k.compile_args = dm->compile_args;
        k.defines = dm->defines;
    } else if (auto* cc = std::get_if<ComputeConfig>(&config)) {
        k.kind = KernelKind::Compute;
        k.compile_args = cc->compile_args;
        k.defines = cc->defines;
        k.compute = *cc;
    } else {
        host_fail("CreateKernel: ethernet kernels are not supported by the emulator");
    }
    for (const KernelDesc& other : program.impl->kernels) {
        bool same_proc = other.kind == k.kind;
        for (const CoreCoord& a : other.cores)
            for (const CoreCoord& b : k.cores)
                if (same_proc && a == b) {
                    host_fail("CreateKernel: core " + a.str() + " already runs a " + kind_name(k.kind) +
                              " kernel (" + base_name(other.path) + ")");
                }
    }
    compile_kernel(k);  // compile now so errors point at CreateKernel
    program.impl->kernels.push_back(std::move(k));
    return static_cast<KernelHandle>(program.impl->kernels.size() - 1);
}

uint32_t CreateSemaphore(Program& program, const CoreSpec& spec, uint32_t initial) {
    program.impl->semaphores.push_back({cores_of(spec), initial});
    if (program.impl->semaphores.size() > 16) host_fail("CreateSemaphore: at most 16 semaphores per program");
    return static_cast<uint32_t>(program.impl->semaphores.size() - 1);
}

void SetRuntimeArgs(const Program& program, KernelHandle kernel, const CoreSpec& spec,
                    const std::vector<uint32_t>& args) {
    if (kernel >= program.impl->kernels.size()) host_fail("SetRuntimeArgs: unknown kernel handle");
    KernelDesc& k = program.impl->kernels[kernel];
    if (args.size() > 341) {
        host_fail("SetRuntimeArgs: " + std::to_string(args.size()) + " runtime args for " +
                  base_name(k.path) + "; a core accepts at most 341 (4-byte) args");
    }
    for (const CoreCoord& c : cores_of(spec)) {
        bool member = false;
        for (const CoreCoord& kc : k.cores) member |= kc == c;
        if (!member) host_fail("SetRuntimeArgs: kernel " + base_name(k.path) + " does not run on core " + c.str());
        k.runtime_args[{c.x, c.y}] = args;
    }
}

void SetRuntimeArgs(const Program& program, KernelHandle kernel, const CoreSpec& spec,
                    std::initializer_list<uint32_t> args) {
    SetRuntimeArgs(program, kernel, spec, std::vector<uint32_t>(args));
}

std::vector<uint32_t>& GetRuntimeArgs(const Program& program, KernelHandle kernel, const CoreCoord& core) {
    return program.impl->kernels.at(kernel).runtime_args[{core.x, core.y}];
}

namespace distributed {

std::shared_ptr<MeshDevice> MeshDevice::create_unit_mesh(int device_id, std::size_t, std::size_t, std::size_t) {
    if (device_id != 0) host_fail("the emulator provides device 0 only");
    return std::make_shared<MeshDevice>();
}

MeshDevice::MeshDevice() : cq_(this) { create_device(); }
MeshDevice::~MeshDevice() { close(); }

MeshCommandQueue& MeshDevice::mesh_command_queue(std::size_t) { return cq_; }

CoreCoord MeshDevice::compute_with_storage_grid_size() const {
    return CoreCoord(device().prof.grid_x, device().prof.grid_y);
}

CoreCoord MeshDevice::worker_core_from_logical_core(const CoreCoord& logical) const {
    return CoreCoord(worker_noc_x(static_cast<uint32_t>(logical.x)),
                     worker_noc_y(static_cast<uint32_t>(logical.y)));
}

std::size_t MeshDevice::num_dram_channels() const { return device().prof.dram_banks; }
uint32_t MeshDevice::l1_size_per_core() const { return device().prof.l1_bytes; }

bool MeshDevice::close() {
    if (open_) {
        destroy_device();
        open_ = false;
    }
    return true;
}

std::shared_ptr<MeshBuffer> MeshBuffer::create(const ReplicatedBufferConfig& global,
                                               const DeviceLocalBufferConfig& local, MeshDevice*,
                                               std::optional<DeviceAddr> address) {
    Device& d = device();
    if (local.buffer_type != BufferType::DRAM) {
        host_fail("MeshBuffer::create: only DRAM interleaved buffers are emulated");
    }
    if (address.has_value()) host_fail("MeshBuffer::create at a given address is not emulated");
    if (local.page_size == 0 || global.size % local.page_size) {
        host_fail("MeshBuffer::create: size " + std::to_string(global.size) +
                  " is not a multiple of the page size " + std::to_string(local.page_size));
    }
    auto b = std::make_shared<MeshBuffer>();
    b->impl = std::make_shared<BufferImpl>();
    const uint64_t pages = global.size / local.page_size;
    const uint64_t aligned = (local.page_size + 31u) & ~31ull;
    const uint64_t per_bank = (pages + d.prof.dram_banks - 1) / d.prof.dram_banks;
    uint64_t base = 0;
    for (uint64_t t : d.dram_top) base = std::max(base, t);
    base = (base + 31u) & ~31ull;
    if (base == 0) base = 32;  // address 0 is never handed out
    if (base + per_bank * aligned > d.prof.dram_bank_bytes) host_fail("DRAM is full");
    for (uint32_t i = 0; i < d.prof.dram_banks; ++i) {
        d.dram_top[i] = base + per_bank * aligned;
        if (d.dram[i].size() < d.dram_top[i]) d.dram[i].resize(d.dram_top[i]);
    }
    d.dram_buffers.push_back({base, pages, local.page_size, aligned});
    b->impl->address = base;
    b->impl->size = global.size;
    b->impl->page_size = local.page_size;
    return b;
}

DeviceAddr MeshBuffer::address() const { return impl->address; }
DeviceAddr MeshBuffer::size() const { return impl->size; }
DeviceAddr MeshBuffer::page_size() const { return impl->page_size; }
BufferType MeshBuffer::buffer_type() const { return impl->type; }

namespace detail {
static void for_each_page(MeshBuffer& b, std::size_t bytes, const char* what,
                          const std::function<void(uint8_t*, std::size_t, std::size_t)>& fn) {
    Device& d = device();
    if (bytes != b.impl->size) {
        host_fail(std::string(what) + ": " + std::to_string(bytes) + " bytes for a buffer of " +
                  std::to_string(b.impl->size));
    }
    const uint64_t ps = b.impl->page_size, aligned = (ps + 31u) & ~31ull;
    for (uint64_t page = 0; page * ps < bytes; ++page) {
        auto& bank = d.dram[page % d.prof.dram_banks];
        fn(bank.data() + b.impl->address + (page / d.prof.dram_banks) * aligned, page * ps, ps);
    }
}
void write_buffer(MeshBuffer& b, const void* data, std::size_t bytes) {
    const auto* src = static_cast<const uint8_t*>(data);
    for_each_page(b, bytes, "EnqueueWriteMeshBuffer",
                  [&](uint8_t* dst, std::size_t off, std::size_t n) { std::memcpy(dst, src + off, n); });
}
void read_buffer(MeshBuffer& b, void* data, std::size_t bytes) {
    auto* dst = static_cast<uint8_t*>(data);
    for_each_page(b, bytes, "EnqueueReadMeshBuffer",
                  [&](uint8_t* src, std::size_t off, std::size_t n) { std::memcpy(dst + off, src, n); });
}
}  // namespace detail

void MeshWorkload::add_program(const MeshCoordinateRange&, Program&& program) {
    programs_.push_back(std::move(program));
}

void EnqueueMeshWorkload(MeshCommandQueue&, MeshWorkload& workload, bool) {
    for (Program& p : workload.get_programs()) launch(*p.impl);
}

void Finish(MeshCommandQueue&) {}

}  // namespace distributed

TensorAccessorArgs::TensorAccessorArgs(const distributed::MeshBuffer& buffer) {
    const bool dram = buffer.buffer_type() == BufferType::DRAM;
    config_ = dram ? 2u : 0u;  // tensor_accessor::ArgConfig::IsDram
    const uint32_t align = dram ? 32u : 16u;
    page_ = static_cast<uint32_t>((buffer.page_size() + align - 1) / align * align);
}
void TensorAccessorArgs::append_to(std::vector<uint32_t>& cta) const {
    cta.push_back(config_);
    cta.push_back(page_);
}
std::vector<uint32_t> TensorAccessorArgs::get_compile_time_args() const { return {config_, page_}; }

std::tuple<uint32_t, CoreRangeSet, CoreRangeSet, CoreRangeSet, uint32_t, uint32_t> split_work_to_cores(
    const CoreCoord grid, uint32_t units, bool row_wise) {
    const uint32_t total = static_cast<uint32_t>(grid.x * grid.y);
    const uint32_t n = std::min(units, total);
    if (n == 0) return {0, CoreRangeSet(), CoreRangeSet(), CoreRangeSet(), 0, 0};
    const uint32_t per = units / n, extra = units % n;
    std::vector<CoreRange> all, g1, g2;
    for (uint32_t i = 0; i < n; ++i) {
        CoreCoord c = row_wise ? CoreCoord(i % grid.x, i / grid.x) : CoreCoord(i / grid.y, i % grid.y);
        all.emplace_back(c);
        (i < extra ? g1 : g2).emplace_back(c);
    }
    if (extra == 0) return {n, CoreRangeSet(all), CoreRangeSet(all), CoreRangeSet(), per, 0};
    return {n, CoreRangeSet(all), CoreRangeSet(g1), CoreRangeSet(g2), per + 1, per};
}

}  // namespace tt::tt_metal
