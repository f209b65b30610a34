// tilelang-tt mock TT-Metalium: what every compute kernel includes (api/compute/common.h).
#pragma once
#include "api/compute/common_globals.h"
#include "api/compute/reg_api.h"
#include "api/compute/pack.h"
#include "api/compute/reconfig_data_format.h"
#include "api/compute/cb_api.h"
#include "api/compute/compute_kernel_hw_startup.h"
#include "ttmock/kernel_args.h"
// the MATH thread's LLK SFPU wrappers, visible through this header as through the SDK's
#ifdef TRISC_MATH
#include "llk_math_eltwise_sfpu_common.h"
#endif

template <typename T>
FORCE_INLINE T get_arg_val(int arg_idx) {
    return ttmock::arg_as<T>(ttmock::runtime_arg(arg_idx));
}

template <typename T>
FORCE_INLINE T get_common_arg_val(int arg_idx) {
    return ttmock::arg_as<T>(ttmock::common_runtime_arg(arg_idx));
}
