"""The terminal chat's line editing, history and printing above the line being typed, prompt_toolkit's
(``PromptLines``; how it behaves: docs/telegram.md's "The terminal chat"); a plain line reader for a chat not on a
terminal of its own (``PlainLines``: pipes, tests)."""

from __future__ import annotations

import collections
import contextlib
import io
import os
import select
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO, cast

from prompt_toolkit import Application, PromptSession
from prompt_toolkit.history import FileHistory
from prompt_toolkit.input.vt100 import Vt100Input
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from prompt_toolkit.output.vt100 import Vt100_Output
from prompt_toolkit.patch_stdout import StdoutProxy
from prompt_toolkit.utils import get_cwidth, is_dumb_terminal

from assistant_framework.workspace.private import make_private_dirs, private_file

HISTORY_FILE = "state/console_history"
HISTORY_LENGTH = 1000
PROMPT = "you> "
STOPPING = "… stopping (Ctrl-C again to leave the chat)"


class PlainLines:
    """``stdin``'s lines (no terminal of the process's own). Interactive, the prompt is printed before a line read
    between answers; while an answer is written a line is read only if its descriptor shows one waiting."""

    def __init__(self, stdin: TextIO, stdout: TextIO, interactive: bool) -> None:
        self.stdin, self.stdout, self.interactive = stdin, stdout, interactive
        with contextlib.suppress(AttributeError, ValueError, OSError):  # a bad byte is U+FFFD, not the chat's end
            stdin.reconfigure(errors="replace")  # type: ignore[attr-defined]

    def ready(self, busy: bool) -> bool:
        if not busy:
            return True
        try:
            return bool(self.interactive and select.select([self.stdin.fileno()], [], [], 0)[0])
        except (AttributeError, OSError, ValueError):
            return False  # no descriptor: such a line waits for the answer

    def clear(self) -> None:
        """Nothing to forget: the terminal's line discipline dropped the line typed at the Ctrl-C."""

    def stop_line(self) -> str:
        """The line said at a Ctrl-C that stops an answer: on a line of its own, below the ``^C`` the terminal shows."""
        return "\n" + STOPPING

    def read(self, busy: bool) -> str:
        if self.interactive and not busy:
            print(PROMPT, end="", file=self.stdout, flush=True)
        return self.stdin.readline()


class PromptLines:
    """The lines typed at the terminal, through prompt_toolkit's prompt (``session``). A paste (bracketed) of
    whole lines is sent at once, each line its own message, in order."""

    def __init__(self, session: PromptSession[str], raw: contextlib.ExitStack, out: _LineEnds) -> None:
        self.session, self.raw, self.out = session, raw, out
        self._lines: collections.deque[str] = collections.deque()
        self._begun = ""
        self._busy = False

    def ready(self, busy: bool) -> bool:
        return True  # the prompt is always there

    def read(self, busy: bool) -> str:
        if not self._lines:
            begun, self._begun = self._begun, ""
            self._busy, self.session.app.erase_when_done = busy, False
            try:
                text = self.session.prompt(self.out.prompt, default=begun)
            except KeyboardInterrupt:  # it stops an answer: what was typed stays for the next prompt (or ``clear``)
                self._begun = self.session.default_buffer.text
                raise
            except EOFError:  # Ctrl-D: the terminal back in cooked mode, a Ctrl-C while the answer ends is SIGINT
                self.raw.close()
                return ""
            # A byte the terminal's UTF-8 cannot decode came as a lone surrogate: U+FFFD, as such text cannot be stored.
            self._lines.extend(text.encode("utf-8", "surrogateescape").decode("utf-8", "replace").split("\n"))
        return self._lines.popleft() + "\n"

    def clear(self) -> None:
        """Forget the line typed when Ctrl-C came (at the prompt it clears the line, as in a shell)."""
        self._begun = ""

    def stop_line(self) -> str:
        """The line said at a Ctrl-C that stops an answer: the prompt is gone (``interrupt``), so it comes right
        below the last line shown (an empty line stood between them), ending the streamed line begun first."""
        return ("\n" if self.out.begun else "") + STOPPING

    def interrupt(self, event: KeyPressEvent) -> None:
        """Ctrl-C (prompt_toolkit's own binding, but for one thing): while an answer is written the prompt is erased
        as it ends, not left on the screen as an empty ``you>`` line above "… stopping"; what was typed comes back
        in the next prompt."""
        event.app.erase_when_done = self._busy
        event.app.exit(exception=KeyboardInterrupt(), style="class:aborting")


#: The lines typed at the chat, one at a time ("" at the end of input): ``ready(busy)`` when one can be read now
#: (``busy``: an answer is being written), ``read(busy)`` it with its "\n" (KeyboardInterrupt at a Ctrl-C).
Lines = PlainLines | PromptLines


