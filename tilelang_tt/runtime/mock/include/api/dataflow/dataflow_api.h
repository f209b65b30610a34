// tilelang-tt mock TT-Metalium: data movement kernel API (RISCV_0 / RISCV_1).
#pragma once
#include <cstdint>

#include "api/tensor/tensor_accessor.h"
#include "ttmock/cb_api.h"
#include "ttmock/kernel_args.h"
#include "ttmock/types.hpp"

#define FORCE_INLINE inline __attribute__((always_inline))
#define tt_l1_ptr

constexpr uint8_t noc_index = 0;

uint32_t get_write_ptr(uint32_t operand);
uint32_t get_read_ptr(uint32_t operand);
uint32_t get_tile_size(uint32_t operand);
tt::DataFormat get_dataformat(uint32_t operand);

uint32_t my_x_coord();  // NOC coordinates of this core
uint32_t my_y_coord();
#define my_x my_x_array()
#define my_y my_y_array()
const uint32_t* my_x_array();
const uint32_t* my_y_array();

uint64_t get_noc_addr(uint32_t noc_x, uint32_t noc_y, uint32_t addr, uint8_t noc = noc_index);
uint64_t get_noc_addr(uint32_t addr, uint8_t noc = noc_index);  // this core's L1
uint64_t get_noc_multicast_addr(uint32_t noc_x_start, uint32_t noc_y_start, uint32_t noc_x_end,
                                uint32_t noc_y_end, uint32_t addr, uint8_t noc = noc_index);

void noc_async_read(uint64_t src_noc_addr, uint32_t dst_local_l1_addr, uint32_t size,
                    uint8_t noc = noc_index);
void noc_async_write(uint32_t src_local_l1_addr, uint64_t dst_noc_addr, uint32_t size,
                     uint8_t noc = noc_index);
void noc_async_read_barrier(uint8_t noc = noc_index);
void noc_async_write_barrier(uint8_t noc = noc_index);
void noc_async_writes_flushed(uint8_t noc = noc_index);
void noc_async_write_multicast(uint32_t src_local_l1_addr, uint64_t dst_noc_addr_multicast,
                               uint32_t size, uint32_t num_dests, bool linked = false,
                               uint8_t noc = noc_index);
void noc_async_write_multicast_loopback_src(uint32_t src_local_l1_addr,
                                            uint64_t dst_noc_addr_multicast, uint32_t size,
                                            uint32_t num_dests, bool linked = false,
                                            uint8_t noc = noc_index);

uint32_t get_semaphore(uint32_t semaphore_id);
void noc_semaphore_wait(volatile uint32_t* sem_addr, uint32_t val);
void noc_semaphore_wait_min(volatile uint32_t* sem_addr, uint32_t val);
void noc_semaphore_set(volatile uint32_t* sem_addr, uint32_t val);
void noc_semaphore_inc(uint64_t addr, uint32_t incr, uint8_t noc_id = noc_index);
void noc_semaphore_set_multicast(uint32_t src_local_l1_addr, uint64_t dst_noc_addr_multicast,
                                 uint32_t num_dests, bool linked = false, uint8_t noc = noc_index);
void noc_semaphore_set_remote(uint32_t src_local_l1_addr, uint64_t dst_noc_addr,
                              uint8_t noc = noc_index);

template <typename AddrGen>
inline void noc_async_read_page(uint32_t id, const AddrGen& addrgen, uint32_t dst_local_l1_addr,
                                uint32_t offset = 0, uint8_t noc = noc_index) {
    noc_async_read(addrgen.get_noc_addr(id, offset), dst_local_l1_addr,
                   addrgen.page_size - offset, noc);
}

template <typename AddrGen>
inline void noc_async_write_page(uint32_t id, const AddrGen& addrgen, uint32_t src_local_l1_addr,
                                 uint32_t write_size_bytes = 0, uint32_t offset = 0,
                                 uint8_t noc = noc_index) {
    noc_async_write(src_local_l1_addr, addrgen.get_noc_addr(id, offset),
                    write_size_bytes ? write_size_bytes : addrgen.page_size - offset, noc);
}

template <typename AddrGen>
inline void noc_async_read_tile(uint32_t id, const AddrGen& addrgen, uint32_t dst_local_l1_addr,
                                uint32_t offset = 0, uint8_t noc = noc_index) {
    noc_async_read_page(id, addrgen, dst_local_l1_addr, offset, noc);
}

template <typename AddrGen>
inline void noc_async_write_tile(uint32_t id, const AddrGen& addrgen, uint32_t src_local_l1_addr,
                                 uint8_t noc = noc_index) {
    noc_async_write_page(id, addrgen, src_local_l1_addr, 0, 0, noc);
}

template <typename AddrGen>
inline uint64_t get_noc_addr(uint32_t id, const AddrGen& addrgen, uint32_t offset = 0,
                             uint8_t noc = noc_index) {
    return addrgen.get_noc_addr(id, offset, noc);
}
