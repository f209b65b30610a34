// tilelang-tt mock TT-Metalium: the SFPU unary ops' common header (api/compute/eltwise_unary/eltwise_unary.h).
#pragma once
#include "api/compute/common.h"
#include "api/compute/compute_kernel_hw_startup.h"
#include "api/compute/tile_move_copy.h"
