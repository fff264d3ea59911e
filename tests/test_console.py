"""The entry point and the terminal chat, run as real subprocesses against the fake model server."""

from __future__ import annotations

import json
import os
import sys

import pytest

from messaging_llm_bot.agent.incoming import AgentMessage
from messaging_llm_bot.conversation.commands import (
    help_text,
    run_command,
    skill_text,
    skills_text,
    why_text,
)
from messaging_llm_bot.conversation.markup import unescape_markdown
from messaging_llm_bot.conversation.usage_text import format_stats
from messaging_llm_bot.runtime import build_runtime
from tests import preload
from tests.cli_inprocess import run_bot_start, run_cli
from tests.console_harness import API_KEY, ENTRIES, REPO, TypedLines, console_argv, run_bot, write_config


@pytest.mark.parametrize("entry", ["python -m", "assistant run"])
def test_console_scripted_through_stdin(tmp_path, chat_server, test_skills_dir, entry):
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    workspace = tmp_path / "ws"
    chat_server.enqueue(
        '{"skill": "save_note", "args": {"name": "milk", "text": "oat milk"}}',
        '{"reply": "Noted: oat milk."}',
        "Hello there!\nSecond line.",
    )
    stdin = "remember oat milk\n\n/skills\nhi\n/skill add\n/nonsense\n/why\n"
    proc = run_bot(
        ["--frontend", "console", "--config", str(config), "--workspace", str(workspace)], stdin, entry=entry
    )
    assert proc.returncode == 0, proc.stderr
    blocks = proc.stdout.split("\n\n")
    assert blocks[0] == "Noted: oat milk."
    assert blocks[1] == "(saved to notes/milk.md)"  # part of the same reply block, after its blank line
    assert blocks[2].startswith("Skills:") and "- save_note — Save a note" in blocks[2]
    rest = proc.stdout.split("Details: /skill NAME\n\n", 1)[1]
    assert rest.startswith("Hello there!\nSecond line.\n\n")
    assert "add\n\nTest skill add." in rest
    assert "Unknown command /nonsense. /help lists what I understand." in rest
    assert "No memories were recalled" in rest
    assert (workspace / "notes" / "milk.md").read_text() == "oat milk"
    assert len(chat_server.chat_requests) == 3
    assert API_KEY not in proc.stderr
    traces = list((workspace / "traces").rglob("*.json"))
    assert len(traces) == 2 and all(API_KEY not in p.read_text() for p in traces)


@pytest.mark.parametrize("entry", ENTRIES)
def test_no_token_without_terminal_exits_2(tmp_path, chat_server, test_skills_dir, entry):
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    proc = run_bot(["--config", str(config), "--workspace", str(tmp_path / "ws")], "hello\n", entry=entry)
    assert proc.returncode == 2
    assert (
        "No Telegram bot token is configured" in proc.stderr
        and "make setup" in proc.stderr
        and "make chat" in proc.stderr
    )
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert chat_server.chat_requests == []


def test_assistant_run_help_says_how_to_start_the_bot():
    """``assistant run --help``: the options of ``python -m messaging_llm_bot`` and the commands to start with."""
    proc = run_cli("run", "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: assistant run [-h] [--config CONFIG] [--workspace WORKSPACE]")
    from messaging_llm_bot.conversation.routes import channel_names

    # --frontend takes every channel of the registry (conversation/routes.py), the terminal chat among them
    assert "console" in channel_names() and "telegram" in channel_names()
    assert "{" + ",".join(channel_names()) + "}" in proc.stdout and "every enabled chat frontend" in proc.stdout
    assert ".venv/bin/assistant run --frontend console" in proc.stdout and "make setup" in proc.stdout
    listed = run_cli("--help")
    assert "    run       start the bot" in listed.stdout


def test_config_error_is_one_clear_line(tmp_path, chat_server, test_skills_dir):
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    (config / "llm.json").write_text('{"runners": [{"name": "x", "base_url": "ftp://nope", "model": "m"}]}')
    proc = run_bot_start("--frontend", "console", "--config", str(config), "--workspace", str(tmp_path / "ws"))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "llm.json" in proc.stderr and "runners[0].base_url" in proc.stderr


def test_a_config_without_a_model_server_names_the_file_and_what_to_add(tmp_path):
    """An empty config folder (or one without llm.runners): validate says so; the bot refuses with the file."""
    (tmp_path / "config").mkdir()
    proc = run_bot_start(
        "--frontend", "console", "--config", str(tmp_path / "config"), "--workspace", str(tmp_path / "ws")
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{tmp_path / 'config' / 'llm.json'}: llm.runners: no model server is configured" in proc.stderr
    assert "make setup" in proc.stderr
    validate = run_cli("config", "validate", "--config", str(tmp_path / "config"), cwd=REPO)
    assert validate.returncode == 0 and "note: no llm.runners" in validate.stdout


def test_bad_timezone_is_a_config_error(tmp_path, chat_server, test_skills_dir):
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir, timezone="Mars/Olympus")
    proc = run_bot_start("--frontend", "console", "--config", str(config), "--workspace", str(tmp_path / "ws"))
    assert proc.returncode == 2 and "Mars/Olympus" in proc.stderr and "Traceback" not in proc.stderr


