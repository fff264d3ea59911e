"""docs/channels.md's promise, "a new channel is new files plus one registry line", held: a channel of this test's
own, written as the walk says in temporary folders (its ``entry.py`` and ``section.py`` as under channels/, its
``doctor.py`` and ``setup.py`` as under ops/channels/, and its page ``docs/memo.md``) and added to the registry by
one ``Route``, is started by ``assistant run``'s way of starting a channel and answers a message through the
conversation service's turn; the run's ``--frontend``, the doctor, setup and the routing of stored chat ids find it
by its name, with no other file changed.

The channel (``memo``): the owner's messages are the lines of a file in the workspace (``memo.in_file``), read at the
start; each reply is appended to another (``memo.out_file``). Its config section is its own record
(``section.py``), known to every reader of the config through the Route alone: no line in the framework's
``Settings``, no table in config/README.md (its keys are documented in its page, held to the record).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant_framework.workspace import Workspace
from messaging_llm_bot import channels
from messaging_llm_bot.conversation import routes
from messaging_llm_bot.ops import channels as ops_channels
from tests.fakes.chat_server import FakeChatServer
from tests.waiting import wait_until

ENTRY = '''
"""The memo channel: the owner's messages are the lines of memo/in.txt, the replies appended to memo/out.txt."""

from __future__ import annotations

import asyncio

from assistant_framework.inbox import Inbox, InboxItem
from messaging_llm_bot.channels.contract import Address, ChannelRunner, DeliveryError, RunOptions, Sent, TextOut
from messaging_llm_bot.conversation.chat_turns import ChatTurns, TurnMessage
from messaging_llm_bot.conversation.intake import Arrival
from messaging_llm_bot.conversation.outgoing import send_parts
from messaging_llm_bot.conversation.service import ChannelService
from messaging_llm_bot.conversation.turn import Received
from messaging_llm_bot.channels.memo.section import MemoSettings

OWNER = Address("owner")


class MemoFile:
    """The contract's sends used by the shared turn: a reply's parts appended to a file."""

    def __init__(self, path):
        self.path = path

    async def send_text(self, to, text):
        def write(index, part, quote):
            with self.path.open("a", encoding="utf-8") as out:
                out.write(part + "\\n")
            return index

        async def one(index, part, quote):
            return str(await asyncio.to_thread(write, index, part, quote))

        return await send_parts([text.markdown], text, one)

    async def edit_text(self, to, message_id, markdown):
        return False

    async def send_file(self, to, file):
        raise DeliveryError("the memo channel takes no files", for_good=True)


class MemoTurns(ChatTurns):
    def message(self, item: InboxItem) -> TurnMessage | None:
        text = item.payload.get("text")
        return TurnMessage(OWNER, "owner", True, True, Received("text", text), item.item_id) if text else None

    def address_of(self, conversation_id):
        return OWNER


class MemoService(ChannelService):
    NAME, TITLE, LOCK_FILE, LOCK_WHO = "memo", "the memo channel", "state/memo.lock", "memo: another memo bot"

    async def serve(self):
        workspace, files = self.runtime.workspace, self.runtime.settings.section(MemoSettings)
        self.inbox = await asyncio.to_thread(Inbox, workspace)
        turns = self.shutdown.turns = MemoTurns(self.runtime, self.inbox, self.NAME)
        turns.platform = MemoFile(workspace.path(files.out_file))
        intake = self.channel_intake(turns)
        lines = workspace.path(files.in_file).read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines):
            arrival = Arrival(f"memo:{n}", "memo:owner", {"text": line}, "owner", True, line, n, False)
            await intake.take(arrival, lambda text: turns.say(OWNER, text))


def runner(runtime, options: RunOptions) -> ChannelRunner:
    return MemoService(runtime, stop_signals=options.stop_signals, manage_runtime=options.manage_runtime)
'''

SECTION = '''
"""The ``memo`` section (docs/memo.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from assistant_framework.config.settings.allowlist import Allowlist
from assistant_framework.config.settings.fields import flag, maybe, reads, strings, text


@dataclass(frozen=True)
class MemoSettings(Allowlist):
    RELOADED_KEYS: ClassVar = frozenset({"allowed", "owner"})  # the keys /reload applies; the rest need a restart

    enabled: bool = field(default=False, metadata=reads(flag))
    in_file: str = field(default="memo/in.txt", metadata=reads(text, min_length=1))
    out_file: str = field(default="memo/out.txt", metadata=reads(text, min_length=1))
    allowed: tuple[str, ...] = field(default=("owner",), metadata=reads(strings))
    owner: str | None = field(default=None, metadata=reads(maybe(text), null=True))


RECORD = MemoSettings
'''

PAGE = """# The memo channel

