"""The terminal chat as a real subprocess: a config folder pointing at the fake model server, and a run."""

from __future__ import annotations

import codecs
import json
import os
import re
import select
import subprocess
import sys
import time
from collections.abc import Callable
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


def console_argv(config: Path, workspace: Path) -> list[str]:
    """The terminal chat as ``python -m messaging_llm_bot --frontend console`` starts it, for a pseudo-terminal."""
    return [
        sys.executable,
        "-m",
        "messaging_llm_bot",
        "--frontend",
        "console",
        "--config",
        str(config),
        "--workspace",
        str(workspace),
    ]


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


class TypedTty:
    """A terminal the test types into while the chat runs: its lines come through a pipe, so the chat sees
    when one is ready (as a terminal's line discipline shows a line after Enter)."""

    def __init__(self) -> None:
        read, write = os.pipe()
        self._in, self._out = os.fdopen(read, "r", encoding="utf-8"), os.fdopen(write, "w", encoding="utf-8")

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._in.fileno()

    def readline(self) -> str:
        return self._in.readline()

    def type(self, text: str) -> None:
        self._out.write(f"{text}\n")
        self._out.flush()

    def close(self) -> None:
        """Ctrl-D: the chat ends."""
        if not self._out.closed:
            self._out.close()

    def close_reader(self) -> None:
        """The chat's side, once it ended."""
        self._in.close()


#: An escape sequence (CSI, a character set, keypad modes); a cursor move right (``ESC [ n C``) shows as spaces.
ESCAPE = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z~])|\x1b[()][0-9A-Za-z]|\x1b[=>78]")
PARTIAL_ESCAPE = re.compile(r"\x1b(\[[0-9;?]*|[()])?$")
ROWS, COLUMNS = 24, 80


def _as_text(match: re.Match[str]) -> str:
    return " " * int(match.group(1) or 1) if match.group(2) == "C" else ""


class Terminal:
    """The bot on a pty: ``type`` keys, ``wait_for`` output. ``output`` is what was printed, escapes taken out (the
    prompt's line editor draws with them); ``screen`` what a terminal shows (pyte, a terminal emulator)."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None, cwd: Path = REPO) -> None:
        import fcntl
        import pty  # POSIX only: the tests using it skip elsewhere
        import struct
        import termios

        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        self.slave_name = os.ttyname(slave)
        env = {**{k: v for k, v in os.environ.items() if k != "TELEGRAM_BOT_TOKEN"}, "TERM": "xterm", **(env or {})}
        # A session of its own with the pty as its controlling terminal, so Ctrl-C typed there is a SIGINT to
        # it (as in a real terminal), and SIGINT handled even if the test runner ignores it.
        self.proc = preload.popen(
            argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env, close_fds=True, controlling_terminal=True
        )
        os.close(slave)
        self.output = ""
        self.raw = b""
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._held = ""  # an escape sequence cut by a read, completed by the next
        self._marks: list[tuple[int, int]] = [(0, 0)]  # (len(output), len(raw)) after each read

    def _read(self, timeout: float) -> bool:
        """Read what the terminal has within ``timeout``; False when there was nothing (or it is gone)."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return False
            self.raw += data
            text = self._held + self._decoder.decode(data)
            cut = PARTIAL_ESCAPE.search(text)
            self._held, text = (text[cut.start() :], text[: cut.start()]) if cut else ("", text)
            self.output += ESCAPE.sub(_as_text, text)
            self._marks.append((len(self.output), len(self.raw)))
            return bool(data)
        return False

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
        """The lines a terminal shows of the output from ``start`` (a length of ``output`` once read; an offset
        inside a read counts from that read's start), through a terminal emulator; empty lines at the end left out."""
        import pyte

        raw_at = max(raw for text, raw in self._marks if text <= start)
        screen = pyte.Screen(COLUMNS, 1000)
        pyte.ByteStream(screen).feed(self.raw[raw_at:])
        lines = [line.rstrip() for line in screen.display]
        while lines and not lines[-1]:
            lines.pop()
        return lines

    def wait_shown(self, check: Callable[[list[str]], bool], what: str, timeout: float = 30) -> None:
        """Wait until ``check`` holds for the lines the terminal shows."""
        deadline = time.monotonic() + timeout
        while not check(self.lines_shown()):
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} not shown; the screen:\n" + "\n".join(self.lines_shown()[-30:]))
            self._read(0.2)

    def cooked(self) -> bool:
        """The terminal is in cooked mode (its line discipline holds a line until Enter; a Ctrl-D is an end of
        input, which raw mode read later takes for a NUL)."""
        import termios

        fd = os.open(self.slave_name, os.O_RDONLY | os.O_NOCTTY)
        try:
            return bool(termios.tcgetattr(fd)[3] & termios.ICANON)
        finally:
            os.close(fd)

    def close(self) -> None:
        """End the bot (killed if it still runs), with what it printed read: ``lines_shown`` is the last screen."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        while self._read(0.1):
            pass
        os.close(self.master)
