"""The skill plugin contract: what a folder under ``skills/`` gives and what its ``run`` receives.

A skill is a folder with ``__init__.py`` and ``README.md``. The module gives:

- ``DESCRIPTION: str`` (required): one line the model reads to decide when to call it.
- ``ARGS_SCHEMA: dict`` (optional): the JSON Schema of its arguments; else the README's
  ``## Args schema`` block; else ``{"type": "object"}``.
- ``NAME: str`` (optional): default the folder name; ASCII letters, digits and ``_ - .``.
- ``CAPABILITIES: list[str]`` (optional, default ``["read"]``): of ``KNOWN_CAPABILITIES``; the policy
  decides on each.
- ``ACTION_CAPABILITIES: dict[str, list[str]]`` (optional): what a call with that ``action`` needs, each
  list a part of ``CAPABILITIES`` (the ``mail`` skill's ``draft`` needs ``write``, its ``send`` ``send``);
  an action it does not name is narrowed by the gate from its words (``read``, ``delete``, ``add``...).
- ``TIMEOUT_SECONDS: float`` (optional): over the runtime's ``skill_timeout_seconds``.
- ``REQUIRES_CONFIG: str`` (optional): a dotted config key (``"calendar.url"``); the skill is offered to the
  model (``SkillManager.catalog``) only when that key (or, left out, its documented default) is neither empty
  nor false, so a skill for a service the owner has not set up or has turned off (``search.enabled``) costs no
  prompt. A call that names it anyway runs and says what to set.
- ``REQUIRES_SERVICE: str`` (optional): a ``SkillServices`` key (``"send_file"``); a turn whose host gives no
  such service (a scheduled job's run, a hook's, a served client's: no chat to send a file to) does not offer
  the skill, and a call that names it anyway is refused with ``MISSING_SERVICE``'s sentence, never run.
- ``run(workspace: Workspace, args: SkillArgs, context: SkillContext | None = None)`` (required,
  ``SkillRun``): returns the result the model reads (a string, or any JSON value); raises ``ValueError`` with
  a sentence the model can act on. The bot always passes a context; ``None`` is a direct call (a test, a
  script). Read the context's fields as attributes (``context.private``, ``context.services.get("clock")``):
  every field has a type and a default.
- ``done_before(workspace, args, context) -> bool`` (optional): for a skill whose actions leave the machine
  through a ledger of ``skills/once.py`` (``mail``, ``calendar``; ``reminders`` and ``jobs`` for what they
  add): True when the call matches an action the
  turn's message already did (the turn run again after a crash), so ``run`` will only say so; the gate then asks
  the owner nothing (nothing will happen). It must agree with ``run``: its ledger's ``earlier``.
- ``once_call(workspace, args, context) -> OnceCall | None`` (optional): the same call as its ledger matches it
  (``skills/once.py``: the ledger, ``turn_run(context)`` and the ``Action``); the gate keeps the owner's no to it
  there, so the turn run again after a kill refuses it unasked ("the owner declined this at 16:49").
- ``goes_to(workspace, args, context) -> str | None`` (optional): for a call that reaches someone its arguments
  do not name (``mail``'s reply goes to the original's sender): who, resolved as ``run`` resolves it; the owner's
  question shows it ("goes to: ..."). None, or a check that fails, shows nothing more.

``skills.loader`` checks a folder against this contract. Two older forms still load this release, each
with a warning that names the form above (``DEPRECATED_FORMS``): a ``register()`` function returning
the same fields as a dict, and a ``run(workspace, args)`` without the context.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, TypedDict

from assistant_framework.config.settings import RuntimeSettings, Settings
from assistant_framework.json_types import JsonObject, JsonSchema
from assistant_framework.skills.once import OnceCall, TurnActions
from assistant_framework.workspace import Workspace

if TYPE_CHECKING:
    from assistant_framework.memory.search import MemoryHit

#: The arguments of one skill call: the JSON object the model wrote (after the schema check, the skill's).
SkillArgs = JsonObject


class CatalogEntry(TypedDict):
    """One skill as the prompt shows it (``SkillManager.catalog``)."""

    name: str
    description: str
    args_schema: JsonSchema


#: Capabilities a skill may declare; the security policy decides on each.
KNOWN_CAPABILITIES = ("read", "write", "delete", "network", "send", "exec")
DEFAULT_CAPABILITIES = ("read",)
#: The module constants the loader reads (``run`` besides them).
CONSTANTS = (
    "DESCRIPTION",
    "ARGS_SCHEMA",
    "NAME",
    "CAPABILITIES",
    "ACTION_CAPABILITIES",
    "TIMEOUT_SECONDS",
    "REQUIRES_CONFIG",
    "REQUIRES_SERVICE",
)

#: The forms that still load with a warning, and what to write instead.
DEFAULT_FORM = "module constants DESCRIPTION, ARGS_SCHEMA (optional) and run(workspace, args, context=None)"
DEPRECATED_FORMS = {
    "register": f"register() is deprecated and will stop loading in the next release: use {DEFAULT_FORM}",
    "two_argument_run": (
        "run(workspace, args) without the context is deprecated and will stop loading in the next release: "
        "use run(workspace, args, context=None)"
    ),
}

#: ``SkillContext.settings`` not given: read from its ``config``.
_FROM_CONFIG = Settings()


class SendFile(Protocol):
    """The ``send_file`` service of a turn (``assistant_framework.media.files_out.FileSender``): sends ``path``
    of ``area`` (the turn's workspace) to the chat and returns the sentence the model reads."""

    def __call__(self, area: Workspace, path: str, caption: str = "") -> str: ...

    def done_before(self, area: Workspace, path: str, caption: str = "") -> bool:
        """This file went (or began to go) for the turn's message before: the call will send nothing."""
        ...

    def once_call(self, area: Workspace, path: str, caption: str = "") -> OnceCall:
        """This file's send as the ledger matches it (the gate keeps the owner's no there)."""
        ...


class MemorySearch(Protocol):
    """What the search skills use of the bot's memory (``assistant_framework.memory.MemoryService``)."""

    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        source: str | None = None,
        conversation: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        within: str | None = None,
        private: bool = True,
        now: datetime | None = None,
    ) -> list[MemoryHit]: ...


