"""Interleaved L1 buffers, the allocator's queries and InterleavedAddrGenFast
(testing/runtime/programs/l1_interleaved): an L1 MeshBuffer's pages go round-robin over the
cores' L1 (the L1 banks), the host writes and reads them there, kernels reach them through
InterleavedAddrGenFast<false> and a TensorAccessor; InterleavedAddrGenFast<true> steps DRAM banks by
its data format's tile size; MeshDevice::allocator() answers alignments and banks. A generator whose
data format does not match the buffer's page stride is refused."""

from pathlib import Path

import pytest

from tilelang_tt.runtime import mockbuild

PROGRAM = Path(__file__).resolve().parent / "programs" / "l1_interleaved"

pytestmark = pytest.mark.skipif(not mockbuild.has_fmt(), reason="needs fmt (apt-get install libfmt-dev)")


@pytest.fixture(scope="module")
def exe():
    return mockbuild.build_host(PROGRAM / "main.cpp", PROGRAM)


@pytest.mark.parametrize("tiles,cores", [(1, 1), (10, 2), (150, 4)])  # 150 > 64 L1 banks: wraps around
def test_tiles_pass_through_an_interleaved_l1_buffer(exe, tiles, cores):
    out = mockbuild.run_host(exe, [str(tiles), str(cores)]).stdout.splitlines()
    assert out[0] == "alignment: DRAM 32 L1 16; banks: DRAM 12 L1 64; a 6-byte page takes 32 bytes in DRAM"
    assert out[-1] == "Test Passed"


def test_a_generator_whose_format_does_not_match_the_pages_is_refused(exe):
    with pytest.raises(mockbuild.MockRuntimeError) as info:
        mockbuild.run_host(exe, ["4", "1", "WRONG_FORMAT"])
    msg = str(info.value)
    assert "TT-MOCK ERROR: core (0,0) copy.cpp (writer kernel): InterleavedAddrGenFast<true>::get_noc_addr(0, 0)" in msg
    assert "4096-byte tile" in msg and "2048 bytes apart" in msg


def test_a_constant_tile_size_of_a_cb_the_kernel_cannot_know_does_not_compile(exe):
    with pytest.raises(mockbuild.MockRuntimeError) as info:
        mockbuild.run_host(exe, ["4", "1", "UNKNOWN_CB"])
    msg = str(info.value)
    assert "CreateKernel: copy.cpp (writer kernel) does not compile" in msg
    assert "cb_format_unknown_when_the_kernel_was_created" in msg
