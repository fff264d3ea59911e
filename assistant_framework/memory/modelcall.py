"""Calling the model for memory work: structured JSON output, validated, never raising on bad output."""

from __future__ import annotations

import inspect
import json
import logging
import re
from collections.abc import Callable
from typing import Any

import jsonschema

from ..json_types import JsonObject, JsonSchema

log = logging.getLogger(__name__)

#: The model call of memory work: ``complete(messages)`` or ``complete(messages, extra=...)`` -> the answer's text.
Complete = Callable[..., str]
#: A request's messages: ``{"role": ..., "content": ...}`` with text content.
Messages = list[dict[str, str]]
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)
_FENCED_BLOCK = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.IGNORECASE | re.DOTALL)


def accepts_extra(complete: Complete) -> bool:
    """True when ``complete`` takes an ``extra=`` keyword (or **kwargs)."""
    try:
        params = inspect.signature(complete).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "extra" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def call_model(complete: Complete, messages: Messages, extra: JsonObject | None = None) -> str:
    """The model's text; ``extra`` (e.g. response_format) only when the callable takes it."""
    if extra and accepts_extra(complete):
        return complete(messages, extra=extra) or ""
    return complete(messages) or ""


def json_schema_format(name: str, schema: JsonSchema) -> JsonObject:
    """The ``response_format`` body asking an OpenAI-compatible server for schema-shaped JSON."""
    return {"response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}}


def parse_json_reply(text: str, schema: JsonSchema, what: str) -> Any | None:
    """Parse and validate a JSON reply; None (logged, content not echoed) when malformed."""
    cleaned = _FENCE.sub("", (text or "").strip())
    try:
        value = json.loads(cleaned)
    except json.JSONDecodeError:
        block = _FENCED_BLOCK.search(text or "")  # a fenced block with prose around it (braces in the prose too)
        cleaned = block.group(1) if block else cleaned
        start, end = cleaned.find("{"), cleaned.rfind("}")
        try:
            value = json.loads(cleaned[start : end + 1]) if 0 <= start < end else None
        except json.JSONDecodeError:
            value = None
        if value is None:
            log.warning("%s: model output is not JSON (%d chars); skipped", what, len(text or ""))
            return None
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        log.warning("%s: model output does not match the schema at %s: %s; skipped", what, where, exc.validator)
        return None
    return value
