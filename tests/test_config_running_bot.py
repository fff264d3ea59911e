"""The config as the running Telegram bot sees it: a key left out does what config/README.md gives as
its default (issue 27.3); `config set` and then /reload reach the running bot, and /reload says what
needs a restart (issue 27.7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant_framework.workspace import Workspace
from messaging_llm_bot.agent.incoming import AgentMessage
from messaging_llm_bot.conversation.commands import run_command
from messaging_llm_bot.runtime import build_runtime
from tests.cli_inprocess import run_cli
from tests.signal_harness import FRIEND, STRANGER, RunningSignal, signal_config
from tests.signal_harness import OWNER as SIGNAL_OWNER
from tests.telegram_harness import OWNER, RunningBot, pairing_off, telegram_config, texts

PROFILE_LINE = "x" * 99  # 100 characters with its newline


def _without(config: dict, section: str, key: str) -> None:
    assert key not in config.get(section, {}), f"the harness sets {section}.{key}: it is not left out"


def test_llm_stream_left_out_asks_the_model_for_a_stream(fake, start_bot, chat_server) -> None:
    start_bot(config_patch=lambda config: _without(config, "llm", "stream"))
    fake.send_message("hello")
    fake.wait_for_messages(OWNER, 1)
    assert chat_server.chat_requests[-1].get("stream") is True  # README: llm.stream true
    assert texts(fake) == ["ok"]


def test_llm_stream_false_is_a_plain_answer_in_telegram_too(fake, start_bot, chat_server) -> None:
    """llm.stream is the model call's; telegram.stream (on here) only decides whether the message shows it."""
    start_bot(config_patch=lambda config: config["llm"].update(stream=False), stream=True)
    fake.send_message("hello")
    fake.wait_for_messages(OWNER, 1)
    assert "stream" not in chat_server.chat_requests[-1]
    assert texts(fake) == ["ok"]


def test_profile_budget_left_out_puts_2000_characters_of_the_profile_in_the_prompt(
    fake, start_bot, chat_server, workspace: Workspace
) -> None:
    lines = [f"{i:02d}{PROFILE_LINE[2:]}" for i in range(30)]  # 3,000 characters, 100 a line
    workspace.write_text("profile.md", "\n".join(lines) + "\n")

    def memory_on(config: dict) -> None:
        _without(config, "runtime", "profile_budget_chars")
        config["memory"] = {"recall": {"enabled": False}, "extract_facts": False, "episodes": False}

    start_bot(config_patch=memory_on)
    fake.send_message("who am I?")
    fake.wait_for_messages(OWNER, 1)
    system = chat_server.chat_requests[-1]["messages"][0]["content"]
    shown = [line for line in lines if line in system]
    # README: runtime.profile_budget_chars 2000 -> the first 20 whole lines (1,999 characters with their
    # newlines but the last); the code read 1500 (15 lines) before issue 27.
    assert shown == lines[:20]


# -- config set, then /reload (issue 27.7) ------------------------------------------------------------------

NEWCOMER = 42


def _config_dir(config: dict, folder: Path) -> Path:
    """``config`` laid out as a config directory (one file per section), as the checkout's ``config/`` is."""
    folder.mkdir()
    for section, value in config.items():
        (folder / f"{section}.json").write_text(json.dumps(value, indent=2), encoding="utf-8")
    return folder


def _config_set(folder: Path, key: str, value: str) -> str:
    done = run_cli("config", "set", "--config", str(folder), key, value)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def dir_bot(fake, bot_config, workspace, tmp_path):
    """A Telegram bot whose config is a directory with a local/ layer (the docs' layout)."""
    config = telegram_config(bot_config, fake)
    pairing_off(config)  # the docs' path for runtime.pairing: false (pairing codes: tests/test_pairing.py)
    folder = _config_dir(config, tmp_path / "config")
    bot = RunningBot(build_runtime(folder, workspace.root))
    bot.start()
    yield bot, folder
    if bot._thread.is_alive():
        bot.stop()


def test_the_docs_path_for_a_new_user_works_without_a_restart(fake, dir_bot, chat_server) -> None:
    """docs/telegram.md: a stranger is told their id; the owner adds it with `config set` and sends /reload;
    the newcomer is served by the same running bot."""
    bot, folder = dir_bot
    fake.send_message("hello", user_id=NEWCOMER, chat_id=NEWCOMER, username="newcomer")
    refusal = fake.wait_for_messages(NEWCOMER, 1)[0]["text"]
    assert "not authorised" in refusal and str(NEWCOMER) in refusal
    assert chat_server.chat_requests == []

    said = _config_set(folder, "telegram.allowed_user_ids", f"[{OWNER}, {NEWCOMER}]")
    assert "local/telegram.json" in said and "/reload" in said and "needs a restart" not in said
    assert json.loads((folder / "local" / "telegram.json").read_text())["allowed_user_ids"] == [OWNER, NEWCOMER]

    fake.send_message("/reload")
    answer = fake.wait_for_messages(OWNER, 1)[0]["text"]
    assert answer.startswith("Reloaded config") and "Applied: telegram.allowed_user_ids" in answer, answer
    assert "restart" not in answer

    fake.send_message("hello again", user_id=NEWCOMER, chat_id=NEWCOMER, username="newcomer")
    assert fake.wait_for_messages(NEWCOMER, 2)[1]["text"] == "ok"  # served, by the bot that refused them
    assert chat_server.chat_requests[-1]["messages"][-1]["content"].startswith("hello again")


