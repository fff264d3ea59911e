"""The channels' own config sections, handed to the config layer (assistant_framework/config/sections.py).

A channel whose section is its own declares its record in ``channels/<name>/section.py`` as ``RECORD`` (a frozen
dataclass of the framework's kind: each key's default, type and bounds in its field; its keys documented in
``docs/<name>.md``); the section is named after the channel. Found by the registry's names (conversation/routes.py),
so the channel's ``Route`` line is what makes the section known: the framework imports no channel, and nothing in
the framework's ``Settings`` names it. messaging_llm_bot/__init__.py declares ``channel_sections`` to the config.
"""

from __future__ import annotations

import dataclasses
import functools

from assistant_framework.config.settings.fields import Record
from messaging_llm_bot import channels
from messaging_llm_bot.channels import RegistrationError, channel_module
from messaging_llm_bot.conversation.routes import channel_names


def channel_sections() -> dict[str, type[Record]]:
    """Each registered channel's declared record by its name (the channels with a ``section.py``)."""
    return dict(_found(channel_names(), tuple(channels.__path__)))


@functools.cache
def _found(names: tuple[str, ...], _path: tuple[str, ...]) -> tuple[tuple[str, type[Record]], ...]:
    """Looked up once per registry and search path (a test adds a channel in a folder of its own)."""
    found: list[tuple[str, type[Record]]] = []
    for name in names:
        module = channel_module(name, "section")
        if module is None:
            continue
        record = getattr(module, "RECORD", None)
        if not (isinstance(record, type) and dataclasses.is_dataclass(record)):
            raise RegistrationError(
                f"channels/{name}/section.py's RECORD is {'missing' if record is None else repr(record)}: it names "
                'the section\'s record, a frozen dataclass (docs/channels.md, "Writing a channel", step 7)'
            )
        found.append((name, record))
    return tuple(found)
