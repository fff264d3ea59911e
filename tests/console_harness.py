"""The terminal chat as a real subprocess: a config folder pointing at the fake model server, and a run."""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

from tests import preload

REPO = Path(__file__).resolve().parent.parent
API_KEY = "sk-console-secret-123456"


def write_config(folder: Path, base_url: str, skills_dir: Path, **runtime) -> Path:
    """A config directory like config/ in the repo, pointing at the fake server."""
    folder.mkdir(parents=True, exist_ok=True)
    llm = {
        "runners": [
            {"name": "fake", "base_url": base_url, "model": "fake-model", "api_key": API_KEY, "timeout_seconds": 10}
        ],
        "max_skill_rounds": 3,
        "max_concurrency": 2,
    }
    (folder / "llm.json").write_text(json.dumps(llm))
    (folder / "runtime.json").write_text(json.dumps({"timezone": "UTC", "skills_dirs": [str(skills_dir)], **runtime}))
    (folder / "telegram.json").write_text(json.dumps({"token": ""}))
    (folder / "memory.json").write_text(json.dumps({"enabled": False}))
    return folder


#: The ways to start the bot, as the installed commands run them: ``python -m messaging_llm_bot``,
#: ``assistant run`` (``make run``, ``make chat``) and ``assistant-bot`` (the alias's entry point). The first
#: two are forked by the zygote (tests/preload.py); ``assistant-bot``'s ``-c`` is a real spawn, so
#: the entry point's own start (its imports from nothing) stays tested.
ENTRIES = {
    "python -m": ["-m", "messaging_llm_bot"],
    "assistant run": ["-m", "messaging_llm_bot.cli", "run"],
    "assistant-bot": ["-c", "from messaging_llm_bot.cli.run import run_and_exit; run_and_exit()"],
}


def run_bot(args: list[str], stdin: str, timeout: float = 60, entry: str = "python -m") -> subprocess.CompletedProcess:
    """The bot started the way ``entry`` names, with ARGS and ``stdin`` typed in; its output captured."""
    env = {k: v for k, v in os.environ.items() if k != "TELEGRAM_BOT_TOKEN"}
    return preload.run(
        [sys.executable, *ENTRIES[entry], *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env=env,
    )


class TypedLines:
    """Lines typed at a terminal, for ``run_console`` in the test's process: it claims to be a terminal (the chat
    is interactive: it asks, streams, runs jobs), and gives its lines one by one, then the end of input."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = list(lines)

    def isatty(self) -> bool:
        return True

    def readline(self) -> str:
        return self.lines.pop(0) if self.lines else ""


class Terminal:
    """The bot on a pty: ``type`` keys, ``wait_for`` output."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None, cwd: Path = REPO) -> None:
        import pty  # POSIX only: the tests using it skip elsewhere

        self.master, slave = pty.openpty()
        env = {**{k: v for k, v in os.environ.items() if k != "TELEGRAM_BOT_TOKEN"}, **(env or {})}
        env["TERM"] = "xterm"
        # A session of its own with the pty as its controlling terminal, so Ctrl-C typed there is a SIGINT to
        # it (as in a real terminal), and SIGINT handled even if the test runner ignores it.
        self.proc = preload.popen(
            argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env, close_fds=True, controlling_terminal=True
        )
        os.close(slave)
        self.output = ""

    def _read(self, timeout: float) -> None:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            try:
                self.output += os.read(self.master, 65536).decode("utf-8", "replace")
            except OSError:
                pass

    def wait_for(self, text: str, timeout: float = 30, start: int = 0) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.output[start:]:
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} did not appear; output so far:\n{self.output[-3000:]}")
            self._read(0.2)

    def wait_for_any(self, texts: tuple[str, ...], timeout: float = 30, start: int = 0) -> str:
        """The first of ``texts`` to appear (after ``start``)."""
        deadline = time.monotonic() + timeout
        while True:
            for text in texts:
                if text in self.output[start:]:
                    return text
            if time.monotonic() > deadline:
                raise AssertionError(f"none of {texts!r} appeared; output so far:\n{self.output[-3000:]}")
            self._read(0.2)

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def lines_shown(self, start: int = 0) -> list[str]:
        """The lines a terminal shows of the output after ``start``: a carriage return goes back to the line's
        start (what follows overwrites it), ``ESC [ K`` clears the rest of the line, other escapes show nothing."""
        lines, line, col = [], "", 0
        for piece in re.split(r"(\x1b\[[0-9;?]*[A-Za-z]|\r|\n)", self.output[start:]):
            if piece == "\n":
                lines.append(line)
                line, col = "", 0
            elif piece == "\r":
                col = 0
            elif piece == "\x1b[K":
                line = line[:col]
            elif not piece.startswith("\x1b"):
                line = line[:col].ljust(col) + piece + line[col + len(piece) :]
                col += len(piece)
        return [*lines, line]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        os.close(self.master)
