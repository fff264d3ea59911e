"""The interactive terminal chat's comforts: line editing and history (readline), the answer printed as it
streams (``LiveReply``), the chat's own messages printed between the user's lines (``Screen``: job replies,
reminders, notices, questions; console/service.py).

The terminal is in cooked mode (the line discipline holds a line until Enter, Ctrl-D is an end of input) except
while readline reads a line: it switches the terminal to raw mode then, and the switch turns a Ctrl-D typed before
it, still waiting in cooked mode, into a NUL that readline takes for Ctrl-Space: the Ctrl-D would be lost. So a
prompt is shown only by the read itself (readline's, or the plain reader's), never ahead of it (``Screen.reading``),
and what was typed in cooked mode and can be read before readline starts (a Ctrl-D, a whole line) is read as typed
(``line_reader``). What readline left in the terminal when it returned at an Enter (lines pasted or typed quickly,
keys typed right after the Enter) is read by the chat from the terminal's descriptor (``Keyboard``), each line once,
in order; keys with no Enter yet start the next prompt's line.

At readline's prompt a text is printed by the main thread, woken for it (``Screen.wake``), between two keys: from
another thread it could land between readline taking a key and showing it, and wipe the line's start from view
(readline's buffer, what ``typed`` tells, would be ahead of the screen)."""

from __future__ import annotations

import codecs
import collections
import importlib
import logging
import os
import select
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TextIO

from assistant_framework.workspace.private import make_private_dirs, private_file

log = logging.getLogger(__name__)

HISTORY_FILE = "state/console_history"
HISTORY_LENGTH = 1000
READ_BYTES = 65536  # at most this much of what waits in the terminal at one read
CTRL_D = "\x04"
PROMPT = "you> "
CLEAR_LINE = "\r\x1b[K"  # back to the line's start and clear it: the prompt is printed again below the text
#: How often a text waiting for an empty prompt wakes the main thread again: a wake-up that comes while readline
#: handles a key is taken only at the next interruption of its wait.
WAKE_SECONDS = 0.05

#: Read one line ("" at the end of input), calling the callable once the terminal is read with the prompt shown.
ReadLine = Callable[[Callable[[], None]], str]


