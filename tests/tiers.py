"""The suite's tiers, found from what each test uses, and what each test cost by cause.

``make check`` runs the fast tier: every test not marked ``subprocess``, ``server``, ``browser`` or
``slow``. The first three are never written by hand: ``mark`` (called from tests/conftest.py for every
test, as it is collected when ``-m`` or ``-k`` selects by the markers, else just before it runs) reads the
code of the test function, of every fixture it uses, and of the functions and classes of ``tests/`` they
name, followed through (a helper that calls a helper that runs the CLI as a process counts; so does
``preload.run(...)``, a function of a module of ``tests/`` called through its name), and looks for what
starts a process (``subprocess``, ``pty``, ``multiprocessing``, a command line naming ``sys.executable``),
serves on a socket (``http.server`` and the other server modules, ``listen``/``create_server``; code of the
project whose module imports a server module) or drives a browser (``selenium``). A reference is enough: a
test that names ``subprocess`` but starts nothing is only placed in the slower tier, never the other way round.

What the reading cannot see (a process started or a socket served by the code under test) is caught at
run time: every ``subprocess.Popen`` and ``socket.listen`` is counted per phase, and a test without the
marker that did one fails (``judge``), saying which; ``make test`` runs every test, so a miss cannot
stay. ``judge`` also fails a test whose phase took more than the per-test bound unless it is marked
``slow`` with its reason. ``summary`` prints, at the end of the run, the wall time with the load average
and the tests' time grouped by cause (docs/benchmarks.md).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import socket
import subprocess
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

MARKERS = {
    "subprocess": "starts a process (set by tests/tiers.py from what the test uses; not in make check)",
    "server": "serves on a socket: a fake, a bot, the web page (set by tests/tiers.py; not in make check)",
    "browser": "drives a real Chromium (set by tests/tiers.py from what the test uses; not in make check)",
    "slow": "slow(reason=...): may take more than the per-test bound of tests/tiers.py; the reason is required",
}

#: Modules whose use means a process started (``pty`` forks, ``multiprocessing`` forks or spawns).
PROCESS_MODULES = ("subprocess", "pty", "multiprocessing", "asyncio.subprocess")
BROWSER_MODULES = ("selenium",)
#: Modules that serve on a socket: the fakes' ``http.server``, the web page's Tornado, the MCP SDK's
#: uvicorn, pymap's IMAP server, aiosmtpd's SMTP server. Code of the project counts when its own module
#: imports one of them.
SERVER_MODULES = ("http.server", "socketserver", "tornado", "uvicorn", "pymap", "aiosmtpd")
#: Calls that open a listening socket with the standard library alone.
SERVING_NAMES = frozenset({"create_server", "listen", "start_server", "serve_forever"})

#: Seconds one phase (setup, call or teardown) of a test may take on an idle machine, unless the test is
#: marked ``slow``. On a machine already busy when the run started (other people's tests, builds), the
#: bound grows with the load average per CPU: the same test takes longer there, and failing it would only
#: say the machine was busy. Issue 41 asks for 20 s; it is 30 s until the costliest tests are made cheaper:
#: in a whole `make test` on 2 idle cores, with four workers, tests of 15-20 s alone reached 20.5-26 s, and
#: a bound a test passes by chance would fail CI by chance.
PER_TEST_BOUND = 30.0
#: A fixed bound for one run, without the load's allowance (the guard's own test uses a small one).
BOUND_ENV = "ASSISTANT_TEST_BOUND_SECONDS"
_bound = [PER_TEST_BOUND]

_TESTS_PACKAGE = "tests"
PROJECT_PACKAGES = ("tests.", "assistant_framework", "messaging_llm_bot")


# -- the markers ------------------------------------------------------------------------------------


def _within(module_name: str, modules: tuple[str, ...]) -> bool:
    return any(module_name == m or module_name.startswith(m + ".") for m in modules)


# Collecting reads the same helpers, fixtures and module names for thousands of tests, in every xdist worker:
# what a module name, a module or a whole function leads to is worked out once (it was half of collecting).
@functools.lru_cache(maxsize=None)
def _module_cause(module_name: str) -> str | None:
    if _within(module_name, BROWSER_MODULES):
        return "browser"
    if _within(module_name, PROCESS_MODULES):
        return "subprocess"
    if _within(module_name, SERVER_MODULES):
        return "server"
    return None


def _serves(obj: object) -> bool:
    """A class or function of the project or a library whose module imports a server module."""
    return _module_serves(getattr(obj, "__module__", None) or "")


@functools.lru_cache(maxsize=None)
def _module_serves(module_name: str) -> bool:
    module = sys.modules.get(module_name)
    if module is None:
        return False
    if _within(module.__name__, SERVER_MODULES):
        return True
    for value in vars(module).values():
        name = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
        if isinstance(name, str) and _within(name, SERVER_MODULES):
            return True
    return False


def _ours(obj: object) -> bool:
    """A function or class of the tests package (followed through); the code under test is not read."""
    module = getattr(obj, "__module__", None) or ""
    return module == _TESTS_PACKAGE or module.startswith(_TESTS_PACKAGE + ".") or module.startswith("test_")


def _ours_module(module: types.ModuleType) -> bool:
    return module.__name__.startswith(_TESTS_PACKAGE + ".")


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _functions_of(obj: object) -> Iterator[Callable[..., Any]]:
    if inspect.isclass(obj):
        for value in vars(obj).values():
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            elif isinstance(value, property):
                yield from (f for f in (value.fget, value.fset) if f is not None)
                continue
            if inspect.isfunction(value):
                yield value
        for base in obj.__mro__[1:]:
            if _ours(base):
                yield from _functions_of(base)
    elif inspect.isfunction(obj):
        yield obj


def causes_of(obj: object, seen: set[int] | None = None) -> set[str]:
    """The tier causes (``subprocess``, ``browser``) that ``obj`` (a function or class) or anything of the
    tests package it names reaches."""
    seen = set() if seen is None else seen
    found: set[str] = set()
    if inspect.isclass(obj):  # a subclass of a server (the fakes are ThreadingHTTPServers)
        found |= {c for c in (_module_cause(base.__module__) for base in obj.__mro__) if c}
    for function in _functions_of(obj):
        function = inspect.unwrap(function)
        if id(function) in seen:
            continue
        seen.add(id(function))
        for code in _codes(function.__code__):
            names = (*code.co_names, *code.co_freevars)
            namespace = {**_imported_inside(names), **function.__globals__, **_closure(function)}
            if SERVING_NAMES & set(code.co_names):
                found.add("server")
            if "executable" in code.co_names and namespace.get("sys") is sys:
                found.add("subprocess")  # a command line that names this Python: a process to start
            for name in names:
                if name not in namespace:
                    cause = _module_cause(name)  # an import inside the function: ``import uvicorn``
                    if cause:
                        found.add(cause)
                    continue
                value = namespace[name]
                if isinstance(value, (dict, list, tuple)):  # a table of drivers (the channel contract kit)
                    for one in value.values() if isinstance(value, dict) else value:
                        if (inspect.isfunction(one) or inspect.isclass(one)) and _ours(one):
                            found |= causes_of(one, seen)
                    continue
                if isinstance(value, types.ModuleType) and _ours_module(value):
                    for attribute in code.co_names:  # ``preload.run(...)``: what the test calls of the module
                        one = vars(value).get(attribute)
                        if (inspect.isfunction(one) or inspect.isclass(one)) and _ours(one):
                            found |= causes_of(one, seen)
                    continue
                if isinstance(value, types.ModuleType):
                    cause = _module_cause(value.__name__)
                elif not (inspect.isfunction(value) or inspect.isclass(value)):
                    continue
                elif _ours(value):
                    found |= causes_of(value, seen)
                    continue
                else:
                    cause = _module_cause(value.__module__ or "") or ("server" if _serves(value) else None)
                if cause:
                    found.add(cause)
    return found


def _imported_inside(names: tuple[str, ...]) -> dict[str, Any]:
    """What ``from module import name`` inside a function binds: the names of modules it names."""
    found: dict[str, Any] = {}
    for module_name in names:
        if not module_name.startswith(PROJECT_PACKAGES):
            continue
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # an attribute's name that only looks like a module's
            continue
        for name in names:
            if name in vars(module):
                found.setdefault(name, vars(module)[name])
    return found


def _closure(function: Callable[..., Any]) -> dict[str, Any]:
    cells = getattr(function, "__closure__", None) or ()
    names = function.__code__.co_freevars
    out = {}
    for name, cell in zip(names, cells, strict=False):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    return out


def _fixtures_asked_by_name(function: Callable[..., Any]) -> set[str]:
    """The string constants of a function that calls ``getfixturevalue``: the fixtures it may ask for."""
    names: set[str] = set()
    for code in _codes(inspect.unwrap(function).__code__):
        if "getfixturevalue" in code.co_names:
            names |= {c for c in code.co_consts if isinstance(c, str) and c.isidentifier()}
    return names


_reached: dict[int, tuple[object, frozenset[str]]] = {}  # id -> (the function, what it reaches), kept alive


def _causes_of_root(obj: object) -> frozenset[str]:
    """``causes_of(obj)`` from a fresh start, once per function (a test function shared by its parameters,
    a fixture shared by hundreds of tests)."""
    known = _reached.get(id(obj))
    if known is None or known[0] is not obj:
        known = (obj, frozenset(causes_of(obj)))
        _reached[id(obj)] = known
    return known[1]


def marks_at_collection(config: pytest.Config) -> bool:
    """Whether the tests are marked as they are collected: only to select by the markers (``-m``, or ``-k``,
    whose words match marker names too). Else each test is marked just before it runs (``mark_before_run``), in
    the worker that runs it: reading the code of every test and fixture, and importing what they import inside
    (matrix-nio, the fake Discord's aiohttp), cost each of the four xdist workers about 0.4 s for all 3,200
    tests, three quarters of them run by the other workers."""
    return bool(config.option.markexpr or config.option.keyword)


_MARKED = pytest.StashKey[bool]()


def check_slow(item: pytest.Item) -> None:
    """A ``slow`` marker without its reason is a usage error, at collection, whenever the markers are added."""
    slow = item.get_closest_marker("slow")
    if slow is not None and not slow.kwargs.get("reason"):
        raise pytest.UsageError(f"{item.nodeid}: pytest.mark.slow needs reason=... (why it may take longer)")


def mark_before_run(item: pytest.Item) -> None:
    """``mark`` unless the test was marked at collection."""
    if not item.stash.get(_MARKED, False):
        mark(item)


def mark(item: pytest.Item) -> None:
    """Add the ``subprocess``/``browser`` markers ``item`` earns by what it and its fixtures use."""
    item.stash[_MARKED] = True
    if not isinstance(item, pytest.Function):
        return
    found = set(_causes_of_root(item.function))
    fixtures = getattr(item, "_fixtureinfo", None)
    if fixtures is not None:
        for definitions in fixtures.name2fixturedefs.values():
            for definition in definitions:
                found |= _causes_of_root(definition.func)
    for name in _fixtures_asked_by_name(item.function):  # request.getfixturevalue("small_disk")
        for definition in item.session._fixturemanager.getfixturedefs(name, item) or ():
            found |= _causes_of_root(definition.func)
    if "browser" in found:
        found.add("subprocess")  # the driver and Chromium are processes
    for cause in sorted(found):
        item.add_marker(cause)
    check_slow(item)


# -- the costs, per phase ---------------------------------------------------------------------------


_lock = threading.Lock()
_spawned: list[str] = []
_listened = [0]
_main_thread = threading.main_thread()
_slept = [0.0]
_polled = [0.0]
_sleepers: dict[str, float] = {}  # where the fixed sleeps of the current phase were: "file:line" -> seconds
_session_started = [0.0]


def start_session() -> None:
    """Count processes started, listening sockets opened, and the test thread's sleeps (for every test
    of this process; each xdist worker counts its own)."""
    _session_started[0] = time.monotonic()
    fixed = os.environ.get(BOUND_ENV)
    _bound[0] = float(fixed) if fixed else PER_TEST_BOUND * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    # Libraries ask the platform once per process, by a process: platform.processor() runs `uname -p`
    # (cached after), croniter's import runs `file -b` (platform.architecture()). Asked here, before the
    # counting starts, they are no test's process.
    import platform

    platform.processor()
    import croniter  # noqa: F401

    real_init = subprocess.Popen.__init__
    real_listen = socket.socket.listen
    real_sleep = time.sleep

    def popen_init(self: subprocess.Popen, args: Any, *more: Any, **kwargs: Any) -> None:
        if not _asked_by_ctypes(sys._getframe(1)):
            with _lock:
                _spawned.append(_describe(args))
        real_init(self, args, *more, **kwargs)

    def listen(self: socket.socket, *args: Any) -> None:
        with _lock:
            _listened[0] += 1
        real_listen(self, *args)

    def sleep(seconds: float) -> None:
        if threading.current_thread() is _main_thread:
            # Polling (tests/waiting.py: a condition checked between short sleeps) or a fixed sleep.
            frame = sys._getframe(1)
            if frame.f_globals.get("__name__") == "tests.waiting":
                _polled[0] += max(0.0, float(seconds))
            else:
                _slept[0] += max(0.0, float(seconds))
                where = f"{_short(frame.f_code.co_filename)}:{frame.f_lineno}"
                _sleepers[where] = _sleepers.get(where, 0.0) + max(0.0, float(seconds))
        real_sleep(seconds)

    subprocess.Popen.__init__ = popen_init  # type: ignore[method-assign]
    socket.socket.listen = listen  # type: ignore[method-assign]
    time.sleep = sleep


def _asked_by_ctypes(frame: types.FrameType | None) -> bool:
    """A library looking for a shared library: ``ctypes.util.find_library`` runs ``ldconfig -p`` (trio
    does at import, and httpcore imports trio), in whichever test first imports it in its worker. The
    platform asked, as above, not the test: it starts nothing a test's tier must name."""
    while frame is not None:
        if frame.f_globals.get("__name__") == "ctypes.util":
            return True
        frame = frame.f_back
    return False


