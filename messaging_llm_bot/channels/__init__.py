"""Chat surfaces, one folder each (telegram/, signal/, matrix/, whatsapp/, slack/, discord/, email/, webchat/,
console/): adapters between a platform and the conversation service (messaging_llm_bot/conversation/), with
the records they all speak (contract), the registry's start-up (run) and config sections (sections). A channel
never imports another channel, nor ops/: its setup steps, server probe and doctor checks are in
``ops/channels/<name>/``.

``channel_module`` is how those find a channel's own files by the registry's name (conversation/routes.py), and
``require_folder`` how ops/ refuses a name without its folder the same way."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType
from typing import Literal, overload


class RegistrationError(LookupError):
    """The registry names a channel whose folder or hook is missing: what to add, where."""


@overload
def channel_module(name: str, part: str, *, required: Literal[True]) -> ModuleType: ...


@overload
def channel_module(name: str, part: str, *, required: bool = False) -> ModuleType | None: ...


def channel_module(name: str, part: str, *, required: bool = False) -> ModuleType | None:
    """``channels/<name>/<part>.py`` of the registry's channel ``name``, imported; None when the channel has no
    such file (``required``: ``RegistrationError`` instead). A name the registry holds without a folder of that
    name under channels/ is a ``RegistrationError`` saying so."""
    require_folder(name)
    module = f"{__name__}.{name}.{part}"
    if importlib.util.find_spec(module) is None:
        if required:
            raise RegistrationError(
                f'the channel {name!r} has no channels/{name}/{part}.py (docs/channels.md, "Writing a channel")'
            )
        return None
    return importlib.import_module(module)


def require_folder(name: str) -> None:
    """Nothing when the registry's channel ``name`` has its folder under channels/, else a ``RegistrationError``
    naming the Route and the folder."""
    if importlib.util.find_spec(f"{__name__}.{name}") is None:
        raise RegistrationError(
            f"conversation/routes.py registers the channel {name!r}, but messaging_llm_bot/channels/{name}/ does "
            "not exist: the Route's name is its folder's (docs/channels.md, \"Writing a channel\")"
        )
