"""The ``assistant`` command run inside the test process: ``main(argv)`` with its output captured.

A fresh Python process costs about 0.4 s of interpreter start and imports on an idle machine (several
seconds on a loaded one); a test that checks what a command says, writes or exits with does not need one.
Where the process boundary is the point (exit codes seen by a shell, signals, locks held by another
process, start-up), the tests still start the real command.

``run_cli`` answers like a finished process (``returncode``, ``stdout``, ``stderr``): ``main``'s return
value, or the code of a ``SystemExit`` (argparse's usage errors exit 2). ``sys.argv[0]`` is the installed
command for the call, as when a user runs it; ``env`` and ``cwd`` apply for the call and are restored.

Logging is as in a fresh process too: the root logger without pytest's handlers, at WARNING, so a warning
the command or a library logs reaches the captured stderr (Python's last-resort handler, or the handler a
command's ``basicConfig`` adds) as the user would see it; a test that scans the output for a secret sees
what the log would have shown.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
ASSISTANT = str(ROOT / ".venv" / "bin" / "assistant")


@dataclass(frozen=True)
class CliRun:
    """What one command did: its exit status and everything it printed."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str


@contextlib.contextmanager
def _environment(env: dict[str, str] | None, cwd: Path | str | None) -> Iterator[None]:
    saved_env = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_argv = list(sys.argv)
    try:
        # A process whose output is a pipe formats help for 80 columns unless COLUMNS says otherwise; in
        # this process argparse would ask the terminal pytest runs in.
        os.environ.setdefault("COLUMNS", "80")
        if env:
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
        sys.argv[:] = saved_argv


@contextlib.contextmanager
def _fresh_logging() -> Iterator[None]:
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    root.handlers = []
    root.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for handler in root.handlers:  # what the command added (basicConfig): on the captured stream
            handler.close()
        root.handlers = saved_handlers
        root.setLevel(saved_level)


def run_cli(*argv: str, env: dict[str, str] | None = None, cwd: Path | str | None = None) -> CliRun:
    """``assistant <argv>`` in this process; its exit status and output."""
    from messaging_llm_bot.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with _environment(env, cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _fresh_logging():
        sys.argv[:] = [ASSISTANT, *argv]
        try:
            code = main(list(argv))
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
            if isinstance(exit_.code, str):
                print(exit_.code, file=sys.stderr)
    return CliRun([ASSISTANT, *argv], int(code or 0), out.getvalue(), err.getvalue())


#: The libraries whose log level the bot's start sets (cli/run.py's setup_logging): put back after a call.
_QUIETED = ("httpx", "httpcore", "urllib3", "telegram")


@contextlib.contextmanager
def _process_state() -> Iterator[None]:
    """The umask and the library log levels the bot's start sets for its whole process, put back after."""
    levels = {name: logging.getLogger(name).level for name in _QUIETED}
    umask = os.umask(0o022)
    os.umask(umask)
    try:
        yield
    finally:
        os.umask(umask)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def run_bot_start(*argv: str, env: dict[str, str] | None = None, cwd: Path | str | None = None) -> CliRun:
    """``python -m messaging_llm_bot <argv>`` in this process, for a start that ends before the bot runs (a
    config error, a missing token): its exit status and output. A start that goes on would serve here."""
    from messaging_llm_bot.cli.run import main

    out, err = io.StringIO(), io.StringIO()
    with (
        _environment(env, cwd),
        _process_state(),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        _fresh_logging(),
    ):
        os.environ.pop("TELEGRAM_BOT_TOKEN", None)  # as tests/console_harness.py's run_bot: the config's token
        sys.argv[:] = [sys.executable, "-m", "messaging_llm_bot", *argv]
        code = main(list(argv))
    return CliRun([sys.executable, "-m", "messaging_llm_bot", *argv], code, out.getvalue(), err.getvalue())
