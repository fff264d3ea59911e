"""Native tool calls inside the agent loop: the answer's tool_calls as skill calls, and the two
message forms a round is kept in (JSON protocol, and tool_calls + ``role: tool`` results), so a
request can go out either way (the model client picks per runner, llm/client.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from messaging_llm_bot.llm.structured import protocol_schema, schema_key
from messaging_llm_bot.llm.tools import ToolCall, assistant_message, result_message, tool_name, tool_specs
from messaging_llm_bot.llm.wire import JsonObject, Message
from messaging_llm_bot.protocol import SkillCall
from messaging_llm_bot.protocol.parse import calls_from_value

if TYPE_CHECKING:
    from assistant_framework.skills import SkillManager
    from messaging_llm_bot.llm.runners import RunnerConfig


def skill_calls(tool_calls: list[ToolCall], names: list[str]) -> list[SkillCall]:
    """Skill calls for native tool calls (arguments decoded leniently; a bad one carries args_error)."""
    calls = []
    by_tool_name = {tool_name(name): name for name in names}  # the tools were offered under these names
    for call in tool_calls:
        name = call.name if call.name in names else by_tool_name.get(call.name, call.name)
        raw = json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=False, default=str)
        found, _ = calls_from_value(
            {"function": {"name": name, "arguments": call.arguments if call.arguments is not None else {}}}, names, raw
        )
        calls.append(
            found[0]
            if found
            else SkillCall(name, {}, raw, f"arguments of tool call '{call.name}' are not a JSON object")
        )
    return calls


def add_round(
    json_turn: list[Message],
    native_turn: list[Message],
    text: str,
    tool_calls: list[ToolCall],
    calls: list[SkillCall],
    feedbacks: list[str],
    final_request: str | None,
) -> None:
    """Append one round (the model's answer and the results) to both message forms."""
    joined = "\n\n".join(feedbacks) + (f"\n\n{final_request}" if final_request else "")
    if tool_calls:
        as_json = json.dumps([{"skill": c.skill, "args": c.args} for c in calls], ensure_ascii=False)
        json_turn.append({"role": "assistant", "content": as_json if len(calls) > 1 else as_json[1:-1]})
        native_turn.append(assistant_message(text, tool_calls))
        native_turn.extend(result_message(c, f) for c, f in zip(tool_calls, feedbacks, strict=False))
        if final_request:
            native_turn.append({"role": "user", "content": final_request})
    else:
        json_turn.append({"role": "assistant", "content": text})
        native_turn.append({"role": "assistant", "content": text})
        native_turn.append({"role": "user", "content": joined})
    json_turn.append({"role": "user", "content": joined})


#: What an earlier round's skill result keeps when the turn no longer fits the model's context.
KEPT_RESULT_CHARS = 600


def shrink_earlier_results(json_turn: list[Message], native_turn: list[Message], keep: int = KEPT_RESULT_CHARS) -> bool:
    """Cut the skill results of every round but the last to ``keep`` characters, in both message forms
    (the user's message and the model's calls stay whole); True when anything was cut."""
    cut = False
    for turn in (json_turn, native_turn):
        last_answer = max((i for i, m in enumerate(turn) if m.get("role") == "assistant"), default=0)
        for index in range(1, last_answer):
            message = turn[index]
            content = message.get("content")
            if message.get("role") in ("user", "tool") and isinstance(content, str) and len(content) > keep:
                # A new message, not the old one changed: the trace's record of the request sent before holds it.
                turn[index] = {
                    **message,
                    "content": f"{content[:keep]}\n[... {len(content) - keep} more characters of this earlier "
                    "result cut: the turn no longer fit the model's context]",
                }
                cut = True
    return cut


class SkillFormats:
    """The protocol schema and the native tool specs of a skill set, rebuilt only when it changes
    (the same objects each time, so requests stay byte-stable). A few sets are kept: the owner's
    and the guests' (``policy.guest_skills``) alternate."""

    KEEP = 4

    def __init__(self) -> None:
        self._cache: dict[str, tuple[JsonObject, list[JsonObject]]] = {}
        # A skill set's cache key by its skills' names, descriptions and schema objects (the schemas kept, so
        # their ids stay theirs): ``schema_key`` serialises every schema, a cost each request paid before.
        self._keys: dict[tuple[tuple[str, str, int], ...], tuple[list[object], str]] = {}

    def get(
        self, skills: SkillManager, runners: Sequence[RunnerConfig], names: list[str] | None = None
    ) -> tuple[JsonObject, list[JsonObject] | None]:
        """(schema, tool specs or None when no runner sends native tools) for ``names`` (default: all)."""
        offered = skills.offered_names() if names is None else names
        loaded = [skills.get(name) for name in offered]
        triples = [(s.name, s.description, s.args_schema) for s in loaded if s is not None]
        key = self._key(triples)
        formats = self._cache.get(key)
        if formats is None:
            formats = (protocol_schema((n, a) for n, _, a in triples), tool_specs(triples))
            if len(self._cache) >= self.KEEP:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = formats
        wants_tools = any(getattr(r, "tool_transport", "json") != "json" for r in runners)
        return formats[0], (formats[1] if wants_tools else None)

    def _key(self, triples: list[tuple[str, str, JsonObject]]) -> str:
        """``schema_key`` of the skill set, serialised once per set of schema objects (a reload makes new ones)."""
        identity = tuple((name, description, id(schema)) for name, description, schema in triples)
        known = self._keys.get(identity)
        if known is None:
            known = ([schema for _, _, schema in triples], schema_key(triples))
            if len(self._keys) >= self.KEEP:
                self._keys.pop(next(iter(self._keys)))
            self._keys[identity] = known
        return known[1]
