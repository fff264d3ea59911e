"""Shared fixtures for the Telegram end-to-end tests: the real bot (TelegramService) polling in a background
thread against FakeBotAPI and FakeChatServer."""

from __future__ import annotations

import copy
import json
import threading
import time
from pathlib import Path
from typing import Any

from assistant_framework.workspace import Workspace
from tests.fakes.bot_api import FakeBotAPI
from tests.waiting import REMINDER_POLL_SECONDS

OWNER = 1
STRANGER = 666


def telegram_config(base: dict, fake: FakeBotAPI, **overrides: Any) -> dict:
    """``base`` (the conftest bot_config) plus a telegram section pointing at ``fake``."""
    config = copy.deepcopy(base)
    config["telegram"] = {
        "token": fake.token,
        "allowed_user_ids": [OWNER],
        "base_url": fake.base_url,
        "base_file_url": fake.base_file_url,
        "stream": False,
        "progress": True,
        **overrides,
    }
    # Memory recall is tested by its own suite; here it would only add model calls to script.
    config.setdefault("memory", {"enabled": False})
    return config


def pairing_off(config: dict) -> None:
    """A config patch: strangers are told their id instead of given a pairing code (``runtime.pairing: false``)."""
    config.setdefault("runtime", {})["pairing"] = False


def busy_queue(config: dict) -> None:
    """A config patch: every message is its own turn, in order (``runtime.busy_mode: queue``), for tests of
    per-message answers that send bursts (busy modes: tests/test_busy_modes.py)."""
    config.setdefault("runtime", {})["busy_mode"] = "queue"


def make_runtime(config: dict, workspace: Workspace, tmp_path: Path) -> Any:
    """The project's BotRuntime built from a config file, as ``python -m messaging_llm_bot`` does."""
    from messaging_llm_bot.runtime import build_runtime

    path = tmp_path / f"config-{id(config)}.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return build_runtime(path, workspace.root)


class RunningBot:
    """A TelegramService running in a thread; use as a context manager."""

    def __init__(self, runtime: Any, poll_timeout: int = 1) -> None:
        # Imported here: xdist's controller loads this harness (conftest's pytest_plugins) and runs no bot; the
        # bot and python-telegram-bot cost it a third of a second before it starts the workers.
        from messaging_llm_bot.channels.telegram.bot import TelegramService

        self.runtime = runtime
        self.service: TelegramService = TelegramService(
            runtime, stop_signals=None, poll_timeout=poll_timeout, reminder_poll_seconds=REMINDER_POLL_SECONDS
        )
        self.exit_code: int | None = None
        self._thread = threading.Thread(target=self._run, name="telegram-bot-under-test", daemon=True)

    def _run(self) -> None:
        self.exit_code = self.service.run()

    def start(self, wait_ready: bool = True) -> "RunningBot":
        self._thread.start()
        if wait_ready:
            # Ready = polling and its deferred start (plugins, reminders, digest, background) done,
            # or the bot already stopped (a test of a refused start).
            deadline = time.monotonic() + 15
            while not self.service.started.wait(0.02):
                if not self._thread.is_alive():
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"telegram bot did not become ready (exit code {self.exit_code})")
        return self

    def stop(self, timeout: float = 15) -> int | None:
        self.service.stop()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise TimeoutError("telegram bot thread did not stop")
        return self.exit_code

    def join(self, timeout: float = 15) -> int | None:
        self._thread.join(timeout)
        return self.exit_code

    def __enter__(self) -> "RunningBot":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self._thread.is_alive():
            self.stop()


def texts(fake: FakeBotAPI, chat_id: int = OWNER) -> list[str]:
    """The current texts of the bot's live messages in a chat."""
    return [m.get("text", "") for m in fake.messages(chat_id)]


def all_bot_texts(fake: FakeBotAPI) -> list[str]:
    """Every text the bot ever sent or edited in (so nothing shown even briefly is missed)."""
    out = []
    for call in fake.calls():
        if call["method"] in ("sendMessage", "editMessageText") and isinstance(call["params"].get("text"), str):
            out.append(call["params"]["text"])
    return out