def test_runtime_commands_reload_and_status(tmp_path, chat_server, test_skills_dir):
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    runtime = build_runtime(config, tmp_path / "ws")
    try:
        status = runtime.status_text()
        assert status.startswith("Model: OK") and "save_note" in status and "Collectors" in status
        chat_server.enqueue("first")
        runtime.agent.handle(AgentMessage("console", "hi"))
        assert "2 messages" in run_command(runtime, "console", "/reset")
        assert run_command(runtime, "console", "just text") is None
        # An invalid config is refused and the running one kept.
        (config / "runtime.json").write_text('{"timezone": 5}')
        error = run_command(runtime, "console", "/reload")
        assert error.startswith("Reload refused") and "timezone" in error
        assert runtime.config["runtime"]["timezone"] == "UTC"
        # A valid change is applied: a new base prompt reaches the model.
        (config / "runtime.json").write_text(
            json.dumps({"timezone": "UTC", "skills_dirs": [str(test_skills_dir)], "base_prompt": "You are Reloaded."})
        )
        answer = run_command(runtime, "console", "/reload")
        assert (
            answer.startswith("Reloaded config, skills and collectors.\nApplied: ")
            and "`runtime.base_prompt`" in answer
        )
        chat_server.enqueue("second")
        runtime.agent.handle(AgentMessage("console", "hi again"))
        assert chat_server.chat_requests[-1]["messages"][0]["content"].startswith("You are Reloaded.")
        assert "Usage, last 30 days" in run_command(runtime, "console", "/stats")
    finally:
        runtime.shutdown(timeout=5)
    chat_server.stop()
    runtime = build_runtime(config, tmp_path / "ws")
    try:
        assert runtime.status_text().startswith("Model: PROBLEM") and "not reachable" in runtime.status_text()
    finally:
        runtime.shutdown(timeout=5)


def test_the_terminal_shows_the_reply_as_every_frontend_builds_it(tmp_path, chat_server, test_skills_dir):
    import io

    from assistant_framework.media.files_out import FileSender
    from messaging_llm_bot.agent.turn import reply_text
    from messaging_llm_bot.channels.console.chat import run_console

    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir, reply_footer=True)
    runtime = build_runtime(config, tmp_path / "ws")
    try:
        chat_server.enqueue('{"reply": "Hi."}', '{"reply": "Hi."}')
        out = io.StringIO()
        assert run_console(runtime, io.StringIO("hello\n"), out, io.StringIO()) == 0
        shown = out.getvalue().removesuffix("\n\n")
        assert shown.startswith("Hi.\n\n_— ") and shown.endswith("_") and " 1 round · " in shown
        # A chat that takes files, as the terminal does: the same tools offered (send_file), the same prompt.
        files = FileSender(runtime.workspace, "other", lambda one: "shown", 1 << 40)
        again = runtime.agent.handle(AgentMessage("other", "hello", send_file=files))
        assert reply_text(again).split(" · ")[:3] == shown.split(" · ")[:3]  # the same text, but for the time
    finally:
        runtime.shutdown(5)


def test_command_texts(bot_config, workspace):
    from assistant_framework.skills import SkillManager

    skills = SkillManager.from_config(bot_config, workspace)
    assert "/reset" in help_text(["a"], with_now=False) and "/now" not in help_text(["a"], with_now=False)
    assert "/now" in help_text([], with_now=True)
    assert "- add — Add two integers" in skills_text(skills)
    assert "Did you mean: add" in skill_text(skills, "ad")
    assert skill_text(skills, "").startswith("Usage")
    # Markdown for the chat frontends, with the recalled text escaped; the terminal shows it unescaped.
    assert unescape_markdown(why_text([{"ref": "notes/milk.md", "score": 0.5, "text": "oat\nmilk"}])) == (
        "Recalled for my last reply:\n- notes/milk.md (0.50): oat milk"
    )
    assert format_stats({"total": {"turns": 0}}) == "No model usage recorded in the last 30 days."


def test_runtime_with_memory_background_and_shutdown(tmp_path, chat_server, test_skills_dir):
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    (config / "memory.json").write_text(json.dumps({"enabled": True}))
    runtime = build_runtime(config, tmp_path / "ws")
    try:
        assert runtime.memory is not None and runtime.agent.memory is runtime.memory
        runtime.start_background(notify=lambda title, text: None)
        assert runtime.collector_runner is not None
        chat_server.enqueue("hello back")
        result = runtime.agent.handle(AgentMessage("console", "hello"))
        assert result.ok
        assert runtime.workspace.list("conversations/console/*.jsonl")
    finally:
        runtime.shutdown(timeout=5)


