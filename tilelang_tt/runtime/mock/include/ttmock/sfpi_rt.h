// tilelang-tt mock TT-Metalium: the emulator's side of the SFPI vector interface (sfpi.h) and of
// the LLK SFPU wrappers (_llk_math_eltwise_*_sfpu_params_). A vector is 32 lanes; each call works
// on whole vectors (never one lane), src/sfpi.cpp checks the caller and addresses DST, and the
// arithmetic is src/sfpu.cpp's SFPU model (docs/MOCK.md "SFPI").
#pragma once
#include <cstdint>

namespace ttmock::sfpi_rt {

constexpr int kLanes = 32;

// Lane arithmetic (SFPMAD and its special cases: one rounding, denormals flushed)
void mad(float* d, const float* a, const float* b, const float* c);
void add(float* d, const float* a, const float* b);
void sub(float* d, const float* a, const float* b);
void mul(float* d, const float* a, const float* b);
// Comparisons: a - b (SFPMAD) tested against zero as SFPSETCC does; the result's bit i is lane i.
// op: 0 <, 1 <=, 2 >, 3 >=, 4 ==, 5 !=
uint32_t cmp(int op, const float* a, const float* b);

// LaneEnabled: the lanes writes go to; assign copies src into dst in the enabled lanes only
uint32_t enabled();
void assign(uint32_t* dst, const uint32_t* src);
// v_if / v_elseif / v_else / v_endif / v_and on the condition-code stack
void cc_if(uint32_t cond);
void cc_elseif(uint32_t cond);
void cc_else();
void cc_end();
void cc_and(uint32_t cond);

// dst_reg[idx] (SFPLOAD / SFPSTORE at the Dst row counter + 2 * idx), dst_reg++
void load(int idx, uint32_t* bits);
void store(int idx, const uint32_t* bits, bool is_float);
void dst_incr(int n);

// vConstFloatPrgm0..2 (k 0..2), vConstIntPrgm0..2 (k 3..5): per-core SFPU registers
uint32_t prgm_const(int k);
void set_prgm_const(int k, uint32_t bits);

// The LLK SFPU wrappers: sfpu_start checks the DST indices and sets the Dst row counter to tile
// `tile`; face_step(n) moves it n faces (16 rows each) on, as _llk_math_eltwise_sfpu_inc_dst_face_addr_;
// sfpu_done resets it. `call` names the wrapper in errors.
void sfpu_start(const char* call, uint32_t tile, const uint32_t* check, int ncheck);
void face_step(int faces);
void sfpu_done();

}  // namespace ttmock::sfpi_rt
