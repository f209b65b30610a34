"""A TT-Metalium program written as Tenstorrent's programming examples are (testing/runtime/programs/
metalium_style): the SDK host headers' transitive includes (fmt, TT_FATAL / TT_THROW,
tt::constants, <iostream>), tt_metal.hpp, the bfloat16 vector helpers, tt::tile_size,
num_cores_to_corerangeset; kernels with the implicit dataflow include, named and indexed
compile-time args (kernel_compile_time_args), init_sfpu, acquire_dst / release_dst, DPRINT."""

import shutil
from pathlib import Path

import pytest

from tilelang_tt.runtime import emulate, mockbuild

PROGRAM = Path(__file__).resolve().parent / "programs" / "metalium_style"

# the program formats with fmt itself (fmt::print, DPRINT format specs), as Tenstorrent's do
pytestmark = pytest.mark.skipif(not mockbuild.has_fmt(), reason="needs fmt (apt-get install libfmt-dev)")


@pytest.fixture(scope="module")
def exe():
    return mockbuild.build_host(PROGRAM / "main.cpp", PROGRAM)


def test_runs_and_passes_its_own_check_with_dprint(exe, monkeypatch):
    monkeypatch.setenv("TT_METAL_DPRINT_CORES", "0,0")
    monkeypatch.delenv("TT_METAL_DPRINT_RISCVS", raising=False)
    out = mockbuild.run_host(exe, ["6", "3"]).stdout.splitlines()
    # DPRINT lines carry the print server's prefix (bf16_t prints as its value); a compute kernel prints from its three
    # threads, DPRINT_MATH from TR1 only, DPRINT_DATA0 from the NOC-0 kernel (BRISC)
    assert out == ["0:(x=0,y=0):NC: reader: 2 tiles from 0 (cb 0)",
                   "0:(x=0,y=0):TR0: compute: 2 tiles",
                   "0:(x=0,y=0):TR1: compute: 2 tiles",
                   "0:(x=0,y=0):TR2: compute: 2 tiles",
                   "0:(x=0,y=0):TR1: math done: 1.50",
                   "0:(x=0,y=0):BR: writer: 0x2 done, 1.5",
                   "Test Passed",
                   "checked 6 tiles on 3 cores"]


def test_dprint_follows_the_selected_cores_and_riscs(exe, monkeypatch):
    monkeypatch.delenv("TT_METAL_DPRINT_CORES", raising=False)
    out = mockbuild.run_host(exe, ["6", "3"]).stdout
    assert "):NC:" not in out and "Test Passed" in out
    monkeypatch.setenv("TT_METAL_DPRINT_CORES", "(1,0)-(2,0)")
    monkeypatch.setenv("TT_METAL_DPRINT_RISCVS", "NC")
    lines = [l for l in mockbuild.run_host(exe, ["6", "3"]).stdout.splitlines() if "):" in l]
    assert lines == ["0:(x=1,y=0):NC: reader: 2 tiles from 2 (cb 0)",
                     "0:(x=2,y=0):NC: reader: 2 tiles from 4 (cb 0)"]


def test_tt_fatal_reports_its_message(exe):
    with pytest.raises(mockbuild.MockRuntimeError) as info:
        mockbuild.run_host(exe, ["5", "3"])
    msg = str(info.value)
    assert "TT_FATAL" in msg and "5 tiles do not split evenly over 3 cores" in msg


@pytest.mark.parametrize("define,expect", [
    ("MATH_AFTER_PACK", "negative_tile"),  # math on DST the packer is reading: a race on hardware
    ("BAD_DPRINT", "DPRINT(\"{:q}\\n\")"),  # a format string the print server cannot format
])
def test_what_hardware_would_not_do_is_refused(exe, monkeypatch, define, expect):
    monkeypatch.setenv("TT_METAL_DPRINT_CORES", "all")
    with pytest.raises(mockbuild.MockRuntimeError) as info:
        mockbuild.run_host(exe, ["3", "3", define])
    msg = str(info.value)
    assert "TT-MOCK ERROR" in msg and expect in msg and "core (0,0)" in msg and "compute.cpp" in msg


SHORT_WRITE = r'''
#include <tt-metalium/distributed.hpp>
using namespace tt::tt_metal;
int main() {
    auto mesh = distributed::MeshDevice::create_unit_mesh(0);
    distributed::DeviceLocalBufferConfig local{.page_size = 2048, .buffer_type = BufferType::DRAM};
    auto buf = distributed::MeshBuffer::create(distributed::ReplicatedBufferConfig{.size = 2048}, local, mesh.get());
    std::vector<uint16_t> two_bytes(1, 7);
    distributed::EnqueueWriteMeshBuffer(mesh->mesh_command_queue(), buf, two_bytes, true);
    return 0;
}
'''


def test_a_write_from_a_shorter_vector_is_refused(tmp_path):
    # the queue reads the buffer's size from the vector's data: past its end on the SDK
    (tmp_path / "short").mkdir()
    (tmp_path / "short" / "main.cpp").write_text(SHORT_WRITE)
    result = emulate.run(tmp_path / "short")
    assert result.returncode != 0
    assert "EnqueueWriteMeshBuffer: the source holds 2 bytes but the MeshBuffer 2048" in result.stderr


def test_a_kernel_that_does_not_compile_names_create_kernel(tmp_path):
    # kernels build in the background from CreateKernel; the launch that needs one reports it
    shutil.copytree(PROGRAM, tmp_path / "prog")
    writer = tmp_path / "prog" / "writer.cpp"
    writer.write_text(writer.read_text() + "\nstatic_assert(false, \"not a kernel\");\n")
    exe = mockbuild.build_host(tmp_path / "prog" / "main.cpp", tmp_path / "prog")
    with pytest.raises(mockbuild.MockRuntimeError) as info:
        mockbuild.run_host(exe, ["6", "3"])
    msg = str(info.value)
    assert "CreateKernel: writer.cpp (writer kernel) does not compile" in msg and "not a kernel" in msg
