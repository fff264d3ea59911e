"""The suite's tiers (tests/tiers.py): the markers follow what a test uses, a process or a server the
markers did not foresee fails the test, so does a phase over the per-test bound unless marked slow, and
the run ends with its wall time, the load and the time by cause."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests import preload, tiers
from tests.fakes.chat_server import FakeChatServer

ROOT = Path(__file__).resolve().parent.parent


def _runs_the_cli() -> None:
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def _helper_of_a_helper() -> None:
    _runs_the_cli()


def _starts_a_fake() -> None:
    with FakeChatServer():
        pass


def _imports_a_fake_inside() -> None:
    from tests.fakes.feed_server import StaticHTTPServer

    StaticHTTPServer()


def _command_line_of_this_python() -> dict:
    return {"command": sys.executable, "args": ["-m", "x"]}


def _through_the_preloader() -> None:
    preload.run(["true"])  # an attribute of a module of tests/ (and no sys.executable to see)


def _plain_work() -> int:
    return sum(range(10))


#: By name, so that these tests themselves name none of them (they start nothing).
SAMPLES = {
    "cli": _runs_the_cli,
    "helper": _helper_of_a_helper,
    "fake": _starts_a_fake,
    "import inside": _imports_a_fake_inside,
    "command line": _command_line_of_this_python,
    "preloader": _through_the_preloader,
    "plain": _plain_work,
    "fake class": FakeChatServer,
}


def test_the_markers_follow_what_a_test_uses_through_helpers_and_imports() -> None:
    found = {name: tiers.causes_of(sample) for name, sample in SAMPLES.items()}
    assert found == {
        "cli": {"subprocess"},
        "helper": {"subprocess"},
        "fake": {"server"},
        "import inside": {"server"},
        "command line": {"subprocess"},
        "preloader": {"subprocess"},
        "plain": set(),
        "fake class": {"server"},
    }


def test_the_project_s_web_server_is_a_server() -> None:
    from assistant_framework.web import WebServer

    assert tiers._serves(WebServer)
    assert not tiers._serves(tiers.causes_of)


GUARDED = """
import importlib

import pytest
from _pytest import timing


def test_quick():
    assert True


def test_over_the_bound():
    timing.sleep(1.5)


@pytest.mark.slow(reason="the guard's own test: allowed past the bound")
def test_marked_slow():
    timing.sleep(1.5)


def test_a_library_looking_for_a_shared_library():
    import ctypes.util

    ctypes.util.find_library("pthread")  # runs ldconfig -p: the platform asked, not the test


def test_a_process_the_markers_did_not_see():
    getattr(importlib.import_module("sub" + "process"), "run")(["true"], check=True)
"""


#: The inner run's clock is pytest's own test clock (``_pytest.timing.MockTiming``, as pytest tests its
#: durations): a phase lasts exactly what its ``timing.sleep`` says, so the phases over the bound are over
#: it by 0.5 s and the others at 0 s, however loaded the machine, and nothing waits.
GUARDED_CONFTEST = """
import pytest
from _pytest.timing import MockTiming

pytest_plugins = ["tests.conftest"]


def pytest_configure(config):
    MockTiming().patch(pytest.MonkeyPatch())
"""


def test_the_guard_fails_an_unseen_process_and_a_phase_over_the_bound_and_prints_the_time(tmp_path: Path) -> None:
    """A pytest run of its own on five tests, under this conftest, with a 1 s bound on pytest's test clock;
    a process (forked by the zygote: a pytest start without its imports)."""
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    (tmp_path / "test_guarded.py").write_text(textwrap.dedent(GUARDED), encoding="utf-8")
    (tmp_path / "conftest.py").write_text(textwrap.dedent(GUARDED_CONFTEST), encoding="utf-8")
    env = {**os.environ, tiers.BOUND_ENV: "1", "PYTHONPATH": str(tmp_path)}
    run = preload.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", str(tmp_path / "test_guarded.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = run.stdout
    assert "PASSED test_guarded.py::test_quick" in out, out
    assert "PASSED test_guarded.py::test_marked_slow" in out, out
    assert "PASSED test_guarded.py::test_a_library_looking_for_a_shared_library" in out, out
    assert "FAILED test_guarded.py::test_over_the_bound" in out, out
    assert "more than the per-test bound of" in out and "mark it pytest.mark.slow(reason=...)" in out, out
    assert "FAILED test_guarded.py::test_a_process_the_markers_did_not_see" in out, out
    assert "did not mark it `subprocess`" in out, out
    assert "wall time " in out and "load average now " in out, out
    assert "marked slow, in-process | 1 |" in out and "the rest: make check's tier | 4 |" in out, out


def test_the_markers_are_added_at_collection_only_to_select_by_them() -> None:
    """``-m`` and ``-k`` (whose words match marker names) select by the markers while collecting, so they are added
    then; otherwise each test is marked just before it runs (the inner run above: its judge still sees them)."""
    from types import SimpleNamespace

    def config(markexpr: str = "", keyword: str = "") -> Any:
        return SimpleNamespace(option=SimpleNamespace(markexpr=markexpr, keyword=keyword))

    assert not tiers.marks_at_collection(config())
    assert tiers.marks_at_collection(config(markexpr="not subprocess and not server"))
    assert tiers.marks_at_collection(config(keyword="server"))
