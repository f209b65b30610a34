// tilelang-tt mock TT-Metalium: the dispatch core configuration a device is opened with. The
// emulator has no dispatch cores; only the default configuration exists here.
#pragma once

namespace tt::tt_metal {

class DispatchCoreConfig {
public:
    DispatchCoreConfig() = default;
};

}  // namespace tt::tt_metal
