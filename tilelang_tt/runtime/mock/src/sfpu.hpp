// tilelang-tt mock TT-Metalium: the vector engine (SFPU) functions on DST tiles.
//
// Each function follows the algorithm of its Wormhole LLK kernel (hw/ckernels/wormhole_b0/metal/
// llk_api/llk_sfpu/ckernel_sfpu_*.h of TT-Metalium 0.81.1): the same polynomial, Newton steps
// and bit manipulations, with SFPMAD modelled as a fused multiply-add rounded once to nearest
// even and denormals flushed. docs/MOCK.md lists the function -> source mapping.
#pragma once
#include <cstdint>

namespace ttmock::sfpu {

enum class Unary : uint8_t {
    Fill, AddScalar, SubScalar, MulScalar, DivScalar, RsubScalar,
    Exp, Log, Sqrt, Rsqrt, Recip, Relu, Gelu, Sigmoid, Tanh, Abs, Negative, Square, Silu,
    UnaryMax, UnaryMin, Gtz, Gez, Ltz, Lez, Eqz, Nez, Floor, Ceil, Trunc, Round,
    Sin, Cos, Tan, Atan, Sinh, Cosh, Erf, Power, Fmod, Asin, Acos, Asinh, Acosh, Atanh, Log1p,
    Rpow,
    Unknown,
};
enum class Binary : uint8_t { Add, Sub, Mul, Div, Max, Min, Pow, Fmod, Atan2, Unknown };

Unary unary_from_name(const char* name);
Binary binary_from_name(const char* name);

// tile: a DST tile (fp32 bit patterns; BF16 in the high half in 16-bit mode), updated in place.
// approx: the function's approximate mode; param: the scalar of fill / *_unary ops.
// param2: a second scalar (fmod: 1/c, from fmod_tile_init)
void unary(Unary op, uint32_t* tile, float param, bool approx, bool fp32_dst, float param2 = 0.0f);
// approx: APPROX (math_approx_mode), which atan2 reads
void binary(Binary op, uint32_t* out, const uint32_t* a, const uint32_t* b, bool fp32_dst, bool approx = false);
// The scalar forms of unary / binary: the portable path, and the reference the vector paths
// (exp, fill, the scalar ops, binary add / sub / mul / max / min on AVX-512) must match bit for
// bit (testing/runtime/programs/fast_paths compares them)
void unary_reference(Unary op, uint32_t* tile, float param, bool approx, bool fp32_dst, float param2 = 0.0f);
void binary_reference(Binary op, uint32_t* out, const uint32_t* a, const uint32_t* b, bool fp32_dst,
                      bool approx = false);
// where: out = cond != 0 ? a : b, per datum (16-bit DST: the BF16 half only)
// cumsum (ckernel_sfpu_cumsum.h): each of the 32 columns summed top to bottom, one SFPADD per
// datum, starting from carry[column] (zeros when first) and leaving the column totals in carry
void cumsum(uint32_t* tile, float* carry, bool first, bool fp32_dst);
// reshuffle_rows (ckernel_sfpu_reshuffle_rows.h): for r = 0..31 in order, out row idx[r] =
// SFPADD(in row r, out row idx[r]) unless idx[r] >= 32
void reshuffle_rows(const uint32_t* in, uint32_t* out, const uint8_t* idx, bool fp32_dst);
// where
void where(uint32_t* out, const uint32_t* cond, const uint32_t* a, const uint32_t* b, bool fp32_dst);

}  // namespace ttmock::sfpu
