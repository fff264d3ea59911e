"""The JSON skill protocol: what the model is told, how its output is read, what it is fed back.

The model answers with one JSON object: ``{"skill": "<name>", "args": {...}}`` to call a
skill, or ``{"reply": "<text>"}`` (or plain text) to answer. This package's names are its
public face; the parts:

- ``messages``: the texts sent to the model (instructions, skill results and errors, the final-answer request).
- ``lenient_json``: lenient JSON decoding and scanning (fences, comments, single quotes, ``<think>``).
- ``parse``: when an object is a call, ``parse_model_output``; its docstring states the rules.
- ``framing``: when an answer is a call and when it only quotes one (a summary of a document holding one).
- ``stream``: ``StreamGuard``, which keeps a call's JSON out of a streamed reply.
"""

from __future__ import annotations

from messaging_llm_bot.protocol.lenient_json import CODE_FENCE_LANGS, loads_lenient, strip_think
from messaging_llm_bot.protocol.messages import (
    PLACEHOLDER_REPLIES,
    args_request,
    calls_left_out,
    choice_instructions,
    final_answer_request,
    format_skill_error,
    format_skill_result,
    protocol_instructions,
    unknown_skill_hint,
)
from messaging_llm_bot.protocol.parse import (
    ARGS_KEYS,
    CALL_LIST_KEYS,
    META_KEYS,
    REPLY_SYNONYMS,
    SKILL_KEYS,
    THOUGHT_KEYS,
    ParsedOutput,
    SkillCall,
    parse_model_output,
)
from messaging_llm_bot.protocol.stream import StreamGuard

__all__ = [
    "ARGS_KEYS",
    "CALL_LIST_KEYS",
    "CODE_FENCE_LANGS",
    "META_KEYS",
    "PLACEHOLDER_REPLIES",
    "REPLY_SYNONYMS",
    "SKILL_KEYS",
    "THOUGHT_KEYS",
    "ParsedOutput",
    "SkillCall",
    "StreamGuard",
    "args_request",
    "calls_left_out",
    "choice_instructions",
    "final_answer_request",
    "format_skill_error",
    "format_skill_result",
    "loads_lenient",
    "parse_model_output",
    "protocol_instructions",
    "strip_think",
    "unknown_skill_hint",
]
