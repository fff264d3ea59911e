"""The ``serve`` section: the programs the assistant serves (MCP, the OpenAI-compatible endpoint; docs/serve.md).

A client is configured once and used by both servers: its name (the source of what it writes, its
conversation id), the environment variable holding its bearer token (never the token itself: the config is
in git), whether it may write, and the skills its chat turns may call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from assistant_framework.config.settings.fields import flag, lists, reads, strings, text, whole
from assistant_framework.config.settings.readers import ENV_NAME, pattern

#: The source of its writes and its conversation id (api:<name>): no separators.
CLIENT_NAME = pattern("^[A-Za-z][A-Za-z0-9_-]{0,31}$", "1–32 of A-Z a-z 0-9 _ -, a letter first")


@dataclass(frozen=True)
class ClientSettings:
    """One entry of ``serve.clients``."""

    #: Letters, digits, ``_`` and ``-``: the source of its writes (``mcp:<name>``), its chats' ``api:<name>``.
    name: str = field(metadata=reads(text, pattern=CLIENT_NAME))
    #: The environment variable holding its bearer token; unset or short is a config error naming it.
    token_env: str = field(metadata=reads(text, pattern=ENV_NAME))
    #: Its MCP writes (``note_add``, ``task_add``, ``fact_add``) run; false: refused.
    write: bool = field(default=False, metadata=reads(flag))
    #: The skills its chat turns (``/v1/chat/completions``) may call; empty: none.
    skills: tuple[str, ...] = field(
        default=(), metadata=reads(strings, each={"minLength": 1}, schema={"uniqueItems": True})
    )
    #: Its chat turns are the owner's own: in the owner's home chat (its history, its facts); false: in its own
    #: conversation ``api:<name>``, kept apart from the owner's chats.
    owner: bool = field(default=False, metadata=reads(flag))
    #: A call its chat turn makes that the policy marks ``ask`` is asked in the owner's chat (Telegram), the
    #: request waiting for the answer; false: such a call is refused.
    approve_in_chat: bool = field(default=False, metadata=reads(flag))


@dataclass(frozen=True)
class ServeSettings:
    """The ``serve`` section."""

    clients: tuple[ClientSettings, ...] = field(default=(), metadata=lists(ClientSettings, max_items=64))
    #: Calls a minute one client may make (MCP tool calls and chat requests together).
    per_minute: int = field(default=120, metadata=reads(whole, minimum=1, maximum=10000))
    #: The most results a search or a list gives back.
    max_results: int = field(default=50, metadata=reads(whole, minimum=1, maximum=500))
