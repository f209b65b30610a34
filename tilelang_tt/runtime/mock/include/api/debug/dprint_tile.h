// tilelang-tt mock TT-Metalium: TileSlice (api/debug/dprint_tile.h): samples of a CB tile for
// DPRINT("{}", TSLICE(cb, tile, SliceRange::hw0_32_16())), taken when the TileSlice is built,
// relative to the CB's read pointer (the front: after cb_wait_front) or write pointer (the back:
// after cb_reserve_back). Compute kernels: the UNPACK thread samples the front, the PACK thread the
// back, the MATH thread prints a warning (as the SDK's threads do); data movement kernels name the
// pointer and whether the CB is an input or an output.
#pragma once
#include <cstdint>

#include "hostdevcommon/dprint_common.h"
#if defined(COMPILE_FOR_BRISC) || defined(COMPILE_FOR_NCRISC)
#include "hostdev/dev_msgs.h"  // as the SDK's data movement builds see it (its firmware headers)
#endif

using dprint_tslice_ptr_t = bool;
#define TSLICE_RD_PTR true
#define TSLICE_WR_PTR false
using dprint_tslice_cb_t = bool;
#define TSLICE_INPUT_CB true
#define TSLICE_OUTPUT_CB false

namespace ttmock {
// fills `front` (the read pointer's view, or the one ptr_type names) and, in compute kernels, `back`
// (the PACK thread's view); ptr_type: 1 read, 0 write, -1 a compute kernel
void tile_slice(void* front, void* back, int max_bytes, uint8_t cb, int tile_idx, const SliceRange& range,
                int ptr_type, bool endl_rows, bool untilize);
}  // namespace ttmock

template <int MAX_BYTES = 32 * 2>
struct TileSlice : TileSliceHostDev<MAX_BYTES> {
    TileSlice(
        uint8_t cb,
        int tile_idx,
        const SliceRange& slice_range,
#if defined(COMPILE_FOR_NCRISC)
        dprint_tslice_cb_t cb_type,
        dprint_tslice_ptr_t ptr_type = TSLICE_WR_PTR,
#elif defined(COMPILE_FOR_BRISC)
        dprint_tslice_cb_t cb_type,
        dprint_tslice_ptr_t ptr_type = TSLICE_RD_PTR,
#endif
        bool endl_rows = true,
        bool print_untilized = true) {
#if defined(COMPILE_FOR_NCRISC) || defined(COMPILE_FOR_BRISC)
        (void)cb_type;  // the emulator's CBs have one data format for both directions
        ::ttmock::tile_slice(this, nullptr, MAX_BYTES, cb, tile_idx, slice_range, ptr_type ? 1 : 0, endl_rows, print_untilized);
#else
        ::ttmock::tile_slice(this, &pack_view_, MAX_BYTES, cb, tile_idx, slice_range, -1, endl_rows, print_untilized);
#endif
    }

private:
#if !defined(COMPILE_FOR_NCRISC) && !defined(COMPILE_FOR_BRISC)
    TileSliceHostDev<MAX_BYTES> pack_view_;  // what the PACK thread samples (the back of the CB)
#endif
};

using TSLICE = TileSlice<64>;
