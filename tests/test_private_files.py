"""Private files (issue 26.7): under the usual umask 022 the memory index (all memory text, and its
-wal/-shm), conversations, state, logs, attachments and the web token were readable by every user of
the machine. Now every file the bot, the CLI or the Workspace API writes is 0600 and every folder 0700,
whatever the umask, and a workspace made before is tightened once at start with one log line.

Each test walks the whole tree afterwards; the real bot runs as a subprocess started under umask 022, the
CLI's ``main`` in this process under umask 022 (tests/cli_inprocess.py: the umask it sets is its own), and
the in-process bot too, which does not pass through the bot's ``main``."""

from __future__ import annotations

import json
import os
import stat
import tarfile
from contextlib import contextmanager
from pathlib import Path

import pytest

from assistant_framework.workspace import Workspace
from tests.cli_inprocess import CliRun, run_cli
from tests.crash_bot import BotProcess, echo_reply, sent_texts, write_bot_config
from tests.telegram_harness import OWNER, texts


@contextmanager
def umask(mask: int):
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


def loose(root: Path) -> list[str]:
    """Every file and folder under ``root`` (and ``root``) that group or others may read, write or enter."""
    found = []
    for path in [root, *root.rglob("*")]:
        try:
            st = os.lstat(path)
        except FileNotFoundError:  # removed by the running bot since the walk listed it (a delivered ledger)
            continue
        if stat.S_ISLNK(st.st_mode):
            continue
        if st.st_mode & 0o077:
            found.append(f"{path.relative_to(root).as_posix() or '.'} {stat.filemode(st.st_mode)}")
    return found


#: A plugin skill that writes with plain ``open()`` and ``os.makedirs``: only the process's umask keeps it private.
PLAIN_SKILL = """
import os
DESCRIPTION = "Export a file with plain open()"
def run(workspace, args, context=None):
    folder = os.path.join(str(workspace.root), "skills-data", "plain", "deep")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "export.txt"), "w") as handle:
        handle.write("exported")
    return "exported"
"""


def _bot_config(tmp_path: Path, bot_config: dict, fake, **extra) -> Path:
    plugins = tmp_path / "plugins"
    (plugins / "plain_write").mkdir(parents=True, exist_ok=True)
    (plugins / "plain_write" / "__init__.py").write_text(PLAIN_SKILL)
    (plugins / "plain_write" / "README.md").write_text("# plain_write\n")
    config = dict(
        bot_config,
        runtime={**bot_config["runtime"], "skills_dirs": [*bot_config["runtime"]["skills_dirs"], str(plugins)]},
    )
    return write_bot_config(
        tmp_path / "config.json",
        config,
        fake,
        extra={"memory": {"enabled": True, "extract_facts": False}, "web": {"enabled": True, "port": 0}, **extra},
    )


def _exercise(fake, chat_server) -> None:
    """A note written by a skill, a plugin's plain open(), a conversation, a document saved into inbox/,
    memory indexed."""
    chat_server.set_handler(echo_reply)
    chat_server.enqueue(
        '{"skill": "save_note", "args": {"name": "milk", "text": "oat milk"}}',
        '{"skill": "plain_write", "args": {}}',
    )
    fake.send_message("remember oat milk", user_id=OWNER)
    fake.wait_for(lambda: len(sent_texts(fake, OWNER)) >= 1, timeout=20)
    fake.send_document(OWNER, "report.txt", b"quarterly numbers\n", caption="keep this", mime_type="text/plain")
    fake.wait_for(lambda: len(sent_texts(fake, OWNER)) >= 2, timeout=20)


