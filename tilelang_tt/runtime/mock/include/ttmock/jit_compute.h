// tilelang-tt mock TT-Metalium: what the kernel JIT puts in front of a compute kernel, as the SDK's
// firmware wrapper does (trisck.cc / chlkc_list.h: `using namespace ckernel;`, and the generated
// chlkc_descriptors.h: DST_ACCUM_MODE from ComputeConfig::fp32_dest_acc_en). The LLK enums come with
// the wrapper's ckernel.h, so every compute kernel sees them.
#pragma once
#include "api/compile_time_args.h"
#include "internal/tensix_types.h"
#include "ttmock/llk_defs.h"

#ifndef TTMOCK_DST_ACCUM_MODE
#define TTMOCK_DST_ACCUM_MODE false
#endif

namespace ckernel {}
using namespace ckernel;

constexpr bool DST_ACCUM_MODE = TTMOCK_DST_ACCUM_MODE;
