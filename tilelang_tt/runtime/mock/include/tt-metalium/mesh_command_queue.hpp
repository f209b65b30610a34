// tilelang-tt mock TT-Metalium: see host_api.hpp (one header holds the host API).
#pragma once
#include "tt-metalium/host_api.hpp"