@pytest.mark.timeout(120)
def test_the_real_bot_under_umask_022_writes_nothing_others_can_read(tmp_path, bot_config, fake, chat_server):
    config = _bot_config(tmp_path, bot_config, fake)
    ws = tmp_path / "ws"
    with umask(0o022), BotProcess(config, ws, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        _exercise(fake, chat_server)
        assert (ws / "state" / "web" / "token").exists() and (ws / "memory" / "index.sqlite3").exists()
        assert list((ws / "inbox").rglob("*report*")), "the document was saved"
        assert (ws / "skills-data" / "plain" / "deep" / "export.txt").read_text() == "exported"
        running = loose(ws)  # while it runs: the index's -wal/-shm, the lock files, the open log
        assert bot.terminate() == 0
    assert running == []
    assert loose(ws) == []
    assert (ws / "state" / "logs" / "bot.log").exists()
    assert stat.S_IMODE(os.stat(ws).st_mode) == 0o700


@pytest.mark.timeout(120)
def test_a_workspace_made_before_is_tightened_once_at_start_with_one_log_line(tmp_path, bot_config, fake, chat_server):
    ws = tmp_path / "ws"
    with umask(0o022):  # a workspace as an older version left it: 0644 files, 0755 folders
        old = Workspace(ws)
        old.write_text("notes/old.md", "# old")
        for path in [ws, *ws.rglob("*")]:
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        (ws / "notes" / "script.sh").write_text("echo hi\n")
        os.chmod(ws / "notes" / "script.sh", 0o775)
    os.symlink(tmp_path / "config.json", ws / "notes" / "outside-link")  # not followed, not changed
    config = _bot_config(tmp_path, bot_config, fake)
    os.chmod(config, 0o644)
    with BotProcess(config, ws, tmp_path / "bot.log") as bot:
        bot.start().wait_ready()
        assert bot.terminate() == 0
        first = bot.run_log()
        bot.start().wait_ready()
        assert bot.terminate() == 0
        second = bot.run_log()
    said = [line for line in first.splitlines() if "made" in line and "private" in line]
    assert len(said) == 1 and str(ws) in said[0], said
    assert not [line for line in second.splitlines() if "made" in line and "private" in line]
    assert loose(ws) == []
    assert stat.S_IMODE(os.stat(ws / "notes" / "script.sh").st_mode) == 0o700  # the owner's bits kept
    assert stat.S_IMODE(os.stat(config).st_mode) == 0o644  # the link's target, outside: untouched


def test_the_in_process_bot_under_umask_022_writes_nothing_others_can_read(
    fake, start_bot, chat_server, workspace, tmp_path
):
    """The same through ``build_runtime`` and the Telegram service in this process: no ``main`` sets a
    umask here, so every writer's own mode is what is checked."""
    chat_server.set_handler(echo_reply)
    with umask(0o022):
        start_bot(
            config_patch=lambda c: c.update(memory={"enabled": True, "extract_facts": False}),
            allowed_user_ids=[OWNER],
        )
        chat_server.enqueue('{"skill": "save_note", "args": {"name": "milk", "text": "oat milk"}}')
        fake.send_message("remember oat milk", user_id=OWNER)
        fake.wait_for(lambda: texts(fake, OWNER), timeout=20)
        fake.send_document(OWNER, "report.txt", b"quarterly numbers\n", caption="keep this", mime_type="text/plain")
        fake.wait_for(lambda: len(texts(fake, OWNER)) >= 2, timeout=20)
        assert (workspace.root / "memory" / "index.sqlite3-wal").exists()
        assert (workspace.root / "state" / "bot.lock").exists()
        assert loose(workspace.root) == []


@pytest.mark.parametrize("mask", [0o022, 0o000])
def test_every_workspace_writer_is_private_whatever_the_umask(tmp_path, mask) -> None:
    from assistant_framework.config.settings import WebSettings
    from assistant_framework.memory import MemoryService
    from assistant_framework.web.auth import load_or_create_token

    with umask(mask):
        ws = Workspace(tmp_path / "a" / "b" / "ws")  # the parents it creates are private too
        ws.write_text("notes/deep/er/new.md", "# new")
        ws.write_json("tasks/tasks.json", [])
        ws.append_jsonl("conversations/tg:1/2026-01-01.jsonl", {"text": "hi"})
        ws.append_line("skills-data/mine/log.txt", "line")
        with ws.lock("notes/deep/er/new.md"):
            pass
        load_or_create_token(WebSettings(), ws)
        service = MemoryService(ws, {"memory": {"enabled": True, "extract_facts": False}}, start_worker=False)
        try:
            service.refresh()
            assert (ws.root / "memory" / "index.sqlite3-wal").exists()
            assert loose(ws.root) == []
        finally:
            service.close()
    assert loose(tmp_path / "a") == []


def test_a_loose_file_becomes_private_when_the_workspace_writes_it(ws: Workspace) -> None:
    ws.write_text("notes/shared.md", "# by hand")
    ws.append_line("notes/log.txt", "one")
    for rel in ("notes/shared.md", "notes/log.txt"):
        os.chmod(ws.path(rel), 0o664)
    ws.write_text("notes/shared.md", "# rewritten")
    ws.append_line("notes/log.txt", "two")
    assert stat.S_IMODE(os.stat(ws.path("notes/shared.md")).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(ws.path("notes/log.txt")).st_mode) == 0o600


PLAIN_COLLECTOR = """
import os
DESCRIPTION = "Writes with plain open()"
INTERVAL_SECONDS = 3600
def run(workspace, config):
    folder = os.path.join(str(workspace.root), "collectors", "plain", "feed")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "items.txt"), "w") as handle:
        handle.write("item")
    return {"summary": "one item"}
"""


def test_the_cli_under_umask_022_writes_nothing_others_can_read(tmp_path: Path) -> None:
    """`memory reindex` creates the index and its WAL; a collector run by `collectors run` writes with plain
    open(); `backup` the archive; `restore` a whole workspace from an archive whose members are 0644/0755."""
    from tests.fixtures.collectors.helpers import write_collector

    write_collector(tmp_path / "plugins", "plain", PLAIN_COLLECTOR)
    config = tmp_path / "config"
    (config / "collectors").mkdir(parents=True)
    (config / "runtime.json").write_text(
        json.dumps({"timezone": "UTC", "collectors_dirs": [str(tmp_path / "plugins")]})
    )
    (config / "collectors" / "plain.json").write_text(json.dumps({"enabled": True}))
    with umask(0o022):
        ws = Workspace(tmp_path / "ws")
        ws.write_text("notes/a.md", "# apples\n\nred apples\n")

        def cli(*argv: str) -> CliRun:  # in this process, under the umask above (tests/cli_inprocess.py)
            return run_cli(*argv, cwd=tmp_path)

        assert cli("memory", "reindex", "--workspace", str(ws.root)).returncode == 0
        assert (ws.root / "memory" / "index.sqlite3").exists()
        ran = cli("collectors", "run", "plain", "--config", str(config), "--workspace", str(ws.root))
        assert ran.returncode == 0, ran.stderr
        assert (ws.root / "collectors" / "plain" / "feed" / "items.txt").read_text() == "item"
        assert cli("backup", "--workspace", str(ws.root), "--out", str(tmp_path / "b.tar.gz")).returncode == 0
        assert stat.S_IMODE(os.stat(tmp_path / "b.tar.gz").st_mode) == 0o600
        loose_archive = tmp_path / "loose.tar.gz"
        with tarfile.open(tmp_path / "b.tar.gz") as src, tarfile.open(loose_archive, "w:gz") as dst:
            for member in src.getmembers():
                member.mode = 0o755 if member.isdir() else 0o644
                dst.addfile(member, src.extractfile(member) if member.isfile() else None)
        assert cli("restore", str(loose_archive), "--workspace", str(tmp_path / "restored")).returncode == 0
    assert loose(ws.root) == []
    assert loose(tmp_path / "restored") == []


def test_the_bots_log_file_is_private_also_after_a_rollover(tmp_path: Path) -> None:
    """The log the bot writes into the workspace (state/logs/bot.log) under umask 022, and the new file each
    rollover opens (the rotated ones keep their mode)."""
    import logging

    from messaging_llm_bot.cli.run import PrivateRotatingFileHandler

    with umask(0o022):
        handler = PrivateRotatingFileHandler(tmp_path / "bot.log", maxBytes=200, backupCount=2, encoding="utf-8")
        try:
            for n in range(20):
                handler.emit(logging.makeLogRecord({"msg": f"line {n} " + "x" * 40}))
        finally:
            handler.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bot.log", "bot.log.1", "bot.log.2"]
    assert [p.name for p in tmp_path.iterdir() if p.stat().st_mode & 0o077] == []
