"""Which config keys a running bot applies on ``/reload`` and which wait for a restart: one table.

``config set`` says it for the key it wrote; ``/reload`` compares the running config with the one it
read, applies the changed keys the table marks ``RELOAD`` and keeps the running value of every
``RESTART`` key (so the bot never runs half on the old value and half on the new one), and answers
with both lists. A section a plugin declares (a channel's: config/sections.py) is not in the table: its record's
``RELOADED_KEYS`` names the keys ``/reload`` applies, and the rest wait for a restart.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass

from assistant_framework.config.defaults import leaves, with_defaults
from assistant_framework.config.errors import ConfigData, format_json_path
from assistant_framework.config.sections import declared, reloaded_keys

RELOAD = "reload"
RESTART = "restart"

#: How a change of a key reaches the running bot; the longest listed prefix of the key decides.
APPLIED_BY: Mapping[str, str] = {
    # A new model client for the changed runners and knobs; background jobs follow it.
    "llm": RELOAD,
    # The memory index's vectors come from the embeddings client made at start.
    "llm.embeddings": RESTART,
    # The Bot API connection (token, server, mode, webhook) and the scheduled digest are made at start.
    "telegram": RESTART,
    "telegram.allowed_user_ids": RELOAD,
    "telegram.owner_id": RELOAD,
    "telegram.group_mode": RELOAD,
    "telegram.stream": RELOAD,
    "telegram.progress": RELOAD,
    # The daemon connection (base_url, account) and the scheduled digest are made at start.
    "signal": RESTART,
    "signal.allowed": RELOAD,
    "signal.owner": RELOAD,
    "signal.group_mode": RELOAD,
    "signal.typing": RELOAD,
    # The homeserver login (server, account, credentials, device) and the scheduled digest are made at start.
    "matrix": RESTART,
    "matrix.allowed": RELOAD,
    "matrix.owner": RELOAD,
    "matrix.group_mode": RELOAD,
    "matrix.typing": RELOAD,
    # The webhook listener, the Graph API client and the scheduled digest are made at start; who may write,
    # the template and typing are read at each message.
    "whatsapp": RESTART,
    "whatsapp.allowed": RELOAD,
    "whatsapp.owner": RELOAD,
    "whatsapp.template": RELOAD,
    "whatsapp.typing": RELOAD,
    # The request listener and the Web API client are made at start; who may write is read at each event.
    "slack": RESTART,
    "slack.allowed": RELOAD,
    "slack.owner": RELOAD,
    "slack.stream": RELOAD,
    # The gateway's connection and the REST client are made at start; who may write is read at each message.
    "discord": RESTART,
    "discord.allowed": RELOAD,
    "discord.owner": RELOAD,
    "discord.stream": RELOAD,
    # The prompt's budgets, plugin folders, skill limits and traces are read again.
    "runtime": RELOAD,
    # The turn log, the scheduled digests and the chats' clocks take the zone at start.
    "runtime.timezone": RESTART,
    "runtime.shutdown_timeout_seconds": RESTART,
    "runtime.log_level": RESTART,
    # Recall, ranking, extraction, episodes, profile and the chats excluded or shared are read again.
    "memory": RELOAD,
    # Turning memory on or off opens or closes the index and its background worker.
    "memory.enabled": RESTART,
    "policy": RELOAD,
    # The page's server is started once, with its address, token and bounds.
    "web": RESTART,
    # The web_search skill reads its section at each call.
    "search": RELOAD,
    # The scheduler reads its limits at each look at jobs/jobs.json.
    "jobs": RELOAD,
    # Read at each reply: when to speak, and the speech endpoint.
    "voice": RELOAD,
    # The MCP servers are stopped and started again (``/reload`` reconnects them).
    "mcp": RELOAD,
    # The calendar skill reads its section at each call.
    "calendar": RELOAD,
    # The mail skill reads its section at each call.
    "mail": RELOAD,
    # The hooks listener is started once, with its address, secrets and endpoints.
    "hooks": RESTART,
    # The mailbox, the servers and the poll are set at start; who may write is read at each mail.
    "email": RESTART,
    "email.allowed": RELOAD,
    "email.owner": RELOAD,
    "email.trust": RELOAD,
    "email.authserv_id": RELOAD,
    # Read at each document sent in a chat.
    "documents": RELOAD,
    # The collector manager and runner are made again.
    "collectors": RELOAD,
}


def applied_by(key: tuple[str | int, ...] | str) -> str:
    """``RELOAD`` or ``RESTART`` for a key (``("llm", "runners", 0, "model")`` or ``"llm.max_tokens"``);
    a declared section's key as its record says (``RELOADED_KEYS``); a section neither knows needs a restart."""
    names = key.split(".") if isinstance(key, str) else [part for part in key if isinstance(part, str)]
    for end in range(len(names), 0, -1):
        found = APPLIED_BY.get(".".join(names[:end]))
        if found is not None:
            return found
    record = declared().get(names[0]) if names else None
    reloaded = reloaded_keys(record) if record is not None else frozenset()
    return RELOAD if any(".".join(names[1:end]) in reloaded for end in range(2, len(names) + 1)) else RESTART


