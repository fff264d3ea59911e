"""Native tool calls (OpenAI ``tools`` / ``tool_calls``): the skills as tool specs, the calls read
from an answer, and the messages that carry them and their results back (pure functions).

Used when a runner's ``tool_transport`` is ``native`` or ``auto``; the JSON skill protocol stays
the fallback (llm/structured.py decides per runner which one a request uses).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from assistant_framework.skills.grammar import grammar_safe
from assistant_framework.skills.loader import tool_name
from messaging_llm_bot.llm.wire import JsonObject, Message

__all__ = ["ToolCall", "assistant_message", "result_message", "tool_calls_of", "tool_name", "tool_specs"]

#: Where servers put the reasoning of an answer; DeepSeek's thinking mode wants it back with the
#: answer's tool calls (HTTP 400 without it), Ollama and vLLM call it ``reasoning``.
REASONING_FIELDS = ("reasoning_content", "reasoning")


@dataclass
class ToolCall:
    """One native call as the server sent it; ``arguments`` is usually a JSON string.

    ``reasoning`` holds the answer's reasoning under the field name the server used, sent back
    with the assistant turn that made the call.
    """

    id: str
    name: str
    arguments: object
    reasoning: dict[str, str] = field(default_factory=dict)


def tool_specs(skills: Iterable[tuple[str, str, JsonObject | None]]) -> list[JsonObject]:
    """``tools`` entries for (name, description, args schema) triples.

    The parameters are the grammar-safe subset of each args schema (descriptions kept): local
    servers turn them into grammars, and a ``pattern`` made llama-cpp-python's
    ``chatml-function-calling`` grammar fail to parse and the server stop. The skill manager
    still validates the full schema before a skill runs.
    """
    specs = []
    for name, description, schema in skills:
        parameters = grammar_safe(schema, descriptions=True) if isinstance(schema, dict) and schema else {}
        parameters.setdefault("type", "object")
        parameters.setdefault("properties", {})
        specs.append(
            {
                "type": "function",
                "function": {"name": tool_name(name), "description": description or name, "parameters": parameters},
            }
        )
    return specs


def tool_calls_of(raw: JsonObject) -> list[ToolCall]:
    """The tool calls of a completion body (streamed ones are assembled into the same shape)."""
    try:
        message = raw["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        return []
    if not isinstance(message, dict):
        return []
    reasoning = next(({k: message[k]} for k in REASONING_FIELDS if isinstance(message.get(k), str) and message[k]), {})
    calls = []
    for n, entry in enumerate(message.get("tool_calls") or []):
        if not isinstance(entry, dict):
            continue
        fn = entry.get("function") or {}
        name = fn.get("name") if isinstance(fn, dict) else None
        if not isinstance(name, str) or not name:
            continue
        calls.append(
            ToolCall(
                id=str(entry.get("id") or f"call_{n}"), name=name, arguments=fn.get("arguments"), reasoning=reasoning
            )
        )
    return calls


def assistant_message(text: str, calls: list[ToolCall]) -> Message:
    """The assistant turn that made ``calls`` (sent back before their results).

    ``content`` is a string even when empty: OpenAI also takes null there, but
    llama-cpp-python's server rejects null with HTTP 500. The answer's reasoning goes back in
    the server's own field (DeepSeek's thinking mode refuses the next request without it).
    """
    return {
        "role": "assistant",
        "content": text or "",
        **(calls[0].reasoning if calls else {}),
        "tool_calls": [
            {
                "id": c.id,
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": c.arguments
                    if isinstance(c.arguments, str)
                    else json.dumps(c.arguments or {}, ensure_ascii=False),
                },
            }
            for c in calls
        ],
    }


def result_message(call: ToolCall, content: str) -> Message:
    """A ``role: tool`` message with one call's result."""
    return {"role": "tool", "tool_call_id": call.id, "content": content}