## `memo` (`memo.json`)

| key | default | values | meaning |
|---|---|---|---|
| `enabled` | false | boolean | run the memo channel |
| `in_file` | `"memo/in.txt"` | string, at least 1 character | the owner's messages, one a line, in the workspace |
| `out_file` | `"memo/out.txt"` | string, at least 1 character | where the replies are appended |
| `allowed` | `["owner"]` | list of strings | who may write |
| `owner` | `null` (the first of `allowed`) | string, or null | the owner |
"""

DOCTOR = """
from messaging_llm_bot.ops.channels.doctor import OK, Check
from messaging_llm_bot.channels.memo.section import MemoSettings


def checks(ctx):
    memo = ctx.settings.section(MemoSettings)
    return [Check("memo", OK, f"reads {memo.in_file}")] if memo.enabled else []
"""

SETUP = """
def add_arguments(parser):
    parser.add_argument("--memo", dest="memo_file", metavar="FILE", help="the memo channel's file")


def steps(setup):
    if setup.flags.memo_file:
        setup.settings += [("memo.in_file", setup.flags.memo_file), ("memo.enabled", True)]
        setup.reached.append("memo")
"""


@pytest.fixture
def memo_channel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The memo channel's folder in a temporary place on ``messaging_llm_bot.channels``' path, its setup and doctor
    in one on ``messaging_llm_bot.ops.channels``', and its one Route."""
    folder = tmp_path / "channels" / "memo"
    ops_folder = tmp_path / "ops" / "channels" / "memo"
    for where, files in (
        (folder, {"entry": ENTRY, "section": SECTION}),
        (ops_folder, {"doctor": DOCTOR, "setup": SETUP}),
    ):
        where.mkdir(parents=True)
        for name, text in {"__init__": "", **files}.items():
            (where / f"{name}.py").write_text(text, encoding="utf-8")
    monkeypatch.setattr(channels, "__path__", [*channels.__path__, str(folder.parent)])
    monkeypatch.setattr(ops_channels, "__path__", [*ops_channels.__path__, str(ops_folder.parent)])
    importlib.invalidate_caches()
    # The registry line as docs/channels.md (step 3) has it in conversation/routes.py's ROUTES: the conversation
    # service imports no channel, so the route reads the channel's record by the section's name.
    route = routes.section_route("memo", "memo:")
    monkeypatch.setattr(routes, "ROUTES", (*routes.ROUTES, route))
    # The command line's parser is built once per process (cli/main.py): built before this channel was added (an
    # earlier test in this worker), it lacks the channel's setup flags; built with it, later tests would see them.
    from messaging_llm_bot.cli.main import build_parser as command_line

    command_line.cache_clear()
    yield
    command_line.cache_clear()
    memo = ("messaging_llm_bot.channels.memo", "messaging_llm_bot.ops.channels.memo")
    for module in [name for name in sys.modules if name.startswith(memo)]:
        del sys.modules[module]


@pytest.mark.usefixtures("memo_channel")
def test_the_run_the_doctor_setup_and_the_routes_find_a_channel_by_its_route_alone() -> None:
    from assistant_framework.config.settings import Settings
    from messaging_llm_bot.channels.run import enabled_frontends
    from messaging_llm_bot.cli.run import build_parser
    from messaging_llm_bot.ops.channels.doctor import Context
    from messaging_llm_bot.ops.channels.setup import add_channel_flags
    from messaging_llm_bot.ops.doctor.run import checks_in_order

    [frontend] = [a for a in build_parser()._actions if a.dest == "frontend"]
    assert "memo" in (frontend.choices or ())
    assert "memo" not in enabled_frontends(Settings())  # the record's default: not enabled
    on = Settings.from_config({"memo": {"enabled": True, "in_file": "notes.txt"}})
    assert "memo" in enabled_frontends(on)
    checks = dict(checks_in_order())["memo"]
    assert checks(Context(Path("c"), Path("w"), True)) == []
    [check] = checks(Context(Path("c"), Path("w"), True, config={"memo": {"enabled": True, "in_file": "notes.txt"}}))
    assert (check.name, check.detail) == ("memo", "reads notes.txt")
    parser = argparse.ArgumentParser()
    add_channel_flags(parser)
    assert parser.parse_args(["--memo", "notes.txt"]).memo_file == "notes.txt"
    assert routes.channel_of("memo:owner") == "memo"
    assert routes.is_owner_conversation(Settings())("memo:owner")


