"""The order xdist hands test files to its workers: the costliest first, so no long file starts last.

``make test`` runs ``-n 4 --dist loadfile``: each file goes whole to one worker, and xdist hands the files out
in the order of their test counts. A file of one 15 s test (a real ``make install``) then starts near the end
and the run waits for it alone. Here the files go out by what they cost in a recorded run
(``tests/file_costs.json``: seconds of test time per file), longest first; a file not recorded there counts
the median second per test times its tests. Which test runs where changes nothing a test may rely on: each
file still runs whole, in its own order, in one worker.

``make file-costs`` records the costs again (a whole run with ``--write-file-costs``).
"""

from __future__ import annotations

import json
import statistics
from collections import Counter, OrderedDict
from pathlib import Path

import pytest
from xdist.scheduler import LoadFileScheduling
from xdist.workermanage import WorkerController

COSTS = Path(__file__).with_name("file_costs.json")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--write-file-costs",
        action="store_true",
        help="after the run, record the summed test time of each file it ran in tests/file_costs.json",
    )


def recorded_costs() -> dict[str, float]:
    try:
        data = json.loads(COSTS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}


def costliest_first(tests_per_file: dict[str, int], costs: dict[str, float]) -> list[str]:
    """The files in falling cost (recorded, else the median recorded second per test times their tests)."""
    per_test = [costs[f] / n for f, n in tests_per_file.items() if f in costs and n]
    median = statistics.median(per_test) if per_test else 0.1
    cost = {f: costs.get(f, median * n) for f, n in tests_per_file.items()}
    return sorted(tests_per_file, key=lambda f: (-cost[f], f))


class CostFirstScheduling(LoadFileScheduling):
    """xdist's ``loadfile``, its work queue in falling recorded cost instead of falling test count.

    Only the queue's order changes: a worker is still sent the indexes of the tests in its own collection."""

    _ordered = False

    def _assign_work_unit(self, node: WorkerController) -> None:
        if not self._ordered:
            self._ordered = True
            order = costliest_first({f: len(tests) for f, tests in self.workqueue.items()}, recorded_costs())
            self.workqueue = OrderedDict((f, self.workqueue[f]) for f in order)
        super()._assign_work_unit(node)


@pytest.hookimpl  # before xdist's own (trylast), which would hand out plain loadfile
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> LoadFileScheduling | None:
    if config.getoption("dist") != "loadfile":
        return None
    return CostFirstScheduling(config, log)  # type: ignore[arg-type]


_spent: Counter[str] = Counter()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _spent[report.nodeid.split("::", 1)[0]] += report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if not config.getoption("write_file_costs") or hasattr(config, "workerinput"):
        return  # the controller (or a run without workers) has every report; a worker only its own
    # The files this run ran get their new cost; the others keep theirs unless the file is gone.
    root = Path(str(config.rootpath))
    costs = {f: c for f, c in recorded_costs().items() if (root / f).exists()}
    costs.update({f: round(s, 2) for f, s in _spent.items()})
    COSTS.write_text(json.dumps(dict(sorted(costs.items())), indent=0) + "\n", encoding="utf-8")
