"""A fake model server whose answer to the first message of a turn waits until the test releases it (or the
client hangs up): the busy-mode tests send their second message while it holds that request."""

from __future__ import annotations

import json
import threading

from tests.fakes.chat_server import FakeChatServer


def user_texts(request: dict) -> list[str]:
    """The user messages of a request's current turn (after the last assistant message of the history)."""
    out: list[str] = []
    for message in request["messages"]:
        if message["role"] == "assistant":
            out = []
        elif message["role"] == "user":
            out.append(str(message["content"]))
    return out


def first_line(text: str) -> str:
    """A user message's own words: a channel may add lines after them (a mail's subject comes before)."""
    lines = [line for line in text.split("\n") if line.strip() and not line.startswith("(mail, subject:")]
    return lines[0] if lines else ""


class HeldModel:
    """A model whose answer to the first message waits until the test releases it (or the client hangs up)."""

    def __init__(self, server: FakeChatServer) -> None:
        self.release = threading.Event()
        self.held_answered = threading.Event()  # the held answer given (released, or after 20 s)
        server.set_handler(self.answer)

    def answer(self, request: dict) -> str:
        turn = user_texts(request)
        if len(turn) == 1 and "first" in turn[0]:
            self.release.wait(20)
            self.held_answered.set()
            return json.dumps({"reply": "answer to the first only"})
        return json.dumps({"reply": "answer to: " + " + ".join(first_line(t) for t in turn)})
