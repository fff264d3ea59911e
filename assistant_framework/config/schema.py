"""The JSON Schema of the config, derived from the settings records: it is not written anywhere else.

Each section the project owns is its record's ``schema_of`` (settings/fields.py): the keys, their
types, their bounds and the keys a section must have come from the record's fields, so a key is
described once. Sections the project owns reject unknown keys, so a typo is reported instead of
silently ignored. A section a plugin declares with a record of its own (a channel's: config/sections.py) is
one of them, its schema derived from its record the same way. Collectors validate their own sections.
"""

from __future__ import annotations

from functools import cache

from assistant_framework.config.sections import SectionError, declared
from assistant_framework.config.settings import Settings
from assistant_framework.config.settings.fields import Record, schema_of
from assistant_framework.json_types import JsonSchema

# A collector's own keys are checked with the schema it declares (collectors/manager.py); here only
# the key every collector has.
COLLECTORS_SCHEMA: JsonSchema = {
    "type": "object",
    "additionalProperties": {"type": "object", "properties": {"enabled": {"type": "boolean"}}},
}


def root_schema(records: type[Record] = Settings) -> JsonSchema:
    """The whole config's schema: one property per section of ``records`` (``Settings``), ``collectors``, and
    one per declared section (config/sections.py; read at each call: the declared sections may change). An
    unknown section is not refused here: ``checks.semantic_errors`` names it with the closest known one."""
    return _root_schema(records, tuple(declared().items()))


@cache
def _root_schema(records: type[Record], sections: tuple[tuple[str, type[Record]], ...]) -> JsonSchema:
    own = schema_of(records)["properties"]
    clash = sorted(name for name, _record in sections if name in own or name == "collectors")
    if clash:
        raise SectionError(f"declared config sections {clash} are the framework's own (config/sections.py)")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            **own,
            "collectors": COLLECTORS_SCHEMA,
            **{name: schema_of(record) for name, record in sections},
        },
    }
