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
#ifndef TTMOCK_DST_FULL_SYNC
#define TTMOCK_DST_FULL_SYNC 0
#endif

// The SDK compiles a compute kernel once per TRISC thread (TRISC_UNPACK, TRISC_MATH, TRISC_PACK);
// the emulator compiles it once and runs the three threads' work in program order, so the code of
// every thread is in: TRISC_MATH is defined (the SFPU code the SDK keeps for MATH) and MATH(),
// PACK(), UNPACK() keep their arguments (api/compute/common_globals.h).
// (sdk_twin compares the mock with the SDK's UNPACK and PACK passes by defining TRISC_UNPACK /
// TRISC_PACK, as the SDK's chlkc_unpack.cpp / chlkc_pack.cpp do)
#if !defined(TRISC_UNPACK) && !defined(TRISC_PACK)
#define TRISC_MATH 1
#endif
// chlkc_descriptors.h: the DST sync mode from ComputeConfig::dst_full_sync_en
#if TTMOCK_DST_FULL_SYNC
#define DST_SYNC_MODE DstSync::SyncFull
#else
#define DST_SYNC_MODE DstSync::SyncHalf
#endif

namespace ckernel {}
using namespace ckernel;

constexpr bool DST_ACCUM_MODE = TTMOCK_DST_ACCUM_MODE;
