"""tests/schedule.py: xdist hands out the test files costliest first, each next one picked to fill the cores."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import schedule
from tests.schedule import FileCost, best_fill, costliest_first, cpu_shares, recorded_costs


def test_files_go_out_costliest_first() -> None:
    costs = {"tests/test_a.py": FileCost(3.0), "tests/test_b.py": FileCost(20.0), "tests/test_c.py": FileCost(8.0)}
    tests = {"tests/test_a.py": 3, "tests/test_b.py": 2, "tests/test_c.py": 1}
    assert costliest_first(tests, costs) == ["tests/test_b.py", "tests/test_c.py", "tests/test_a.py"]


def test_a_file_not_recorded_counts_the_median_second_per_test_times_its_tests() -> None:
    # Recorded: a 1 s a test (2 s over 2 tests), c 4 s a test: the median is 2.5 s a test.
    costs = {"tests/test_a.py": FileCost(2.0), "tests/test_c.py": FileCost(4.0)}
    one_test = {"tests/test_a.py": 2, "tests/test_c.py": 1, "tests/test_new.py": 1}  # 2.5 s: between c and a
    assert costliest_first(one_test, costs) == ["tests/test_c.py", "tests/test_new.py", "tests/test_a.py"]
    three_tests = {**one_test, "tests/test_new.py": 3}  # 7.5 s: first
    assert costliest_first(three_tests, costs)[0] == "tests/test_new.py"


def test_without_recorded_costs_the_files_with_more_tests_go_first() -> None:
    tests = {"tests/test_a.py": 1, "tests/test_b.py": 2}
    assert costliest_first(tests, {}) == ["tests/test_b.py", "tests/test_a.py"]


def test_a_files_cpu_share_is_its_cpu_over_its_time_capped_at_one_core_else_the_median() -> None:
    costs = {
        "waits.py": FileCost(10.0, 1.0),
        "works.py": FileCost(2.0, 1.8),
        "spawns.py": FileCost(1.0, 3.0),  # its processes used more than one core
        "old.py": FileCost(4.0),  # recorded before CPU was
    }
    shares = cpu_shares(["waits.py", "works.py", "spawns.py", "old.py", "new.py"], costs)
    assert shares["waits.py"] == pytest.approx(0.1)
    assert shares["works.py"] == pytest.approx(0.9)
    assert shares["spawns.py"] == 1.0
    assert shares["old.py"] == shares["new.py"] == pytest.approx(0.9)  # the median of 0.1, 0.9 and 1.0


def test_the_next_file_fills_what_the_running_files_leave_of_the_cores() -> None:
    shares = {"long_wait.py": 0.1, "long_work.py": 0.9, "short_work.py": 0.8, "short_wait.py": 0.2}
    window = ["long_wait.py", "long_work.py", "short_work.py", "short_wait.py"]
    # Three workers waiting on deadlines leave nearly two cores: the CPU-bound file goes, the longest of them.
    assert best_fill(window, shares, ["short_wait.py"] * 3, cores=2) == "long_work.py"
    # Three CPU-bound files already ask more than the two cores: the file that waits most goes next.
    assert best_fill(window, shares, ["long_work.py", "short_work.py", "short_work.py"], cores=2) == "long_wait.py"
    # Nearly two cores in use: the file whose share fits what is left.
    assert best_fill(window, shares, ["long_work.py", "short_work.py", "long_wait.py"], cores=2) == "short_wait.py"
    # Equals: the one first in the queue (the costlier).
    assert best_fill(["a.py", "b.py"], {"a.py": 0.5, "b.py": 0.5}, [], cores=2) == "a.py"


def test_costs_are_read_in_both_recorded_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    costs = tmp_path / "file_costs.json"
    costs.write_text(
        '{"tests/test_a.py": 1.5, "tests/test_b.py": {"seconds": 2.0, "cpu": 0.5},'
        ' "tests/test_c.py": {"seconds": 3.0, "cpu": null}, "tests/test_d.py": "junk"}',
        encoding="utf-8",
    )
    monkeypatch.setattr(schedule, "COSTS", costs)
    assert recorded_costs() == {
        "tests/test_a.py": FileCost(1.5),
        "tests/test_b.py": FileCost(2.0, 0.5),
        "tests/test_c.py": FileCost(3.0),
    }
