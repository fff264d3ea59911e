"""What one model call costs: its tokens as the server reported them, or estimated before it is sent
(``call_estimate``: its prompt plus the bound of its answer), priced with the runner's ``price``."""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from assistant_framework.config.settings import LLMSettings, RunnerSettings
from assistant_framework.tokens import estimate_tokens

#: Tokens a chat template adds around each message (its role markers), in a call's estimate.
MESSAGE_TOKENS = 4
#: Tokens of one picture in a call's estimate: a photo is downscaled to ``llm.image_max_side`` (1,568 px) and
#: vision models take from ~256 (Gemma 3) through ~765 (OpenAI's tiles) to ~1,600-3,300 (w·h/750) tokens for it.
IMAGE_TOKENS = 1600
#: The answer's bound in a call's estimate when the request sets none: the default of ``llm.max_tokens``
#: (a request without a bound may answer longer, and then passes a cap by the rest).
DEFAULT_ANSWER_TOKENS = cast(int, LLMSettings().max_tokens)  # the field's default is a number


@dataclass(frozen=True)
class CallTokens:
    """The tokens of one call: as the server reported them (None: not reported), or estimated."""

    prompt: int | None = None
    completion: int | None = None
    cached: int | None = None

    @property
    def reported(self) -> bool:
        return self.prompt is not None or self.completion is not None

    @property
    def total(self) -> int:
        return (self.prompt or 0) + (self.completion or 0)


def call_cost(tokens: CallTokens, runner: RunnerSettings) -> float:
    """The price of one call's tokens on ``runner`` (0 without a price)."""
    price = runner.price
    prompt = tokens.prompt or 0
    cached = min(tokens.cached or 0, prompt)
    cached_price = price.input_per_mtok if price.cached_input_per_mtok is None else price.cached_input_per_mtok
    return (
        (prompt - cached) * price.input_per_mtok
        + cached * cached_price
        + (tokens.completion or 0) * price.output_per_mtok
    ) / 1_000_000


#: Texts up to this long have their estimate remembered (``_short_text_tokens``); a longer one is counted each time
#: (its counting costs little beside what it is: a document, a long answer).
MEMO_CHARS = 2000

#: ``estimate_tokens`` of the history's texts, remembered: a call's estimate counted every message of the
#: conversation again (about 0.2 ms a call at 400 messages), though only the last ones are new.
_short_text_tokens = functools.lru_cache(maxsize=4096)(estimate_tokens)


def _message_tokens(message: Mapping[str, Any]) -> int:
    """A message's estimated tokens: its text, the arguments of its tool calls, ``IMAGE_TOKENS`` a picture and
    ``MESSAGE_TOKENS`` for the chat template."""
    content = message.get("content")
    if type(content) is str and not message.get("tool_calls"):
        # The common message, plain text: each call estimates the turn's whole history again, the same texts.
        return (
            _short_text_tokens(content) if len(content) <= MEMO_CHARS else estimate_tokens(content)
        ) + MESSAGE_TOKENS
    pictures = 0
    if isinstance(content, list):
        parts = [p for p in content if isinstance(p, dict)]
        text = "".join(str(p.get("text") or "") for p in parts)
        pictures = sum(1 for p in parts if p.get("type") == "image_url")
    else:
        text = str(content or "")
    calls = message.get("tool_calls")
    text += json.dumps(calls, ensure_ascii=False) if calls else ""
    return estimate_tokens(text) + pictures * IMAGE_TOKENS + MESSAGE_TOKENS


def call_estimate(body: Mapping[str, Any]) -> CallTokens:
    """What one Chat Completions request may cost, before it is sent: its prompt (each message's text and pictures,
    the tool specs, ``MESSAGE_TOKENS`` a message) and its answer's bound (``max_tokens`` or
    ``max_completion_tokens``; without either, ``DEFAULT_ANSWER_TOKENS``). The one estimate of a call: the caps'
    check uses it, and a call whose server reports no usage is counted with its prompt."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, Mapping)]
    prompt = sum(_message_tokens(m) for m in messages)
    if body.get("tools"):
        prompt += estimate_tokens(json.dumps(body["tools"], ensure_ascii=False))
    bounds = [
        v
        for k in ("max_tokens", "max_completion_tokens")
        if isinstance(v := body.get(k), int) and not isinstance(v, bool)
    ]
    return CallTokens(prompt=max(1, prompt), completion=max(bounds) if bounds else DEFAULT_ANSWER_TOKENS)