def _describe(args: Any) -> str:
    words = [os.fspath(a) for a in args] if isinstance(args, (list, tuple)) else [os.fspath(args)]
    if words and os.path.basename(str(words[0])).startswith("python"):
        words = words[1:3]
    else:
        words = words[:2]
    return " ".join(os.path.basename(str(w)) for w in words)


def _short(filename: str) -> str:
    """A source file named from the repository (or from site-packages for a library)."""
    for anchor in ("/site-packages/", f"{os.sep}{_TESTS_PACKAGE}{os.sep}"):
        if anchor in filename:
            head = "" if anchor == "/site-packages/" else _TESTS_PACKAGE + "/"
            return head + filename.split(anchor, 1)[1]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.relpath(filename, root) if filename.startswith(root) else filename


def _take_phase() -> tuple[list[str], int, float, float, dict[str, float]]:
    with _lock:
        spawned, _spawned[:] = list(_spawned), []
        listened, _listened[0] = _listened[0], 0
        slept, _slept[0] = _slept[0], 0.0
        polled, _polled[0] = _polled[0], 0.0
        sleepers = dict(_sleepers)
        _sleepers.clear()
    return spawned, listened, slept, polled, sleepers


def judge(item: pytest.Item, report: pytest.TestReport) -> None:
    """Attach the phase's costs to its report (they travel from xdist workers), and fail a test that
    started a process its markers did not foresee or that outran the per-test bound."""
    spawned, listened, slept, polled, sleepers = _take_phase()
    report.tier_sleepers = sleepers  # type: ignore[attr-defined]
    report.tier_spawned = len(spawned)  # type: ignore[attr-defined]
    report.tier_listened = listened  # type: ignore[attr-defined]
    report.tier_slept = slept  # type: ignore[attr-defined]
    report.tier_polled = polled  # type: ignore[attr-defined]
    report.tier = _tier_of(item)  # type: ignore[attr-defined]
    if report.failed or report.skipped:
        return
    problems = []
    if spawned and item.get_closest_marker("subprocess") is None:
        problems.append(
            f"this test started {len(spawned)} process(es) ({', '.join(sorted(set(spawned))[:3])}) but "
            "tests/tiers.py did not mark it `subprocess`, so make check would run it: let the test or a "
            "fixture or helper of tests/ it uses name the module that starts it"
        )
    if listened and item.get_closest_marker("server") is None and item.get_closest_marker("subprocess") is None:
        problems.append(
            f"this test opened {listened} listening socket(s) but tests/tiers.py did not mark it `server`, so "
            "make check would run it: let the test or a fixture or helper of tests/ it uses name the server"
        )
    if report.duration > _bound[0] and item.get_closest_marker("slow") is None:
        problems.append(
            f"its {report.when} took {report.duration:.1f} s, more than the per-test bound of {_bound[0]:.0f} s "
            f"({PER_TEST_BOUND:g} s on an idle machine; tests/tiers.py): make it cheaper, or mark it "
            "pytest.mark.slow(reason=...)"
        )
    if problems:
        report.outcome = "failed"
        report.longrepr = "\n".join(problems)