class LiveReply:
    """The answer printed as it streams in (interactive terminal, ``llm.stream`` on); ``rest(block)``
    is what of the final reply block is still to print."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.shown = ""

    def delta(self, text: str) -> None:
        """Print what ``text`` (the visible answer so far) adds to what is shown."""
        # A later round starts its answer afresh: it goes on a new line rather than being glued on.
        piece = text[len(self.shown) :] if text.startswith(self.shown) else "\n" + text
        self.shown = text
        if piece:
            self.out.write(piece)
            self.out.flush()

    def rest(self, block: str) -> str:
        """The part of the reply block not shown yet (all of it when nothing was streamed)."""
        shown = self.shown.rstrip()  # the final reply is stripped; a space already printed does no harm
        if not shown:
            return block
        return block[len(shown) :] if block.startswith(shown) else "\n" + block


class Keyboard:
    """The lines typed at the chat. At a terminal (``interactive``) the chat reads them from its file descriptor
    itself, into lines of its own, never through ``stdin``'s buffer: readline reads the terminal in raw mode a key
    at a time and returns at the first Enter, and what came with that Enter (lines pasted or typed quickly, keys
    typed right after it) waits in the terminal, not shown; back in cooked mode it reads as one piece with no
    newline ("two\\rthree\\r", "tw"). Through ``stdin``'s buffer such a piece held the main thread until the
    next Enter, and the lines read with it sat in the buffer, where neither ``select`` nor readline sees them. An
    Enter is "\\r" in raw mode, "\\n" in cooked mode; keys with no Enter yet wait for the rest of their line, or
    start the next prompt's line (``begun``). Scripted, or with no file descriptor, lines are ``stdin``'s."""

    def __init__(self, stdin: TextIO, interactive: bool) -> None:
        self.stdin = stdin
        self.interactive = interactive
        self.encoding = _tolerate_bad_bytes(stdin)
        self._fd = _descriptor(stdin) if interactive else None
        self._decoder = codecs.getincrementaldecoder(self.encoding)("surrogateescape")
        self._lines: collections.deque[str] = collections.deque()  # whole lines, "\\n" ended
        self._begun = ""  # keys read with no Enter yet
        self._ended = False

    def ready(self) -> bool:
        """True when a whole line (or the end of input) can be taken without waiting; False where that cannot be
        known (no file descriptor)."""
        if not (self._lines or self._ended) and self._fd is not None and _readable(self._fd):
            self._read(self._fd)
        return bool(self._lines) or self._ended

    def readline(self) -> str:
        """The next line with its "\\n" ("" at the end of input), waiting for it."""
        if self._fd is None:
            return _clean(self.stdin.readline(), self.encoding)
        while not (self._lines or self._ended):
            self._read(self._fd)
        return self._lines.popleft() if self._lines else ""

    def left_by_readline(self, echo: TextIO) -> None:
        """Right after readline returned at an Enter: what came with it (it waits in the terminal, typed in raw mode
        and so never shown) is read, its whole lines shown on ``echo`` as the terminal shows lines typed ahead."""
        if self._fd is not None and _readable(self._fd):
            self._read(self._fd, echo)

    def begun(self) -> str:
        """The keys read with no Enter yet, taken: the start of the line the next prompt reads."""
        begun, self._begun = self._begun, ""
        return begun

    def _read(self, fd: int, echo: TextIO | None = None) -> None:
        """What the terminal has (waiting for it), into whole lines (shown on ``echo`` if given) and keys begun;
        nothing is the end of input."""
        try:
            data = os.read(fd, READ_BYTES)
        except OSError:
            data = b""  # the terminal is gone: as Ctrl-D
        text = self._decoder.decode(data, final=not data).replace("\r\n", "\n").replace("\r", "\n")
        *lines, begun = (self._begun + text).split("\n")
        if not data:  # the end of input: keys begun are a last line
            lines, begun, self._ended = [*lines, begun] if begun else lines, "", True
        # A Ctrl-D read here came in raw mode (in cooked mode it is the end of input, never a key): at a line's start
        # it ends the input, as it does to readline, and what follows is not read; elsewhere it deletes nothing.
        pieces = [*lines, begun]
        end = next((at for at, piece in enumerate(pieces) if piece.startswith(CTRL_D)), None)
        if end is not None:
            lines, begun, self._ended = pieces[:end], "", True
        taken = [_clean(line.replace(CTRL_D, "") + "\n", self.encoding) for line in lines]
        self._lines.extend(taken)
        self._begun = begun.replace(CTRL_D, "")
        if echo is not None and taken:  # keys begun are shown by readline at the next prompt
            echo.write("".join(taken))
            echo.flush()


def _descriptor(stdin: TextIO) -> int | None:
    try:
        return stdin.fileno()
    except (AttributeError, OSError, ValueError):
        return None


def _readable(fd: int) -> bool:
    try:
        ready, _, _ = select.select([fd], [], [], 0)
    except (OSError, ValueError):
        return False
    return bool(ready)


def line_reader(keyboard: Keyboard, stdout: TextIO, history: Path | None) -> tuple[ReadLine, Callable[[], None]]:
    """(read one line, or "" at EOF; save the history). With a real terminal, ``input()`` under
    readline gives arrow-key editing and Up/Down history, kept in ``history`` across runs."""
    readline = _readline(keyboard.stdin, stdout, keyboard.interactive)
    if readline is None:

        def read_plain(reading: Callable[[], None]) -> str:
            begun = keyboard.begun()
            if keyboard.interactive:
                print(PROMPT + begun, end="", file=stdout, flush=True)
            reading()
            return begun + keyboard.readline()

        return read_plain, lambda: None
    if history is not None:
        try:
            readline.read_history_file(str(history))
        except OSError:
            pass  # no history yet
    readline.set_history_length(HISTORY_LENGTH)

    def read_line(reading: Callable[[], None]) -> str:
        return _clean(_read_edited(readline, keyboard, reading, stdout), keyboard.encoding)

    def save() -> None:
        if history is None:
            return
        try:
            make_private_dirs(history.parent)
            private_file(history)  # what was typed is private: 0600 before readline writes it
            readline.write_history_file(str(history))
        except OSError as err:
            log.warning("console: could not save the line history: %s", err)

    return read_line, save


def _read_edited(readline: ModuleType, keyboard: Keyboard, reading: Callable[[], None], echo: TextIO) -> str:
    """One line read through readline ("" at the end of input); ``reading`` is called once the prompt is shown
    and the terminal in raw mode. What can be read before (a Ctrl-D, a whole line typed in cooked mode, or pasted
    with the last line) is read as it was typed: readline's switch to raw mode would make a NUL of that Ctrl-D.
    Keys typed with no Enter yet start readline's line; what came with its Enter is shown on ``echo``."""
    if keyboard.ready():
        line = keyboard.readline()
        if line.strip():
            readline.add_history(line.rstrip("\n"))  # Up recalls it as it recalls a line readline read
        return line
    begun = keyboard.begun()
    if begun:
        readline.set_startup_hook(lambda: readline.insert_text(begun))
    hook: Callable[..., None] | None = getattr(readline, "set_pre_input_hook", None)  # not in every build
    if hook is None:
        reading()  # a moment early: a text may come with a prompt of its own just before readline's
    else:
        hook(reading)  # readline calls it after its prompt, the terminal in raw mode, before the first key
    try:
        line = input(PROMPT)
    except EOFError:
        return ""
    finally:
        if hook is not None:
            hook()
        if begun:
            readline.set_startup_hook()
    keyboard.left_by_readline(echo)
    return line + "\n"


