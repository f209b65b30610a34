// tilelang-tt mock TT-Metalium: the NOC a data movement kernel uses and the NOC constants the API's defaults name
// (internal/dataflow/dataflow_api_common.h, noc/noc_parameters.h, core_config.h of Wormhole).
#pragma once
#include <cstdint>

#ifndef NOC_INDEX
#define NOC_INDEX 0
#endif
constexpr uint8_t noc_index = NOC_INDEX;

#define NOC_PAYLOAD_WIDTH 256
#define NOC_WORD_BYTES (NOC_PAYLOAD_WIDTH / 8)
#define NOC_MAX_BURST_WORDS 256
#define NOC_MAX_BURST_SIZE (NOC_MAX_BURST_WORDS * NOC_WORD_BYTES)
#define NOC_UNICAST_WRITE_VC 1
#define NOC_MULTICAST_WRITE_VC 4

enum ProgrammableCoreType {
    TENSIX = 0,
    ACTIVE_ETH = 1,
    IDLE_ETH = 2,
    DRAM = 3,
    COUNT = 4,
};