@pytest.mark.usefixtures("memo_channel")
def test_the_channel_started_as_the_run_starts_it_answers_a_message_through_the_shared_turn(
    bot_config: dict, workspace: Workspace, tmp_path: Path, chat_server: FakeChatServer
) -> None:
    from assistant_framework.inbox import Inbox
    from messaging_llm_bot.channels.contract import RunOptions
    from messaging_llm_bot.channels.run import runner_factory
    from tests.telegram_harness import make_runtime

    workspace.write_text("memo/questions.txt", "What is the capital of France?\n")
    chat_server.enqueue('{"reply": "Paris."}')
    memo = {"enabled": True, "in_file": "memo/questions.txt"}  # the channel reads its record: out_file's default
    runtime = make_runtime({**bot_config, "memory": {"enabled": False}, "memo": memo}, workspace, tmp_path)
    runner = runner_factory("memo")(runtime, RunOptions())
    codes: list[int] = []
    thread = threading.Thread(target=lambda: codes.append(runner.run()), name="memo-under-test", daemon=True)
    thread.start()
    try:
        out = workspace.path("memo/out.txt")
        wait_until(lambda: out.exists() and "Paris." in out.read_text(encoding="utf-8"), 20, "the memo's reply")
        wait_until(lambda: not Inbox(workspace).pending(), 10, "the message completed")
        # /reload reads the section again: who may write applies (the record's RELOADED_KEYS), the file waits
        changed = {**memo, "in_file": "memo/other.txt", "allowed": ["owner", "ann"]}
        config = {**bot_config, "memory": {"enabled": False}, "memo": changed}
        Path(runtime.config_path).write_text(json.dumps(config), encoding="utf-8")
        report = runtime.reload()
        assert (report.applied, report.needs_restart, report.error) == (("memo.allowed",), ("memo.in_file",), None)
        record = importlib.import_module("messaging_llm_bot.channels.memo.section").MemoSettings
        now = runtime.settings.section(record)
        assert now.allowed == ("owner", "ann") and now.in_file == "memo/questions.txt"
    finally:
        runner.stop(10)
        thread.join(10)
    assert codes == [0]
    assert out.read_text(encoding="utf-8") == "Paris.\n"  # one reply, once
    assert "What is the capital of France?" in str(chat_server.chat_requests[0]["messages"][-1])


@pytest.mark.usefixtures("memo_channel")
def test_the_channels_own_section_is_known_checked_and_documented_wherever_the_config_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The section declared in the channel's ``section.py``, with no line in ``Settings`` nor in config/README.md:
    ``config validate/get/set/show``, the doctor's config check, the bot's start and ``/reload``'s plan know it
    (the keys ``/reload`` applies named by the record), refuse a typo in its keys with file and key (exit 2), and
    its page is held to its record."""
    from assistant_framework.config import ConfigError
    from assistant_framework.config.reloadable import RELOAD, RESTART, applied_by, plan_reload
    from messaging_llm_bot.cli.main import main
    from messaging_llm_bot.ops.channels.doctor import OK, Context
    from messaging_llm_bot.ops.doctor.config import check_config
    from messaging_llm_bot.runtime import build_runtime
    from tests.config_readme import channel_pages_differences

    config = tmp_path / "config"
    config.mkdir()
    (config / "memo.json").write_text('{"enabled": true, "in_fiel": "notes.txt"}', encoding="utf-8")
    assert main(["config", "validate", "--config", str(config)]) == 2
    assert "memo.json: in_fiel: unknown key (did you mean 'in_file'?) (see docs/memo.md)" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="memo.json: in_fiel: unknown key"):  # the bot's start refuses it too
        build_runtime(config, tmp_path / "workspace")
    (config / "memo.json").write_text('{"enabled": true}', encoding="utf-8")
    assert main(["config", "validate", "--config", str(config)]) == 0
    assert main(["config", "get", "mem.enabled", "--config", str(config)]) == 2
    assert "unknown config section 'mem' (did you mean 'memo'?)" in capsys.readouterr().err
    assert main(["config", "get", "memo.out_file", "--config", str(config)]) == 0
    assert capsys.readouterr().out.strip() == "memo/out.txt  (default)"
    assert main(["config", "set", "memo.in_fil", "notes.txt", "--config", str(config)]) == 2
    assert "did you mean 'memo.in_file'?" in capsys.readouterr().err
    assert main(["config", "set", "memo.in_file", "notes.txt", "--config", str(config)]) == 0
    assert "needs a restart" in capsys.readouterr().out
    assert main(["config", "set", "memo.allowed", '["ann"]', "--config", str(config)]) == 0
    assert "applies it when you send /reload" in capsys.readouterr().out  # the record's RELOADED_KEYS
    assert main(["config", "show", "--config", str(config)]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert "memo.out_file = memo/out.txt  (default)" in shown
    assert any(line.startswith("memo.in_file = notes.txt  (") and "local" in line for line in shown)
    assert [check.status for check in check_config(Context(config, tmp_path / "workspace", True))] == [OK]
    running = {"memo": {"enabled": True}}
    plan = plan_reload(running, {"memo": {"enabled": True, "in_file": "notes.txt", "allowed": ["ann"]}})
    assert plan.needs_restart == ("memo.in_file",) and plan.applied == ("memo.allowed",)
    assert plan.config == {"memo": {"enabled": True, "allowed": ["ann"]}}
    assert applied_by("memo.owner") == RELOAD and applied_by("memo.enabled") == RESTART
    docs = tmp_path / "docs"
    docs.mkdir()

    def memo_page() -> list[str]:  # the memo's problems (a channel of the repository's own has its page in docs/)
        return [problem for problem in channel_pages_differences(docs) if problem.startswith("memo")]

    assert memo_page() == ["memo: the channel's section is documented in no memo.md"]
    (docs / "memo.md").write_text(PAGE, encoding="utf-8")
    assert memo_page() == []
    (docs / "memo.md").write_text(PAGE.replace('`"memo/out.txt"`', '`"out.txt"`'), encoding="utf-8")
    assert memo_page() == ["memo.out_file: default 'out.txt' in docs/memo.md, 'memo/out.txt' in the records"]


@pytest.mark.usefixtures("memo_channel")
def test_setup_writes_the_channels_own_section_and_the_bot_reads_it_typed(
    tmp_path: Path, chat_server: FakeChatServer
) -> None:
    """``assistant setup --memo FILE``: the channel's steps append its keys, which setup checks with the whole
    config (its section known) before it writes them to the local layer."""
    from assistant_framework.config import load_config
    from assistant_framework.config.settings import Settings
    from tests.setup_runs import channel_setup, example_config

    config = example_config(tmp_path)
    assert channel_setup(config, tmp_path, chat_server, "--memo", "notes.txt") == 0
    assert json.loads((config / "local" / "memo.json").read_text(encoding="utf-8")) == {
        "in_file": "notes.txt",
        "enabled": True,
    }
    record = importlib.import_module("messaging_llm_bot.channels.memo.section").MemoSettings
    memo = Settings.from_config(load_config(config)).section(record)
    assert (memo.enabled, memo.in_file, memo.out_file) == (True, "notes.txt", "memo/out.txt")


KIT = """
from tests.channel_kit import KitDrivers, register


