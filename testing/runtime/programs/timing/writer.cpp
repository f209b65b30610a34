// Calibration writer: takes the one packed tile off c_16.
#include <cstdint>
#include "api/dataflow/dataflow_api.h"

void kernel_main() {
    cb_wait_front(16, 1);
    cb_pop_front(16, 1);
}
