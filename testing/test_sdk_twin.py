"""The mock device API is the twin of the real TT-Metalium 0.81.1 device API (testing/sdk_twin.py):
every declaration the mock's api/ headers offer exists in the SDK, with the same signature, through
the same header; and the comparison notices when one mock declaration is changed.

Needs the sdkcheck environment (../shared/tools/sdkcheck/setup.sh). Without it the tests skip,
unless TT_REQUIRE_SDKCHECK=1 (set by .ci/run), where a missing environment is a failure.
"""

import os
import re
import shutil

import pytest

import sdk_twin

try:
    sdk_twin.load_sdkcheck()
    MISSING = None
except sdk_twin.Unavailable as e:
    MISSING = str(e)

if MISSING and os.environ.get("TT_REQUIRE_SDKCHECK") == "1":
    pytest.fail(f"TT_REQUIRE_SDKCHECK=1 but the sdkcheck environment is missing: {MISSING}",
                pytrace=False)
pytestmark = pytest.mark.skipif(MISSING is not None, reason=f"sdkcheck environment: {MISSING}")


def test_mock_device_headers_are_the_sdks_twin():
    findings = sdk_twin.compare(jobs=2)
    assert not findings, "mock device API differs from TT-Metalium 0.81.1:\n" + "\n".join(map(str, findings))


# one edit of one mock header each, and a piece of what the report must say about it
MUTATIONS = [
    # a default argument's value
    ("api/compute/pack.h", "std::uint32_t output_tile_index = 0)", "std::uint32_t output_tile_index = 1)",
     "ckernel::pack_tile"),
    # a parameter type
    ("api/compute/matmul.h", "std::uint32_t in1_tile_index,", "std::uint16_t in1_tile_index,",
     "ckernel::matmul_tiles"),
    # a template parameter's default
    ("api/compute/compute_kernel_hw_startup.h", "template <SrcOrder src_order = SrcOrder::Regular>",
     "template <SrcOrder src_order = SrcOrder::Reverse>", "ckernel::compute_kernel_hw_startup"),
    # a name the SDK has removed
    ("api/compute/transpose.h", "ALWI void transpose_init(", "ALWI void transpose_wh_init(",
     "the SDK declares no ckernel::transpose_wh_init"),
    # a name the SDK deprecates (same signature as its replacement)
    ("api/compute/tile_move_copy.h", "ALWI void copy_init(", "ALWI void copy_tile_to_dst_init_short(",
     "deprecated in the SDK"),
    # a name the SDK deprecates, offered by the mock without its deprecation
    ("api/compute/reg_api.h", '[[deprecated("Use tile_regs_acquire() instead")]]\n', "",
     "ckernel::acquire_dst"),
    # a declaration in a header that does not declare it in the SDK
    ("api/compute/eltwise_unary/relu.h", "ALWI void relu_tile_init()",
     "ALWI void abs_tile_init() {}\nALWI void relu_tile_init()", "abs_tile_init"),
    # a header that no longer offers what the SDK's offers (an include dropped)
    ("api/compute/pack.h", '#include "api/compute/reconfig_data_format.h"\n', "",
     "the SDK declares it through api/compute/pack.h, the mock does not", ["api/compute/reconfig_data_format.h"]),
    # a member of a class template
    ("api/tensor/tensor_accessor.h", "const uint32_t offset = 0, uint8_t noc = noc_index) const {",
     "const uint32_t offset = 0, uint8_t noc = 0) const {", "TensorAccessor::get_noc_addr"),
    # the namespace
    ("api/dataflow/dataflow_api.h", "FORCE_INLINE\nuint32_t get_write_ptr(uint32_t operand) {",
     "namespace ttmock_x { inline uint32_t get_write_ptr(uint32_t) { return 0; } }\n"
     "FORCE_INLINE\nuint32_t get_write_ptr(uint32_t operand) {", "ttmock_x::get_write_ptr"),
    # a macro the SDK does not define
    ("api/compute/common_globals.h", "#define ALWI", "#define MOCK_ONLY_MACRO 1\n#define ALWI",
     "macro MOCK_ONLY_MACRO"),
]


@pytest.mark.parametrize("header,old,new,expect,also", [(*m, [])[:5] for m in MUTATIONS],
                         ids=[m[0] + ":" + m[3].split()[0] for m in MUTATIONS])
def test_a_changed_mock_declaration_is_reported(tmp_path, header, old, new, expect, also):
    include = tmp_path / "include"
    shutil.copytree(sdk_twin.MOCK_INCLUDE, include)
    path = include / header
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} not (once) in {header}"
    path.write_text(text.replace(old, new))
    findings = sdk_twin.compare(include, tmp_path / "work", jobs=2, only=[header, *also],
                                all_passes=False)
    report = "\n".join(map(str, findings))
    assert findings and expect in report, f"{header} mutated, expected {expect!r} in:\n{report}"


def test_a_mock_header_the_sdk_lacks_is_reported(tmp_path):
    include = tmp_path / "include"
    shutil.copytree(sdk_twin.MOCK_INCLUDE, include)
    shutil.copy(include / "api/compute/transpose.h", include / "api/compute/transpose_wh.h")
    findings = sdk_twin.compare(include, tmp_path / "work", jobs=2, only=["api/compute/transpose_wh.h"],
                                all_passes=False)
    assert any(re.search(r"no header api/compute/transpose_wh\.h", str(f)) for f in findings)