def unused(*_args):
    raise AssertionError("not run here")


register(
    "memo",
    KitDrivers(
        capabilities=unused,
        approve=unused,
        chat=unused,
        stream=unused,
        restart=unused,
        busy=unused,
        skips={
            "STRANGERS": "one user",
            "TOLD_THEIR_ID": "one user",
            "NOTICES": "one user",
            "GUESTS": "one user",
            "AGAIN": "a file's line is read once",
            "HELD": "a file's line is read once",
            "LATER": "a file takes every line",
        },
    ),
)
"""


@pytest.mark.usefixtures("memo_channel")
def test_the_contract_kit_finds_a_channels_drivers_in_a_file_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tests/kit_<name>.py`` (here in a temporary folder on ``tests``' path) registers the channel's drivers with
    the kit, found by the registry's name: no line in tests/channel_kit.py's tables."""
    import tests
    from tests import channel_kit

    tables = ("CHANNELS", "APPROVE", "CHAT", "STREAM", "RESTART", "BUSY", "STRANGERS", "NO_STRANGERS")
    tables += ("TOLD_THEIR_ID", "NOT_TOLD_THEIR_ID", "MEDIA", "FILE_OUT", "NOTICES", "NO_NOTICES")
    tables += ("COMMAND_CHATS", "NO_COMMANDS", "GUESTS", "NO_GUESTS", "AGAIN", "NOT_AGAIN", "HELD", "NOT_HELD")
    tables += ("LATER", "NOT_LATER")
    for table in tables:  # the kit's tables as they were, after the test
        monkeypatch.setattr(channel_kit, table, dict(getattr(channel_kit, table)))
    (tmp_path / "kit").mkdir()
    (tmp_path / "kit" / "kit_memo.py").write_text(KIT, encoding="utf-8")
    monkeypatch.setattr(tests, "__path__", [*tests.__path__, str(tmp_path / "kit")])
    monkeypatch.delitem(sys.modules, "tests.kit_memo", raising=False)
    importlib.invalidate_caches()
    channel_kit._drivers_in_their_own_files()
    assert sorted(channel_kit.CHANNELS) == sorted(routes.channel_names())
    assert "memo" in channel_kit.BUSY and "memo" not in channel_kit.STRANGERS
    assert channel_kit.NO_STRANGERS["memo"] == channel_kit.NO_NOTICES["memo"] == channel_kit.NO_GUESTS["memo"]
    sys.modules.pop("tests.kit_memo", None)
