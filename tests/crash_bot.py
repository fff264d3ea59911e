"""Run the real bot (``python -m messaging_llm_bot``) as a subprocess against fakes started by a test.

Used by the crash, shutdown and secrets tests: the bot process can be killed (SIGKILL), stopped
(SIGTERM) and restarted while FakeBotAPI and FakeChatServer keep running in the test process.
All runs append their stderr log to one file, so a test can read (and grep) everything logged.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

from tests import preload
from tests.fakes.bot_api import FakeBotAPI
from tests.waiting import for_load, wait_until

REPO = Path(__file__).resolve().parents[1]
READY_LINE = "Serving @"


def echo_reply(request: dict) -> str:
    """A deterministic model answer: ``re: <first line of the user's message>`` (protocol JSON)."""
    last = request["messages"][-1]["content"]
    text = last if isinstance(last, str) else json.dumps(last)
    return json.dumps({"reply": "re: " + text.split("\n")[0].strip()})


def write_bot_config(
    path: Path,
    base: dict,
    fake: FakeBotAPI,
    *,
    allowed: list[int] | None = None,
    telegram: dict | None = None,
    runtime: dict | None = None,
    extra: dict | None = None,
) -> Path:
    """Write a JSON config for the subprocess: ``base`` (conftest bot_config) pointed at ``fake``."""
    config = copy.deepcopy(base)
    config["telegram"] = {
        "token": fake.token,
        "allowed_user_ids": allowed or [1],
        "base_url": fake.base_url,
        "base_file_url": fake.base_file_url,
        "stream": False,
        "progress": False,
        **(telegram or {}),
    }
    config["runtime"] = {**config.get("runtime", {}), "log_level": "INFO", **(runtime or {})}
    config.setdefault("memory", {"enabled": False})
    for key, value in (extra or {}).items():
        config[key] = value
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


class BotProcess:
    """One bot subprocess at a time on a fixed config and workspace; ``start`` again after a kill."""

    def __init__(
        self,
        config: Path,
        workspace: Path,
        log_path: Path,
        env: dict | None = None,
        preexec_fn: Callable[[], None] | None = None,
    ) -> None:
        """``preexec_fn`` runs in the child before the bot starts (e.g. to lower its open-file limit)."""
        self.config, self.workspace, self.log_path = config, workspace, log_path
        self.preexec_fn = preexec_fn
        self.env = {k: v for k, v in os.environ.items() if k != "TELEGRAM_BOT_TOKEN"}
        self.env.update(env or {})
        self.proc: subprocess.Popen | None = None
        self._log_offset = 0

    def start(self) -> "BotProcess":
        """Start the bot; its stderr is appended to ``log_path``."""
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            # Forked by the worker's zygote (tests/preload.py); a real spawn with a ``preexec_fn``.
            self.proc = preload.popen(
                [
                    sys.executable,
                    "-m",
                    "messaging_llm_bot",
                    "--config",
                    str(self.config),
                    "--workspace",
                    str(self.workspace),
                ],
                cwd=REPO,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                preexec_fn=self.preexec_fn,
            )
        return self

    def run_log(self) -> str:
        """What the current run logged so far."""
        with open(self.log_path, "rb") as log:
            log.seek(self._log_offset)
            return log.read().decode("utf-8", "replace")

    def log_text(self) -> str:
        """Everything every run logged."""
        return self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""

    def wait_ready(self, timeout: float | None = None) -> None:
        """Wait until the current run logs ``Serving @...`` (start-up done, replay begun); by default 30 s, more
        on a loaded machine (the start is real work: the whole run at load 20 failed two tests at 30 s)."""
        timeout = for_load(30) if timeout is None else timeout

        def ready() -> bool:
            if READY_LINE in self.run_log():
                return True
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError(
                    f"bot exited with {self.proc and self.proc.returncode} before it was ready:\n"
                    f"{self.run_log()[-3000:]}"
                )
            return False

        try:
            wait_until(ready, timeout=timeout, what="the bot's ready line")
        except AssertionError:
            raise TimeoutError(f"bot not ready within {timeout:.0f}s:\n{self.run_log()[-3000:]}") from None

    def kill(self) -> None:
        """SIGKILL: no clean-up of any kind runs."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def terminate(self, timeout: float = 30) -> int:
        """SIGTERM and wait for the exit code."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def wait(self, timeout: float = 30) -> int:
        """Wait for the process to exit on its own."""
        assert self.proc is not None
        return self.proc.wait(timeout)

    def stop_quietly(self) -> None:
        """Test teardown: make sure no bot outlives the test."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def __enter__(self) -> "BotProcess":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop_quietly()


def sent_texts(fake: FakeBotAPI, chat_id: int) -> list[str]:
    """Texts of every successful sendMessage to ``chat_id``, in order (a repeated send shows twice)."""
    return [
        c["params"].get("text", "")
        for c in fake.calls("sendMessage")
        if c["status"] == 200 and int(c["params"].get("chat_id", 0)) == chat_id
    ]
