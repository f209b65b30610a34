// tilelang-tt mock TT-Metalium: the data movement kernel API (api/dataflow/dataflow_api.h), with the
// SDK's names and signatures; each call forwards to the emulator (namespace ttmock, src/dataflow.cpp).
// The kernel JIT includes this header in front of every data movement kernel, as the SDK's firmware
// wrapper (brisck.cc / ncrisck.cc) does.
#pragma once
#include <cstdint>
#include <type_traits>

#include "api/compile_time_args.h"
#include "api/debug/dprint.h"  // as the SDK's, through internal/debug/sanitize.h
#include "api/tensor/tensor_accessor.h"
#include "hostdevcommon/kernel_structs.h"  // tt::CBIndex: the SDK's firmware wrapper brings it (firmware_common.h)
#include "internal/dataflow/dataflow_api_addrgen.h"
#include "internal/dataflow/dataflow_api_common.h"
#include "internal/risc_attribs.h"
#include "ttmock/cb_api.h"
#include "ttmock/kernel_args.h"

namespace ttmock {
uint64_t noc_addr(uint32_t noc_x, uint32_t noc_y, uint32_t addr);
uint64_t noc_multicast_addr(uint32_t x0, uint32_t y0, uint32_t x1, uint32_t y1, uint32_t addr);
void noc_read(uint64_t src_noc_addr, uint32_t dst_local_l1_addr, uint32_t size);
void noc_write(uint32_t src_local_l1_addr, uint64_t dst_noc_addr, uint32_t size);
void noc_read_barrier();
void noc_write_barrier();
void noc_write_multicast(uint32_t src, uint64_t dst_mcast, uint32_t size, uint32_t num_dests, bool loopback);
uint32_t semaphore_addr(uint32_t semaphore_id);
void semaphore_wait(volatile uint32_t* sem_addr, uint32_t val, bool at_least);
void semaphore_set(volatile uint32_t* sem_addr, uint32_t val);
void semaphore_inc(uint64_t addr, uint32_t incr);
void semaphore_set_multicast(uint32_t src, uint64_t dst_mcast, uint32_t num_dests);
void semaphore_set_remote(uint32_t src, uint64_t dst_noc_addr);
}  // namespace ttmock

// ---- arguments ----------------------------------------------------------------------------------
template <typename T>
FORCE_INLINE T get_arg_val(int arg_idx) {
    return ttmock::arg_as<T>(ttmock::runtime_arg(arg_idx));
}

template <typename T>
FORCE_INLINE T get_common_arg_val(int arg_idx) {
    return ttmock::arg_as<T>(ttmock::common_runtime_arg(arg_idx));
}

// ---- circular buffers ---------------------------------------------------------------------------
FORCE_INLINE
void cb_push_back(const int32_t operand, const int32_t num_pages) { ttmock::cb_push_back(operand, num_pages); }

FORCE_INLINE
void cb_pop_front(int32_t operand, int32_t num_pages) { ttmock::cb_pop_front(operand, num_pages); }

namespace ttmock {
// (a template: a constexpr function may call it although it is only evaluated at run time)
template <int = 0>
constexpr std::int32_t tile_size_at_run_time(std::int32_t operand) {
    return static_cast<std::int32_t>(cb_tile_size(static_cast<uint32_t>(operand)));
}
template <int = 0>
constexpr DataFormat data_format_at_run_time(std::int32_t operand) {
    return static_cast<DataFormat>(cb_data_format(static_cast<uint32_t>(operand)));
}
}  // namespace ttmock

namespace ttmock {
// The formats of the CBs created before the kernel on all its cores, as the kernel build gets them
// (TTMOCK_CB_FORMATS: {cb, format} pairs): what get_tile_size / get_dataformat read in a
// constant expression, as the SDK's read the JIT's generated descriptors.
struct CbFormat {
    int cb;
    uint8_t format;
};
#ifndef TTMOCK_CB_FORMATS
#define TTMOCK_CB_FORMATS
#endif
inline constexpr CbFormat cb_formats_at_build[] = {TTMOCK_CB_FORMATS{-1, 0xff}};
// not constexpr: a constant expression that reaches it does not compile
uint8_t cb_format_unknown_when_the_kernel_was_created(std::int32_t operand);
constexpr uint8_t cb_format_at_build(std::int32_t operand) {
    for (const CbFormat& e : cb_formats_at_build) {
        if (e.cb == operand) return e.format;
    }
    return cb_format_unknown_when_the_kernel_was_created(operand);
}
uint32_t cb_format_has_no_tile_size_in_the_emulator(std::int32_t operand);  // not constexpr, as above
constexpr uint32_t tile_size_at_build(std::int32_t operand) {
    const uint32_t bytes = tile_bytes_of(cb_format_at_build(operand), 1024);
    return bytes ? bytes : cb_format_has_no_tile_size_in_the_emulator(operand);
}
}  // namespace ttmock

