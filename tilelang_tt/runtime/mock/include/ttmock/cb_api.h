// tilelang-tt mock TT-Metalium: the emulator's circular-buffer calls (src/dataflow.cpp), shared by
// the dataflow API (api/dataflow/dataflow_api.h) and the compute API (api/compute/cb_api.h).
#pragma once
#include <cstdint>

namespace ttmock {
void cb_reserve_back(int32_t operand, int32_t num_pages);
void cb_push_back(int32_t operand, int32_t num_pages);
void cb_wait_front(int32_t operand, int32_t num_pages);
void cb_pop_front(int32_t operand, int32_t num_pages);
bool cb_pages_available_at_front(int32_t operand, int32_t num_pages);
bool cb_pages_reservable_at_back(int32_t operand, int32_t num_pages);
uint32_t cb_write_ptr(uint32_t operand);
uint32_t cb_read_ptr(uint32_t operand);
uint32_t cb_tile_address(uint32_t operand, uint32_t tile_index);  // compute: get_tile_address
// compute: read_tile_value (a word of a front tile the kernel waited for)
uint32_t cb_read_tile_value(uint32_t operand, uint32_t tile_index, uint32_t element_offset);
uint32_t cb_tile_size(uint32_t operand);  // tile size of the CB's data format
uint8_t cb_data_format(uint32_t operand);  // the CB's data format (DataFormat's value)
}  // namespace ttmock
