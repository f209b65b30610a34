"""tools/run_tests.py: the split of the test files over processes, the exit code, the timings."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("run_tests", ROOT / "tools" / "run_tests.py")
run_tests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run_tests)


def test_split_balances_by_recorded_seconds_and_keeps_every_file():
    seconds = {"a.py": 10.0, "b.py": 6.0, "c.py": 5.0, "d.py": 4.0}
    groups = run_tests.split(["a.py", "b.py", "c.py", "d.py", "e.py"], seconds, 2)
    assert sorted(f for g in groups for f in g) == ["a.py", "b.py", "c.py", "d.py", "e.py"]
    # e.py is unknown: it weighs the median, 5.5; longest first to the lighter group:
    # a -> 1, b -> 2, e -> 2, c -> 1, d -> 2
    assert groups == [["a.py", "c.py"], ["b.py", "d.py", "e.py"]]
    assert run_tests.split(["a.py"], seconds, 4) == [["a.py"]]  # no empty groups


def test_exit_code_fails_on_any_failure_and_on_no_tests_at_all():
    assert run_tests.exit_code([0, 0]) == 0
    assert run_tests.exit_code([0, 5]) == 0  # a filter left one group without tests
    assert run_tests.exit_code([5, 5]) == 5
    assert run_tests.exit_code([5, 1]) == 1
    assert run_tests.exit_code([2, 1]) == 2


def test_file_seconds_sums_a_junit_report_per_file(tmp_path):
    xml = tmp_path / "r.xml"
    xml.write_text('<testsuites><testsuite>'
                   '<testcase classname="testing.test_x" name="a" time="1.5"/>'
                   '<testcase classname="testing.test_x.TestK" name="b" time="2.0"/>'
                   '<testcase classname="testing.runtime.test_y" name="c" time="0.25"/>'
                   '</testsuite></testsuites>')
    got = run_tests.file_seconds(xml, ["testing/test_x.py", "testing/runtime/test_y.py"])
    assert got == {"testing/test_x.py": 3.5, "testing/runtime/test_y.py": 0.25}
