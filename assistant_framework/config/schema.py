"""The JSON Schema of the config, derived from the settings records: it is not written anywhere else.

Each section the project owns is its record's ``schema_of`` (settings/fields.py): the keys, their
types, their bounds and the keys a section must have come from the record's fields, so a key is
described once. Sections the project owns reject unknown keys, so a typo is reported instead of
silently ignored. Plugins (collectors) validate their own sections.
"""

from __future__ import annotations

from functools import cache

from assistant_framework.config.settings import Settings
from assistant_framework.config.settings.fields import Record, schema_of
from assistant_framework.json_types import JsonSchema

# A collector's own keys are checked with the schema it declares (collectors/manager.py); here only
# the key every collector has.
COLLECTORS_SCHEMA: JsonSchema = {
    "type": "object",
    "additionalProperties": {"type": "object", "properties": {"enabled": {"type": "boolean"}}},
}


@cache
def root_schema(records: type[Record] = Settings) -> JsonSchema:
    """The whole config's schema: one property per section of ``records`` (``Settings``), and ``collectors``.
    An unknown section is not refused here: ``checks.semantic_errors`` names it with the closest known one."""
    sections = schema_of(records)["properties"]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {**sections, "collectors": COLLECTORS_SCHEMA},
    }


ROOT_SCHEMA: JsonSchema = root_schema()
