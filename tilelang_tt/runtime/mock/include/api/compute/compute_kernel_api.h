// tilelang-tt mock TT-Metalium: see ttmock/compute_api.h (one implementation of the compute API).
// The SDK declares sigmoid, tanh, log, abs, square and silu here.
#pragma once
#include "ttmock/compute_api.h"
