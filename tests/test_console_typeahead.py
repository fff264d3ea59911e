"""The terminal chat on a real pseudo-terminal, with keys that come faster than one line is answered: lines pasted
(or typed quickly) at the prompt, a line typed while the answer is written, keys typed right after Enter. The prompt
stays while an answer is written, and the terminal in raw mode (channels/console/extras.py): each line is taken
once, in order, with no further key, and shown where it was typed; keys typed with no Enter yet are the prompt's."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from assistant_framework.workspace import Workspace
from tests.console_harness import Terminal, write_config
from tests.fakes.chat_server import FakeChatServer
from tests.waiting import wait_until

pytest.importorskip("pty", reason="needs a POSIX pseudo-terminal")


class Chat:
    """The terminal chat at a pty, the model answering ``ok: WORD`` to a request whose last message starts with
    WORD, once ``go`` is set. ``busy_mode`` queue (the fixture's): each line its own turn, the model sees every
    line as sent."""

    def __init__(self, tmp_path: Path, chat_server: FakeChatServer, test_skills_dir: Path, busy_mode: str) -> None:
        self.seen: list[str] = []
        self.go = threading.Event()
        self.go.set()

        def answer(request: dict) -> str:
            text = request["messages"][-1]["content"]
            self.seen.append(text)
            self.go.wait(30)
            return '{"reply": "ok: ' + text.split()[0] + '"}'

        chat_server.set_handler(answer)
        config = write_config(tmp_path / "config", chat_server.base_url, test_skills_dir, busy_mode=busy_mode)
        self.ws = Workspace(tmp_path / "ws")
        argv = [sys.executable, "-m", "messaging_llm_bot", "--frontend", "console", "--config", str(config)]
        self.term = Terminal([*argv, "--workspace", str(self.ws.root)])

    def answered(self, *words: str) -> None:
        """The model was asked ``words`` (each line's first word), in this order, and no more."""
        try:
            wait_until(lambda: len(self.seen) >= len(words), 30, f"the model asked {words}")
        except AssertionError as err:
            raise AssertionError(
                f"{err}; it was asked {self.seen}; the terminal:\n{self.term.output[-2000:]}"
            ) from None
        assert [text.split()[0] for text in self.seen] == list(words), self.seen

    def prompt_after(self, text: str) -> None:
        """The prompt shown after the last ``text`` printed."""
        self.term.wait_for(text)
        self.term.wait_for("you> ", start=self.term.output.rindex(text))

    def ends(self) -> None:
        """Ctrl-D at the prompt: status 0, no traceback."""
        self.term.type("\x04")
        assert self.term.proc.wait(30) == 0
        assert "Traceback" not in self.term.output


@pytest.fixture()
def chat(tmp_path: Path, chat_server: FakeChatServer, test_skills_dir: Path) -> Iterator[Chat]:
    with _started(Chat(tmp_path, chat_server, test_skills_dir, "queue")) as typed:
        yield typed


@contextlib.contextmanager
def _started(chat: Chat) -> Iterator[Chat]:
    """The chat at its first prompt; at the end the model lets go and the chat is killed if it still runs."""
    try:
        chat.term.wait_for("you> ")
        yield chat
    finally:
        chat.go.set()
        chat.term.close()


def test_three_lines_pasted_at_the_prompt_are_each_answered_once_in_order(chat: Chat) -> None:
    """A terminal without bracketed paste sends a paste as keys typed quickly, each line ended by a CR: each line is
    shown at its prompt, once, in order."""
    chat.term.type("one\rtwo\rthree\r")  # one write: the prompt takes "one"; the rest is typed ahead
    chat.answered("one", "two", "three")
    chat.prompt_after("ok: three")
    shown = chat.term.lines_shown()
    sent = [line for line in shown if line.startswith("you> ")]  # each at its prompt (progress may come between)
    assert sent == ["you> one", "you> two", "you> three"], shown  # once, in order
    assert not [line for line in shown if line in ("one", "two", "three")], shown
    chat.ends()


def test_a_bracketed_paste_of_three_lines_is_each_line_answered_once_in_order(chat: Chat) -> None:
    """A terminal with bracketed paste (prompt_toolkit turns it on) sends the paste as one piece: its lines are sent
    at once, each its own message."""
    chat.term.type("\x1b[200~one\ntwo\nthree\n\x1b[201~")
    chat.answered("one", "two", "three")
    chat.prompt_after("ok: three")
    chat.ends()


def test_lines_and_a_ctrl_d_typed_at_once_are_answered_then_the_chat_ends(chat: Chat) -> None:
    """The Ctrl-D came in raw mode, as a key: at a line's start it still ends the chat, after the lines before it."""
    chat.term.type("one\rtwo\r\x04")
    chat.answered("one", "two")
    chat.term.wait_shown(lambda shown: "ok: two" in shown, "the answer to the last line")
    assert chat.term.proc.wait(30) == 0
    assert "Traceback" not in chat.term.output


def test_keys_typed_right_after_enter_start_the_next_prompts_line_and_ctrl_c_still_stops(chat: Chat) -> None:
    """Typed right after Enter, "tw" is the line being typed at the prompt while the answer is written; a Ctrl-C
    stops the answer, and "tw" stays the line being typed, shown once, after the prompt."""
    chat.go.clear()  # the model holds its answer
    chat.term.type("one\rtw")
    chat.answered("one")
    chat.term.type("\x03")  # Ctrl-C
    chat.prompt_after("⏹ Stopped.")
    chat.term.wait_for("you> tw", start=chat.term.output.rindex("⏹ Stopped."))
    chat.go.set()
    chat.term.type("o\r")
    chat.answered("one", "two")
    chat.prompt_after("ok: two")
    assert not [line for line in chat.term.lines_shown() if line.startswith("tw")]  # shown by the prompt alone
    chat.ends()
    assert "+two" in (chat.ws.root / "state" / "console_history").read_text().splitlines()


def test_keys_typed_while_an_answer_is_written_are_shown_as_they_are_typed(chat: Chat) -> None:
    """ "tw" typed right after Enter, "o" later, while the model holds the answer: the line is on the screen as
    typed. Under readline the first keys waited in the terminal unshown and the terminal's cooked mode showed "o"
    alone, till the next prompt."""
    chat.go.clear()  # the model holds its answer
    chat.term.type("one\rtw")
    chat.answered("one")
    chat.term.type("o")
    chat.term.wait_shown(lambda shown: "you> two" in shown, "the line typed", timeout=10)
    chat.go.set()
    chat.term.type("\r")
    chat.answered("one", "two")
    chat.prompt_after("ok: two")
    chat.ends()


def test_the_terminal_stays_raw_while_an_answer_is_written_so_a_ctrl_d_then_ends_the_chat(chat: Chat) -> None:
    """Readline's chat put the terminal in cooked mode between its reads: a Ctrl-D typed just as readline took the
    terminal back was a NUL in its line, and lost. The terminal stays in raw mode from the first prompt to the end
    of input; a Ctrl-D typed while the answer is written ends the chat once it is."""
    chat.go.clear()
    chat.term.type("one\r")
    chat.answered("one")  # the model holds the answer: the chat is writing it
    assert not chat.term.cooked()
    chat.term.type("\x04")
    chat.go.set()
    chat.term.wait_shown(lambda shown: "ok: one" in shown, "the answer")  # drawn by the prompt Ctrl-D ended
    assert chat.term.proc.wait(30) == 0
    assert "Traceback" not in chat.term.output


def test_a_line_typed_while_the_answer_is_made_joins_it_and_one_begun_waits_for_the_prompt(
    tmp_path: Path, chat_server: FakeChatServer, test_skills_dir: Path
) -> None:
    """The default busy mode (steer; docs/conversation.md): a line sent with Enter while the answer is made is taken
    then (here begun right after the first Enter), its note printed while
    the model still holds the answer, and the one reply answers both; keys typed then with no Enter are the next
    prompt's line."""
    with _started(Chat(tmp_path, chat_server, test_skills_dir, "steer")) as chat:
        chat.go.clear()  # the model holds its answers
        chat.term.type("one\rtw")
        chat.answered("one")
        mark = len(chat.term.output)
        chat.term.type("o\rthr")  # "two" sent; "thr" is the line being typed
        chat.term.wait_for("… added to the answer in progress", start=mark)
        chat.go.set()
        chat.answered("one", "two")  # the turn's next request carries it
        chat.prompt_after("ok: two")
        chat.term.wait_for("you> thr", start=chat.term.output.rindex("ok: two"))
        chat.term.type("ee\r")
        chat.answered("one", "two", "three")
        chat.prompt_after("ok: three")
        chat.ends()
