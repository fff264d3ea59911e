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

_KEEP = frozenset({"type", "properties", "required", "items", "enum", "anyOf"})


def grammar_safe(schema: object, descriptions: bool = False) -> dict[str, Any]:
    """``schema`` reduced to the grammar-safe subset (pure; ``const`` becomes a one-value enum).

    ``descriptions`` keeps ``description`` texts (converters ignore them; a model reads them in
    native tool specs, where a ``pattern`` broke llama-cpp-python's function-calling grammar).
    """
    if not isinstance(schema, dict):
        return {}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "const":
            out["enum"] = [value]
        elif key == "description" and descriptions and isinstance(value, str):
            out[key] = value
        elif key == "oneOf" and "anyOf" not in schema:
            out["anyOf"] = [grammar_safe(s, descriptions) for s in value if isinstance(s, dict)]
        elif key not in _KEEP:
            continue
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: grammar_safe(sub, descriptions) for name, sub in value.items()}
        elif key == "items" and isinstance(value, dict):
            out[key] = grammar_safe(value, descriptions)
        elif key == "anyOf" and isinstance(value, list):
            out[key] = [grammar_safe(s, descriptions) for s in value if isinstance(s, dict)]
        elif key == "required" and isinstance(value, list):
            props = schema.get("properties")
            out[key] = [r for r in value if not isinstance(props, dict) or r in props]
        elif key in ("type", "enum"):
            out[key] = value
    if out.get("type") == "object" and "properties" not in out:
        out.pop("required", None)
    return out
