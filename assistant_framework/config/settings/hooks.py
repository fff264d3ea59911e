"""The ``hooks`` section: outside events that start turns (``POST /hooks/<name>``; docs/actions.md).

Each endpoint is configured once under its name: its secret (``secret``, or ``secret_env`` naming the
environment variable that holds it), exactly one of ``message`` (sent as is), ``prompt`` (a turn of the
assistant, the posted body given to it as outside content) or ``job`` (a scheduled job run now), and the
owner's chat the answer goes to (``chat``: which channel; the owner's home chat by default).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from assistant_framework.config.settings.fields import frozen, keyed, named, reads, text, whole
from assistant_framework.config.settings.readers import ENV_NAME, pattern

#: A hook's name is the path's last part: no separators, nothing to escape.
HOOK_NAME = pattern("^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$", "1–64 of A-Z a-z 0-9 _ -")


@dataclass(frozen=True)
class HookSettings:
    """One entry of ``hooks.endpoints``."""

    #: Its name in ``hooks.endpoints``: the path ``/hooks/<name>``.
    name: str = field(default="", metadata=named())
    #: The shared secret (HMAC-SHA256 key, or the bearer token); prefer ``secret_env``: the config is in git.
    secret: str = field(default="", repr=False, metadata=reads(text))
    #: The environment variable holding the secret; unset or short is a config error naming it.
    secret_env: str = field(default="", metadata=reads(text, pattern=ENV_NAME))
    #: Sent to the owner as is (the body is not read).
    message: str = field(default="", metadata=reads(text, min_length=1, max_length=4000))
    #: A turn of the assistant with this prompt and the posted body as outside content.
    prompt: str = field(default="", metadata=reads(text, min_length=1, max_length=8000))
    #: The scheduled job (its id or name) run now (the body is not read).
    job: str = field(default="", metadata=reads(text, min_length=1))
    #: The owner's chat the answer goes to ("tg:<owner>", "sig:<owner>", "console"); empty: the home chat.
    chat: str = field(default="", metadata=reads(text))

    @property
    def kind(self) -> str:
        """``message``, ``prompt`` or ``job`` (the config holds exactly one)."""
        return "message" if self.message else "prompt" if self.prompt else "job"


@dataclass(frozen=True)
class HooksSettings:
    """The ``hooks`` section."""

    #: The address the hooks listener binds; loopback unless a proxy or tunnel needs more.
    listen: str = field(default="127.0.0.1", metadata=reads(text, min_length=1))
    port: int = field(default=8787, metadata=reads(whole, minimum=0, maximum=65535))
    #: The largest body a hook takes (bytes); more is refused with 413 before it is read.
    max_body_bytes: int = field(default=262144, metadata=reads(whole, minimum=1, maximum=4_194_304))
    #: Accepted calls a minute per hook; more get 429 and run nothing.
    per_minute: int = field(default=30, metadata=reads(whole, minimum=1, maximum=1000))
    endpoints: Mapping[str, HookSettings] = field(
        default_factory=frozen, metadata=keyed(HookSettings, names=HOOK_NAME, max_entries=64)
    )
