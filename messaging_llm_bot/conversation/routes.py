"""The one registry of chat-id prefixes: which channel a chat id or a conversation belongs to.

Reminders, jobs and the morning digest are stored with the chat id they were made in ("tg:7", "sig:<uuid>",
"console", or a bare Telegram number in older rows). Everything that routes them asks this module; no other
module knows the prefixes of another channel. A new channel is one line here (``section_route`` for a channel
whose config section is its own) and its folder under channels/ (with ``entry.py``, which channels/run.py starts
by the route's name): docs/channels.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from assistant_framework.config.settings import Settings
from assistant_framework.config.settings.allowlist import Allowlist
from assistant_framework.workspace import Workspace
from messaging_llm_bot.conversation.owner_chats import noted_owner_chats


@dataclass(frozen=True)
class AllowlistKeys:
    """Where a channel's config lists who may write (what a pairing approval adds to: conversation/pairing.py)."""

    list_key: str  # the allowed ids ("allowed"), under the channel's section
    owner_key: str  # the owner's id ("owner"); unset: the first allowed id is the owner
    # A sender's id (as the channel names them to pairing) as it is written in the list: Telegram's ids are
    # numbers, WhatsApp's numbers are written "+<digits>" as its docs and setup write them.
    written: Callable[[str], object] = str


@dataclass(frozen=True)
class Route:
    """One channel's place in the registry."""

    channel: str  # the channel's name ("telegram"), also its folder under messaging_llm_bot/channels/
    prefix: str  # its conversation ids start with this ("tg:"); an inbox item's channel is found by it
    # When the config turns the channel on; None: the terminal chat, which runs when started by hand and
    # takes the jobs made without a chat only when no other channel is configured.
    configured: Callable[[Settings], bool] | None = None
    bare_numbers: bool = False  # a chat id that is only a number is this channel's (older Telegram rows)
    # The owner's one-to-one chats the config names (their conversation ids); a chat learned while the channel
    # runs (Matrix's direct room) is noted by the channel instead (owner_chats.py).
    owner_chats: Callable[[Settings], tuple[str, ...]] = lambda settings: ()
    # A conversation id of the form ``<chat><thread_mark><thread>`` is a thread of that chat (an email thread,
    # a Matrix thread): the owner's when the chat is; "" for none.
    thread_mark: str = ""
    # Where a pairing approval adds a stranger; None: the channel has no strangers to pair (the terminal).
    allowlist: AllowlistKeys | None = None
    # The owner's id as the config names it now (None: it names none); unset: the channel's owner is whoever
    # runs it (the terminal, the web page signed in to).
    owner: Callable[[Settings], int | str | None] | None = None


def section_route(channel: str, prefix: str, *, owner_chat: bool = True, thread_mark: str = "") -> Route:
    """The ``Route`` of a channel whose config section is its own (``channels/<channel>/section.py``: an
    ``Allowlist`` record named after the channel, docs/channels.md step 7), read by the section's name (the
    conversation service imports no channel): on when its ``enabled`` is; the owner's one-to-one chat
    ``<prefix><owner_id>`` (``owner_chat=False``: the channel learns it while it runs, owner_chats.py); a
    pairing approval adds a stranger to its ``allowed``."""

    def section(settings: Settings) -> Allowlist:
        return settings.section(Allowlist, channel)

    def owner_chats(settings: Settings) -> tuple[str, ...]:
        owner = section(settings).owner_id
        return (f"{prefix}{owner}",) if owner_chat and owner else ()

    return Route(
        channel,
        prefix,
        configured=lambda settings: section(settings).enabled,
        owner_chats=owner_chats,
        thread_mark=thread_mark,
        allowlist=AllowlistKeys("allowed", "owner"),
        owner=lambda settings: section(settings).owner_id,
    )


