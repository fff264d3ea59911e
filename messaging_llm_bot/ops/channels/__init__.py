"""Each chat channel's part of ``assistant setup`` and ``assistant doctor``, one folder each, named as the channel
(``ops/channels/<name>/``: ``setup.py``, its flags and steps; ``doctor.py``, its checks; ``probe.py``, the calls
to its server that both make), with what the channels' parts share (setup: the dialog and the steps; doctor: the
report's record and lines). The channel's runtime (``channels/<name>/``) never imports these.

``channel_parts`` is how ops/ finds them by the registry's names (conversation/routes.py): ops/setup, ops/doctor
and cli/ name no channel, so a new channel's setup and checks are new files here and no other line."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from types import ModuleType

from messaging_llm_bot.channels import RegistrationError, require_folder
from messaging_llm_bot.conversation.routes import channel_names


def channel_parts(part: str) -> list[tuple[str, ModuleType]]:
    """(channel, its ``ops/channels/<name>/<part>.py`` imported) for every channel of the registry that has one,
    in the registry's order. A ``RegistrationError`` names a registered channel without its folder under
    channels/, and a folder here that no Route names (a typo: its parts would never run)."""
    names = channel_names()
    for name in names:
        require_folder(name)
    strays = sorted(found.name for found in pkgutil.iter_modules(__path__) if found.ispkg and found.name not in names)
    if strays:
        raise RegistrationError(
            f"messaging_llm_bot/ops/channels/{strays[0]}/ is no registered channel's: its folder's name is the "
            "channel's Route's in conversation/routes.py (docs/channels.md, \"Writing a channel\")"
        )
    found: list[tuple[str, ModuleType]] = []
    for name in names:
        module = f"{__name__}.{name}.{part}"
        if importlib.util.find_spec(f"{__name__}.{name}") is not None and importlib.util.find_spec(module) is not None:
            found.append((name, importlib.import_module(module)))
    return found