def _readline(stdin: TextIO, stdout: TextIO, interactive: bool) -> ModuleType | None:
    """The readline module when the chat is on the real terminal (importing it is what makes input()
    editable); None for piped input or a Python built without it."""
    if not (interactive and stdin is sys.stdin and stdout is sys.stdout):
        return None
    try:
        return importlib.import_module("readline")
    except ImportError:  # pragma: no cover - Python built without readline (e.g. Windows)
        return None


def typed_so_far(stdin: TextIO, stdout: TextIO, interactive: bool) -> Callable[[], str] | None:
    """What the user has typed at the prompt so far (readline's line buffer) when ``line_reader`` reads
    through readline; None when that cannot be known."""
    readline = sys.modules.get("readline")
    if readline is None or not (interactive and stdin is sys.stdin and stdout is sys.stdout):
        return None
    buffer: Callable[[], str] = readline.get_line_buffer
    return buffer


def _tolerate_bad_bytes(stdin: TextIO) -> str:
    """Let ``stdin`` pass bytes its encoding cannot decode (as lone surrogates) instead of raising
    UnicodeDecodeError, which ended the chat; returns the encoding to clean lines with."""
    encoding = getattr(stdin, "encoding", None) or "utf-8"
    if getattr(stdin, "errors", "strict") not in ("surrogateescape", "replace"):
        try:
            stdin.reconfigure(errors="surrogateescape")  # type: ignore[attr-defined]
        except (AttributeError, ValueError, OSError):
            pass  # not a TextIOWrapper: its lines are cleaned below all the same
    return encoding


def _clean(line: str, encoding: str) -> str:
    """``line`` with undecodable bytes (lone surrogates) as U+FFFD: such text cannot be stored or sent."""
    try:
        line.encode("utf-8")
        return line
    except UnicodeEncodeError:
        pass
    try:
        return line.encode(encoding, "surrogateescape").decode(encoding, "replace")
    except (LookupError, UnicodeError):
        return line.encode("utf-8", "replace").decode("utf-8")


class _Waiting:
    """A text waiting for the next gap between prompts; ``printed`` is set as it is printed. ``shown`` is what
    ``show`` returns: ``printed`` may be a question's event, which the main thread clears as soon as it reads the
    answer, before the thread that showed the question has looked."""

    def __init__(self, text: str, printed: threading.Event | None = None) -> None:
        self.text = text
        self.printed = printed or threading.Event()
        self.shown = False
        self.done = threading.Event()