class SkillServices(TypedDict, total=False):
    """The helpers the host gives a turn's skills, each optional: read with ``.get()``."""

    #: The bot's memory (the search skills open one on the workspace without it).
    memory: MemorySearch
    #: Now, an aware ``datetime`` (tests fix it; skills fall back to the real clock).
    clock: Callable[[], datetime]
    #: Files out to the turn's chat; absent where the channel cannot send files.
    send_file: SendFile


#: The services a skill may need (``REQUIRES_SERVICE``): the keys of ``SkillServices``.
SERVICE_NAMES = frozenset(SkillServices.__annotations__)
#: Why a call of a skill is refused in a turn without the service it needs (the sentence the model passes on).
MISSING_SERVICE = {
    "send_file": "this turn has no chat to send a file to (a scheduled job's or a hook's run, a served client)",
}


def missing_service(skill: str, service: str) -> str:
    """The one sentence a call of ``skill`` gets in a turn that lacks ``service`` (``REQUIRES_SERVICE``)."""
    return f"{skill} cannot be used here: " + MISSING_SERVICE.get(service, f"this turn has no {service!r} service")


@dataclass
class SkillContext:
    """What ``run(workspace, args, context)`` receives.

    ``services`` holds optional helpers injected by the host (``SkillServices``), read with ``.get()``.
    ``config`` is the loaded config and ``settings`` its records
    (``context.settings.policy.allow_private_network``), read from ``config`` when not given.
    """

    conversation_id: str = ""
    #: The chat or forum topic the turn is in: its sessions (``/new``) share it. Empty: ``conversation_id``.
    place: str = ""
    chat_id: int | str | None = None
    user_id: int | str | None = None
    #: The chat's id of the message the turn answers: the same when a restart answers it again (a skill that
    #: changes something outside records each action under it: skills/once.py).
    message_id: int | str | None = None
    config: JsonObject = field(default_factory=dict)
    timezone: str = RuntimeSettings().timezone
    services: SkillServices = field(default_factory=lambda: SkillServices())
    #: Outside content (mail, pages, forwards) entered the turn: what the skill saves is marked untrusted.
    untrusted: bool = False
    #: The owner's own private chat: may see the owner's data and other chats' logs.
    private: bool = True
    settings: Settings = _FROM_CONFIG
    #: What this run of the turn matched in the ledgers of actions out (skills/once.py): a new one for each run.
    actions: TurnActions = field(default_factory=TurnActions)

    def __post_init__(self) -> None:
        if self.settings is _FROM_CONFIG:
            self.settings = Settings.from_config(self.config)


class SkillRun(Protocol):
    """A skill's ``run``: the workspace, the validated arguments and the turn's context."""

    def __call__(self, workspace: Workspace, args: SkillArgs, context: SkillContext | None = None) -> object: ...
