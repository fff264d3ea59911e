"""What the model sees of an outside tool: a name it can write, a short description, a small schema.

Pure functions. A server names and describes its tools as it likes (any characters, any length,
schemas of any size and depth); what reaches the prompt is bounded here:

- the skill name is ``<server>_<tool>`` in lower-case ASCII letters, digits and ``_`` (camelCase
  becomes snake_case; a tool named after its server keeps one prefix: ``git_status``), at most 64
  characters: what small models write back reliably and what OpenAI-style servers accept as a
  function name (``^[a-zA-Z0-9_-]{1,64}$``);
- the description is one line, cut to the server's ``description_chars`` (at most 2,000: the config's
  schema), and labelled as the server's words (``server_says``);
- the schema is the grammar-safe subset the built-ins use for structured output, with local
  ``$ref``s inlined, at most ``MAX_DEPTH`` levels deep, and at most ``MAX_SCHEMA_CHARS`` characters
  of JSON (past that: descriptions dropped, then only the top-level fields' types, then any object).
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from typing import Any

from assistant_framework.json_types import JsonSchema
from assistant_framework.skills.grammar import grammar_safe

MAX_NAME = 64
MAX_SCHEMA_CHARS = 2000
MAX_DEPTH = 6
MAX_FIELDS = 40
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NOT_NAME = re.compile(r"[^a-z0-9]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


def name_part(text: str) -> str:
    """``text`` as lower-case ASCII letters, digits and single ``_`` (``getTime-v2`` -> ``get_time_v2``)."""
    ascii_text = unicodedata.normalize("NFKD", str(text)[:500]).encode("ascii", "ignore").decode("ascii")
    return _NOT_NAME.sub("_", _CAMEL.sub("_", ascii_text).lower()).strip("_")


def skill_name(server: str, tool: str) -> str | None:
    """The skill name of ``tool`` on ``server`` (``time`` + ``get_current_time`` -> ``time_get_current_time``;
    a name with no ASCII letter or digit, ``读取文件``, becomes ``<server>_tool_<6 hex digits>``), or None
    for a tool without a name."""
    prefix = name_part(server) or "mcp"
    if not str(tool).strip():
        return None
    rest = name_part(tool) or "tool_" + hashlib.sha256(str(tool).encode("utf-8", "replace")).hexdigest()[:6]
    if rest == prefix or rest.startswith(prefix + "_"):  # git + git_status: git_status, not git_git_status
        return rest[:MAX_NAME].rstrip("_")
    return f"{prefix}_{rest}"[:MAX_NAME].rstrip("_")


def server_says(server: str, description: str) -> str:
    """A tool's description as the model sees it: labelled as the server's own words (a server the owner does
    not control can write instructions there), its length already bounded by ``short_description``."""
    return f"[MCP server {server[:40]!r} says] {description}"


def short_description(text: object, limit: int, fallback: str) -> str:
    """One line of at most ``limit`` characters (control characters and runs of spaces collapsed)."""
    flat = " ".join(_CONTROL.sub(" ", str(text or "")[:20_000]).split())
    if limit <= 0 or not flat:
        return fallback
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _resolve(schema: Any, root: JsonSchema, depth: int, seen: tuple[str, ...] = ()) -> Any:
    """``schema`` with local ``$ref``s (``#/$defs/X``, ``#/definitions/X``) replaced by their target and
    everything below ``depth`` levels replaced by ``{}`` (any value): bounded however the server nests."""
    if not isinstance(schema, dict):
        return schema if not isinstance(schema, list) else [_resolve(s, root, depth, seen) for s in schema[:MAX_FIELDS]]
    if depth <= 0:
        return {}
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _ref_target(ref, root)
        if target is None or ref in seen:  # unknown or recursive: any value
            return {k: v for k, v in schema.items() if k == "description"}
        merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return _resolve(merged, root, depth, (*seen, ref))
    out: JsonSchema = {}
    for key, value in schema.items():
        if key in ("$defs", "definitions"):
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {
                str(name): _resolve(sub, root, depth - 1, seen) for name, sub in list(value.items())[:MAX_FIELDS]
            }
        elif key in ("items", "anyOf", "oneOf"):
            out[key] = _resolve(value, root, depth - 1, seen)
        else:
            out[key] = value
    return out


def _ref_target(ref: str, root: JsonSchema) -> JsonSchema | None:
    for prefix in ("#/$defs/", "#/definitions/"):
        if ref.startswith(prefix):
            defs = root.get(prefix[2:-1])
            target = defs.get(ref[len(prefix) :]) if isinstance(defs, dict) else None
            return target if isinstance(target, dict) else None
    return None


def _size(schema: JsonSchema) -> int:
    return len(json.dumps(schema, separators=(",", ":"), ensure_ascii=False))


def _types_only(schema: JsonSchema) -> JsonSchema:
    properties = value if isinstance(value := schema.get("properties"), dict) else {}
    kept = {
        name: {"type": sub["type"]} if isinstance(sub, dict) and isinstance(sub.get("type"), str) else {}
        for name, sub in list(properties.items())[:MAX_FIELDS]
    }
    out: JsonSchema = {"type": "object", "properties": kept}
    required = [r for r in schema.get("required") or [] if r in kept]
    if required:
        out["required"] = required
    return out


def _strip_descriptions(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {
            k: (_strip_descriptions(v) if k != "properties" else {n: _strip_descriptions(s) for n, s in v.items()})
            for k, v in schema.items()
            if k != "description"
        }
    if isinstance(schema, list):
        return [_strip_descriptions(v) for v in schema]
    return schema


def shown_schema(input_schema: object) -> tuple[JsonSchema, str]:
    """The args schema the model sees and the manager checks, and how it was cut (``""`` when it was not).

    Always an object schema; a property list of a hostile size or depth never reaches the prompt."""
    root = input_schema if isinstance(input_schema, dict) else {}
    schema = grammar_safe(_resolve(root, root, MAX_DEPTH), descriptions=True) or {}
    schema["type"] = "object"
    schema.setdefault("properties", {})
    if _size(schema) <= MAX_SCHEMA_CHARS:
        return schema, ""
    bare = _strip_descriptions(schema)
    if _size(bare) <= MAX_SCHEMA_CHARS:
        return bare, "field descriptions left out"
    types = _types_only(bare)
    if _size(types) <= MAX_SCHEMA_CHARS:
        return types, "only the top-level fields' types kept"
    return {"type": "object"}, "too large to show: any object"