// the tile size of the CB's data format: in a constant expression from the formats the kernel was
// built with (the CB must exist, with one format, on every core of the kernel when it is created),
// at run time from the core's CB (checked)
constexpr inline std::int32_t get_tile_size(const std::int32_t operand) {
    if (std::is_constant_evaluated()) {
        return static_cast<std::int32_t>(ttmock::tile_size_at_build(operand));
    }
    return ttmock::tile_size_at_run_time(operand);
}

// the data format of the CB (the SDK reads it from the JIT's descriptors; the emulator at run time)
constexpr inline DataFormat get_dataformat(const std::int32_t operand) {
    if (std::is_constant_evaluated()) return static_cast<DataFormat>(ttmock::cb_format_at_build(operand));
    return ttmock::data_format_at_run_time(operand);
}

FORCE_INLINE
uint32_t get_write_ptr(uint32_t operand) { return ttmock::cb_write_ptr(operand); }

FORCE_INLINE
uint32_t get_read_ptr(uint32_t operand) { return ttmock::cb_read_ptr(operand); }

FORCE_INLINE
bool cb_pages_reservable_at_back(int32_t operand, int32_t num_pages) {
    return ttmock::cb_pages_reservable_at_back(operand, num_pages);
}

FORCE_INLINE
void cb_reserve_back(int32_t operand, int32_t num_pages) { ttmock::cb_reserve_back(operand, num_pages); }

FORCE_INLINE
bool cb_pages_available_at_front(int32_t operand, int32_t num_pages) {
    return ttmock::cb_pages_available_at_front(operand, num_pages);
}

FORCE_INLINE
void cb_wait_front(int32_t operand, int32_t num_pages) { ttmock::cb_wait_front(operand, num_pages); }

// ---- NOC addresses ------------------------------------------------------------------------------
FORCE_INLINE
uint64_t get_noc_multicast_addr(
    uint32_t noc_x_start,
    uint32_t noc_y_start,
    uint32_t noc_x_end,
    uint32_t noc_y_end,
    uint32_t addr,
    uint8_t noc = noc_index) {
    (void)noc;
    return ttmock::noc_multicast_addr(noc_x_start, noc_y_start, noc_x_end, noc_y_end, addr);
}

FORCE_INLINE
uint64_t get_noc_addr(uint32_t noc_x, uint32_t noc_y, uint32_t addr, uint8_t noc = noc_index) {
    (void)noc;
    return ttmock::noc_addr(noc_x, noc_y, addr);
}

FORCE_INLINE
std::uint64_t get_noc_addr(std::uint32_t addr, uint8_t noc = noc_index) {
    (void)noc;
    return ttmock::noc_addr(0xFFFFFFFFu, 0xFFFFFFFFu, addr);  // this core
}

// ---- NOC transfers ------------------------------------------------------------------------------
template <uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1, bool enable_noc_tracing = true>
inline void noc_async_read(
    uint64_t src_noc_addr,
    uint32_t dst_local_l1_addr,
    uint32_t size,
    uint8_t noc = noc_index,
    uint32_t read_req_vc = NOC_UNICAST_WRITE_VC) {
    (void)noc;
    (void)read_req_vc;
    ttmock::noc_read(src_noc_addr, dst_local_l1_addr, size);
}

template <uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1, bool enable_noc_tracing = true, bool posted = false>
inline void noc_async_write(
    uint32_t src_local_l1_addr,
    uint64_t dst_noc_addr,
    uint32_t size,
    uint8_t noc = noc_index,
    uint32_t vc = NOC_UNICAST_WRITE_VC) {
    (void)noc;
    (void)vc;
    ttmock::noc_write(src_local_l1_addr, dst_noc_addr, size);
}

template <uint32_t max_page_size = NOC_MAX_BURST_SIZE + 1>
inline void noc_async_write_multicast(
    uint32_t src_local_l1_addr,
    uint64_t dst_noc_addr_multicast,
    uint32_t size,
    uint32_t num_dests,
    bool linked = false,
    uint8_t noc = noc_index,
    uint8_t vc = NOC_MULTICAST_WRITE_VC) {
    (void)linked;
    (void)noc;
    (void)vc;
    ttmock::noc_write_multicast(src_local_l1_addr, dst_noc_addr_multicast, size, num_dests, false);
}

