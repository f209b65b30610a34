// tilelang-tt mock TT-Metalium: the device assert (api/debug/assert.h). The SDK's ASSERT(condition)
// checks only when the watcher is on (WATCHER_ENABLED; otherwise it compiles to nothing); on the
// emulator it always checks, as with the watcher on: a failed condition stops the run with an error
// naming core, kernel, the kernel's file and line and the condition as written.
#pragma once
#include <cstdint>

#include "hostdev/dev_msgs.h"  // debug_assert_type_t (ASSERT's optional second argument)

namespace ttmock {
[[noreturn]] void assert_tripped(const char* condition, const char* file, int line);
}

#define ASSERT(condition, ...) \
    (void((condition) ? 0 : (::ttmock::assert_tripped(#condition, __FILE__, __LINE__), 0)))
#define ASSERT_ENABLED 1
