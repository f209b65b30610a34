// tilelang-tt mock TT-Metalium: tt::DataFormat and tt::CBIndex (declared once for host and
// device code in ttmock/types.hpp).
#pragma once
#include "ttmock/types.hpp"
