"""Sharded L1 buffers used in place (testing/runtime/programs/l1_shards), as TT-Metalium programs
use them: ShardSpecBuffer + BufferShardingArgs on an L1 MeshBuffer (shards of any 2-D shape in
pages, whatever the layout's name), CBs placed on the shards with set_globally_allocated_address
on MeshBuffer::get_backing_buffer(), a compute kernel that steps through its own CBs without
cb_wait_front / cb_reserve_back, the result read back from L1, and enums printed by name with fmt.
A second kernel on a CB stepped through that way races on hardware and is refused."""

from pathlib import Path

import pytest

from tilelang_tt.runtime import mockbuild

PROGRAM = Path(__file__).resolve().parent / "programs" / "l1_shards"

pytestmark = pytest.mark.skipif(not mockbuild.has_fmt(), reason="needs fmt (apt-get install libfmt-dev)")


@pytest.fixture(scope="module")
def exe():
    return mockbuild.build_host(PROGRAM / "main.cpp", PROGRAM)


@pytest.mark.parametrize("layout,cores,per_core", [
    ("height", 4, 6), ("width", 4, 6), ("block", 6, 4)])
def test_shards_used_in_place(exe, layout, cores, per_core):
    out = mockbuild.run_host(exe, [layout]).stdout.splitlines()
    assert out[0] == (f"{per_core} tiles of a 6x4-tile tensor on each of {cores} cores "
                      f"({layout.upper()}_SHARDED)")
    assert out[-1] == "Test Passed"


def test_a_second_kernel_on_a_cb_stepped_through_unguarded_is_refused(exe):
    with pytest.raises(mockbuild.MockRuntimeError) as info:
        mockbuild.run_host(exe, ["height", "TWO_KERNELS"])
    msg = str(info.value)
    assert "TT-MOCK ERROR: core (0,0) peek.cpp (reader kernel): cb_wait_front(cb=0, 1): CB 0" in msg
    assert "compute.cpp (compute kernel), which accessed it beyond cb_wait_front" in msg
    assert "races on hardware" in msg
