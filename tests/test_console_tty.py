"""The interactive terminal chat on a real pseudo-terminal: arrow keys edit and recall lines
(no ``^[[A``), and reminders set in the terminal are delivered there (by the process's one scheduler)."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from assistant_framework.stores.reminders import ReminderStore
from assistant_framework.workspace import Workspace
from tests.console_harness import Terminal, console_argv, write_config
from tests.waiting import wait_until

pytest.importorskip("pty", reason="needs a POSIX pseudo-terminal")


def test_arrow_keys_recall_history_and_reminders_arrive(tmp_path: Path, chat_server, test_skills_dir) -> None:
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    ws = Workspace(tmp_path / "ws")
    store = ReminderStore(ws)
    store.add("console", "stretch your legs", datetime.now(timezone.utc) - timedelta(seconds=5), "UTC")
    seen: list[str] = []
    chat_server.set_handler(lambda request: (seen.append(request["messages"][-1]["content"]), '{"reply": "ok!"}')[1])
    term = Terminal(
        [
            sys.executable,
            "-m",
            "tests.console_quick_reminders",  # python -m messaging_llm_bot, its reminder poll at 0.1 s, not 5 s
            "--frontend",
            "console",
            "--config",
            str(config),
            "--workspace",
            str(ws.root),
        ]
    )
    try:
        term.wait_for("you> ")
        term.wait_for("⏰ stretch your legs")  # due before the start: delivered at once
        term.type("hello there\r")
        term.wait_for("ok!")
        # The next prompt, searched after the reply: it may have come in
        # the same read as the reply, so not from the output's end.
        term.wait_for("you> ", start=term.output.index("ok!"))
        mark = len(term.output)
        term.type("\x1b[A\r")  # Up, Enter: the last line again
        term.wait_for("ok!", start=mark)
        assert "^[[A" not in term.output
        # The prompt after the reply: the reminder comes while the owner sits at it (printed above it), and the
        # Ctrl-D below is read by it.
        term.wait_for("you> ", start=term.output.index("ok!", mark))
        store.add("console", "drink water", datetime.now(timezone.utc), "UTC")  # due while the chat runs
        term.wait_for("⏰ drink water", timeout=30)
        term.type("\x04")  # Ctrl-D
        assert term.proc.wait(30) == 0
    finally:
        term.close()
    assert sum(m.startswith("hello there") for m in seen) == 2, seen
    assert all(r["status"] == "delivered" for r in store.list())
    assert "hello there" in (ws.root / "state" / "console_history").read_text()
    # What was typed, the terminal's log and the rest are the owner's alone (issue 26.7).
    assert [p for p in [ws.root, *ws.root.rglob("*")] if not p.is_symlink() and p.stat().st_mode & 0o077] == []


def test_a_reminder_during_a_reverse_search_leaves_the_search_on_the_screen(
    tmp_path: Path, chat_server, test_skills_dir
) -> None:
    """Ctrl-R at the prompt, then a reminder comes: it is printed above, and the search stays below it, as it was
    (readline's chat printed the reminder over the search, its line buffer being empty, and showed the plain prompt
    till the next key); the search then finds the line sent before."""
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    ws = Workspace(tmp_path / "ws")
    store = ReminderStore(ws)
    seen: list[str] = []
    chat_server.set_handler(lambda request: (seen.append(request["messages"][-1]["content"]), '{"reply": "ok!"}')[1])
    argv = [sys.executable, "-m", "tests.console_quick_reminders", "--frontend", "console", "--config", str(config)]
    term = Terminal([*argv, "--workspace", str(ws.root)])
    try:
        term.wait_for("you> ")
        term.type("hello there\r")
        term.wait_for("ok!")
        term.wait_for("you> ", start=term.output.index("ok!"))
        term.type("\x12")  # Ctrl-R
        term.wait_for("(reverse-i-search)")
        store.add("console", "drink water", datetime.now(timezone.utc), "UTC")
        term.wait_for("⏰ drink water", timeout=30)

        term.wait_shown(
            lambda shown: "⏰ drink water" in shown and shown[-1].startswith("(reverse-i-search)"),
            "the search below the reminder",
            timeout=10,
        )
        term.type("hel")
        term.wait_for("hello there", start=term.output.rindex("(reverse-i-search)"))
        term.type("\r\r")  # the search ends at the line found; Enter sends it
        wait_until(lambda: len(seen) == 2, 30, "the line found sent")
        term.wait_for("you> ", start=term.output.rindex("ok!"))
        term.type("\x04")
        assert term.proc.wait(30) == 0
    finally:
        term.close()
    assert [text.split("\n")[0] for text in seen] == ["hello there", "hello there"], seen


@pytest.mark.parametrize("term_type", ["dumb", "an-unknown-terminal"])
def test_a_dumb_or_unknown_terminal_chats_and_asks_it_no_cursor_position(
    tmp_path: Path, chat_server, test_skills_dir, term_type: str
) -> None:
    """TERM=dumb (an editor's shell, which edits the line itself): the plain reader, no escape sequence; a TERM no
    one knows: the usual prompt. Neither is sent a cursor position request (ESC [ 6 n): a terminal that does not
    answer one made prompt_toolkit wait and warn."""
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    chat_server.set_handler(lambda request: '{"reply": "ok!"}')
    argv = [sys.executable, "-m", "messaging_llm_bot", "--frontend", "console", "--config", str(config)]
    term = Terminal([*argv, "--workspace", str(Workspace(tmp_path / "ws").root)], env={"TERM": term_type})
    try:
        term.wait_for("you>")
        term.type("hello\r")
        term.wait_for("ok!")
        term.wait_for("you>", start=term.output.index("ok!"))
        term.type("\x04")
        assert term.proc.wait(30) == 0
    finally:
        term.close()
    assert b"\x1b[6n" not in term.raw and "Traceback" not in term.output
    assert "you> hello" in term.lines_shown()
    if term_type == "dumb":
        assert b"\x1b[" not in term.raw.split(b"you>", 1)[1]  # nothing but text after the first prompt


def _console_jobs(bot_config: dict, workspace: Workspace, tmp_path: Path, out, poll: float | None = 0.2):
    """The terminal chat's channel (console/service.py) as the chat starts it at a terminal, with no one typing:
    it joins the process's one scheduler, and prints what comes on ``out``. ``poll``: how often it reads the
    reminder store (None: the chat's own)."""
    import io

    from messaging_llm_bot.channels.console.service import ConsoleService, Terminal
    from tests.telegram_harness import make_runtime

    runtime = make_runtime(bot_config, workspace, tmp_path)
    jobs = ConsoleService(runtime, Terminal(io.StringIO(), out, io.StringIO(), True))
    if poll is not None:
        jobs.reminder_poll_seconds = poll
    jobs.start()
    return runtime, jobs


def _statuses(store: ReminderStore) -> dict[str, str]:
    return {r["text"]: r["status"] for r in store.list()}


def test_console_reminders_deliver_only_this_chats_due_reminders(bot_config, workspace, tmp_path: Path) -> None:
    import io

    store = ReminderStore(workspace)
    now = datetime.now(timezone.utc)
    store.add("console", "due", now - timedelta(minutes=1), "UTC")
    store.add("console", "later", now + timedelta(hours=1), "UTC")
    store.add(12345, "telegram's", now - timedelta(minutes=1), "UTC")
    out = io.StringIO()
    runtime, jobs = _console_jobs(bot_config, workspace, tmp_path, out)
    try:
        wait_until(lambda: _statuses(store)["due"] == "delivered", what="the due reminder printed")
    finally:
        jobs.stop(10)
        runtime.shutdown(5)
    assert out.getvalue().count("⏰ due") == 1 and "later" not in out.getvalue()
    assert _statuses(store) == {"due": "delivered", "later": "pending", "telegram's": "pending"}


def _reminders(runtime):
    """The process's reminder scheduler, once made: the router makes it on its own thread after the first channel
    joined, so it may not be there yet when the chat's start returns."""
    from messaging_llm_bot.conversation.job_router import job_router

    wait_until(lambda: job_router(runtime).reminders is not None, what="the reminder scheduler")
    return job_router(runtime).reminders


def test_a_reminder_set_outside_the_running_chat_is_printed_within_seconds(
    bot_config, workspace, tmp_path: Path
) -> None:
    """The terminal reads the reminder store every few seconds (one person waits at the prompt), not at the other
    channels' 30 s: one set meanwhile (the web page, the CLI) is printed well within 15 s. The chat's own interval
    is what its scheduler polls at; the delivery itself is shown at 0.2 s, not waited out at 5 s."""
    import io

    from messaging_llm_bot.channels.console import service as console_service
    from messaging_llm_bot.conversation import reminders as channel_reminders
    from messaging_llm_bot.conversation.job_router import job_router

    assert console_service.REMINDER_POLL_SECONDS <= 5 < channel_reminders.POLL_SECONDS  # the other channels' 30 s
    runtime, jobs = _console_jobs(bot_config, workspace, tmp_path, io.StringIO(), poll=None)
    try:  # the chat's own interval is the one its scheduler polls at
        assert _reminders(runtime).poll_seconds == console_service.REMINDER_POLL_SECONDS
    finally:
        jobs.stop(10)
        runtime.shutdown(5)
    store = ReminderStore(workspace)
    store.add("console", "first", datetime.now(timezone.utc) - timedelta(minutes=1), "UTC")
    out = io.StringIO()
    runtime, jobs = _console_jobs(bot_config, workspace, tmp_path, out, poll=0.2)
    try:
        assert _reminders(runtime).poll_seconds == 0.2
        # Due at the start: printed once the scheduler read the store; from now on only its polls see new ones.
        wait_until(lambda: _statuses(store)["first"] == "delivered", what="the reminder due at the start")
        polls = job_router(runtime).reminders.polls
        store.add("console", "set meanwhile", datetime.now(timezone.utc), "UTC")
        wait_until(lambda: _statuses(store)["set meanwhile"] == "delivered", 15, "the reminder set meanwhile")
        assert job_router(runtime).reminders.polls > polls  # found by a poll, not by a start's reading
    finally:
        jobs.stop(10)
        runtime.shutdown(5)
    assert out.getvalue().count("⏰ set meanwhile") == 1


def test_ctrl_c_stops_an_answer_and_the_chat_goes_on(tmp_path: Path, chat_server, test_skills_dir) -> None:
    """On a real terminal: the answer appears as the model writes it; Ctrl-C then stops it (the server is
    hung up on); the prompt comes back and the next message is answered; Ctrl-C twice leaves."""
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    llm = json.loads((config / "llm.json").read_text())
    (config / "llm.json").write_text(json.dumps({**llm, "stream": True}))  # as the shipped config/llm.json
    words = " ".join(f"word{i}" for i in range(400))
    chat_server.enqueue(
        {"content": '{"reply": "' + words + '"}', "chunk_delay": 0.02},
        '{"reply": "still here"}',
        {"content": '{"reply": "never finished"}', "delay": 5},
    )
    term = Terminal(
        console_argv(config, Workspace(tmp_path / "ws").root)  # an existing workspace: a new one would be asked about
    )
    try:
        term.wait_for("you> ")
        term.type("tell me a long story\r")
        # Shown as it arrives, long before the answer is complete (the line not ended yet is drawn by the prompt).
        term.wait_shown(lambda shown: any("word5 " in line for line in shown), "the answer as it arrives")
        term.type("\x03")  # Ctrl-C
        term.wait_for("⏹ Stopped.")
        mark = term.output.index("⏹ Stopped.")
        assert sum(line.count("word3 ") for line in term.lines_shown()) == 1  # not printed a second time
        term.wait_for("you> ", start=mark)
        term.type("are you there?\r")
        term.wait_for("still here", start=mark)
        term.wait_for("you> ", start=term.output.index("still here", mark))
        # The server notices the hang-up at its next write.
        wait_until(lambda: chat_server.streams_cut == 1, 10, "the streamed answer cut off")
        mark = len(term.output)
        term.type("one more\r")
        assert chat_server.wait_for_requests(3, timeout=30, path="/chat/completions")  # not the start's probe
        term.type("\x03")
        term.wait_for("Ctrl-C again", start=mark)
        term.type("\x03")
        assert term.proc.wait(30) == 0
    finally:
        term.close()
    assert "word399" not in term.output
    assert term.lines_shown().count("still here") == 1, term.lines_shown()  # streamed, then the rest of the block


def test_ctrl_c_at_a_confirmation_question_declines_it_and_stops_without_enter(
    tmp_path: Path, chat_server, test_skills_dir
) -> None:
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    (config / "policy.json").write_text(json.dumps({"capabilities": {"write": "ask"}}))
    chat_server.enqueue('{"skill": "save_note", "args": {"name": "plan", "text": "x"}}', '{"reply": "never asked for"}')
    term = Terminal(
        console_argv(config, Workspace(tmp_path / "ws").root)  # an existing workspace: a new one would be asked about
    )
    try:
        term.wait_for("you> ")
        term.type("save my plan\r")
        term.wait_for("[y/N]")
        term.type("\x03")  # Ctrl-C, no Enter
        term.wait_for("⏹ Stopped.")
        term.wait_for("you> ", start=term.output.index("⏹ Stopped."))
        term.type("\x04")
        assert term.proc.wait(30) == 0
    finally:
        term.close()
    assert not (tmp_path / "ws" / "notes" / "plan.md").exists()
    assert len(chat_server.chat_requests) == 1  # no round after the stop


def test_a_notice_left_by_the_last_run_is_printed_once_between_the_lines_at_the_next_start(
    bot_config, workspace, tmp_path: Path
) -> None:
    """A collector's notice goes through the inbox (ItemTurns.queue_notice); one a quit left unprinted is printed
    at the next start above the prompt, once, and does not hold the prompt (it is no typed message)."""
    import io
    import threading

    from assistant_framework.inbox import Inbox
    from messaging_llm_bot.channels.console.chat import run_console
    from messaging_llm_bot.conversation.item_turns import NOTICE_KEY
    from tests.console_harness import TypedLines
    from tests.telegram_harness import make_runtime

    inbox = Inbox(workspace)
    item = inbox.accept(f"{NOTICE_KEY}:left", "console", {NOTICE_KEY: True})
    assert item is not None
    inbox.record_reply(item.item_id, "📬 rss: *new* item")
    del inbox
    printed = threading.Event()

    class Typing(TypedLines):
        def readline(self) -> str:  # the owner ends the chat once the notice is on the screen
            printed.wait(20)
            return super().readline()

    class Screen(io.StringIO):
        def write(self, text: str) -> int:
            written = super().write(text)
            if "📬 rss" in self.getvalue():
                printed.set()
            return written

    out = Screen()
    runtime = make_runtime({**bot_config, "memory": {"enabled": False}}, workspace, tmp_path)
    try:
        assert run_console(runtime, Typing([]), out, io.StringIO()) == 0
    finally:
        runtime.shutdown(5)
    assert out.getvalue().count("📬 rss: new item") == 1  # its Markdown as the terminal shows it
    assert Inbox(workspace).pending() == []


def test_a_collectors_notice_is_printed_between_the_lines_once(bot_config, workspace, tmp_path: Path) -> None:
    """A collector's notice (from its thread) goes through the inbox like a reply and is printed above the prompt,
    at once; the item completed once printed."""
    import io

    from assistant_framework.inbox import Inbox

    out = io.StringIO()
    runtime, jobs = _console_jobs(bot_config, workspace, tmp_path, out)
    try:
        jobs.notify_from_thread("rss", "a *new* item")
        wait_until(lambda: "📬 rss: a *new* item" in out.getvalue(), what="the notice printed")
        wait_until(lambda: not Inbox(workspace).pending(), what="the notice's item completed")
    finally:
        jobs.stop(10)
        runtime.shutdown(5)
    assert out.getvalue().count("📬 rss") == 1


def test_the_line_history_is_private_and_keeps_the_last_thousand_lines(tmp_path: Path) -> None:
    """What was typed is the owner's alone whatever the umask (0600 before a line is written, its folder 0700), the
    file is kept to the last HISTORY_LENGTH lines at each start (prompt_toolkit's file history only grows), and the
    lines of the readline chat's file are recalled."""
    import os

    from messaging_llm_bot.channels.console.extras import HISTORY_LENGTH, History

    path = tmp_path / "ws" / "state" / "console_history"
    previous = os.umask(0o022)
    try:
        history = History(path)
        for number in range(HISTORY_LENGTH + 5):
            history.store_string(f"line {number}")
    finally:
        os.umask(previous)
    assert path.stat().st_mode & 0o077 == 0 and path.parent.stat().st_mode & 0o077 == 0
    kept = list(History(path).load_history_strings())  # the newest first
    assert len(kept) == HISTORY_LENGTH and kept[0] == f"line {HISTORY_LENGTH + 4}" and kept[-1] == "line 5"
    assert list(History(path).load_history_strings()) == kept  # what the start kept is what the file holds
    assert path.stat().st_mode & 0o077 == 0
    path.write_text("first\nsecond\n")  # the readline chat's file: a line each, the newest last
    assert list(History(path).load_history_strings()) == ["second", "first"]
    assert list(History(path).load_history_strings()) == ["second", "first"]  # kept in prompt_toolkit's form