def _tier_of(item: pytest.Item) -> str:
    for tier in ("browser", "subprocess", "server"):
        if item.get_closest_marker(tier):
            return tier
    return "slow" if item.get_closest_marker("slow") else "fast"


# -- the summary ------------------------------------------------------------------------------------


TIER_LABELS = {
    "subprocess": "start processes",
    "browser": "drive Chromium",
    "server": "serve on a socket (fakes, bots, the web page)",
    "slow": "marked slow, in-process",
    "fast": "the rest: make check's tier",
}


def summary(reporter: Any) -> None:
    """Wall time with the machine's load, and the tests' own time grouped by cause (one row a tier)."""
    wall = time.monotonic() - _session_started[0]
    rows: dict[str, dict[str, float]] = {}
    tests: dict[str, set[str]] = {}
    sleepers: dict[str, float] = {}
    for key in ("passed", "failed", "error", "skipped", ""):
        for report in reporter.stats.get(key, []):
            tier = getattr(report, "tier", None)
            if tier is None or not hasattr(report, "duration"):
                continue
            row = rows.setdefault(tier, dict.fromkeys(("all", "fixtures", "fixed", "polling", "procs", "socks"), 0.0))
            tests.setdefault(tier, set()).add(report.nodeid)
            row["all"] += report.duration
            if report.when != "call":
                row["fixtures"] += report.duration
            row["fixed"] += getattr(report, "tier_slept", 0.0)
            row["polling"] += getattr(report, "tier_polled", 0.0)
            row["procs"] += getattr(report, "tier_spawned", 0)
            for where, seconds in getattr(report, "tier_sleepers", {}).items():
                sleepers[where] = sleepers.get(where, 0.0) + seconds
            row["socks"] += getattr(report, "tier_listened", 0)
    if not rows:
        return
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    reporter.write_sep("-", "the tests' time by cause (tests/tiers.py)")
    reporter.write_line(f"wall time {wall:.1f} s on {os.cpu_count()} CPUs, load average now {load} (1, 5, 15 min)")
    reporter.write_line(
        "tests that ... | tests | seconds | in fixtures | sleeps (test thread) | polling sleeps (tests/waiting.py) | "
        "processes | listening sockets"
    )
    for tier, label in TIER_LABELS.items():
        if tier in rows:
            r = rows[tier]
            reporter.write_line(
                f"{label} | {len(tests[tier])} | {r['all']:.1f} | {r['fixtures']:.1f} | {r['fixed']:.1f} | "
                f"{r['polling']:.1f} | {r['procs']:.0f} | {r['socks']:.0f}"
            )
    top = sorted(sleepers.items(), key=lambda kv: -kv[1])[:5]
    if top:
        reporter.write_line(
            "sleeps in the tests' thread outside tests/waiting.py, most first: "
            + ", ".join(f"{w} {t:.1f} s" for w, t in top)
        )
