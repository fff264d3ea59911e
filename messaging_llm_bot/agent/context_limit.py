"""A turn that outgrows the model's context: what is cut before asking again, and what the user is told.

The server refuses a request as too long (``LLMError.kind == "context_length"``). A turn then
asks again, at most once after each cut: first with its history cut to half, then with the
results of earlier skill rounds cut short. When neither helps, or the user's own message is
most of the request, the user gets a sentence saying what will help.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from assistant_framework.tokens import estimate_tokens
from messaging_llm_bot.agent.history import trim_history
from messaging_llm_bot.agent.images import content_text
from messaging_llm_bot.agent.native import shrink_earlier_results
from messaging_llm_bot.llm.client import LLMError
from messaging_llm_bot.llm.wire import Message

log = logging.getLogger(__name__)


def message_is_most_of(text: str, messages: list[Message]) -> bool:
    """True when the user's own text makes up at least half of a request's characters."""
    return len(text) * 2 >= sum(len(content_text(m.get("content"))) for m in messages)


def message_too_long_reply(err: LLMError, text: str) -> str:
    """The sentence for a message that alone does not fit the model's context."""
    where = f" on '{err.runner}'" if err.runner else ""
    return (
        f"Your message is too long for the model{where} (about {estimate_tokens(text):,} tokens). "
        "Please send it shorter or in parts, or send the text as a file and ask about it."
    )


def failure_reply(err: LLMError, text: str, messages: list[Message]) -> str:
    """What the user reads when a model call failed for good."""
    if err.kind == "context_length" and message_is_most_of(text, messages):
        # Cutting the history cannot help and /reset would not either: say what will.
        return message_too_long_reply(err, text)
    return err.user_message()


class ContextCuts:
    """The cuts one turn may still make to fit the model's context (each at most once)."""

    def __init__(self, conversation_id: str, budget: int, measure: Callable[[Message], int]) -> None:
        self.conversation_id = conversation_id
        self.budget, self.measure = budget, measure
        self.history_cut = self.results_cut = False

    def cut_history(self, err: LLMError, history: list[Message]) -> list[Message] | None:
        """The history cut to half of what was sent, when this error asks for it and it was not cut yet."""
        if err.kind != "context_length" or self.history_cut or not history:
            return None
        self.history_cut = True
        size = sum(self.measure(m) for m in history)
        history = trim_history(history, min(self.budget, size) // 2, low_water=1.0, measure=self.measure)
        log.info(
            "context too long for conversation %r; retrying with history cut to %d messages",
            self.conversation_id,
            len(history),
        )
        return history

    def cut_results(self, err: LLMError, turn_messages: list[Message], native_turn: list[Message]) -> bool:
        """Cut earlier rounds' skill results short (in both message forms); True when the request should go again."""
        if err.kind != "context_length" or self.results_cut:
            return False
        if not shrink_earlier_results(turn_messages, native_turn):
            return False
        # Several rounds of skill results (up to the result limit each) outgrew a small context.
        self.results_cut = True
        log.info("context too long for conversation %r; retrying with earlier skill results cut", self.conversation_id)
        return True
