"""tests/schedule.py: xdist hands out the test files costliest first."""

from __future__ import annotations

from tests.schedule import costliest_first


def test_files_go_out_costliest_first() -> None:
    costs = {"tests/test_a.py": 3.0, "tests/test_b.py": 20.0, "tests/test_c.py": 8.0}
    tests = {"tests/test_a.py": 3, "tests/test_b.py": 2, "tests/test_c.py": 1}
    assert costliest_first(tests, costs) == ["tests/test_b.py", "tests/test_c.py", "tests/test_a.py"]


def test_a_file_not_recorded_counts_the_median_second_per_test_times_its_tests() -> None:
    # Recorded: a 1 s a test (2 s over 2 tests), c 4 s a test: the median is 2.5 s a test.
    costs = {"tests/test_a.py": 2.0, "tests/test_c.py": 4.0}
    one_test = {"tests/test_a.py": 2, "tests/test_c.py": 1, "tests/test_new.py": 1}  # 2.5 s: between c and a
    assert costliest_first(one_test, costs) == ["tests/test_c.py", "tests/test_new.py", "tests/test_a.py"]
    three_tests = {**one_test, "tests/test_new.py": 3}  # 7.5 s: first
    assert costliest_first(three_tests, costs)[0] == "tests/test_new.py"


def test_without_recorded_costs_the_files_with_more_tests_go_first() -> None:
    tests = {"tests/test_a.py": 1, "tests/test_b.py": 2}
    assert costliest_first(tests, {}) == ["tests/test_b.py", "tests/test_a.py"]
