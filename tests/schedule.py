"""The order xdist hands test files to its workers: the costliest first, and each next file chosen to keep
the machine's cores busy, so no long file starts last and no stretch of the run has every worker waiting.

``make test`` runs ``-n 4 --dist loadfile``: each file goes whole to one worker, and xdist hands the files out
in the order of their test counts. A file of one 15 s test (a real ``make install``) then starts near the end
and the run waits for it alone. Here the files go out by what they cost in a recorded run
(``tests/file_costs.json``: per file, its tests' seconds and the CPU seconds they used, with the processes they
started), longest first; a file not recorded there counts the median second per test times its tests.

Four workers share two cores, and many files mostly wait (a deadline, a server's start, a bot's poll): when
the four run such files at once the cores idle, and when four CPU-bound files meet, they queue. So the next
file for a worker is picked among the first few of the queue (``WINDOW``): the one whose share of CPU (CPU
seconds over seconds) best fills what the other workers' current files leave of the cores. Which test runs
where changes nothing a test may rely on: each file still runs whole, in its own order, in one worker.

``make file-costs`` records the costs again (a whole run with ``--write-file-costs``).
"""

from __future__ import annotations

import glob
import json
import os
import resource
import statistics
from collections import OrderedDict
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdist.scheduler import LoadFileScheduling
from xdist.workermanage import WorkerController

COSTS = Path(__file__).with_name("file_costs.json")
#: How many files at the head of the queue the next pick may choose among: enough to find a waiting file
#: among CPU-bound ones, few enough that the longest files still start first.
WINDOW = 5
_CPU_KEY = "cpu_seconds"


@dataclass(frozen=True)
class FileCost:
    """A recorded file: its tests' summed seconds and the CPU seconds they used (None: not recorded)."""

    seconds: float
    cpu: float | None = None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--write-file-costs",
        action="store_true",
        help="after the run, record each file's summed test time and CPU time in tests/file_costs.json",
    )


def recorded_costs() -> dict[str, FileCost]:
    try:
        data = json.loads(COSTS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    costs = {}
    for name, value in data.items():
        if isinstance(value, (int, float)):
            costs[str(name)] = FileCost(float(value))
        elif isinstance(value, dict) and isinstance(value.get("seconds"), (int, float)):
            cpu = value.get("cpu")
            costs[str(name)] = FileCost(float(value["seconds"]), float(cpu) if isinstance(cpu, (int, float)) else None)
    return costs


def costliest_first(tests_per_file: dict[str, int], costs: dict[str, FileCost]) -> list[str]:
    """The files in falling cost (recorded, else the median recorded second per test times their tests)."""
    per_test = [costs[f].seconds / n for f, n in tests_per_file.items() if f in costs and n]
    median = statistics.median(per_test) if per_test else 0.1
    cost = {f: costs[f].seconds if f in costs else median * n for f, n in tests_per_file.items()}
    return sorted(tests_per_file, key=lambda f: (-cost[f], f))


def cpu_shares(files: Sequence[str], costs: dict[str, FileCost]) -> dict[str, float]:
    """Each file's share of one core while it runs (CPU seconds over seconds, at most 1); a file without a
    recorded CPU time gets the median share."""
    known = {f: min(1.0, c.cpu / c.seconds) for f, c in costs.items() if c.cpu is not None and c.seconds > 0}
    median = statistics.median(known.values()) if known else 0.5
    return {f: known.get(f, median) for f in files}


def best_fill(window: Sequence[str], shares: dict[str, float], running: Sequence[str], cores: int) -> str:
    """The file of ``window`` (in queue order) whose CPU share best fills what the ``running`` files leave of
    ``cores``; the earliest among equals."""
    free = min(1.0, max(0.0, cores - sum(shares.get(f, 0.0) for f in running)))
    return min(window, key=lambda f: (abs(shares[f] - free), window.index(f)))


class CostFirstScheduling(LoadFileScheduling):
    """xdist's ``loadfile``: its work queue in falling recorded cost instead of falling test count, and each
    unit picked among the queue's first ``WINDOW`` to fill the cores (``best_fill``).

    Only the order changes: a worker is still sent the indexes of the tests in its own collection."""

    _shares: dict[str, float] | None = None

    def _assign_work_unit(self, node: WorkerController) -> None:
        if self._shares is None:
            costs = recorded_costs()
            order = costliest_first({f: len(tests) for f, tests in self.workqueue.items()}, costs)
            self.workqueue = OrderedDict((f, self.workqueue[f]) for f in order)
            self._shares = cpu_shares(order, costs)
        window = list(self.workqueue)[:WINDOW]
        pick = best_fill(window, self._shares, self._running(node), os.cpu_count() or 1)
        self.workqueue.move_to_end(pick, last=False)
        super()._assign_work_unit(node)

    def _running(self, node: WorkerController) -> list[str]:
        """The file each other worker is in (the first with a test not yet done)."""
        running = []
        for other, work in self.assigned_work.items():
            if other is node:
                continue
            current = next((scope for scope, tests in work.items() if not all(tests.values())), None)
            if current is not None:
                running.append(current)
        return running


@pytest.hookimpl  # before xdist's own (trylast), which would hand out plain loadfile
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> LoadFileScheduling | None:
    if config.getoption("dist") != "loadfile":
        return None
    return CostFirstScheduling(config, log)  # type: ignore[arg-type]


def _process_cpu() -> float:
    """CPU seconds of this process, its waited-for children, and its children still running (with what they
    waited for: a zygote's reaped children)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
    ticks = os.sysconf("SC_CLK_TCK")
    for listing in glob.glob(f"/proc/{os.getpid()}/task/*/children"):
        try:
            children = Path(listing).read_text().split()
        except OSError:
            continue
        for pid in children:
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            total += sum(int(x) for x in fields[11:15]) / ticks  # utime stime cutime cstime
    return total


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, None, None]:
    if not item.config.getoption("write_file_costs"):
        yield
        return
    item.stash[_started] = _process_cpu()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, None, None]:
    outcome = yield
    if call.when == "teardown" and _started in item.stash:
        report = outcome.get_result()  # a new list: the item's own properties stay as the test left them
        report.user_properties = [*report.user_properties, (_CPU_KEY, _process_cpu() - item.stash[_started])]


_started = pytest.StashKey[float]()
_spent: dict[str, list[float]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    spent = _spent.setdefault(report.nodeid.split("::", 1)[0], [0.0, 0.0])
    spent[0] += report.duration
    spent[1] += sum(value for key, value in report.user_properties if key == _CPU_KEY)


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if not config.getoption("write_file_costs") or hasattr(config, "workerinput"):
        return  # the controller (or a run without workers) has every report; a worker only its own
    # The files this run ran get their new cost; the others keep theirs unless the file is gone.
    root = Path(str(config.rootpath))
    costs = {f: c for f, c in recorded_costs().items() if (root / f).exists()}
    costs.update({f: FileCost(s, cpu) for f, (s, cpu) in _spent.items()})
    lines = [
        f"{json.dumps(f)}: {json.dumps({'seconds': round(c.seconds, 2), 'cpu': c.cpu and round(c.cpu, 2)})}"
        for f, c in sorted(costs.items())
    ]
    COSTS.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")  # one line a file: short diffs