class _LineEnds(io.TextIOBase):
    """What the chat prints at its terminal: whole lines through prompt_toolkit's stdout proxy (above the prompt),
    the line not ended yet (an answer streaming) drawn by the prompt, on the line above its own (``begun``).
    Printed, it would leave the cursor mid-line, where the prompt's drawing and its cursor moves would start: the
    next erasing of the prompt wiped the line's start from view."""

    def __init__(self, out: TextIO, app: Application[str]) -> None:
        self.out, self.app, self.begun = out, app, ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            done, end, self.begun = (self.begun + text).rpartition("\n")
            if end:
                self.out.write(done + end)
        self.app.invalidate()
        return len(text)

    def flush(self) -> None:
        self.out.flush()

    def prompt(self) -> str:
        """The prompt's text; once a line is read (drawn as it stays), without the line begun: drawn above the
        next prompt, or printed once ended. The line begun is cut into rows of the terminal's width: the prompt
        does not wrap it, so a streamed answer stood still at the screen's right edge until its line ended."""
        if not self.begun or self.app.is_done:
            return PROMPT
        return f"{in_rows(self.begun, self.app.output.get_size().columns)}\n{PROMPT}"


def in_rows(text: str, width: int) -> str:
    """``text`` (one line) cut into rows of at most ``width`` terminal columns (a wide character takes two), as the
    terminal wraps a printed line."""
    rows: list[str] = []
    row: list[str] = []
    used = 0
    for char in text:
        columns = get_cwidth(char)
        if used + columns > width and row:
            rows.append("".join(row))
            row, used = [], 0
        row.append(char)
        used += columns
    rows.append("".join(row))
    return "\n".join(rows)


class _StaysRaw(Vt100Input):
    """prompt_toolkit's terminal input, kept in raw mode while other threads' text is printed above the prompt
    (``run_in_terminal`` switches to cooked mode for it): raw mode still ends printed lines with CR LF."""

    def cooked_mode(self) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()


class History(FileHistory):
    """Up/Down's lines across runs, kept as prompt_toolkit keeps them: private (what was typed), and the last
    HISTORY_LENGTH lines of them kept at each start (those of the readline chat's file too)."""

    def __init__(self, path: Path) -> None:
        make_private_dirs(path.parent)
        private_file(path)  # 0600 before a line is written to it
        super().__init__(str(path))
        text = path.read_text(errors="replace")
        from_readline = bool(text) and not text.startswith("\n# ")  # the readline chat's file: a line each
        lines = text.splitlines()[::-1] if from_readline else list(self.load_history_strings())  # the newest first
        if from_readline or len(lines) > HISTORY_LENGTH:
            path.write_text("")
            for line in reversed(lines[:HISTORY_LENGTH]):
                self.store_string(line)


def _paste(event: KeyPressEvent) -> None:
    """A bracketed paste: inserted as typed; one ending with a line end is sent at once (each line answered)."""
    text = event.data.replace("\r\n", "\n").replace("\r", "\n")
    event.current_buffer.insert_text(text)
    if text.endswith("\n"):
        event.current_buffer.validate_and_handle()


@contextlib.contextmanager
def open_lines(stdin: TextIO, stdout: TextIO, interactive: bool, history: Path) -> Iterator[tuple[Lines, TextIO]]:
    """(the lines typed, where to print). On the process's own terminal (its stdin and stdout), prompt_toolkit's
    prompt with ``history``, printing through its stdout proxy (above the prompt; no cursor position requests: a
    terminal that does not answer them made it wait and warn); anywhere else ``stdin``'s lines and ``stdout``."""
    # A dumb terminal (an editor's shell) edits the line itself and shows no cursor moves: the plain reader.
    if not (interactive and stdin is sys.stdin and stdout is sys.stdout and stdout.isatty()) or is_dumb_terminal():
        yield PlainLines(stdin, stdout, interactive), stdout
        return
    output = Vt100_Output.from_pty(stdout, term=os.environ.get("TERM"))
    output.enable_cpr = False
    keys = KeyBindings()
    keys.add(Keys.BracketedPaste)(_paste)
    session = PromptSession[str](history=History(history), input=_StaysRaw(stdin), output=output, key_bindings=keys)
    # prompt_toolkit's patch_stdout, its writes not gathered for 0.2 s: a text printed before a line was sent would
    # come below it.
    proxy = cast(TextIO, StdoutProxy(sleep_between_writes=0, raw=True))
    with contextlib.ExitStack() as raw, proxy, contextlib.redirect_stdout(proxy), contextlib.redirect_stderr(proxy):
        # Raw mode from the first prompt to the end of input: a Ctrl-D typed in cooked mode (between two prompts)
        # would become a NUL once raw mode is back, and be lost.
        raw.enter_context(session.input.raw_mode())
        out = _LineEnds(proxy, session.app)
        lines = PromptLines(session, raw, out)
        keys.add(Keys.ControlC)(lines.interrupt)
        keys.add(Keys.SIGINT)(lines.interrupt)
        yield lines, cast(TextIO, out)