def snapshot(workspace: Workspace) -> dict[str, float | None]:
    """Every workspace file with its mtime (to prove nothing was read-written by a refused user)."""
    return {rel: workspace.mtime(rel) for rel in workspace.list("**/*")}


#: A delete the default policy asks the owner about.
DELETE = '{"skill": "file", "args": {"action": "delete", "path": "notes/important.md"}}'


def approval_question(fake: FakeBotAPI) -> tuple[dict, list[str]]:
    """The bot's confirmation message (a long question's last part: the one with the buttons) and the callback data
    of its buttons."""

    def find():
        for call in fake.calls("sendMessage"):
            markup = call["params"].get("reply_markup")
            if markup and "approve:" in json.dumps(markup):
                return call
        return None

    call = fake.wait_for(find, timeout=10)
    markup = call["params"]["reply_markup"]
    markup = json.loads(markup) if isinstance(markup, str) else markup
    buttons = [b["callback_data"] for row in markup["inline_keyboard"] for b in row]
    message = next(m for m in fake.messages(OWNER) if "approve:" in json.dumps(m.get("reply_markup")))
    return message, buttons


def pending_question(fake: FakeBotAPI) -> dict | None:
    """The Confirm/Decline message sent to the owner, or None (does not wait)."""
    return next((m for m in fake.messages(OWNER) if m.get("text", "").startswith("Confirm this action?")), None)


def decline(fake: FakeBotAPI, question: dict) -> None:
    """The owner presses Decline on ``question``; returns once the bot took the press (see ``press``)."""
    press(fake, question, "no")


def press(fake: FakeBotAPI, question: dict, choice: str) -> None:
    """The owner presses the button of ``question`` whose data ends in ``:choice`` (yes, no, chat), then waits
    until the bot took the press: the question's message no longer asks (it says what was chosen, or that
    it expired). The reply of the turn may arrive before that edit, so a test that looks for the next
    question right after the reply could take this one, still unedited, for it."""
    markup = question["reply_markup"]
    buttons = [b["callback_data"] for row in markup["inline_keyboard"] for b in row]
    chat = question["chat"]["id"]
    fake.callback_query(chat, next(b for b in buttons if b.endswith(f":{choice}")), question["message_id"])

    def answered() -> bool:
        now = next((m for m in fake.messages(chat) if m["message_id"] == question["message_id"]), None)
        return now is None or now.get("text") != question.get("text")  # (a long question's last part: not "Confirm…")

    fake.wait_for(answered, timeout=20)


# -- fixtures (every test module has them: pytest_plugins in conftest.py) -----------------------

import pytest  # noqa: E402 - fixtures are an appendix to the helpers above


@pytest.fixture
def fake():
    """A started FakeBotAPI."""
    with FakeBotAPI() as api:
        yield api


@pytest.fixture
def short_send_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """A send that failed on the network is tried again after 10 ms, 20 ms, 40 ms instead of 0.25 s, 0.5 s, 1 s
    (channels/telegram/send.py), for tests that fail every try of a send on purpose; the default's doubling is
    test_reliability_faults.py's test_telegram_5xx_while_sending_is_retried."""
    from messaging_llm_bot.channels.telegram import send

    monkeypatch.setattr(send, "BACKOFF_BASE_SECONDS", 0.01)


@pytest.fixture
def start_bot(fake, bot_config, workspace, tmp_path):
    """Factory: ``start_bot(**telegram_overrides)`` runs a bot; all are stopped after the test."""
    running: list[RunningBot] = []

    def start(config_patch=None, wait_ready: bool = True, **overrides) -> RunningBot:
        config = telegram_config(bot_config, fake, **overrides)
        if config_patch:
            config_patch(config)
        bot = RunningBot(make_runtime(config, workspace, tmp_path))
        running.append(bot)
        return bot.start(wait_ready=wait_ready)

    yield start
    for bot in running:
        if bot._thread.is_alive():
            bot.stop()
