// tilelang-tt mock TT-Metalium: see ttmock/compute_api.h (one implementation of the compute API).
#pragma once
#include "ttmock/compute_api.h"