def test_reload_names_what_needs_a_restart_and_keeps_its_running_value(fake, dir_bot, chat_server) -> None:
    bot, folder = dir_bot
    said = _config_set(folder, "runtime.timezone", "Asia/Tokyo")
    assert "needs a restart" in said and "make run" in said
    _config_set(folder, "llm.max_tokens", "123")
    fake.send_message("/reload")
    answer = fake.wait_for_messages(OWNER, 1)[0]["text"]
    assert "Applied: llm.max_tokens" in answer and "Needs a restart" in answer and "runtime.timezone" in answer
    # The running bot keeps its zone everywhere (not half old, half new); the model gets the new max_tokens.
    assert bot.runtime.settings.runtime.timezone == "Europe/Berlin" == bot.runtime.agent.settings.runtime.timezone
    assert bot.runtime.config["runtime"]["timezone"] == "Europe/Berlin"
    fake.send_message("hello")
    fake.wait_for_messages(OWNER, 2)
    assert chat_server.chat_requests[-1]["max_tokens"] == 123


def test_signal_too_serves_a_new_number_after_config_set_and_reload(
    daemon, bot_config, workspace, tmp_path, chat_server
) -> None:
    """The same path on Signal: signal.allowed set with `config set`, /reload from the owner's chat."""
    config = signal_config(bot_config, daemon)
    pairing_off(config)
    folder = _config_dir(config, tmp_path / "config")
    with RunningSignal(build_runtime(folder, workspace.root)):
        daemon.wait_connected()
        daemon.message(STRANGER, "hello")
        [refusal] = daemon.wait_sent(1)
        assert STRANGER in refusal["recipient"] and "not" in refusal["message"]
        said = _config_set(folder, "signal.allowed", json.dumps([SIGNAL_OWNER, FRIEND, STRANGER]))
        assert "/reload" in said and "needs a restart" not in said
        daemon.message(SIGNAL_OWNER, "/reload")
        answer = daemon.wait_sent(2)[1]["message"]
        assert "Applied: signal.allowed" in answer and "restart" not in answer, answer
        daemon.message(STRANGER, "hello again")
        assert daemon.wait_sent(3)[2]["message"] == "ok" and STRANGER in daemon.sent[2]["recipient"]


def test_reload_applies_the_memory_section_and_memory_enabled_waits_for_a_restart(
    bot_config, workspace, tmp_path, chat_server
) -> None:
    """/reload used to skip memory.* silently: now the memory service takes the new section (here a chat
    excluded from memory is no longer logged), and memory.enabled is named as needing a restart."""
    config = dict(bot_config, memory={"extract_facts": False, "episodes": False, "profile": False})
    folder = _config_dir(config, tmp_path / "config")
    runtime = build_runtime(folder, workspace.root)
    try:
        runtime.agent.handle(AgentMessage("private-chat", "the plums are in the fridge"))
        runtime.memory.drain(10)
        assert workspace.list("conversations/private-chat/*.jsonl")
        assert "/reload" in _config_set(folder, "memory.exclude_chats", '["private-*"]')
        assert "/reload" in _config_set(folder, "memory.recall.budget_chars", "300")
        assert "needs a restart" in _config_set(folder, "memory.enabled", "false")
        answer = run_command(runtime, "console", "/reload")
        assert "Applied: `memory.exclude_chats`, `memory.recall.budget_chars`" in answer, answer
        assert "Needs a restart" in answer and "`memory.enabled`" in answer
        assert runtime.memory is not None and runtime.memory.recall_settings.budget_chars == 300
        before = {rel: workspace.read_text(rel) for rel in workspace.list("conversations/private-chat/*.jsonl")}
        runtime.agent.handle(AgentMessage("private-chat", "and the pears too"))
        runtime.memory.drain(10)
        after = {rel: workspace.read_text(rel) for rel in workspace.list("conversations/private-chat/*.jsonl")}
        assert after == before and "pears" not in json.dumps(after)  # excluded now: not logged
    finally:
        runtime.shutdown(timeout=5)
