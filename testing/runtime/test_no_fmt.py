"""The emulator without fmt (a machine without libfmt-dev, or TT_MOCK_NO_FMT=1): the host
headers bring no fmt, TT_FATAL and DPRINT fill "{}" fields themselves, nothing links libfmt."""

import subprocess

from tilelang_tt.runtime import mockbuild

INCLUDE = mockbuild.mock_root() / "include"
SRC = mockbuild.mock_root() / "src"

PROGRAM = r'''
#include "tt_stl/assert.hpp"
#ifdef FMT_VERSION
#error "fmt came in with the host headers"
#endif
int main(int argc, char**) {
    try {
        TT_FATAL(argc > 5, "need {} arguments, got {} ({{x}})", 6, argc);
    } catch (const std::runtime_error& e) {
        std::cout << e.what() << "\n";
    }
    return 0;
}
'''


def test_tt_fatal_formats_without_fmt(tmp_path):
    src = tmp_path / "p.cpp"
    src.write_text(PROGRAM)
    exe = tmp_path / "p"
    subprocess.run([mockbuild.CXX, "-std=c++20", "-DTTMOCK_NO_FMT", f"-I{INCLUDE}", str(src), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert "TT_FATAL @ " in out and "argc > 5" in out
    assert "need 6 arguments, got 1 ({x})" in out


def test_dprint_needs_no_fmt(tmp_path):
    obj = tmp_path / "dprint.o"
    subprocess.run([mockbuild.CXX, "-std=c++20", "-c", "-DTTMOCK_NO_FMT", f"-I{INCLUDE}", f"-I{SRC}",
                    str(SRC / "dprint.cpp"), "-o", str(obj)], check=True, capture_output=True, text=True)
    symbols = subprocess.run(["nm", "-C", "--undefined-only", str(obj)], capture_output=True, text=True,
                             check=True).stdout
    assert "fmt::" not in symbols
