"""Shared fixtures: a temporary workspace, a fake model server, and a config dict pointing at it."""

from __future__ import annotations

import gc
import os
import signal
import textwrap
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import pytest

from assistant_framework.workspace import Workspace
from tests import preload, tiers
from tests.fakes.chat_server import FakeChatServer

if TYPE_CHECKING:
    from assistant_framework.skills import SkillManager
    from messaging_llm_bot.agent.loop import Agent
    from messaging_llm_bot.llm.client import LLMClient

# The harnesses' fixtures (Telegram: fake, start_bot; Signal: daemon, start; email: email_imap, email_smtp,
# start_email; skills: manager, ctx), and the
# guard that fails a test whose process reaches past loopback (tests/loopback_only.py), and the order xdist
# hands the files out in (tests/schedule.py), and the test modules' asserts rewritten once before the workers
# start (tests/rewrite_once.py).
pytest_plugins = [
    "tests.telegram_harness",
    "tests.signal_harness",
    "tests.email_harness",
    "tests.matrix_harness",
    "tests.whatsapp_harness",
    "tests.slack_harness",
    "tests.discord_harness",
    "tests.skills_harness",
    "tests.loopback_only",
    "tests.schedule",
    "tests.rewrite_once",
    "tests.slow_reader",
]

# No garbage collection while the harnesses and the test modules are imported and the tests collected: what
# they make stays, and each collection walked all of it again (a third of collecting's CPU, in every xdist
# worker). Collected and frozen once after (pytest_collection): the tests' collections then walk only
# what the tests make.
gc.disable()

# python-telegram-bot 22 warns that ``retry_after`` and media ``duration`` become ``timedelta``; our code takes
# both forms (channels/telegram/ratelimit.py: retry_after_seconds), so the tests run with the future form and
# without the warning (warnings are errors: pyproject.toml). Subprocess bots inherit it.
os.environ.setdefault("PTB_TIMEDELTA", "1")

#: ``0`` keeps the tests' temporary files where ``tempfile`` puts them by itself (``/tmp``).
MEMORY_TMP_SWITCH = "ASSISTANT_TEST_TMPFS"
#: The least free space of ``/dev/shm`` for the tests' temporary files to go there (a container's default is 64 MB).
MEMORY_TMP_MIN_FREE = 4 * 2**30


def _temporary_files_in_memory() -> None:
    """The tests' temporary folders (``tmp_path``, ``tempfile``, and those of the processes they start, which
    inherit ``TMPDIR``) on the tmpfs ``/dev/shm`` when it is one with room, and ``TMPDIR`` is not set: a workspace's
    durable writes (``fsync`` of the file and its folder) and the removal of a test's folder cost the kernel far
    less there than on a disk (issue 41: 15-19 % less CPU over 14 files, system time halved)."""
    if os.environ.get("TMPDIR") or os.environ.get(MEMORY_TMP_SWITCH) == "0":
        return
    try:
        with open("/proc/mounts", encoding="utf-8") as mounts:
            tmpfs = any(line.split()[1:3] == ["/dev/shm", "tmpfs"] for line in mounts if len(line.split()) > 2)
        room = os.statvfs("/dev/shm")
    except OSError:
        return
    if tmpfs and os.access("/dev/shm", os.W_OK | os.X_OK) and room.f_bavail * room.f_frsize >= MEMORY_TMP_MIN_FREE:
        import tempfile

        os.environ["TMPDIR"] = "/dev/shm"
        tempfile.tempdir = None  # read again from TMPDIR


_temporary_files_in_memory()

# Skills used by the agent tests, written into a temporary skills dir (not the built-ins,
# whose set and schemas change as the project grows).
TEST_SKILLS = {
    "save_note": """
        DESCRIPTION = "Save a note to notes/<name>.md"
        ARGS_SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "pattern": "^[a-z]+$"},
                       "text": {"type": "string"}}, "required": ["name", "text"], "additionalProperties": False}
        CAPABILITIES = ["write"]

        def run(workspace, args, context=None):
            rel = "notes/" + args["name"] + ".md"
            workspace.write_text(rel, args["text"])
            return {"path": rel, "chars": len(args["text"])}
    """,
    "read_note": """
        DESCRIPTION = "Read notes/<name>.md"
        ARGS_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

        def run(workspace, args, context=None):
            return workspace.read_text("notes/" + args["name"] + ".md", default="(no such note)")
    """,
    "add": """
        DESCRIPTION = "Add two integers"
        ARGS_SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                       "required": ["a", "b"]}

        def run(workspace, args, context=None):
            return {"sum": args["a"] + args["b"]}
    """,
    "boom": """
        DESCRIPTION = "Always fails"

        def run(workspace, args, context=None):
            raise RuntimeError("kaput")
    """,
}


