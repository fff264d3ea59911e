"""The one name for arbitrary JSON: a value whose shape nobody promises.

A shape that crosses modules has a name of its own (a ``TypedDict`` where it is JSON on disk, a dataclass in
memory); ``JsonObject`` is for what really is arbitrary: a skill's arguments before its schema checked them, a
model's raw answer, a JSON Schema document, a plugin's config section, a record read back from a file before
it is checked.
"""

from __future__ import annotations

from typing import Any

#: A JSON object of any shape (``json.loads`` of an object).
JsonObject = dict[str, Any]
#: A JSON Schema document (a skill's args schema, a collector's config schema).
JsonSchema = JsonObject