@dataclass(frozen=True)
class ReloadPlan:
    """What a ``/reload`` does with the config it read: the config to apply and the changed keys."""

    #: The config read, with every ``RESTART`` key put back to its running value.
    config: ConfigData
    #: Changed keys the reload applies (``llm.max_tokens``), sorted.
    applied: tuple[str, ...]
    #: Changed keys the running bot keeps until a restart, sorted.
    needs_restart: tuple[str, ...]


@dataclass(frozen=True)
class ReloadReport:
    """What a ``/reload`` did: the changed keys it applied and those that wait for a restart, or why it
    kept the running config (``error``)."""

    applied: tuple[str, ...] = ()
    needs_restart: tuple[str, ...] = ()
    error: str | None = None


def changed_keys(running: Mapping[str, object], loaded: Mapping[str, object]) -> list[tuple[str, ...]]:
    """The keys whose effective value (defaults filled in) differs between two configs; a list is one key."""
    before = {_names(path): value for path, value in leaves(with_defaults(dict(running)))}
    after = {_names(path): value for path, value in leaves(with_defaults(dict(loaded)))}
    return sorted(
        path for path in before.keys() | after.keys() if before.get(path, _ABSENT) != after.get(path, _ABSENT)
    )


_ABSENT = object()


def _names(path: tuple[str | int, ...]) -> tuple[str, ...]:
    return tuple(str(part) for part in path)  # leaves() walks objects only: every part is a key


def plan_reload(running: Mapping[str, object], loaded: Mapping[str, object]) -> ReloadPlan:
    """The config a ``/reload`` applies: ``loaded`` with the running value of each changed restart-only key."""
    config = copy.deepcopy(dict(loaded))
    applied: list[str] = []
    needs_restart: list[str] = []
    for path in changed_keys(running, loaded):
        if applied_by(path) == RELOAD:
            applied.append(format_json_path(path))
            continue
        needs_restart.append(format_json_path(path))
        _put_back(config, running, path)
    return ReloadPlan(config=config, applied=tuple(sorted(applied)), needs_restart=tuple(sorted(needs_restart)))


def _put_back(config: ConfigData, running: Mapping[str, object], path: tuple[str, ...]) -> None:
    """Set ``path`` in ``config`` to its value in ``running`` (removed when ``running`` lacks it)."""
    node = config
    source: object = running
    for part in path[:-1]:
        source = source.get(part) if isinstance(source, Mapping) else None
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    last = path[-1]
    if isinstance(source, Mapping) and last in source:
        node[last] = copy.deepcopy(source[last])
    else:
        node.pop(last, None)
