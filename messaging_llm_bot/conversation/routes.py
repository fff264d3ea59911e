"""The one registry of chat-id prefixes: which channel a chat id or a conversation belongs to.

Reminders, jobs and the morning digest are stored with the chat id they were made in ("tg:7", "sig:<uuid>",
"console", or a bare Telegram number in older rows). Everything that routes them asks this module; no other
module knows the prefixes of another channel. A new channel is one ``Route`` here and its folder under
channels/ (with ``entry.py``, which channels/run.py starts by the route's name): docs/channels.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from assistant_framework.config.settings import Settings


@dataclass(frozen=True)
class Route:
    """One channel's place in the registry."""

    channel: str  # the channel's name ("telegram"), also its folder under messaging_llm_bot/channels/
    prefix: str  # its conversation ids start with this ("tg:"); an inbox item's channel is found by it
    # When the config turns the channel on; None: the terminal chat, which runs when started by hand and
    # takes the jobs made without a chat only when no other channel is configured.
    configured: Callable[[Settings], bool] | None = None
    bare_numbers: bool = False  # a chat id that is only a number is this channel's (older Telegram rows)


ROUTES: tuple[Route, ...] = (
    Route("telegram", "tg:", configured=lambda settings: bool(settings.telegram.token), bare_numbers=True),
    Route("signal", "sig:", configured=lambda settings: settings.signal.enabled),
    Route("email", "mail:", configured=lambda settings: settings.email.enabled),
    Route("matrix", "mx:", configured=lambda settings: settings.matrix.enabled),
    Route("webchat", "web:", configured=lambda settings: settings.web.enabled and settings.web.chat),
    Route("console", "console"),
)


def channel_of(chat_id: object) -> str:
    """The channel a stored chat id belongs to: by its prefix, "telegram" for a bare number; an unknown
    ``name:...`` id gives ``name`` (no channel runs it), an empty one "none"."""
    text = str(chat_id if chat_id is not None else "")
    for route in ROUTES:
        # "tg:" takes "tg:7"; a prefix that is a whole id ("console") takes only itself
        if text.startswith(route.prefix) if route.prefix.endswith(":") else text == route.prefix:
            return route.channel
    if ":" in text:
        return text.split(":", 1)[0]
    if text.lstrip("-").isdigit():
        return next((route.channel for route in ROUTES if route.bare_numbers), text)
    return text or "none"


def route_of_conversation(conversation_id: str) -> Route | None:
    """The route whose prefix a conversation id (an inbox item's) starts with, or None."""
    return next((route for route in ROUTES if conversation_id.startswith(route.prefix)), None)


def prefix_of(channel: str) -> str:
    """The conversation id prefix of ``channel``; KeyError for a channel not in the registry."""
    for route in ROUTES:
        if route.channel == channel:
            return route.prefix
    raise KeyError(channel)


def channel_names() -> tuple[str, ...]:
    """Every channel in the registry, in its order (``assistant run --frontend``'s choices)."""
    return tuple(route.channel for route in ROUTES)


def configured_channels(settings: Settings) -> list[str]:
    """The chat channels the config turns on, in the registry's order (the terminal chat is not one)."""
    return [route.channel for route in ROUTES if route.configured is not None and route.configured(settings)]


def home_channel(settings: Settings) -> str:
    """The channel that runs a job made without a chat (by hand, or by the CLI): the first configured one,
    else the terminal chat."""
    configured = configured_channels(settings)
    if configured:
        return configured[0]
    return next(route.channel for route in ROUTES if route.configured is None)


def owner_conversation_ids(settings: Settings) -> frozenset[str]:
    """The owner's own one-to-one chats: the Telegram owner's private chat, the Signal owner's, the terminal.
    What a served client may search of the chats (never a guest's, a group's or another client's)."""
    ids = {"console"}
    owner = settings.telegram.owner
    if owner is not None:
        ids |= {f"{prefix_of('telegram')}{owner}", str(owner)}  # bare numbers: older logs
    if settings.signal.owner or settings.signal.allowed:
        ids.add(f"{prefix_of('signal')}{settings.signal.owner or settings.signal.allowed[0]}")
    return frozenset(ids)


def home_conversation(settings: Settings) -> str:
    """The owner's chat on the home channel: what a served client's ``recall`` recalls for."""
    channel = home_channel(settings)
    ids = sorted(owner_conversation_ids(settings))
    prefix = prefix_of(channel)
    return next((one for one in ids if one.startswith(prefix)), "console")