class Screen:
    """Prints the terminal chat's own messages (reminders, job replies; plain text) between the user's
    lines: at once at an empty prompt, else right before the next prompt. ``typed`` tells what the user
    has typed at the prompt so far (readline's line buffer; None: unknown, taken as nothing). ``wake``: has the main
    thread call ``print_at_prompt`` (a signal to it, chat.py); None: a text is printed by the thread showing it.

    The main thread says where it is: ``before_prompt`` (about to read a line), ``reading`` (the prompt is
    shown and the terminal read), ``after_prompt`` (a line was read; an answer is written). Between the first
    two the terminal is not read yet: nothing is printed then, so no prompt is seen before the read (a Ctrl-D
    typed at a prompt printed ahead of readline was lost)."""

    def __init__(
        self, out: TextIO, typed: Callable[[], str] | None = None, wake: Callable[[], None] | None = None
    ) -> None:
        self.out = out
        self.typed = typed
        self.wake = wake
        self._lock = threading.Lock()
        self._waiting: list[_Waiting] = []
        self._prompting = False  # from before_prompt to after_prompt: a question waits for the prompt
        self._at_prompt = False  # from reading to after_prompt: a text is printed at once at an empty prompt
        self._closed = False

    def show(self, text: str, printed: threading.Event | None = None) -> bool:
        """Print ``text`` as a block of its own; waits until it is printed (``printed`` set as it is). False when
        the chat ended first."""
        waiting = _Waiting(text, printed)
        with self._lock:
            if self._closed:
                return False
            if self.wake is None and self._at_prompt and not self._typing():
                self.out.write(f"{CLEAR_LINE}{_block(text)}{PROMPT}")
                self.out.flush()
                waiting.printed.set()
                return True
            self._waiting.append(waiting)
        while not waiting.done.is_set():
            self._wake_at_empty_prompt()
            waiting.done.wait(WAKE_SECONDS if self.wake is not None else None)
        return waiting.shown

    def _wake_at_empty_prompt(self) -> None:
        """Wake the main thread if it sits at an empty prompt (it looks again itself before it prints)."""
        with self._lock:
            ready = self.wake is not None and self._at_prompt and not self._closed and not self._typing()
        if ready and self.wake is not None:
            self.wake()

    def print_at_prompt(self) -> None:
        """On the main thread, woken at the prompt (``wake``): print what waits if nothing is typed. It runs
        between readline's keys, so readline's line buffer is what the screen shows."""
        if not self._lock.acquire(blocking=False):
            return  # held (this thread was interrupted in it, or another holds it a moment): woken again
        try:
            if self._at_prompt and not self._closed and not self._typing():
                self._print_waiting(PROMPT)
        finally:
            self._lock.release()

    def ask(self, question: str, asked: threading.Event) -> bool:
        """Print a question the owner answers by the next line (``asked`` set as it is printed): at once while an
        answer is written (the answer typed after it), else as ``show`` prints (answered at the prompt). False
        when the chat ended first."""
        with self._lock:
            if not (self._prompting or self._closed):
                self.out.write(f"\n{question} ")
                self.out.flush()
                asked.set()
                return True
        return self.show(question, asked)

    def _typing(self) -> bool:
        try:
            return bool(self.typed is not None and self.typed())
        except Exception:  # noqa: BLE001 - readline gone: take it that something is typed, and wait
            return True

    def before_prompt(self) -> None:
        """The main thread is about to read a line: print what waits; texts coming until ``reading`` wait."""
        with self._lock:
            self._print_waiting("")
            self._prompting = True

    def reading(self) -> None:
        """The prompt is shown and the terminal read (readline's pre-input hook, nothing typed yet): texts that
        came since ``before_prompt`` are printed above the prompt, and from now on at once at an empty prompt."""
        with self._lock:
            self._print_waiting(PROMPT)
            self._at_prompt = True

    def after_prompt(self) -> None:
        """A line was read (or the input ended): texts wait for the next prompt."""
        with self._lock:
            self._prompting = self._at_prompt = False

    def _print_waiting(self, prompt: str) -> None:
        """Print the texts waiting (the prompt shown on the line below them again, if any), under the lock."""
        waiting, self._waiting = self._waiting, []
        if waiting:
            self.out.write((CLEAR_LINE if prompt else "") + "".join(_block(one.text) for one in waiting) + prompt)
            self.out.flush()
        for one in waiting:
            one.shown = True
            one.printed.set()
            one.done.set()

    @property
    def closed(self) -> bool:
        """True once the chat has ended."""
        return self._closed

    def close(self) -> None:
        """The chat ends: nothing more is printed; waiting texts are left unprinted (``show`` says False)."""
        with self._lock:
            self._closed = True
            waiting, self._waiting = self._waiting, []
        for one in waiting:
            one.done.set()


def _block(text: str) -> str:
    """A block as the chat prints a reply: the text, then an empty line."""
    return text.rstrip("\n") + "\n\n"
