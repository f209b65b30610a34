// tilelang-tt mock TT-Metalium: circular-buffer calls shared by dataflow and compute kernels.
#pragma once
#include <cstdint>

void cb_reserve_back(int32_t operand, int32_t num_pages);
void cb_push_back(int32_t operand, int32_t num_pages);
void cb_wait_front(int32_t operand, int32_t num_pages);
void cb_pop_front(int32_t operand, int32_t num_pages);
bool cb_pages_available_at_front(int32_t operand, int32_t num_pages);
bool cb_pages_reservable_at_back(int32_t operand, int32_t num_pages);
