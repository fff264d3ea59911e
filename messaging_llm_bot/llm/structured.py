"""Schema-constrained output: one JSON schema for the skill protocol, and the per-runner choice
of how to ask a server for it (``response_format`` of type ``json_schema`` or ``json_object``).

Servers turn the schema into a grammar, so a small model can only answer with a valid protocol
object. Which format a server accepts differs (OpenAI, vLLM, llama.cpp's ``llama-server``, LM
Studio and Ollama take ``json_schema``; llama-cpp-python takes ``json_object`` with a
``schema``), so ``auto`` tries them in order and remembers, per runner and for the process,
the first one the server does not reject. Pure logic plus ``FormatChooser``, the format memory
each ``LLMClient`` keeps; the client tries the formats in its runner loop (llm/client.py).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable

from assistant_framework.skills.grammar import grammar_safe
from messaging_llm_bot.llm.errors import LLMError
from messaging_llm_bot.llm.runners import RunnerConfig
from messaging_llm_bot.llm.wire import JsonObject

log = logging.getLogger(__name__)

SETTINGS = ("auto", "json_schema", "json_object", "off")
AUTO_ORDER = ("json_schema", "json_object")

# The grammar-safe subset (grammar_safe) lives in the framework: outside tools' schemas are cut to it there.
TOOLS = "tools"  # the pseudo-format "send the skills as native tools" (llm/tools.py)

REPLY_SCHEMA: JsonObject = {"type": "object", "properties": {"reply": {"type": "string"}}, "required": ["reply"]}


def grammar_pattern(pattern: object) -> str | None:
    """A string ``pattern`` in the form both kinds of converter read alike (anchored, ``\\d`` as
    ``[0-9]``, no other escape and no quote), or None: llama-cpp-python's converter turned ``\\d``
    into a broken rule and fell back to unconstrained JSON."""
    if not isinstance(pattern, str) or not (pattern.startswith("^") and pattern.endswith("$")):
        return None
    body = pattern.replace("\\d", "[0-9]")
    return None if "\\" in body or '"' in body else body


def args_grammar(args_schema: JsonObject | None) -> JsonObject:
    """A skill's args schema as the grammar-safe object schema a constrained answer follows; its
    top-level string patterns kept where ``grammar_pattern`` can (dates in the form a skill takes:
    the 135M model otherwise copied the prompt's "[Now] ... (UTC)" line into them)."""
    args = grammar_safe(args_schema or {}) or {"type": "object"}
    args.setdefault("type", "object")
    source = (args_schema or {}).get("properties") or {}
    for name, prop in (args.get("properties") or {}).items():
        original = source.get(name) if isinstance(source, dict) else None
        pattern = grammar_pattern(original.get("pattern")) if isinstance(original, dict) else None
        if pattern and prop.get("type") == "string":
            prop["pattern"] = pattern
    return args


def protocol_schema(skills: Iterable[tuple[str, JsonObject | None]]) -> JsonObject:
    """The schema of one protocol answer: a call of one of ``skills`` (name, args schema) or a reply."""
    options = []
    for name, args_schema in skills:
        args = args_grammar(args_schema)
        options.append(
            {
                "type": "object",
                "properties": {"skill": {"type": "string", "enum": [name]}, "args": args},
                "required": ["skill", "args"],
            }
        )
    options.append(REPLY_SCHEMA)
    return {"anyOf": options}


def choice_schema(names: Iterable[str]) -> JsonObject:
    """The first answer of a two_step round: a skill's name alone (no arguments), or a reply."""
    skill = {"type": "object", "properties": {"skill": {"type": "string", "enum": list(names)}}, "required": ["skill"]}
    return {"anyOf": [skill, REPLY_SCHEMA]}


# The text between a JSON string's quotes. llama-cpp-python (the server that takes json_object
# with a schema) reads a string's ``pattern`` as that raw text, and its own string grammar lets
# raw control characters (newlines) in, which JSON forbids; this pattern keeps them out.
JSON_STRING_BODY = r'^([^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*$'


def strict_strings(schema: object) -> object:
    """``schema`` with every free string (no enum or pattern) limited to JSON's string text (pure).

    Only for ``json_object`` requests: other servers apply ``pattern`` to the decoded value, where
    it would forbid quotes and newlines instead.
    """
    if isinstance(schema, list):
        return [strict_strings(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: (strict_strings(v) if k in ("items", "anyOf") else v) for k, v in schema.items()}
    properties = out.get("properties")
    if isinstance(properties, dict):  # a map of names (one may be "type"), not a schema
        out["properties"] = {name: strict_strings(sub) for name, sub in properties.items()}
    if out.get("type") == "string" and "enum" not in out and "pattern" not in out:
        out["pattern"] = JSON_STRING_BODY
    return out


def response_format(mode: str, schema: JsonObject, name: str) -> JsonObject:
    """The request fields asking for ``schema`` in ``mode`` ({} for ``off``)."""
    if mode == "json_schema":
        return {"response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}}
    if mode == "json_object":
        return {"response_format": {"type": "json_object", "schema": strict_strings(schema)}}
    return {}


def format_fields(
    mode: str, schema: JsonObject | None, name: str, tools: list[JsonObject] | None, extra: JsonObject | None
) -> JsonObject | None:
    """The request fields of one attempt in ``mode``: ``extra`` plus the tools or the response_format."""
    if mode == TOOLS:
        return {**(extra or {}), "tools": tools, "tool_choice": "auto"}
    fields = {**(extra or {}), **(response_format(mode, schema, name) if schema is not None else {})}
    return fields or None


def requested_format(fields: JsonObject | None) -> str | None:
    """What a request asks the server for beyond plain text: ``tools``, ``response_format`` or None."""
    if not fields:
        return None
    return "tools" if "tools" in fields else "response_format" if "response_format" in fields else None


class FormatChooser:
    """Per runner of one client: the formats still worth trying, and which one worked (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rejected: dict[str, set[str]] = {}
        self._announced: set[tuple[str, str]] = set()

    def modes(self, runner: RunnerConfig, *, schema: bool = True, tools: bool = False) -> list[str]:
        """Formats to try in order for this runner; always ends with ``off``. With ``tools``,
        native tool calls come first when the runner's tool_transport asks for them; without
        ``schema`` no response_format is tried."""
        setting = runner.structured_output or "auto"
        wanted: tuple[str, ...] = AUTO_ORDER if setting == "auto" else (() if setting == "off" else (setting,))
        if not schema:
            wanted = ()
        if tools and runner.tool_transport in ("native", "auto"):
            wanted = (TOOLS, *wanted)
        with self._lock:
            rejected = self._rejected.get(runner.name, set())
        return [m for m in wanted if m not in rejected] + ["off"]

    def reject(self, runner: RunnerConfig, mode: str, err: LLMError) -> None:
        """Drop ``mode`` for this runner (for the process): the server said it does not take it."""
        with self._lock:
            self._rejected.setdefault(runner.name, set()).add(mode)
        log.warning(
            "llm runner %r rejects response_format %s (HTTP %s); trying the next format", runner.name, mode, err.status
        )

    def worked(self, runner: RunnerConfig, mode: str) -> None:
        """Say once per runner (and format) in the log which format is used."""
        key = (runner.name, mode)
        with self._lock:
            if key in self._announced:
                return
            self._announced.add(key)
        if mode == TOOLS:
            log.info("llm runner %r: skills sent as native tools", runner.name)
        elif mode == "off":
            log.info("llm runner %r: structured output off (prompted JSON only)", runner.name)
        else:
            log.info("llm runner %r: structured output via response_format %s", runner.name, mode)


def schema_from_extra(extra: JsonObject | None) -> tuple[JsonObject | None, str, JsonObject]:
    """Split a ``json_schema`` response_format out of ``extra``: (schema, name, the rest)."""
    rest = dict(extra or {})
    fmt = rest.get("response_format")
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return None, "", rest
    spec = fmt.get("json_schema") or {}
    schema = spec.get("schema") if isinstance(spec, dict) else None
    if not isinstance(schema, dict):
        return None, "", rest
    rest.pop("response_format")
    return grammar_safe(schema), str(spec.get("name") or "answer"), rest


def schema_key(skills: Iterable[tuple[object, ...]]) -> str:
    """A cache key for a skill set (names and args schemas)."""
    return json.dumps(list(skills), sort_keys=True, default=str)
