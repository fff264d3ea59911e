"""The grammar-safe subset of JSON Schema: what local model servers turn into a grammar.

Grammar converters (llama.cpp, llama-cpp-python, outlines, xgrammar) understand ``type``,
``properties``, ``required``, ``items``, ``enum`` and ``anyOf``. Other keywords (const, pattern,
minimum, additionalProperties, format, ...) made llama-cpp-python fall back to unconstrained JSON
without an error, so they are left out. The skill manager still validates a built-in skill's full
schema before it runs; an outside tool's schema is shown and checked in this subset (the server
checks the rest).
"""

from __future__ import annotations

from typing import Any

from assistant_framework.json_types import JsonSchema

_KEEP = frozenset({"type", "properties", "required", "items", "enum", "anyOf"})


def grammar_safe(schema: object, descriptions: bool = False) -> JsonSchema:
    """``schema`` reduced to the grammar-safe subset (pure; ``const`` becomes a one-value enum).

    ``descriptions`` keeps ``description`` texts (converters ignore them; a model reads them in
    native tool specs, where a ``pattern`` broke llama-cpp-python's function-calling grammar).
    """
    if not isinstance(schema, dict):
        return {}
    out: JsonSchema = {}
    for key, value in schema.items():
        entry = _safe_entry(key, value, schema, descriptions)
        if entry is not None:
            out[entry[0]] = entry[1]
    if out.get("type") == "object" and "properties" not in out:
        out.pop("required", None)
    return out


def _safe_entry(key: str, value: Any, schema: JsonSchema, descriptions: bool) -> tuple[str, Any] | None:
    """One keyword of ``schema`` as the grammar-safe subset has it (its name may change), or None to drop it."""
    if key == "const":
        return "enum", [value]
    if key == "description" and descriptions and isinstance(value, str):
        return key, value
    if key == "oneOf" and "anyOf" not in schema:
        return "anyOf", [grammar_safe(s, descriptions) for s in value if isinstance(s, dict)]
    if key not in _KEEP:
        return None
    if key == "properties" and isinstance(value, dict):
        return key, {name: grammar_safe(sub, descriptions) for name, sub in value.items()}
    if key == "items" and isinstance(value, dict):
        return key, grammar_safe(value, descriptions)
    if key == "anyOf" and isinstance(value, list):
        return key, [grammar_safe(s, descriptions) for s in value if isinstance(s, dict)]
    if key == "required" and isinstance(value, list):
        props = schema.get("properties")
        return key, [r for r in value if not isinstance(props, dict) or r in props]
    if key in ("type", "enum"):
        return key, value
    return None