@pytest.fixture(autouse=True)
def _outside_the_checkout(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs in an empty folder, so a command's default ``--config config`` never reads the
    user's own settings (``config/local/``) or workspace; tests name the repository by its path."""
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))


@pytest.fixture
def ctrl_c() -> Iterator[None]:
    """Ctrl-C (SIGINT) raising KeyboardInterrupt in this test, as in a terminal: pytest-xdist's workers start
    with SIGINT ignored, and whether an earlier test of the worker set it back was a matter of placement."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def write_test_skills(folder: Path) -> Path:
    """Write TEST_SKILLS as skill folders under ``folder``; returns it."""
    for name, source in TEST_SKILLS.items():
        skill = folder / name
        skill.mkdir(parents=True, exist_ok=True)
        (skill / "__init__.py").write_text(textwrap.dedent(source), encoding="utf-8")
        (skill / "README.md").write_text(f"# {name}\n\n## What it does\n\nTest skill {name}.\n", encoding="utf-8")
    return folder


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    """A fresh workspace with the standard layout in a temporary folder."""
    return Workspace(tmp_path / "workspace")


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    """A bare workspace at ``tmp_path/ws`` (the unit tests' workspace)."""
    return Workspace(tmp_path / "ws")


@pytest.fixture
def service(ws: Workspace):
    """A MemoryService on ``ws`` without its background worker (UTC)."""
    from assistant_framework.memory import MemoryService

    svc = MemoryService(ws, {"runtime": {"timezone": "UTC"}}, start_worker=False)
    yield svc
    svc.close()


@pytest.fixture
def chat_server():
    """A started FakeChatServer, stopped after the test."""
    with FakeChatServer() as server:
        yield server


@pytest.fixture(scope="session")
def _shared_test_skills(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """TEST_SKILLS written once per test process, read-only: a test that wrote into them would change them for the
    tests after it. The modes stop that where they bind (not for root); a change is an error when the process's
    tests are done, in any case."""
    from assistant_framework.plugin_import import folder_key

    folder = write_test_skills(tmp_path_factory.mktemp("test_skills"))
    for path in [*folder.rglob("*"), folder]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    written = folder_key(folder)
    yield folder
    assert folder_key(folder) == written, f"a test changed the shared TEST_SKILLS in {folder}: use a folder of its own"


@pytest.fixture
def test_skills_dir(_shared_test_skills: Path) -> Path:
    """A skills dir holding TEST_SKILLS (read-only, one for all the tests of the process: writing the four folders
    for each of about a thousand bot and agent tests cost 3-5 ms of CPU each). The bot imports each folder again
    at every load: a user's skills dir is never reused across loads (assistant_framework/plugin_import.py)."""
    return _shared_test_skills


@pytest.fixture
def bot_config(chat_server: FakeChatServer, test_skills_dir: Path) -> dict:
    """A config dict pointing at the fake model server, with the test skills loaded."""
    return {
        "llm": {
            "runners": [
                {"name": "fake", "base_url": chat_server.base_url, "model": "fake-model", "timeout_seconds": 10}
            ],
            "max_skill_rounds": 3,
            "max_concurrency": 4,
            "retries_per_runner": 0,
        },
        "runtime": {"timezone": "Europe/Berlin", "skills_dirs": [str(test_skills_dir)], "trace_keep": 50},
        "telegram": {"token": ""},
    }


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch):
    """install({name: [answers...]}) -> FakeDNS, installed as socket.getaddrinfo for the test."""
    import socket

    from tests.fakes.dns import FakeDNS

    def install(answers: dict) -> FakeDNS:
        resolver = FakeDNS(answers, socket.getaddrinfo)
        monkeypatch.setattr(socket, "getaddrinfo", resolver)
        return resolver

    return install


#: The clock of ``memory_agent``'s agent.
AGENT_CLOCK = datetime(2026, 3, 3, 13, 5, tzinfo=timezone.utc)

#: ``make_agent(config, workspace, *, skills=None, llm=None, **agent_kwargs) -> Agent``
AgentFactory = Callable[..., "Agent"]


@pytest.fixture
def make_agent() -> Iterator[AgentFactory]:
    """Factory: ``make_agent(config, workspace, **agent_kwargs)`` builds an ``Agent`` as the runtime does:
    skills from the config, a model client on its ``llm`` section (``skills=``/``llm=`` give others;
    ``clock=``, ``memory=``, ``background_traces=``... go to ``Agent``). The clients it made are closed
    after the test."""
    from assistant_framework.config.settings import Settings
    from assistant_framework.skills import SkillManager
    from messaging_llm_bot.agent.loop import Agent
    from messaging_llm_bot.llm.client import LLMClient

    made: list[LLMClient] = []

    def make(
        config: dict,
        workspace: Workspace,
        *,
        skills: SkillManager | None = None,
        llm: LLMClient | None = None,
        **kwargs: Any,
    ) -> Agent:
        if llm is None:
            llm = LLMClient.from_section(config["llm"])
            made.append(llm)
        settings = Settings.from_config(config)
        if skills is None:
            skills = SkillManager.from_config(config, workspace, settings=settings)
        return Agent(settings, workspace, skills, llm, **kwargs)

    yield make
    for llm in made:
        llm.close()


@pytest.fixture
def memory_agent(bot_config: dict, workspace: Workspace, make_agent: AgentFactory):
    """(agent, memory, workspace): memory on with recall off (only skills bring stored text in),
    ``write: allow``, the clock at ``AGENT_CLOCK``."""
    from assistant_framework.memory import MemoryService

    config = dict(bot_config, policy={"capabilities": {"write": "allow"}}, memory={"recall": {"enabled": False}})
    memory = MemoryService(workspace, config, start_worker=False)
    agent = make_agent(config, workspace, clock=lambda: AGENT_CLOCK, memory=memory)
    try:
        yield agent, memory, workspace
    finally:
        memory.close()


MODEL_TESTS_ENV = "ASSISTANT_MODEL_TESTS"


def pytest_configure(config: pytest.Config) -> None:
    for name, meaning in tiers.MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {meaning}")
    tiers.start_session()
    preload.take_from_controller(getattr(config, "workerinput", {}))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist's controller, for each worker: the workers share the run's zygote (tests/preload.py)."""
    preload.give_to_worker(node.workerinput, node.config.add_cleanup)


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[object]:
    """Collecting done (or skipped: xdist's controller collects nothing), the garbage collector is on again."""
    try:
        return (yield)
    finally:
        gc.collect()
        gc.freeze()
        gc.enable()


def pytest_collection_modifyitems(config, items) -> None:
    """The tiers' markers (tests/tiers.py: what each test uses), then: tests marked ``model`` need the
    real llama.cpp server: they run under ``make test-model`` (which sets ASSISTANT_MODEL_TESTS=1) and
    skip with a one-line reason otherwise."""
    import os

    from tests.real_model import missing_reason

    now = tiers.marks_at_collection(config)
    for item in items:
        if now:
            tiers.mark(item)
        else:
            tiers.check_slow(item)
    marked = [item for item in items if item.get_closest_marker("model")]
    if not marked:
        return
    reason = missing_reason()
    if reason is None and not os.environ.get(MODEL_TESTS_ENV):
        reason = "real-model tests run with make test-model"
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in marked:
        item.add_marker(skip)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """The tiers' markers of a test not marked at collection (tests/tiers.py ``marks_at_collection``), before its
    setup: ``judge`` reads them after each phase."""
    tiers.mark_before_run(item)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[pytest.TestReport]:
    """Each phase's report carries what it cost by cause, and fails a test that broke its tier's promises
    (a process the markers did not foresee, more than the per-test bound without ``slow``)."""
    report = yield
    tiers.judge(item, report)
    return report


def pytest_terminal_summary(terminalreporter: Any) -> None:
    tiers.summary(terminalreporter)
