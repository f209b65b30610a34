// tilelang-tt mock TT-Metalium: tt-metalium/tt_metal.hpp. In the SDK it adds tt::tt_metal::detail
// functions (direct device reads and writes, slow-dispatch launches) to the host API; the emulator
// offers the host API it includes, none of the detail functions.
#pragma once
#include <tt-metalium/host_api.hpp>
