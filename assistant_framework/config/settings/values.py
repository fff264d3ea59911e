"""The values a key takes, in words: config/README.md's "values" column, derived from a key's JSON Schema.

``values_text(schema)`` gives ``integer 1–50``, ``number > 0, ≤ 120``, ``one of "polling", "webhook"``,
``list of strings, at most 64``: the type its reader takes and the bounds its field adds
(settings/fields.py), so ``tests/test_config_defaults.py`` can hold every row of the README's tables to
the records. A pattern is named in the words it was declared with (readers.pattern), never written
out: its ``|`` would break a Markdown table.
"""

from __future__ import annotations

from assistant_framework.config.settings.readers import PATTERN_WORDS
from assistant_framework.json_types import JsonSchema

_TYPES = {"integer": "integer", "number": "number", "string": "string", "boolean": "boolean", "object": "object"}
_PLURALS = {"integer": "integers", "number": "numbers", "string": "strings", "boolean": "booleans"}


def values_text(schema: JsonSchema) -> str:
    """The values ``schema`` allows, in a few words (one cell of a table: no ``|``, no `` / ``)."""
    if "oneOf" in schema:
        return " or ".join(values_text(option) for option in schema["oneOf"])
    if "enum" in schema:
        return "one of " + ", ".join("null" if choice is None else f'"{choice}"' for choice in schema["enum"])
    kinds = _kinds(schema)
    kind = next((k for k in kinds if k != "null"), "")
    text = ", ".join([_kind_text(kind, schema), *_value_bounds(schema)])
    return f"{text}, or null" if "null" in kinds else text


def _kinds(schema: JsonSchema) -> list[str]:
    given = schema.get("type", [])
    return given if isinstance(given, list) else [given]


def _kind_text(kind: str, schema: JsonSchema) -> str:
    """``list (at most 64) of strings, each ...``: a container's own bounds in brackets, its items' after."""
    inner: JsonSchema | None = None
    if kind == "array":
        inner = schema.get("items") or {}
    elif kind == "object" and "properties" not in schema and isinstance(schema.get("additionalProperties"), dict):
        inner = schema["additionalProperties"]
    if inner is None:
        return "object (keys below)" if kind == "object" and "properties" in schema else _TYPES.get(kind, kind)
    own = _container_bounds(schema)
    name = "list" if kind == "array" else "object"
    return f"{name} ({', '.join(own)}) of {_plural(inner)}" if own else f"{name} of {_plural(inner)}"


def _plural(schema: JsonSchema) -> str:
    """``strings``, ``integers, each ≥ 0``, ``objects (keys below)``."""
    if "properties" in schema:
        return "objects (keys below)"
    if "enum" in schema:
        return "strings, each " + values_text(schema)
    kinds = _kinds(schema)
    if kinds == ["array"]:
        own = _container_bounds(schema)
        lists = f"lists ({', '.join(own)})" if own else "lists"
        return f"{lists} of {_plural(schema.get('items') or {})}"
    head = " or ".join(_PLURALS.get(kind, kind) for kind in kinds)
    bounds = _value_bounds(schema)
    return f"{head}, each {', '.join(bounds)}" if bounds else head


def _value_bounds(schema: JsonSchema) -> list[str]:
    """A number's range, a string's length and form."""
    words: list[str] = []
    low, high, above = schema.get("minimum"), schema.get("maximum"), schema.get("exclusiveMinimum")
    if low is not None and high is not None:
        words.append(f"{low}–{high}")
    elif low is not None:
        words.append(f"≥ {low}")
    if above is not None:
        words.append(f"> {above}")
    if high is not None and low is None:
        words.append(f"≤ {high}")
    shortest, longest = schema.get("minLength"), schema.get("maxLength")
    if shortest is not None and longest is not None:
        words.append(f"{shortest}–{longest} characters")
    elif shortest is not None:
        words.append(f"at least {shortest} character{'s' if shortest != 1 else ''}")
    elif longest is not None:
        words.append(f"at most {longest} characters")
    if "pattern" in schema:
        words.append(PATTERN_WORDS[schema["pattern"]])
    return words


def _container_bounds(schema: JsonSchema) -> list[str]:
    """A list's or an object's own bounds: how many entries, their names, no repeats."""
    words: list[str] = []
    for keyword in ("minItems",):
        if keyword in schema:
            words.append(f"at least {schema[keyword]}")
    for keyword in ("maxItems", "maxProperties"):
        if keyword in schema:
            words.append(f"at most {schema[keyword]}")
    names = schema.get("propertyNames") or {}
    if "pattern" in names:
        words.append("names " + PATTERN_WORDS[names["pattern"]])
    if "enum" in names:
        words.append("names " + values_text(names))
    if schema.get("uniqueItems"):
        words.append("no repeats")
    return words
