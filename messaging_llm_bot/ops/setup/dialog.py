"""What the wizard's own steps share (``Step``); how setup talks is the channels' ``Dialog`` (ops/channels/setup.py),
so a channel's steps and these ask and say the same way."""

from __future__ import annotations

from collections.abc import Callable

from messaging_llm_bot.ops.channels.setup import Dialog, SetupError
from messaging_llm_bot.ops.setup.answers import Answers, Current

__all__ = ["Dialog", "SetupError", "Step"]


class Step:
    """What every step shares: the flags, where it talks, what the config holds, and the settings to write
    (one list for the whole run: each step appends what it decided)."""

    def __init__(self, answers: Answers, dialog: Dialog, current: Current, settings: list[tuple[str, object]]) -> None:
        self.a = answers
        self.io = dialog
        self.current = current
        self.settings = settings

    def _ask(self, question: str, default: str = "") -> str:
        return self.io.answer(question, default)

    def _ask_until(self, question: str, default: str, problem: Callable[[str], str | None]) -> str:
        return self.io.answer_until(question, default, problem)
