// tilelang-tt mock TT-Metalium: tt-metalium/device.hpp. In the SDK it declares IDevice, the
// single-chip device interface under a MeshDevice; programs of the 0.81.1 API reach the device
// through distributed::MeshDevice, which this header brings with the host API. The emulator
// offers no IDevice of its own (a program that names it does not compile).
#pragma once
#include <tt-metalium/host_api.hpp>
#include <tt-metalium/mesh_device.hpp>
