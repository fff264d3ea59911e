"""The terminal chat on a real pseudo-terminal, with keys that come faster than readline takes them: lines pasted
(or typed quickly) at the prompt, a line typed while the answer is written, keys typed right after Enter. While
readline reads, the terminal is in raw mode: readline takes the first line and returns, and what came with it waits
in the terminal, typed but never shown; the chat reads it itself (channels/console/extras.py: ``Keyboard``). Each
line is taken once, in order, with no further key; keys typed with no Enter yet start the next prompt's line."""

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
        """readline's prompt shown after the last ``text`` printed."""
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
    """Python's readline module turns readline's bracketed paste off: a paste comes as keys typed quickly, each line
    ended by a CR. The lines after the first, typed while readline read (raw mode: nothing echoed), are shown below
    it as the terminal shows lines typed ahead."""
    chat.term.type("one\rtwo\rthree\r")  # one write: readline, in raw mode, takes "one"; the rest waits
    chat.answered("one", "two", "three")
    chat.prompt_after("ok: three")
    shown = chat.term.lines_shown()
    assert shown[shown.index("you> one") :][:3] == ["you> one", "two", "three"], shown  # as typed ahead, once
    assert shown.count("two") == shown.count("three") == 1, shown
    chat.ends()


def test_lines_and_a_ctrl_d_typed_at_once_are_answered_then_the_chat_ends(chat: Chat) -> None:
    """The Ctrl-D came in raw mode, as a key: at a line's start it still ends the chat, after the lines before it."""
    chat.term.type("one\rtwo\r\x04")
    chat.answered("one", "two")
    chat.term.wait_for("ok: two")
    assert chat.term.proc.wait(30) == 0
    assert "Traceback" not in chat.term.output


def test_keys_typed_right_after_enter_start_the_next_prompts_line_and_ctrl_c_still_stops(chat: Chat) -> None:
    """Typed before readline gave the terminal back, "tw" waited there with no Enter: read as a line, it held the
    main thread until the next Enter (no prompt after the answer; a Ctrl-C left it in ``stdin``'s buffer). It is
    the next line's start, shown once, by readline after the prompt, and Ctrl-C stops the answer meanwhile."""
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
    assert not [line for line in chat.term.lines_shown() if line.startswith("tw")]  # shown by readline alone
    chat.ends()
    assert "two" in (chat.ws.root / "state" / "console_history").read_text().split()


def test_a_line_typed_while_the_answer_is_made_joins_it_and_one_begun_waits_for_the_prompt(
    tmp_path: Path, chat_server: FakeChatServer, test_skills_dir: Path
) -> None:
    """The default busy mode (steer; docs/conversation.md): a line sent with Enter while the answer is made is taken
    then (here begun right after the first Enter, before readline gave the terminal back), its note printed while
    the model still holds the answer, and the one reply answers both; keys typed then with no Enter are the next
    prompt's line."""
    with _started(Chat(tmp_path, chat_server, test_skills_dir, "steer")) as chat:
        chat.go.clear()  # the model holds its answers
        chat.term.type("one\rtw")
        chat.answered("one")
        mark = len(chat.term.output)
        chat.term.type("o\rthr")  # the terminal is in cooked mode: it shows both, and holds "thr"
        chat.term.wait_for("… added to the answer in progress", start=mark)
        chat.go.set()
        chat.answered("one", "two")  # the turn's next request carries it
        chat.prompt_after("ok: two")
        chat.term.wait_for("you> thr", start=chat.term.output.rindex("ok: two"))
        chat.term.type("ee\r")
        chat.answered("one", "two", "three")
        chat.prompt_after("ok: three")
        chat.ends()
