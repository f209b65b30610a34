// tilelang-tt mock TT-Metalium: what the watcher records of a device assert (ASSERT's optional
// second argument), as the SDK's hostdev/dev_msgs.h declares it. Data movement kernels see it
// through the dataflow, compile-time-args and print headers (the SDK's firmware headers bring it);
// compute kernels through api/debug/assert.h only.
#pragma once

enum debug_assert_type_t {
    DebugAssertOK = 2,
    DebugAssertTripped = 3,
    DebugAssertNCriscNOCReadsFlushedTripped = 4,
    DebugAssertNCriscNOCNonpostedWritesSentTripped = 5,
    DebugAssertNCriscNOCNonpostedAtomicsFlushedTripped = 6,
    DebugAssertNCriscNOCPostedWritesSentTripped = 7,
    DebugAssertRtaOutOfBounds = 8,
    DebugAssertCrtaOutOfBounds = 9,
    DebugAssertHwFault = 10,
    DebugAssertNCriscNOCPacketTagClearedTripped = 11,
    DebugAssertNocMidNotClearedTripped = 12,
};
