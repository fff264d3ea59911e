"""The terminal chat on a real pseudo-terminal, with something happening in the gap between two prompts
(tests/console_window.py holds the chat there, so the race is an order): a notice printed then, a Ctrl-D or a line
typed then. The terminal stays in raw mode in that gap (a Ctrl-D typed in cooked mode became a NUL once readline
switched to raw mode, and was lost): what was typed there is read by the next prompt, as typed
(channels/console/extras.py)."""

from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

import pytest

from assistant_framework.workspace import Workspace
from tests.console_harness import Terminal, write_config
from tests.console_held_print import HELD as HELD_PRINTING
from tests.console_held_print import MARK
from tests.console_window import HELD, NOTICE
from tests.fakes.chat_server import FakeChatServer
from tests.waiting import wait_until

pytest.importorskip("pty", reason="needs a POSIX pseudo-terminal")


class Gap:
    """The terminal chat at a pty, held in the gap after its first line sent ("hello", answered "ok!") until
    ``go``."""

    def __init__(self, tmp_path: Path, chat_server: FakeChatServer, test_skills_dir: Path) -> None:
        self.seen: list[str] = []
        chat_server.set_handler(
            lambda request: (self.seen.append(request["messages"][-1]["content"]), '{"reply": "ok!"}')[1]
        )
        config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
        self.pipe = tmp_path / "go"
        os.mkfifo(self.pipe)
        self.ws = Workspace(tmp_path / "ws")
        argv = [sys.executable, "-m", "tests.console_window", str(self.pipe), "--frontend", "console"]
        self.term = Terminal([*argv, "--config", str(config), "--workspace", str(self.ws.root)])

    def held(self) -> int:
        """Send "hello", wait until the chat is held in the gap after it and the reply is printed; where the output
        is then. The terminal is in raw mode there: no key typed is a line discipline's."""
        self.term.wait_for("you> ")
        self.term.type("hello\r")
        self.term.wait_for("ok!")
        self.term.wait_for(HELD + "\r\n")
        assert not self.term.cooked()
        return len(self.term.output)

    def go(self, word: str = "go") -> None:
        """Let the chat go on to read the terminal (``readable``: once what was typed can be read there)."""
        _write_to(self.pipe, word)

    def ends(self) -> None:
        """The chat ends by itself: status 0, no traceback."""
        assert self.term.proc.wait(30) == 0
        assert "Traceback" not in self.term.output


def _write_to(pipe: Path, word: str) -> None:
    """Write a line into the named pipe the held chat reads, once it has opened it."""
    fd: list[int] = []

    def opened() -> bool:
        try:
            fd.append(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
        except OSError as err:
            if err.errno != errno.ENXIO:  # ENXIO: the chat has not opened its end yet
                raise
        return bool(fd)

    wait_until(opened, 30, "the chat held")
    os.write(fd[0], f"{word}\n".encode())
    os.close(fd[0])


@pytest.fixture()
def gap(tmp_path: Path, chat_server: FakeChatServer, test_skills_dir: Path):
    held = Gap(tmp_path, chat_server, test_skills_dir)
    yield held
    held.term.close()


def test_ctrl_d_typed_in_the_gap_while_a_notice_comes_ends_the_chat(gap: Gap) -> None:
    """A Ctrl-D typed in the gap, before a prompt reads: in cooked mode it became a NUL in readline's line and the
    chat went on."""
    gap.held()
    gap.term.type("\x04")  # Ctrl-D while the terminal is in cooked mode, not read yet
    gap.go("readable")
    gap.ends()
    assert gap.term.output.count(NOTICE) <= 1


def test_ctrl_d_at_the_prompt_shown_after_a_notice_from_the_gap_ends_the_chat(gap: Gap) -> None:
    """The notice that came in the gap is printed there, once; a Ctrl-D typed at the first prompt after it ends the
    chat."""
    gap.held()
    gap.go()
    gap.term.wait_for(NOTICE)
    gap.term.wait_for("you> ", start=gap.term.output.index(NOTICE))
    gap.term.type("\x04")
    gap.ends()
    assert gap.term.output.count(NOTICE) == 1


def test_a_line_begun_in_the_gap_while_a_notice_comes_arrives_and_is_shown_whole(gap: Gap) -> None:
    mark = gap.held()
    gap.term.type("wor")  # begun before a prompt reads: the terminal holds it, the prompt shows it
    gap.go()
    gap.term.wait_shown(lambda shown: shown[-1] == "you> wor", "the line begun at the prompt")
    gap.term.type("ld\r")
    gap.term.wait_for("ok!", start=gap.term.output.index("wor", mark))
    gap.term.wait_for("you> ", start=gap.term.output.rindex("ok!"))
    gap.term.type("\x04")
    gap.ends()
    assert gap.seen[1].startswith("world"), gap.seen
    shown = gap.term.lines_shown()
    assert NOTICE in shown and "you> world" in shown, shown  # one prompt, the whole line after it
    assert shown.index(NOTICE) < shown.index("you> world")
    assert not [line for line in shown if "wor" in line and line != "you> world"], shown


def test_a_whole_line_typed_in_the_gap_is_answered_and_kept_in_the_history(gap: Gap) -> None:
    mark = gap.held()
    gap.term.type("typed early\r")
    gap.go("readable")
    gap.term.wait_for("typed early", start=mark)  # shown by the prompt that read it
    gap.term.wait_for("ok!", start=gap.term.output.index("typed early", mark))
    gap.term.wait_shown(lambda shown: "you> typed early" in shown, "the line at its prompt")
    gap.term.wait_for("you> ", start=gap.term.output.rindex("ok!"))
    gap.term.type("\x04")
    gap.ends()
    assert gap.seen[1].startswith("typed early"), gap.seen
    assert gap.term.output.count(NOTICE) == 1
    assert "+typed early" in (gap.ws.root / "state" / "console_history").read_text().splitlines()


def test_the_terminal_stays_raw_while_a_text_is_printed_above_the_prompt(
    tmp_path: Path, chat_server: FakeChatServer, test_skills_dir: Path
) -> None:
    """prompt_toolkit switches the terminal to cooked mode to print another thread's text above the prompt
    (``run_in_terminal``): a Ctrl-D typed then would become a NUL once raw mode is back, and be lost. The chat keeps
    raw mode (channels/console/extras.py's ``_StaysRaw``); tests/console_held_print.py holds it mid-print."""
    chat_server.set_handler(lambda request: '{"reply": "' + MARK + '"}')
    config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir)
    pipe = tmp_path / "go"
    os.mkfifo(pipe)
    argv = [sys.executable, "-m", "tests.console_held_print", str(pipe), "--frontend", "console", "--config"]
    term = Terminal([*argv, str(config), "--workspace", str(Workspace(tmp_path / "ws").root)])
    try:
        term.wait_for("you> ")
        term.type("hello\r")
        term.wait_for(HELD_PRINTING)  # the reply being printed above the prompt
        assert not term.cooked()
        term.type("\x04")  # Ctrl-D, typed as the reply is printed
        _write_to(pipe, "go")
        term.wait_for(MARK)
        assert term.proc.wait(30) == 0
    finally:
        term.close()
    assert "Traceback" not in term.output
