"""The tests' preloader (tests/preload.py): a process forked by the zygote is started, seen, signalled and
ended as a real ``python -m`` start is, and no child of it outlives the pytest process that asked."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import preload, tiers
from tests.waiting import wait_until

REPO = Path(__file__).resolve().parents[1]
PROBE = [sys.executable, "-m", "tests.preload_probe"]  # run in REPO: the folder that has tests/


@pytest.fixture(autouse=True)
def _preloader_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are the preloader's own: they run it also in a run with ASSISTANT_TEST_PRELOAD=0."""
    monkeypatch.setenv(preload.SWITCH, "1")


def _both(args: list[str], **kwargs) -> dict[str, subprocess.Popen]:
    return {"real": subprocess.Popen(args, **kwargs), "preloaded": preload.PreloadedProcess(args, **kwargs)}


def _first_line(process: subprocess.Popen) -> dict:
    assert process.stdout is not None
    return json.loads(process.stdout.readline())


def test_a_preloaded_start_sees_what_a_real_start_sees(tmp_path: Path) -> None:
    """The environment exactly (TZ applied, TMPDIR not cached from the zygote), the folder, the umask, the
    arguments, ``sys.path[0]``, the signal dispositions and the streams' set-up."""
    env = {"PATH": os.environ["PATH"], "TZ": "Asia/Tokyo", "TMPDIR": str(tmp_path), "PYTHONPATH": str(REPO)}
    env.update({k: v for k, v in os.environ.items() if k.startswith(("PYTHON", "LANG", "LC_"))})
    old = os.umask(0o027)
    try:
        processes = _both([*PROBE, "exit", "0"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True)
    finally:
        os.umask(old)
    seen = {}
    for how, process in processes.items():
        with process:
            seen[how] = _first_line(process)
        assert process.returncode == 0
    assert seen["real"]["pid"] != seen["preloaded"]["pid"]
    for state in seen.values():
        del state["pid"]
    assert seen["preloaded"] == seen["real"]
    assert seen["real"]["env"] == env and seen["real"]["tzname"] == ["JST", "JST"]
    assert seen["real"]["cwd"] == str(tmp_path) and seen["real"]["umask"] == 0o027


@pytest.mark.parametrize("how", ["real", "preloaded"])
def test_unbuffered_output_and_a_terminal_s_streams_are_made_as_at_a_start(how: str) -> None:
    import pty

    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    start = subprocess.Popen if how == "real" else preload.PreloadedProcess
    try:
        with start([*PROBE, "exit", "0"], stdin=slave, stdout=subprocess.PIPE, stderr=slave, env=env, cwd=REPO) as p:
            state = _first_line(p)
    finally:
        os.close(slave)
        os.close(master)
    assert state["streams"]["stdout"]["write_through"] and not state["streams"]["stdout"]["line_buffering"]
    assert state["streams"]["stdin"]["isatty"] and state["streams"]["stderr"]["isatty"]


@pytest.mark.parametrize("how", ["real", "preloaded"])
def test_exit_codes_are_the_interpreter_s(how: str) -> None:
    """SystemExit's code, 1 and the traceback after an uncaught error, SIGINT after an uncaught
    KeyboardInterrupt."""
    start = subprocess.run if how == "real" else preload.run
    if how == "preloaded":
        assert preload.preloadable(PROBE, {})
    codes = {}
    for what in (["exit", "3"], ["raise"], ["interrupt"]):
        done = start([*PROBE, *what], capture_output=True, text=True, timeout=60, cwd=REPO)
        codes[what[0]] = done.returncode
        if what == ["raise"]:
            assert "RuntimeError: the probe's own error" in done.stderr and "Traceback" in done.stderr
    assert codes == {"exit": 3, "raise": 1, "interrupt": -signal.SIGINT}


def test_a_child_finds_the_built_in_plugins_libraries_loaded_and_the_plugins_not() -> None:
    """The zygote loaded the built-in skills and collectors once (plugin_import keeps their modules for reuse, and
    their libraries stay) and took the plugins' modules out of ``sys.modules``: a bot started in a child puts them
    back, as a second start in one process does.
    The libraries the project imports at first use (``LAZY_IMPORTS``) are loaded too, and the TLS contexts
    are made. A real start has none of them."""
    seen = {}
    for how, process in _both([*PROBE, "modules"], cwd=REPO, stdout=subprocess.PIPE, text=True).items():
        with process:
            _first_line(process)
            seen[how] = json.loads(process.stdout.readline())
        assert process.returncode == 0
    # The TLS contexts: certifi's, and the one SSL_CERT_FILE or SSL_CERT_DIR name if this environment sets them.
    contexts = 1 + bool(os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR"))
    assert seen["real"] == {"plugins": [], "libraries": [], "tls_contexts": 0}
    assert seen["preloaded"] == {
        "plugins": [],
        "libraries": ["icalendar", "feedparser", "httpcore"],
        "tls_contexts": contexts,
    }


def test_a_preloaded_child_is_a_process_that_signals_reach(tmp_path: Path) -> None:
    """A real pid in the zygote's tree: poll, wait with a timeout, SIGTERM and SIGKILL as with Popen."""
    process = preload.PreloadedProcess([*PROBE, "wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=REPO)
    with process:
        state = _first_line(process)
        assert state["pid"] == process.pid and Path(f"/proc/{process.pid}").exists()
        assert process.poll() is None
        with pytest.raises(subprocess.TimeoutExpired):
            process.wait(0.2)
        process.terminate()
        assert process.wait(30) == -signal.SIGTERM
    second = preload.PreloadedProcess([*PROBE, "wait"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, cwd=REPO)
    with second:
        second.kill()
        assert second.wait(30) == -signal.SIGKILL
    assert not _alive(process.pid) and not _alive(second.pid)


def test_pipes_communicate_and_threads_finish_before_the_exit(tmp_path: Path) -> None:
    process = preload.PreloadedProcess(
        [*PROBE, "echo"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO
    )
    out, err = process.communicate("one\ntwo\n", timeout=60)
    assert out.splitlines()[1:] == ["out: one", "out: two"] and err.splitlines() == ["err: one", "err: two"]
    assert process.returncode == 0
    target = tmp_path / "late.txt"
    assert preload.run([*PROBE, "thread", str(target)], stdout=subprocess.DEVNULL, timeout=60, cwd=REPO).returncode == 0
    assert target.read_text() == "the thread ran to its end"  # joined before the exit, as at an interpreter's


def test_a_missing_folder_fails_the_start_as_popen_does(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        preload.PreloadedProcess([*PROBE, "exit", "0"], cwd=tmp_path / "missing")


def test_the_switch_and_what_the_zygote_cannot_apply_make_real_spawns(monkeypatch: pytest.MonkeyPatch) -> None:
    assert preload.preloadable(PROBE, {"env": {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}})
    assert not preload.preloadable(PROBE, {"env": {**os.environ, "PYTHONHASHSEED": "7"}})
    assert not preload.preloadable(PROBE, {"preexec_fn": os.getpid})
    assert not preload.preloadable([sys.executable, "-c", "pass"], {})
    monkeypatch.setenv(preload.SWITCH, "0")
    done = preload.popen([*PROBE, "exit", "0"], stdout=subprocess.DEVNULL, cwd=REPO)
    assert type(done) is subprocess.Popen and done.wait(60) == 0


def test_a_preloaded_start_is_counted_as_a_process() -> None:
    tiers._take_phase()
    preload.run([*PROBE, "exit", "0"], stdout=subprocess.DEVNULL, timeout=60, cwd=REPO)
    assert tiers._take_phase()[0] == ["-m tests.preload_probe"]


def test_a_zygote_that_ended_is_started_again_on_the_same_socket(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the worker's zygote's place, one of this test's own without the project's imports (they are not the
    point; killed, the worker's own would have the next test wait for those imports again)."""
    monkeypatch.setenv(preload.PACKAGES_ENV, "")
    zygote = preload._Zygote()
    monkeypatch.setattr(preload, "_current", [zygote])
    try:
        first, path = zygote.process.pid, zygote.path
        os.kill(first, signal.SIGKILL)
        zygote.process.wait(30)
        assert preload.run([*PROBE, "exit", "4"], stdout=subprocess.DEVNULL, timeout=60, cwd=REPO).returncode == 4
        assert preload._zygote() is zygote and zygote.process.pid != first and zygote.path == path
        assert "the zygote ended (-9); starting another" in capfd.readouterr().err
    finally:
        zygote.stop()


WORKER = """
import os, subprocess, sys, time
sys.path.insert(0, {repo!r})
from tests import preload
os.environ[preload.PACKAGES_ENV] = ""  # a zygote without the project's imports: its end is the point
child = preload.PreloadedProcess([sys.executable, "-m", "tests.preload_probe", "wait"], stdin=subprocess.PIPE,
                                 stdout=subprocess.DEVNULL, cwd={repo!r})
print(preload._zygote().process.pid, child.pid, preload._zygote().folder, flush=True)
{ending}
"""


@pytest.mark.parametrize("ending", ["killed", "failed"])
def test_no_child_and_no_zygote_outlive_the_process_that_started_them(ending: str) -> None:
    """The worker killed (SIGKILL: nothing of it runs), or ending on an error with its child running."""
    code = "time.sleep(600)" if ending == "killed" else "raise SystemExit('a failing test run')"
    worker = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(WORKER).format(repo=str(REPO), ending=code)],
        stdout=subprocess.PIPE,
        text=True,
    )
    with worker:
        assert worker.stdout is not None
        first, second, folder = worker.stdout.readline().split()
        zygote, child = int(first), int(second)
        assert _alive(zygote) and _alive(child) or ending == "failed"
        if ending == "killed":
            worker.kill()
        worker.wait(60)
    wait_until(lambda: not _alive(child) and not _alive(zygote), timeout=30, what="the zygote and its child to end")
    assert not os.path.exists(folder)  # its socket and log too


def _alive(pid: int) -> bool:
    """Running (a zombie not yet reaped counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _environment_read_at_import(source: str) -> list[int]:
    """The lines where ``os.environ``/``os.getenv`` is reached by a module's top level (its body and class
    bodies, not a function's)."""
    import ast

    found: list[int] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "environb", "getenv", "getenvb"):
            found.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found


def test_the_preloaded_modules_read_no_environment_at_import() -> None:
    """What the zygote imports once would keep the zygote's environment for every child: the project reads
    ``os.environ`` where it uses it. The built-in skills and collectors too (the zygote loads them once)."""
    found = {
        str(path.relative_to(REPO)): lines
        for package in (*preload.PRELOADED_PACKAGES, "skills", "collectors")
        for path in sorted((REPO / package).rglob("*.py"))
        if (lines := _environment_read_at_import(path.read_text(encoding="utf-8")))
    }
    assert found == {}
    planted = (
        "import os\nHOME = os.environ.get('HOME')\nclass A:\n    b = os.getenv('B')\ndef f():\n    return os.environ\n"
    )
    assert _environment_read_at_import(planted) == [2, 4]


SHARING_CONTROLLER = """
import os, sys
sys.path.insert(0, {repo!r})
from tests import preload
os.environ[preload.PACKAGES_ENV] = ""  # the run's zygote without the project's imports: sharing it is the point
cleanups = []
given = {{}}
preload.give_to_worker(given, cleanups.append)
print(given[preload.WORKERINPUT_KEY], flush=True)
if sys.stdin.readline() == "clean up\\n":
    cleanups[0]()
    print("cleaned", flush=True)
    sys.stdin.read()
"""

SHARING_WORKER = """
import os, subprocess, sys
sys.path.insert(0, {repo!r})
from tests import preload
preload.take_from_controller({{preload.WORKERINPUT_KEY: {folder!r}}})
children = []
for _ in sys.stdin:  # a line: one more child
    children.append(preload.PreloadedProcess([sys.executable, "-m", "tests.preload_probe", "wait"],
                                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, cwd={repo!r}))
    print(preload._zygote().pid, children[-1].pid, flush=True)
"""


class _Stand:
    """A process standing for xdist's controller or one of its workers (``source``), talked to by lines."""

    def __init__(self, source: str, **names: object) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(source).format(repo=str(REPO), **names)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def say(self, line: str) -> list[str]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().split()

    def read(self) -> list[str]:
        assert self.process.stdout is not None
        return self.process.stdout.readline().split()

    def end(self) -> None:
        self.process.kill()
        self.process.communicate(timeout=60)  # waited for, its pipes closed


@pytest.mark.parametrize("ending", ["clean-up", "killed"])
def test_the_workers_of_a_run_share_one_zygote_that_the_controller_ends(
    ending: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """One zygote for the run, the controller's child, started when the first worker asks: a worker's children
    end with it, the zygote does not; one that ended is started again on the same socket; the controller's
    clean-up (or its death) ends it and its children, and its folder goes."""
    controller = _Stand(SHARING_CONTROLLER)
    (folder,) = controller.read()
    one, two = _Stand(SHARING_WORKER, folder=folder), _Stand(SHARING_WORKER, folder=folder)
    try:
        zygote, first = map(int, one.say("start"))
        assert int(two.say("start")[0]) == zygote and _alive(zygote) and _alive(first)
        assert _parent(zygote) == controller.process.pid
        one.end()  # a worker gone: its children end with its connections, the run's zygote stays
        wait_until(lambda: not _alive(first), timeout=30, what="the ended worker's child to end")
        assert _alive(zygote)
        os.kill(zygote, signal.SIGKILL)
        wait_until(lambda: not _alive(zygote), timeout=30, what="the zygote to end")
        again, second = map(int, two.say("start"))
        assert again != zygote and _alive(second) and _parent(again) == controller.process.pid
        assert "the run's zygote ended; starting another" in capfd.readouterr().err  # the workers' stderr is ours
        if ending == "clean-up":
            assert controller.say("clean up") == ["cleaned"]  # the zygote waited for: ended before the controller
            assert not _alive(again) and controller.process.poll() is None
        else:
            controller.end()
        wait_until(lambda: not _alive(again) and not _alive(second), timeout=30, what="the zygote and its child to end")
        wait_until(lambda: not os.path.exists(folder), timeout=30, what="the run's folder to go")
    finally:
        for stand in (one, two, controller):
            stand.end()


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])
