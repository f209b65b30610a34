"""The SFPI vector interface in compute kernels (testing/runtime/programs/sfpi): custom SFPU
functions written as TT-Metalium's custom SFPI examples write them - vFloat / dst_reg through the
LLK's SFPU wrappers (a binary add with explicit tile indices; a smoothstep-like function with nested
v_if / v_elseif / v_else masks, dst_reg++, programmable constants, setsgn), and the SDK's
experimental my_add_tile_face / smoothstep_tile_face through the SFPU call macros - checked bit for bit
against the host's own model of the SFPU's rules, in both DST modes; and what hardware cannot do
(a DST index or dst_reg address beyond DST, SFPU work after tile_regs_commit, SFPI in a data
movement kernel) refused with the core, kernel and call."""

from pathlib import Path

import pytest

from tilelang_tt.runtime import mockbuild

PROGRAM = Path(__file__).resolve().parent / "programs" / "sfpi"

pytestmark = pytest.mark.skipif(not mockbuild.has_fmt(), reason="needs fmt (apt-get install libfmt-dev)")


@pytest.fixture(scope="module")
def exe():
    return mockbuild.build_host(PROGRAM / "main.cpp", PROGRAM)


@pytest.mark.parametrize("mode", ["add", "smoothstep", "sdk_add", "sdk_smoothstep"])
@pytest.mark.parametrize("fp32", ["0", "1"])
def test_sfpi_kernels_match_the_sfpu_rules_bit_for_bit(exe, mode, fp32):
    out = mockbuild.run_host(exe, [mode, "3", fp32]).stdout
    assert out.splitlines()[-1] == "Test Passed", out


@pytest.mark.parametrize(
    "args,expected",
    [
        (["add", "1", "0", "BEYOND_DST"],
         "core (0,0) add.cpp (compute kernel): _llk_math_eltwise_binary_sfpu_params_: DST index 9 but one "
         "acquire holds 8 tiles in this mode (16-bit, half-sync)"),
        (["smoothstep", "1", "0", "BEYOND_DST"],
         "core (0,0) smoothstep.cpp (compute kernel): write of dst_reg[300]: addresses DST row 728 (tile 11"),
        (["add", "1", "0", "AFTER_COMMIT"],
         "core (0,0) add.cpp (compute kernel): _llk_math_eltwise_binary_sfpu_params_: SFPU access to DST "
         "outside tile_regs_acquire()..tile_regs_commit()"),
        (["dm_sfpi", "1", "0"],
         "core (0,0) dm_sfpi.cpp (reader kernel): read of dst_reg[0]: SFPI is the vector engine of a "
         "compute kernel's MATH thread; a reader kernel cannot use it"),
    ],
)
def test_what_hardware_cannot_do_is_refused(exe, args, expected):
    with pytest.raises(mockbuild.MockRuntimeError) as info:
        mockbuild.run_host(exe, args)
    assert "TT-MOCK ERROR: " + expected in str(info.value)


def test_tile_slices_print_as_tt_metal_prints_them(exe, monkeypatch):
    """DPRINT("{}", TSLICE(...)): the writer samples the front of its output CB (rows 0 and 16,
    columns 0 and 16 of a tile whose element (r, c) is r / 2 + c / 4), then row 1 into a 16-byte
    TileSlice (8 bf16 values: truncated, noted); the compute kernel's UNPACK thread samples its
    input CB, its MATH thread warns that it has no CB pointers."""
    monkeypatch.setenv("TT_METAL_DPRINT_CORES", "0,0")
    out = mockbuild.run_host(exe, ["slice", "1", "0"]).stdout
    assert out == (
        "0:(x=0,y=0):TR0: in 0: 0 4\n"
        "0:(x=0,y=0):TR0: 8 12\n"
        "0:(x=0,y=0):TR1: Warning: MATH core does not support TileSlice printing, omitting print...\n"
        "0:(x=0,y=0):BR: tile 0:\n"
        "0:(x=0,y=0):BR: 0 4\n"
        "0:(x=0,y=0):BR: 8 12\n"
        "0:(x=0,y=0):BR: row 1: 0.5 0.75 1 1.25 1.5 1.75 2 2.25 "
        "<TileSlice data truncated due to exceeding max count (8)>\n"
        "0:(x=0,y=0):BR: \n"
        "Test Passed\n"
    )
    # fp32 CBs: 4-byte samples, so the 16-byte slice holds 4
    out = mockbuild.run_host(exe, ["slice", "1", "1"]).stdout
    assert "0:(x=0,y=0):BR: row 1: 0.5 0.75 1 1.25 <TileSlice data truncated due to exceeding max count (4)>\n" in out