@pytest.mark.parametrize("answer, kept", [("y\n", False), ("n\n", True)])
def test_terminal_owner_confirms_or_declines_a_delete(tmp_path, chat_server, test_skills_dir, answer, kept):
    import io

    from messaging_llm_bot.channels.console.chat import run_console

    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    runtime = build_runtime(config, tmp_path / "ws")
    runtime.workspace.write_text("notes/old.md", "old")
    chat_server.enqueue(
        '{"skill": "file", "args": {"action": "delete", "path": "notes/old.md"}}', '{"reply": "Handled."}'
    )
    out = io.StringIO()
    try:
        assert run_console(runtime, TypedLines(["delete notes/old.md\n", answer]), out, io.StringIO()) == 0
    finally:
        runtime.shutdown(5)
    assert "Confirm this action?" in out.getvalue() and "skill: file" in out.getvalue()
    assert runtime.workspace.exists("notes/old.md") is kept
    assert "Handled." in out.getvalue()


def test_piped_console_refuses_ask_calls(tmp_path, chat_server, test_skills_dir):
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    ws = tmp_path / "ws"
    (ws / "notes").mkdir(parents=True)
    (ws / "notes" / "old.md").write_text("old")
    chat_server.enqueue(
        '{"skill": "file", "args": {"action": "delete", "path": "notes/old.md"}}', '{"reply": "Not done."}'
    )
    import io

    from messaging_llm_bot.channels.console.chat import run_console

    runtime = build_runtime(config, ws)
    try:  # piped: the line source is no terminal (io.StringIO.isatty() is False), as a shell's pipe
        assert run_console(runtime, io.StringIO("delete notes/old.md\n"), io.StringIO(), io.StringIO()) == 0
    finally:
        runtime.shutdown(5)
    assert (ws / "notes" / "old.md").exists()
    assert "cannot give" in chat_server.chat_requests[-1]["messages"][-1]["content"]


def test_log_lines_fold_library_tracebacks_to_their_cause():
    import logging

    from messaging_llm_bot.cli.run import OneLineRedactingFormatter

    try:
        raise ConnectionError("Name or service not known for token 123:SECRET")
    except ConnectionError:
        exc_info = sys.exc_info()
    formatter = OneLineRedactingFormatter(["123:SECRET"])
    library = logging.LogRecord("telegram.ext", logging.ERROR, __file__, 1, "Network Retry Loop failed", None, exc_info)
    line = formatter.format(library)
    assert "Traceback" not in line and "\n" not in line
    assert line.endswith("Network Retry Loop failed (ConnectionError: Name or service not known for token ***)")
    ours = logging.LogRecord("messaging_llm_bot.agent.loop", logging.ERROR, __file__, 1, "turn failed", None, exc_info)
    assert "Traceback" in formatter.format(ours)  # our own errors keep the frames, on one line


def test_console_survives_input_that_is_not_utf8(tmp_path, chat_server, test_skills_dir):
    """A Latin-1 line in a UTF-8 terminal chat: the bad byte becomes U+FFFD, the chat goes on (no traceback)."""
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    chat_server.set_handler(lambda req: json.dumps({"reply": f"reply {len(chat_server.chat_requests)}"}))
    env = {k: v for k, v in os.environ.items() if k != "TELEGRAM_BOT_TOKEN"}
    proc = preload.run(
        console_argv(config, tmp_path / "ws"),
        input=b"caf\xe9 au lait\nhello\n",
        capture_output=True,
        timeout=60,
        cwd=REPO,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert b"Traceback" not in proc.stderr
    assert proc.stdout.decode() == "reply 1\n\nreply 2\n\n"
    asked = [r["messages"][-1]["content"] for r in chat_server.chat_requests]
    assert asked[0].startswith("caf\ufffd au lait") and asked[1].startswith("hello")


def test_live_reply_prints_only_what_is_new_and_then_the_rest_of_the_block():
    import io

    from messaging_llm_bot.conversation.appended import LiveReply

    out = io.StringIO()
    live = LiveReply(out)
    for text in ("Hel", "Hello wor", "Hello world "):
        live.delta(text)
    assert out.getvalue() == "Hello world "
    assert live.rest("Hello world\n— 12 in · 3 out") == "\n— 12 in · 3 out"  # the footer, not the text again
    assert LiveReply(io.StringIO()).rest("not streamed") == "not streamed"
    live.delta("A second round")  # a later round answers afresh: on a new line, not glued on
    assert out.getvalue() == "Hello world \nA second round"
    assert live.rest("Something else entirely") == "\nSomething else entirely"