inline void noc_async_write_multicast_loopback_src(
    std::uint32_t src_local_l1_addr,
    std::uint64_t dst_noc_addr_multicast,
    std::uint32_t size,
    std::uint32_t num_dests,
    bool linked = false,
    uint8_t noc = noc_index) {
    (void)linked;
    (void)noc;
    ttmock::noc_write_multicast(src_local_l1_addr, dst_noc_addr_multicast, size, num_dests, true);
}

FORCE_INLINE
void noc_async_read_barrier(uint8_t noc = noc_index) {
    (void)noc;
    ttmock::noc_read_barrier();
}

FORCE_INLINE
void noc_async_write_barrier(uint8_t noc = noc_index) {
    (void)noc;
    ttmock::noc_write_barrier();
}

FORCE_INLINE
void noc_async_writes_flushed(uint8_t noc = noc_index) {
    (void)noc;
    ttmock::noc_write_barrier();
}

namespace ttmock {
// the bytes of one page of an address generator, as the SDK's noc_async_read_page picks them
template <typename AddrGen>
constexpr uint32_t addrgen_page_size(const AddrGen& addrgen) {
    if constexpr (requires { addrgen.get_aligned_page_size(); }) {
        return addrgen.get_aligned_page_size();
    } else {
        return addrgen.page_size;
    }
}
}  // namespace ttmock

// one page of an address generator (the emulator's: TensorAccessor) to / from L1
template <typename AddrGen, bool enable_noc_tracing = true>
FORCE_INLINE void noc_async_read_page(
    const uint32_t id,
    const AddrGen& addrgen,
    uint32_t dst_local_l1_addr,
    uint32_t offset = 0,
    uint8_t noc = noc_index) {
    noc_async_read(addrgen.get_noc_addr(id, offset, noc), dst_local_l1_addr,
                   ttmock::addrgen_page_size(addrgen) - offset, noc);
}

template <typename AddrGen, bool enable_noc_tracing = true, bool posted = false>
FORCE_INLINE void noc_async_write_page(
    const uint32_t id,
    const AddrGen& addrgen,
    uint32_t src_local_l1_addr,
    uint32_t size = 0,
    uint32_t offset = 0,
    uint8_t noc = noc_index) {
    noc_async_write(src_local_l1_addr, addrgen.get_noc_addr(id, offset, noc),
                    size ? size : ttmock::addrgen_page_size(addrgen) - offset, noc);
}

// the deprecated forms of the page calls for InterleavedAddrGen
template <bool DRAM>
[[deprecated("Use <typename AddrGen> noc_async_read_page instead.")]]
FORCE_INLINE void noc_async_read_tile(
    const uint32_t id,
    const InterleavedAddrGen<DRAM>& addrgen,
    uint32_t dst_local_l1_addr,
    uint32_t offset = 0,
    uint8_t noc = noc_index) {
    noc_async_read_page<InterleavedAddrGen<DRAM>, false>(id, addrgen, dst_local_l1_addr, offset, noc);
}

template <bool DRAM>
[[deprecated("Use <typename AddrGen> noc_async_read_page instead.")]]
FORCE_INLINE void noc_async_read_page(
    const uint32_t id,
    const InterleavedAddrGen<DRAM>& addrgen,
    uint32_t dst_local_l1_addr,
    uint32_t offset = 0,
    uint8_t noc = noc_index) {
    noc_async_read_page<InterleavedAddrGen<DRAM>, false>(id, addrgen, dst_local_l1_addr, offset, noc);
}

template <bool DRAM>
[[deprecated("Use <typename AddrGen> noc_async_write_page instead.")]]
FORCE_INLINE void noc_async_write_page(
    const uint32_t id,
    const InterleavedAddrGen<DRAM>& addrgen,
    uint32_t src_local_l1_addr,
    const uint32_t write_size_bytes,
    const uint32_t offset = 0,
    uint8_t noc = noc_index) {
    noc_async_write_page<InterleavedAddrGen<DRAM>, false>(id, addrgen, src_local_l1_addr, write_size_bytes, offset, noc);
}

template <bool DRAM>
[[deprecated("Use <typename AddrGen> noc_async_write_page instead.")]]
FORCE_INLINE void noc_async_write_tile(
    const uint32_t id, const InterleavedAddrGen<DRAM>& addrgen, uint32_t src_local_l1_addr, uint8_t noc = noc_index) {
    noc_async_write_page<InterleavedAddrGen<DRAM>, false>(id, addrgen, src_local_l1_addr, addrgen.page_size, 0, noc);
}

