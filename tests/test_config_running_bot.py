"""The config as the running Telegram bot sees it: a key left out does what config/README.md gives as
its default (issue 27.3)."""

from __future__ import annotations

from assistant_framework.workspace import Workspace
from tests.telegram_harness import OWNER, texts

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