ROUTES: tuple[Route, ...] = (
    Route(
        "telegram",
        "tg:",
        configured=lambda settings: bool(settings.telegram.token),
        bare_numbers=True,
        owner_chats=lambda s: () if s.telegram.owner is None else (f"tg:{s.telegram.owner}", str(s.telegram.owner)),
        thread_mark=":",  # a forum topic of the chat (``tg:7:12``)
        allowlist=AllowlistKeys("allowed_user_ids", "owner_id", int),
        owner=lambda s: s.telegram.owner,
    ),
    Route(
        "signal",
        "sig:",
        configured=lambda settings: settings.signal.enabled,
        owner_chats=lambda s: (
            (f"sig:{s.signal.owner or s.signal.allowed[0]}",) if s.signal.owner or s.signal.allowed else ()
        ),
        allowlist=AllowlistKeys("allowed", "owner"),
        owner=lambda s: s.signal.owner_id,
    ),
    Route(
        "email",
        "mail:",
        configured=lambda settings: settings.email.enabled,
        owner_chats=lambda s: (f"mail:{s.email.owner_address}",) if s.email.owner_address else (),
        thread_mark=":",
        allowlist=AllowlistKeys("allowed", "owner"),
        owner=lambda s: s.email.owner_address,
    ),
    Route(
        "matrix",
        "mx:",
        configured=lambda settings: settings.matrix.enabled,
        thread_mark="|",
        allowlist=AllowlistKeys("allowed", "owner"),
        owner=lambda s: s.matrix.owner_id,
    ),
    Route(
        "whatsapp",
        "wa:",
        configured=lambda settings: settings.whatsapp.enabled,
        owner_chats=lambda s: (
            ("wa:" + "".join(c for c in (s.whatsapp.owner or s.whatsapp.allowed[0]) if c.isdigit()),)
            if s.whatsapp.owner or s.whatsapp.allowed
            else ()
        ),
        allowlist=AllowlistKeys("allowed", "owner", lambda number: f"+{number}"),
        owner=lambda s: s.whatsapp.owner_id,
    ),
    Route(
        "slack",
        "sl:",
        configured=lambda settings: settings.slack.enabled,
        thread_mark="|",
        allowlist=AllowlistKeys("allowed", "owner"),
        owner=lambda s: s.slack.owner_id,
    ),
    Route(
        "discord",
        "dc:",
        configured=lambda settings: settings.discord.enabled,
        allowlist=AllowlistKeys("allowed", "owner"),
        owner=lambda s: s.discord.owner_id,
    ),
    Route(
        "webchat",
        "web:",
        configured=lambda settings: settings.web.enabled and settings.web.chat,
        owner_chats=lambda s: ("web:owner",),
    ),
    Route("console", "console", owner_chats=lambda s: ("console",)),
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


def allowlist_of(channel: str) -> AllowlistKeys | None:
    """Where ``channel``'s config lists who may write; None for a channel without one (or not in the registry)."""
    return next((route.allowlist for route in ROUTES if route.channel == channel), None)


def configured_owner(settings: Settings, channel: str) -> int | str | None:
    """The owner's id on ``channel`` as the config names it now; None when it names none, or ``channel`` has no
    owner in the config (the terminal, the web page: ``OwnerChatTurns`` knows its owner itself)."""
    route = next((route for route in ROUTES if route.channel == channel), None)
    return route.owner(settings) if route is not None and route.owner is not None else None


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


def owner_conversation_ids(settings: Settings, workspace: Workspace | None = None) -> frozenset[str]:
    """The owner's own one-to-one chats: those the config names (the Telegram owner's private chat, the Signal
    owner's, the owner's address by email, the web chat, the terminal) and, with the workspace, those the
    channels learned (Matrix's direct room). What a served client may search of the chats (never a guest's, a
    group's or another client's), and where the owner's home conversation is."""
    ids = {one for route in ROUTES for one in route.owner_chats(settings)}
    if workspace is not None:
        known = set(channel_names())
        noted = noted_owner_chats(workspace, lambda channel: configured_owner(settings, channel))
        ids |= {one for channel, one in noted.items() if channel in known}
    return frozenset(ids)


def is_owner_conversation(settings: Settings, workspace: Workspace | None = None) -> Callable[[str], bool]:
    """Whether a conversation id is the owner's: one of ``owner_conversation_ids`` or a thread of one (an
    email thread of the owner's address, a thread of the owner's Matrix room)."""
    ids = owner_conversation_ids(settings, workspace)
    marks = {route.prefix: route.thread_mark for route in ROUTES if route.thread_mark}

    def owner(conversation_id: str) -> bool:
        if conversation_id in ids:
            return True
        route = route_of_conversation(conversation_id)
        mark = marks.get(route.prefix, "") if route else ""
        chat, found, _thread = conversation_id.rpartition(mark) if mark else ("", "", "")
        return bool(found) and chat in ids

    return owner


def home_conversation(settings: Settings, workspace: Workspace | None = None) -> str:
    """The owner's chat on the home channel: what a served client's ``recall`` recalls for, the owner client's
    chat and the Control page's model choice; the terminal's when the home channel's is not known yet."""
    channel = home_channel(settings)
    ids = sorted(owner_conversation_ids(settings, workspace))
    prefix = prefix_of(channel)
    return next((one for one in ids if one.startswith(prefix)), "console")
