"""Token usage and reasoning text, normalised across OpenAI-compatible servers.

Pure functions only: no I/O. A metric the provider did not return stays None; it is
never guessed and never defaulted to 0, so traces can tell "0 cached" from "unknown".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from assistant_framework.json_types import JsonObject


@dataclass
class Usage:
    """Token counts of one completion; None means the server did not report it."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None

    def as_dict(self) -> dict[str, int]:
        """Only the fields the server reported (non-None)."""
        return {k: v for k, v in asdict(self).items() if v is not None}


def _int(value: object) -> int | None:
    # bool is an int subclass; a True token count is garbage, not 1.
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _first(*values: object) -> int | None:
    for value in values:
        number = _int(value)
        if number is not None:
            return number
    return None


def _sub(obj: object, key: str) -> JsonObject:
    value = obj.get(key) if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else {}


def parse_usage(usage: JsonObject | None, raw: JsonObject | None = None) -> Usage:
    """Normalise a `usage` object (plus llama.cpp `timings` from `raw`) into a Usage.

    Shapes understood: OpenAI `prompt_tokens_details.cached_tokens` and
    `completion_tokens_details.reasoning_tokens`; DeepSeek `prompt_cache_hit_tokens` /
    `prompt_cache_miss_tokens`; Anthropic-style `cache_read_input_tokens` /
    `cache_creation_input_tokens` (and `input_tokens`/`output_tokens`); OpenRouter
    `cache_write_tokens`; llama.cpp `timings.cache_n` / `timings.predicted_n`.
    """
    u = usage if isinstance(usage, dict) else {}
    prompt_details = _sub(u, "prompt_tokens_details")
    completion_details = _sub(u, "completion_tokens_details")
    timings = _sub(raw, "timings")

    hit = _int(u.get("prompt_cache_hit_tokens"))
    miss = _int(u.get("prompt_cache_miss_tokens"))
    deepseek_prompt = hit + miss if hit is not None and miss is not None else None

    return Usage(
        prompt_tokens=_first(u.get("prompt_tokens"), u.get("input_tokens"), deepseek_prompt),
        completion_tokens=_first(u.get("completion_tokens"), u.get("output_tokens"), timings.get("predicted_n")),
        cached_tokens=_first(
            prompt_details.get("cached_tokens"),
            hit,
            u.get("cache_read_input_tokens"),
            u.get("cached_tokens"),
            timings.get("cache_n"),
        ),
        cache_write_tokens=_first(
            prompt_details.get("cache_write_tokens"),
            u.get("cache_creation_input_tokens"),
            u.get("cache_write_tokens"),
        ),
        reasoning_tokens=_first(completion_details.get("reasoning_tokens"), u.get("reasoning_tokens")),
    )


_THINK_RE = re.compile(r"^\s*<think>(.*?)</think>\s*", re.DOTALL)
_NON_SPACE_RE = re.compile(r"\S")


def split_think(content: str) -> tuple[str, str | None]:
    """Split a leading `<think>...</think>` block off `content` -> (text, reasoning or None)."""
    match = _THINK_RE.match(content)
    if not match:
        return content, None
    return content[match.end() :], match.group(1).strip()


def visible_stream_text(content_so_far: str) -> str | None:
    """The part of a partial streamed content that may be shown, or None while inside `<think>`.

    Servers without a reasoning parser stream `<think>...` as plain content; showing it
    would leak the model's scratchpad into the chat, so it is held back until closed.
    """
    return VisibleStream().feed(content_so_far)


class VisibleStream:
    """``visible_stream_text`` of a streamed content that only grows, given it whole at each delta: `</think>` is
    searched for in what came since the last delta, and once found its place is kept (searching the whole
    reasoning again at every delta cost its length squared)."""

    def __init__(self) -> None:
        self._start: int | None = None  # the first character that is not a space
        self._searched = 0  # no `</think>` starts before this
        self._after: int | None = None  # where the text after `</think>` starts

    def feed(self, content: str) -> str | None:
        if self._start is None:
            first = _NON_SPACE_RE.search(content)
            if first is None:
                return None
            self._start = first.start()
        start = self._start
        if self._after is None and content.startswith("<think>", start):
            close = content.find("</think>", max(start + len("<think>"), self._searched - len("</think>") + 1))
            if close == -1:
                self._searched = len(content)
                return None
            self._after = close + len("</think>")
        if self._after is not None:
            return content[self._after :].lstrip()  # and the space after it, as split_think drops it
        if len(content) - start < len("<think>") and "<think>".startswith(content[start:]):
            return None
        return content


def message_reasoning(message: Mapping[str, object]) -> str | None:
    """Reasoning text from `reasoning_content` (DeepSeek, llama.cpp) or `reasoning` (Ollama, vLLM)."""
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return None