// the deprecated tile forms of the page calls, for InterleavedAddrGenFast
template <bool DRAM, uint32_t tile_hw>
[[deprecated("Use <typename AddrGen> noc_async_read_page instead.")]]
FORCE_INLINE void noc_async_read_tile(
    const uint32_t id,
    const InterleavedAddrGenFast<DRAM, tile_hw>& addrgen,
    uint32_t dst_local_l1_addr,
    uint32_t offset = 0,
    uint8_t noc = noc_index) {
    noc_async_read_page<InterleavedAddrGenFast<DRAM, tile_hw>, false>(id, addrgen, dst_local_l1_addr, offset, noc);
}

template <bool DRAM, uint32_t tile_hw>
[[deprecated("Use <typename AddrGen> noc_async_write_page instead.")]]
FORCE_INLINE void noc_async_write_tile(
    const uint32_t id,
    const InterleavedAddrGenFast<DRAM, tile_hw>& addrgen,
    uint32_t src_local_l1_addr,
    uint8_t noc = noc_index) {
    noc_async_write_page<InterleavedAddrGenFast<DRAM, tile_hw>, false>(
        id, addrgen, src_local_l1_addr, addrgen.page_size, 0 /* offset */, noc);
}

// the deprecated tile forms of the page calls, for TensorAccessor
template <typename DSpec>
[[deprecated("Use <typename AddrGen> noc_async_read_page instead.")]]
FORCE_INLINE void noc_async_read_tile(
    const uint32_t id,
    const TensorAccessor<DSpec>& addrgen,
    uint32_t dst_local_l1_addr,
    uint32_t offset = 0,
    uint8_t noc = noc_index) {
    noc_async_read_page<TensorAccessor<DSpec>, false>(id, addrgen, dst_local_l1_addr, offset, noc);
}

template <typename DSpec>
[[deprecated("Use <typename AddrGen> noc_async_write_page instead.")]]
FORCE_INLINE void noc_async_write_tile(
    const uint32_t id, const TensorAccessor<DSpec>& addrgen, uint32_t src_local_l1_addr, uint8_t noc = noc_index) {
    noc_async_write_page<TensorAccessor<DSpec>, false>(
        id, addrgen, src_local_l1_addr, addrgen.get_aligned_page_size(), 0, noc);
}

// ---- semaphores ---------------------------------------------------------------------------------
template <ProgrammableCoreType type = ProgrammableCoreType::TENSIX>
FORCE_INLINE uintptr_t get_semaphore(uint32_t semaphore_id) {
    static_assert(type == ProgrammableCoreType::TENSIX, "the emulator models Tensix cores only");
    return ttmock::semaphore_addr(semaphore_id);
}

inline void noc_semaphore_set_remote(
    std::uint32_t src_local_l1_addr, std::uint64_t dst_noc_addr, uint8_t noc = noc_index) {
    (void)noc;
    ttmock::semaphore_set_remote(src_local_l1_addr, dst_noc_addr);
}

inline void noc_semaphore_set_multicast(
    uint32_t src_local_l1_addr,
    uint64_t dst_noc_addr_multicast,
    uint32_t num_dests,
    bool linked = false,
    uint8_t noc = noc_index,
    uint8_t vc = NOC_MULTICAST_WRITE_VC) {
    (void)linked;
    (void)noc;
    (void)vc;
    ttmock::semaphore_set_multicast(src_local_l1_addr, dst_noc_addr_multicast, num_dests);
}

FORCE_INLINE
void noc_semaphore_wait(volatile tt_l1_ptr uint32_t* sem_addr, uint32_t val) {
    ttmock::semaphore_wait(sem_addr, val, false);
}

FORCE_INLINE
void noc_semaphore_wait_min(volatile tt_l1_ptr uint32_t* sem_addr, uint32_t val) {
    ttmock::semaphore_wait(sem_addr, val, true);
}

FORCE_INLINE
void noc_semaphore_set(volatile tt_l1_ptr uint32_t* sem_addr, uint32_t val) { ttmock::semaphore_set(sem_addr, val); }

template <bool posted = false>
FORCE_INLINE void noc_semaphore_inc(
    uint64_t addr, uint32_t incr, uint8_t noc_id = noc_index, uint8_t vc = NOC_UNICAST_WRITE_VC) {
    (void)noc_id;
    (void)vc;
    ttmock::semaphore_inc(addr, incr);
}
